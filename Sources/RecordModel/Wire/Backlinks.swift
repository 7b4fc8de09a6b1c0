import Foundation

/// The body of `records/backlinks` (an extension): the records that refer to one record.
public struct BacklinksRequest: Sendable, Hashable, Codable {
    public var zoneID: ZoneID?
    /// The record referred to.
    public var recordName: String
    /// At most this many referring records per answer (default and cap as `records/query`'s).
    public var resultsLimit: Int?
    /// Where the previous page ended.
    public var continuationMarker: String?
    public var desiredKeys: [String]?

    public init(recordName: String, zoneID: ZoneID? = nil, resultsLimit: Int? = nil, continuationMarker: String? = nil, desiredKeys: [String]? = nil) {
        self.recordName = recordName
        self.zoneID = zoneID
        self.resultsLimit = resultsLimit
        self.continuationMarker = continuationMarker
        self.desiredKeys = desiredKeys
    }
}

/// One reference to the record asked about.
public struct Backlink: Sendable, Hashable, Codable {
    /// The record holding the reference.
    public var recordName: String
    /// The field holding it (a `REFERENCE` or `REFERENCE_LIST` field).
    public var fieldName: String
    /// The reference's action.
    public var action: Reference.Action

    public init(recordName: String, fieldName: String, action: Reference.Action) {
        self.recordName = recordName
        self.fieldName = fieldName
        self.action = action
    }
}

/// The answer to `records/backlinks`: the referring records (each once, by name), every
/// reference they hold to the record (a record may refer to it from several fields), and a
/// marker when more remain.
public struct BacklinksResponse: Sendable, Hashable, Codable {
    public var records: [Record]
    public var backlinks: [Backlink]
    public var continuationMarker: String?

    public init(records: [Record], backlinks: [Backlink], continuationMarker: String? = nil) {
        self.records = records
        self.backlinks = backlinks
        self.continuationMarker = continuationMarker
    }
}
