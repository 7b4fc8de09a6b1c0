import Foundation
import PostgresNIO
import RecordModel
import RecordStorage
import RecordSQL

extension PostgresTransaction {
    /// The columns every record read selects, in the order ``record(from:zoneID:offset:)`` reads them.
    static let recordColumns = RecordRow.columns

    /// A record from a row holding ``recordColumns`` (and nothing before them).
    static func record(from row: PostgresRow, zoneID: ZoneID) throws -> Record {
        let (name, type, tag, fields, createdAt, createdBy, createdDevice, modifiedAt, modifiedBy, modifiedDevice) =
            try row.decode((String, String, String, String, Int64, String, String?, Int64, String, String?).self)
        return Record(recordName: name, recordType: type, zoneID: zoneID, recordChangeTag: tag, fields: try RecordRow.decodeFields(fields),
                      created: Stamp(timestamp: createdAt, userRecordName: createdBy, deviceID: createdDevice),
                      modified: Stamp(timestamp: modifiedAt, userRecordName: modifiedBy, deviceID: modifiedDevice))
    }

    func records(named names: [String], inZone zone: Int64, zoneID: ZoneID) throws -> [Record] {
        try rows("SELECT \(unescaped: Self.recordColumns) FROM records WHERE zone_id = \(zone) AND name = ANY(\(names))")
            .map { try Self.record(from: $0, zoneID: zoneID) }
    }

    func record(named name: String, inZone zone: Int64, zoneID: ZoneID) throws -> Record? {
        try rows("SELECT \(unescaped: Self.recordColumns) FROM records WHERE zone_id = \(zone) AND name = \(name)").first
            .map { try Self.record(from: $0, zoneID: zoneID) }
    }
}
