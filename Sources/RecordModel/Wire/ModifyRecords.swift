import Foundation

extension RawFieldValue {
    /// The wire form of a typed value.
    public init(_ value: FieldValue) {
        self.init(value: value.json, type: value.type)
    }
}

/// A record as a request carries it: fields whose type may be omitted.
public struct RecordPayload: Sendable, Hashable {
    /// The record's name; a create without one gets a random UUID.
    public var recordName: String?
    /// The record's type; required for saves.
    public var recordType: String?
    /// The change tag the client last saw; required by `update`, `replace` and `delete`.
    public var recordChangeTag: String?
    /// The fields to save. In an update, a field whose value is `null` is removed.
    public var fields: [String: RawFieldValue]?
    /// For a share record: `forRecord`, `publicPermission` and `participants`.
    public var share: ShareEdit?
    /// The record's `parent`: set to a record of the same zone, or removed (`null`); an update
    /// without it keeps the stored parent, a create or replace without it has none.
    public var parent: ParentChange?

    /// A change of a record's parent.
    public enum ParentChange: Sendable, Hashable {
        case set(String)
        case remove

        /// The parent's name after the change.
        public var name: String? {
            if case .set(let name) = self { return name }
            return nil
        }
    }

    /// Creates a payload.
    public init(recordName: String? = nil, recordType: String? = nil, recordChangeTag: String? = nil, fields: [String: RawFieldValue]? = nil, share: ShareEdit? = nil,
                parent: ParentChange? = nil) {
        self.recordName = recordName
        self.recordType = recordType
        self.recordChangeTag = recordChangeTag
        self.fields = fields
        self.share = share
        self.parent = parent
    }

    /// The payload that saves `record` with its typed fields, parent and change tag.
    public init(_ record: Record) {
        self.init(
            recordName: record.recordName, recordType: record.recordType, recordChangeTag: record.recordChangeTag,
            fields: record.fields.mapValues(RawFieldValue.init), parent: record.parent.map(ParentChange.set)
        )
    }
}

/// What a modify operation does.
public enum OperationType: String, Sendable, Hashable, Codable, CaseIterable {
    /// Creates the record; `EXISTS` if it exists.
    case create
    /// Changes the given fields; needs the current change tag.
    case update
    /// Changes the given fields without a tag check; creates the record if missing.
    case forceUpdate
    /// Replaces all fields (unspecified ones become null); needs the current change tag.
    case replace
    /// Replaces all fields without a tag check; creates the record if missing.
    case forceReplace
    /// Deletes the record; needs the current change tag.
    case delete
    /// Deletes the record without a tag check.
    case forceDelete

    /// Whether the operation deletes.
    public var isDelete: Bool { self == .delete || self == .forceDelete }
    /// Whether the operation checks `recordChangeTag`.
    public var checksChangeTag: Bool { self == .update || self == .replace || self == .delete }
}

/// One operation of a `records/modify` request.
public struct RecordOperation: Sendable, Hashable {
    public var operationType: OperationType
    public var record: RecordPayload
    /// Fields to return for this record (overrides the request's `desiredKeys`).
    public var desiredKeys: [String]?

    /// Creates an operation.
    public init(_ operationType: OperationType, _ record: RecordPayload, desiredKeys: [String]? = nil) {
        self.operationType = operationType
        self.record = record
        self.desiredKeys = desiredKeys
    }
}

/// The body of `records/modify`.
public struct ModifyRecordsRequest: Sendable, Hashable {
    public var operations: [RecordOperation]
    /// The zone of every record; `_defaultZone` when omitted.
    public var zoneID: ZoneID?
    /// All or nothing (the default), or per-record results.
    public var atomic: Bool?
    /// Fields to return in results; all when omitted.
    public var desiredKeys: [String]?
    /// CloudKit JS's option: `INT64` and `DOUBLE` values in the answer's fields are written as
    /// strings (``WireForm/numbersAsStrings``).
    public var numbersAsStrings: Bool?
    /// Extension: run the batch and answer as it would, cascades included, then undo it:
    /// nothing is stored, announced or counted.
    public var recordSyncDryRun: Bool?

    /// Creates a request.
    public init(operations: [RecordOperation], zoneID: ZoneID? = nil, atomic: Bool? = nil, desiredKeys: [String]? = nil) {
        self.operations = operations
        self.zoneID = zoneID
        self.atomic = atomic
        self.desiredKeys = desiredKeys
    }
}

/// The answer to `records/modify` (and `records/lookup`): one result per requested record, in
/// request order.
public struct RecordsResponse: Sendable, Hashable {
    public var records: [RecordResult]
    /// Extension, `records/lookup` with `include`: the referenced records, targets before sources.
    public var includedRecords: [Record]?
    /// On the server, for each of ``records`` (or `nil`): a saved record's fields as the text
    /// the save stored, when the answer's record holds all of them. Written as they are where
    /// the answer's options allow (``WireForm/storedFieldsAnswerAsTheyAre(_:numbersAsStrings:)``),
    /// rather than encoded again.
    package var storedFields: [String?]?

    /// Creates a response.
    public init(records: [RecordResult], includedRecords: [Record]? = nil) {
        self.records = records
        self.includedRecords = includedRecords
    }
}

/// The body of `records/lookup`.
public struct LookupRecordsRequest: Sendable, Hashable, Codable {
    /// A record name to look up.
    public struct Entry: Sendable, Hashable, Codable {
        public var recordName: String
        public init(recordName: String) { self.recordName = recordName }
    }

    public var records: [Entry]
    public var zoneID: ZoneID?
    public var desiredKeys: [String]?
    /// Extension: reference fields to follow; the records they point at come back in
    /// `includedRecords`, targets before sources.
    public var include: [String]?
    /// Extension: how many references deep `include` follows (default 1, at most 8).
    public var includeDepth: Int?
    /// CloudKit JS's option: `INT64` and `DOUBLE` values in the answer's fields are written as
    /// strings (``WireForm/numbersAsStrings``).
    public var numbersAsStrings: Bool?

    /// Creates a request.
    public init(records: [Entry], zoneID: ZoneID? = nil, desiredKeys: [String]? = nil, include: [String]? = nil, includeDepth: Int? = nil) {
        self.records = records
        self.zoneID = zoneID
        self.desiredKeys = desiredKeys
        self.include = include
        self.includeDepth = includeDepth
    }
}
