import Foundation
import PostgresNIO
import RecordModel
import RecordRules
import RecordSQL

extension PostgresTransaction {
    /// The columns every record read selects, in the order ``record(from:zoneID:offset:)`` reads them.
    static let recordColumns = RecordRow.columns

    /// A record from a row holding ``recordColumns`` from column `offset`.
    static func record(from row: PostgresRow, zoneID: ZoneID, offset: Int = 0) throws -> Record {
        let (entry, fields) = try storedRecord(from: row, zoneID: zoneID, offset: offset)
        var record = entry
        record.fields = try RecordRow.decodeFields(fields)
        return record
    }

    /// A record from a row holding ``recordColumns`` from column `offset`, without its fields,
    /// and the fields' stored text.
    static func storedRecord(from row: PostgresRow, zoneID: ZoneID, offset: Int = 0) throws -> (Record, String) {
        let cells = Array(row)
        func cell<T: PostgresDecodable>(_ index: Int, _ type: T.Type) throws -> T { try cells[offset + index].decode(T.self) }
        let record = Record(
            recordName: try cell(0, String.self), recordType: try cell(1, String.self), zoneID: zoneID, recordChangeTag: try cell(2, String.self),
            created: Stamp(timestamp: try cell(4, Int64.self), userRecordName: try cell(5, String.self), deviceID: try cell(6, String?.self)),
            modified: Stamp(timestamp: try cell(7, Int64.self), userRecordName: try cell(8, String.self), deviceID: try cell(9, String?.self)))
        return (record, try cell(3, String.self))
    }

    func records(named names: [String], inZone zone: Int64, zoneID: ZoneID) throws -> [Record] {
        try rows("SELECT \(unescaped: Self.recordColumns) FROM records WHERE zone_id = \(zone) AND name = ANY(\(names))")
            .map { try Self.record(from: $0, zoneID: zoneID) }
    }

    func record(named name: String, inZone zone: Int64, zoneID: ZoneID) throws -> Record? {
        try rows("SELECT \(unescaped: Self.recordColumns) FROM records WHERE zone_id = \(zone) AND name = \(name)").first
            .map { try Self.record(from: $0, zoneID: zoneID) }
    }

    func recordExists(named name: String, inZone zone: Int64) throws -> Bool {
        try !rows("SELECT 1 FROM records WHERE zone_id = \(zone) AND name = \(name)").isEmpty
    }

    func zoneHasTombstones(_ zone: Int64) throws -> Bool {
        try !rows("SELECT 1 FROM tombstones WHERE zone_id = \(zone) LIMIT 1").isEmpty
    }

    func registerReferenceFields(_ names: [String]) throws {
        for name in names { _ = try fieldKey(name) }
    }
}
