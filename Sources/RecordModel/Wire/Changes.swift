import Foundation

/// The body of `records/changes` (one zone; the older form).
public struct RecordChangesRequest: Sendable, Hashable, Codable {
    public var zoneID: ZoneID?
    /// The token from the previous fetch; omitted for the first.
    public var syncToken: String?
    public var resultsLimit: Int?
    public var desiredKeys: [String]?
    /// Extension: only changes to records of these types.
    public var desiredRecordTypes: [String]?
    /// CloudKit JS's option: `INT64` and `DOUBLE` values in the answer's fields are written as
    /// strings (``WireForm/numbersAsStrings``).
    public var numbersAsStrings: Bool?
    /// Extension (as `records/lookup` has it): reference fields to follow from the page's
    /// records; what they reach comes back in `includedRecords`, targets first.
    public var include: [String]?
    /// How many hops `include` follows (default 1).
    public var includeDepth: Int?
    /// Extension, `records/changes` only: the page in RecordSync's compact form (records as
    /// arrays without `zoneID`, fields as bare values with their types once in
    /// `recordSyncFieldTypes`, stamps as arrays naming users by position in `recordSyncUsers`;
    /// ``ZoneChanges/expandingCompactPage(_:)`` puts it back in CloudKit's form).
    public var recordSyncCompact: Bool?
    /// Extension, with ``recordSyncCompact``: the compact form's version the client reads. 1
    /// (the default) gives each record's fields as an object of bare values; 2 and later, as an
    /// array of values by position in the record type's fields of `recordSyncFieldTypes`.
    /// Whatever a client asks for, it reads the form it gets: each page's shape says which.
    public var recordSyncCompactVersion: Int?

    /// Creates a request.
    public init(zoneID: ZoneID? = nil, syncToken: String? = nil, resultsLimit: Int? = nil, desiredKeys: [String]? = nil, desiredRecordTypes: [String]? = nil,
                include: [String]? = nil, includeDepth: Int? = nil) {
        self.zoneID = zoneID
        self.syncToken = syncToken
        self.resultsLimit = resultsLimit
        self.desiredKeys = desiredKeys
        self.desiredRecordTypes = desiredRecordTypes
        self.include = include
        self.includeDepth = includeDepth
    }
}

/// One page of a zone's changes: changed records and tombstones (`deleted: true`), oldest first.
public struct ZoneChanges: Sendable, Hashable {
    public var zoneID: ZoneID
    public var records: [Record]
    /// The token to send next time; it covers exactly the changes in this page.
    public var syncToken: String
    /// More changes remain; fetch again with ``syncToken``.
    public var moreComing: Bool
    /// Extension: the records the request's `include` reaches from ``records``, targets first.
    public var includedRecords: [Record]?

    /// Creates a page.
    public init(zoneID: ZoneID, records: [Record], syncToken: String, moreComing: Bool, includedRecords: [Record]? = nil) {
        self.zoneID = zoneID
        self.records = records
        self.syncToken = syncToken
        self.moreComing = moreComing
        self.includedRecords = includedRecords
    }
}

/// The body of `changes/zone`.
public struct ZoneChangesRequest: Sendable, Hashable, Codable {
    public var zones: [RecordChangesRequest]
    /// CloudKit JS's option: `INT64` and `DOUBLE` values in the answer's fields are written as
    /// strings (``WireForm/numbersAsStrings``).
    public var numbersAsStrings: Bool?
    /// Read only to be refused: the compact form is `records/changes`' alone.
    public var recordSyncCompact: Bool?
    /// Read only to be refused, as ``recordSyncCompact``.
    public var recordSyncCompactVersion: Int?
    public init(zones: [RecordChangesRequest]) { self.zones = zones }
}

/// One zone's answer in `changes/zone`: its changes, or an error for that zone.
public enum ZoneChangesResult: Sendable, Hashable {
    case success(ZoneChanges)
    case failure(RecordSyncError)
}

extension ZoneChangesResult: Codable {
    enum ProbeKeys: String, CodingKey { case serverErrorCode }

    public init(from decoder: any Decoder) throws {
        if try decoder.container(keyedBy: ProbeKeys.self).contains(.serverErrorCode) {
            self = .failure(try ErrorBody(from: decoder).error)
        } else {
            self = .success(try ZoneChanges(from: decoder))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .success(let changes): try changes.encode(to: encoder)
        case .failure(let error): try ErrorBody(error).encode(to: encoder)
        }
    }
}

/// The answer to `changes/zone`.
public struct ZoneChangesResponse: Sendable, Hashable, Codable {
    public var zones: [ZoneChangesResult]
    public init(zones: [ZoneChangesResult]) { self.zones = zones }
}

/// The body of `changes/database`.
public struct DatabaseChangesRequest: Sendable, Hashable, Codable {
    public var syncToken: String?
    public var resultsLimit: Int?
    public init(syncToken: String? = nil, resultsLimit: Int? = nil) {
        self.syncToken = syncToken
        self.resultsLimit = resultsLimit
    }
}

/// A zone that changed (or was deleted) since a database token.
public struct ChangedZone: Sendable, Hashable, Codable {
    public var zoneID: ZoneID
    /// `true` when the zone was deleted.
    public var deleted: Bool?
    public init(zoneID: ZoneID, deleted: Bool? = nil) {
        self.zoneID = zoneID
        self.deleted = deleted
    }
}

/// The answer to `changes/database`.
public struct DatabaseChanges: Sendable, Hashable, Codable {
    public var zones: [ChangedZone]
    public var syncToken: String
    public var moreComing: Bool
    public init(zones: [ChangedZone], syncToken: String, moreComing: Bool) {
        self.zones = zones
        self.syncToken = syncToken
        self.moreComing = moreComing
    }
}
