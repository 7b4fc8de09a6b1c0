import Foundation

// Names and initialisers that read like CloudKit's native API (`CKRecord.ID`,
// `CKRecord.Reference(recordID:action:)`, `CKRecordZone.ID`).

extension Record {
    /// A record's identifier (CloudKit's `CKRecord.ID`).
    public typealias ID = RecordID
    /// A reference to another record (CloudKit's `CKRecord.Reference`).
    public typealias Reference = RecordModel.Reference

    /// Creates an empty record of a type; the name defaults to a random UUID.
    public init(recordType: String, recordID: RecordID = RecordID(recordName: UUID().uuidString)) {
        self.init(recordName: recordID.recordName, recordType: recordType, zoneID: recordID.zoneID)
    }

    /// The record's identifier.
    public var recordID: RecordID { id }
}

extension Reference {
    /// Creates a reference to the record `recordID`.
    public init(recordID: RecordID, action: Action) {
        self.init(recordName: recordID.recordName, zoneID: recordID.zoneID, action: action)
    }

    /// Creates a reference to `record`.
    public init(record: Record, action: Action) {
        self.init(recordID: record.recordID, action: action)
    }

    /// The identifier of the target (in ``ZoneID/defaultZone`` when the reference names no zone).
    public var recordID: RecordID { RecordID(recordName: recordName, zoneID: zoneID ?? .defaultZone) }
}

/// A record zone (CloudKit's `CKRecordZone`).
public struct RecordZone: Sendable, Hashable, Codable {
    /// A zone's identifier (CloudKit's `CKRecordZone.ID`).
    public typealias ID = ZoneID

    /// The zone's identifier.
    public var zoneID: ZoneID

    /// Creates a zone value.
    public init(zoneID: ZoneID) { self.zoneID = zoneID }

    /// Creates a zone value named `zoneName`.
    public init(zoneName: String) { self.zoneID = ZoneID(zoneName: zoneName) }
}
