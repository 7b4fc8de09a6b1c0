import Foundation

/// Who changed a record, and when: the wire `created` and `modified` system fields.
public struct Stamp: Sendable, Hashable {
    /// Milliseconds since 1970.
    public var timestamp: Int64
    /// The user record name of the user who made the change.
    public var userRecordName: String
    /// The device that made the change, when the client named one.
    public var deviceID: String?

    /// Creates a stamp.
    public init(timestamp: Int64, userRecordName: String, deviceID: String? = nil) {
        self.timestamp = timestamp
        self.userRecordName = userRecordName
        self.deviceID = deviceID
    }
}

/// A record: typed fields plus system fields, in the shape of CloudKit Web Services.
///
/// A deleted record (a tombstone in a change feed) has ``deleted`` set and no fields.
public struct Record: Sendable, Hashable {
    /// The record's name, unique within its zone.
    public var recordName: String
    /// The record's type, such as `"Artist"`.
    public var recordType: String
    /// The zone holding the record, when known.
    public var zoneID: ZoneID?
    /// The opaque version string; it changes on every save.
    public var recordChangeTag: String?
    /// The typed fields by name.
    public var fields: [String: FieldValue]
    /// Creation time and user.
    public var created: Stamp?
    /// Last modification time and user.
    public var modified: Stamp?
    /// `true` for a tombstone in a change feed.
    public var deleted: Bool
    /// For a share record (``ShareInfo/recordType``): the share's keys beside its fields (out of
    /// line: most records have none).
    @OutOfLine public var shareInfo: ShareInfo?
    /// The name of the record's parent in the same zone (CloudKit's `parent` system
    /// reference): the record belongs to the share of its parent's hierarchy.
    public var parent: String?
    /// For the root of a record share: the name of the share record (the wire `share` key).
    public var share: String?

    /// Creates a record.
    public init(
        recordName: String, recordType: String, zoneID: ZoneID? = nil, recordChangeTag: String? = nil,
        fields: [String: FieldValue] = [:], created: Stamp? = nil, modified: Stamp? = nil, deleted: Bool = false, shareInfo: ShareInfo? = nil,
        parent: String? = nil, share: String? = nil
    ) {
        self.recordName = recordName
        self.recordType = recordType
        self.zoneID = zoneID
        self.recordChangeTag = recordChangeTag
        self.fields = fields
        self.created = created
        self.modified = modified
        self.deleted = deleted
        self.shareInfo = shareInfo
        self.parent = parent
        self.share = share
    }

    /// The record's identifier (in ``ZoneID/defaultZone`` when ``zoneID`` is unknown).
    public var id: RecordID { RecordID(recordName: recordName, zoneID: zoneID ?? .defaultZone) }

    /// The value of a field, or `nil`; setting `nil` removes the field.
    public subscript(field: String) -> FieldValue? {
        get { fields[field] }
        set { fields[field] = newValue }
    }

    /// Every reference the record holds, with the field holding it.
    public var references: [(field: String, reference: Reference)] {
        Self.references(in: fields.lazy.map { (field: $0.key, value: $0.value) })
    }

    /// The references `fields` hold, by field name (a list keeps its order).
    static func references(in fields: some Sequence<(field: String, value: FieldValue)>) -> [(field: String, reference: Reference)] {
        // Only the fields holding references are sorted.
        var holding: [(field: String, value: FieldValue)] = []
        for (field, value) in fields {
            switch value {
            case .reference, .list(.reference, _): holding.append((field, value))
            default: continue
            }
        }
        if holding.count > 1 { holding.sort { $0.field < $1.field } }
        return holding.flatMap { field, value in value.references.map { (field, $0) } }
    }

    /// The record with only the fields named in `desiredKeys` (all of them when `nil`).
    public func restricted(to desiredKeys: [String]?) -> Record {
        guard let desiredKeys else { return self }
        var copy = self
        if desiredKeys.isEmpty {
            copy.fields = [:]
            return copy
        }
        let wanted = Set(desiredKeys)
        copy.fields = fields.filter { wanted.contains($0.key) }
        return copy
    }
}

/// One entry of a per-record result list: a record, or an error for that record.
///
/// Encoded flat, as CloudKit does: a record object, or an error object with
/// `serverErrorCode`. Delete results carry `deleted: true` and, as an extension,
/// `cascadedRecordNames`: the records a `DELETE_SELF` cascade removed with it.
public enum RecordResult: Sendable, Hashable {
    case success(Record, cascadedRecordNames: [String]? = nil)
    case failure(RecordSyncError)

    /// The record, or `nil` for a failure.
    public var record: Record? {
        if case .success(let record, _) = self { return record }
        return nil
    }

    /// The error, or `nil` for a success.
    public var error: RecordSyncError? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

