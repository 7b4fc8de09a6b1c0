import Foundation
import RecordModel

/// A notification a subscription made (CloudKit's `CKQueryNotification` and
/// `CKRecordZoneNotification`), as it arrives through the webcourier long poll.
public struct RemoteNotification: Sendable, Hashable {
    /// What fired it.
    public enum Kind: Sendable, Hashable {
        /// A query subscription: the record, and why.
        case query(recordName: String, reason: Reason)
        /// A zone subscription: something in the zone changed.
        case zone
        /// A database subscription: some zone of the database changed (fetch the database's
        /// changes); ``RemoteNotification/zoneID`` is `nil`.
        case database
    }

    /// Why a query subscription fired (`fo`).
    public enum Reason: Int, Sendable, Hashable {
        case recordCreated = 1
        case recordUpdated = 2
        case recordDeleted = 3
    }

    /// The notification's ID (`nid`).
    public var notificationID: String
    public var subscriptionID: String
    public var containerIdentifier: String
    /// The zone that changed; `nil` for a database subscription's notification.
    public var zoneID: ZoneID?
    public var kind: Kind
    /// The database the change was in (`dbs`: 0 public, 1 private, 2 shared).
    public var databaseScope: Database.Scope
    /// Whether the change was in the public database (`dbs` 0, as CloudKit JS reads it).
    public var isPublicDatabase: Bool { databaseScope == .public }
    /// The whole payload (`ck`, `aps`).
    public var payload: JSONValue

    /// Reads a payload; `nil` when it is not a notification of a subscription.
    public init?(payload: JSONValue) {
        guard let ck = payload["ck"], case .string(let id)? = ck["nid"] else { return nil }
        let body = ck["qry"] ?? ck["fet"]
        guard let body, case .string(let subscription)? = body["sid"] else { return nil }
        notificationID = id
        subscriptionID = subscription
        if case .string(let container)? = ck["cid"] { containerIdentifier = container } else { containerIdentifier = "" }
        var owner: String?
        if case .string(let value)? = body["zoid"] { owner = value }
        if case .string(let zone)? = body["zid"] {
            zoneID = ZoneID(zoneName: zone, ownerRecordName: owner)
        } else {
            zoneID = nil
        }
        switch body["dbs"] {
        case .int(0)?: databaseScope = .public
        case .int(2)?: databaseScope = .shared
        default: databaseScope = .private
        }
        if ck["qry"] != nil {
            guard zoneID != nil, case .string(let record)? = body["rid"], case .int(let fo)? = body["fo"], let reason = Reason(rawValue: Int(fo)) else { return nil }
            kind = .query(recordName: record, reason: reason)
        } else {
            kind = zoneID == nil ? .database : .zone
        }
        self.payload = payload
    }
}

extension Database {
    /// Saves a subscription (creating or replacing one of the same ID), as the server keeps it.
    @discardableResult
    public func save(_ subscription: Subscription) async throws -> Subscription {
        let answer = try await transport.post("subscriptions/modify", ModifySubscriptionsRequest(operations: [.init(operationType: "create", subscription: subscription)]),
                                              as: SubscriptionsResponse.self)
        switch answer.subscriptions.first {
        case .success(let saved)?: return saved
        case .failure(_, let error)?: throw error
        default: throw RecordSyncError(.networkFailure, "subscriptions/modify gave no result")
        }
    }

    /// The signed-in user's subscriptions of this database.
    public func subscriptions() async throws -> [Subscription] {
        try await transport.post("subscriptions/list", EmptyBody(), as: SubscriptionsResponse.self).subscriptions.compactMap(\.subscription)
    }

    /// Deletes a subscription. Throws `NOT_FOUND` when there is none of that ID.
    public func deleteSubscription(withID id: String) async throws {
        let answer = try await transport.post("subscriptions/modify", ModifySubscriptionsRequest(operations: [
            .init(operationType: "delete", subscription: Subscription(subscriptionID: id, subscriptionType: nil)),
        ]), as: SubscriptionsResponse.self)
        if let error = answer.subscriptions.first?.error { throw error }
    }

    /// The notifications the signed-in user's subscriptions make in this container and
    /// environment from the moment this returns: it asks `tokens/create` for a
    /// `webcourierURL`, and the stream reads it, one notification per poll (a `null` or empty answer
    /// is a keep-alive and the poll goes on). A failed poll is tried again after a second;
    /// cancelling the consumer ends the stream.
    public func remoteNotifications() async throws -> AsyncThrowingStream<RemoteNotification, any Error> {
        let transport = self.transport
        let url = try await transport.post("tokens/create", PushTokenRequest(apnsEnvironment: "development"), as: PushTokenResponse.self).webcourierURL
        return AsyncThrowingStream { continuation in
            let polling = Task {
                do {
                    while !Task.isCancelled {
                        let body: Data
                        do {
                            body = try await transport.get(url, timeout: .seconds(120))
                        } catch let error as RecordSyncError where error.code == .networkFailure {
                            try await Task.sleep(for: .seconds(1))
                            continue
                        }
                        if body.isEmpty { continue }
                        if let notification = RemoteNotification(payload: try JSONValue.parse(body)) { continuation.yield(notification) }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: Task.isCancelled ? nil : error)
                }
            }
            continuation.onTermination = { _ in polling.cancel() }
        }
    }
}
