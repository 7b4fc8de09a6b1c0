import Foundation

/// A subscription as CloudKit Web Services describes one: a query subscription (record type and
/// filters, fired on create, update and delete of matching records) or a zone subscription
/// (fired on any change in the zone).
public struct Subscription: Sendable, Hashable, Codable {
    public var subscriptionID: String
    /// `query` or `zone` (required but for a delete).
    public var subscriptionType: String?
    public var query: Query?
    public var zoneID: ZoneID?
    /// `create`, `update`, `delete` (query subscriptions; all three when omitted).
    public var firesOn: [String]?
    public var firesOnce: Bool?
    /// Query subscriptions: every zone of the database (the default without `zoneID`).
    public var zoneWide: Bool?
    /// Apple's Notification Info dictionary, kept and turned into the payload's `aps`.
    public var notificationInfo: JSONValue?

    public init(subscriptionID: String, subscriptionType: String?, query: Query? = nil, zoneID: ZoneID? = nil, firesOn: [String]? = nil,
                firesOnce: Bool? = nil, zoneWide: Bool? = nil, notificationInfo: JSONValue? = nil) {
        self.subscriptionID = subscriptionID
        self.subscriptionType = subscriptionType
        self.query = query
        self.zoneID = zoneID
        self.firesOn = firesOn
        self.firesOnce = firesOnce
        self.zoneWide = zoneWide
        self.notificationInfo = notificationInfo
    }

    /// A query subscription.
    public static func query(_ id: String, _ query: Query, zoneID: ZoneID? = nil, firesOn: [String] = ["create", "update", "delete"],
                             firesOnce: Bool = false) -> Subscription {
        Subscription(subscriptionID: id, subscriptionType: "query", query: query, zoneID: zoneID, firesOn: firesOn, firesOnce: firesOnce,
                     zoneWide: zoneID == nil)
    }

    /// A zone subscription.
    public static func zone(_ id: String, _ zoneID: ZoneID) -> Subscription {
        Subscription(subscriptionID: id, subscriptionType: "zone", zoneID: zoneID)
    }

    /// A database subscription: fires for a change in any zone of its database (the only kind
    /// the shared database takes).
    public static func database(_ id: String) -> Subscription {
        Subscription(subscriptionID: id, subscriptionType: "database")
    }
}

/// The body of `subscriptions/modify`.
public struct ModifySubscriptionsRequest: Sendable, Hashable, Codable {
    public struct Operation: Sendable, Hashable, Codable {
        /// `create`, `update` or `delete`.
        public var operationType: String
        public var subscription: Subscription
        public init(operationType: String, subscription: Subscription) {
            self.operationType = operationType
            self.subscription = subscription
        }
    }

    public var operations: [Operation]
    public init(operations: [Operation]) { self.operations = operations }
}

/// One subscription's answer: the subscription, `{"subscriptionID", "deleted": true}`, or an
/// error naming the subscription.
public enum SubscriptionResult: Sendable, Hashable {
    case success(Subscription)
    case deleted(String)
    case failure(String, RecordSyncError)

    /// The subscription, or `nil`.
    public var subscription: Subscription? {
        if case .success(let subscription) = self { return subscription }
        return nil
    }

    /// The error, or `nil`.
    public var error: RecordSyncError? {
        if case .failure(_, let error) = self { return error }
        return nil
    }
}

extension SubscriptionResult: Codable {
    enum Keys: String, CodingKey { case serverErrorCode, subscriptionID, deleted }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        if container.contains(.serverErrorCode) {
            let body = try ErrorBody(from: decoder)
            self = .failure(body.subscriptionID ?? "", body.error)
        } else if try container.decodeIfPresent(Bool.self, forKey: .deleted) == true {
            self = .deleted(try container.decode(String.self, forKey: .subscriptionID))
        } else {
            self = .success(try Subscription(from: decoder))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .success(let subscription): try subscription.encode(to: encoder)
        case .deleted(let id):
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(id, forKey: .subscriptionID)
            try container.encode(true, forKey: .deleted)
        case .failure(let id, let error):
            var body = ErrorBody(error)
            body.subscriptionID = id
            try body.encode(to: encoder)
        }
    }
}

/// The answer to `subscriptions/modify`, `subscriptions/list` and `subscriptions/lookup`.
public struct SubscriptionsResponse: Sendable, Hashable, Codable {
    public var subscriptions: [SubscriptionResult]
    public init(subscriptions: [SubscriptionResult]) { self.subscriptions = subscriptions }
}

/// The body of `subscriptions/lookup`.
public struct LookupSubscriptionsRequest: Sendable, Hashable, Codable {
    public struct Entry: Sendable, Hashable, Codable {
        public var subscriptionID: String
        public init(subscriptionID: String) { self.subscriptionID = subscriptionID }
    }

    public var subscriptions: [Entry]
    public init(subscriptions: [Entry]) { self.subscriptions = subscriptions }
}

/// The body of `tokens/create` and `tokens/register`.
public struct PushTokenRequest: Sendable, Hashable, Codable {
    public var apnsEnvironment: String?
    public var apnsToken: String?
    public init(apnsEnvironment: String? = nil, apnsToken: String? = nil) {
        self.apnsEnvironment = apnsEnvironment
        self.apnsToken = apnsToken
    }
}

/// The answer to `tokens/create` (and `tokens/register`): where to long-poll for notifications.
public struct PushTokenResponse: Sendable, Hashable, Codable {
    public var apnsEnvironment: String
    public var apnsToken: String
    /// `GET` it for the next notification (one per answer; an empty answer after a while is a
    /// keep-alive), and again.
    public var webcourierURL: String
    public init(apnsEnvironment: String, apnsToken: String, webcourierURL: String) {
        self.apnsEnvironment = apnsEnvironment
        self.apnsToken = apnsToken
        self.webcourierURL = webcourierURL
    }
}
