import Foundation

/// A zone as the server describes it.
public struct Zone: Sendable, Hashable, Codable {
    public var zoneID: ZoneID
    /// The zone's current change token.
    public var syncToken: String?
    /// Zones are always atomic units of change.
    public var atomic: Bool?
    /// `true` in the answer to a delete.
    public var deleted: Bool?

    /// Creates a zone description.
    public init(zoneID: ZoneID, syncToken: String? = nil, atomic: Bool? = true, deleted: Bool? = nil) {
        self.zoneID = zoneID
        self.syncToken = syncToken
        self.atomic = atomic
        self.deleted = deleted
    }
}

/// One zone's answer: the zone, or an error for it.
public enum ZoneResult: Sendable, Hashable {
    case success(Zone)
    case failure(RecordSyncError)

    /// The zone, or `nil` for a failure.
    public var zone: Zone? {
        if case .success(let zone) = self { return zone }
        return nil
    }
}

extension ZoneResult: Codable {
    enum ProbeKeys: String, CodingKey { case serverErrorCode }

    public init(from decoder: any Decoder) throws {
        if try decoder.container(keyedBy: ProbeKeys.self).contains(.serverErrorCode) {
            self = .failure(try ErrorBody(from: decoder).error)
        } else {
            self = .success(try Zone(from: decoder))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .success(let zone): try zone.encode(to: encoder)
        case .failure(let error): try ErrorBody(error).encode(to: encoder)
        }
    }
}

/// The answer to `zones/list`, `zones/lookup` and `zones/modify`.
public struct ZonesResponse: Sendable, Hashable, Codable {
    public var zones: [ZoneResult]
    public init(zones: [ZoneResult]) { self.zones = zones }
}

/// The body of `zones/lookup`.
public struct LookupZonesRequest: Sendable, Hashable, Codable {
    public var zones: [ZoneID]
    public init(zones: [ZoneID]) { self.zones = zones }
}

/// The body of `zones/modify`.
public struct ModifyZonesRequest: Sendable, Hashable, Codable {
    /// `create` or `delete`.
    public enum OperationType: String, Sendable, Hashable, Codable {
        case create
        case delete
    }

    /// One zone operation.
    public struct Operation: Sendable, Hashable, Codable {
        /// The `zone` member: `{zoneID}`.
        public struct ZonePayload: Sendable, Hashable, Codable {
            public var zoneID: ZoneID
            public init(zoneID: ZoneID) { self.zoneID = zoneID }
        }

        public var operationType: OperationType
        public var zone: ZonePayload
        public init(_ operationType: OperationType, _ zoneID: ZoneID) {
            self.operationType = operationType
            self.zone = ZonePayload(zoneID: zoneID)
        }
    }

    public var operations: [Operation]
    public init(operations: [Operation]) { self.operations = operations }
}


/// The body of `zones/changes`: the zones changed since a database token. Apple's table names
/// the token `metaSyncToken` and its prose `syncToken`; either is read (both must agree).
public struct ZonesChangesRequest: Sendable, Hashable, Codable {
    public var metaSyncToken: String?
    public var syncToken: String?
    public var resultsLimit: Int?

    public init(metaSyncToken: String? = nil, resultsLimit: Int? = nil) {
        self.metaSyncToken = metaSyncToken
        self.resultsLimit = resultsLimit
    }
}

/// The answer to `zones/changes`: changed zones (each with its current `syncToken`, or
/// `deleted: true`), and the token to send next, under both of Apple's names.
public struct ZonesChangesResponse: Sendable, Hashable, Codable {
    public var zones: [Zone]
    public var metaSyncToken: String
    public var syncToken: String
    public var moreComing: Bool

    public init(zones: [Zone], token: String, moreComing: Bool) {
        self.zones = zones
        self.metaSyncToken = token
        self.syncToken = token
        self.moreComing = moreComing
    }
}
