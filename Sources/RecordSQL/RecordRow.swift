import Foundation
import GRDB
import RecordModel

/// Reading and writing the `records` table's row form of a ``Record``.
public enum RecordRow {
    /// The columns every record read selects, in the order ``record(from:zoneID:)`` reads them:
    /// those of ``StorageSchema/records`` from `name` to `modified_device`, then `parent` (the
    /// client's cache keeps them under the same names).
    public static let columns = columnNames.joined(separator: ", ")

    /// How many columns ``columns`` names.
    public static let columnCount = columnNames.count

    static let columnNames: [String] = {
        let names = StorageSchema.records.columns.map(\.name)
        return Array(names[names.firstIndex(of: "name")!...names.firstIndex(of: "modified_device")!]) + ["parent"]
    }()

    /// The same columns qualified with a table alias.
    public static func columns(alias: String) -> String {
        columnNames.map { "\(alias).\($0)" }.joined(separator: ", ")
    }

    /// A record from a row holding ``columns`` starting at column `offset`.
    public static func record(from row: Row, zoneID: ZoneID, offset: Int = 0) throws -> RecordModel.Record {
        let fieldsText: String = row[offset + 3]
        return Record(
            recordName: row[offset], recordType: row[offset + 1], zoneID: zoneID, recordChangeTag: row[offset + 2],
            fields: try decodeFields(fieldsText),
            created: Stamp(timestamp: row[offset + 4], userRecordName: row[offset + 5], deviceID: row[offset + 6]),
            modified: Stamp(timestamp: row[offset + 7], userRecordName: row[offset + 8], deviceID: row[offset + 9]),
            parent: row[offset + 10]
        )
    }

    /// The stored JSON form of a record's fields: the wire form (`{"NAME": {"type": …, "value": …}}`),
    /// keys sorted.
    public static func encodeFields(_ fields: [String: FieldValue]) throws -> String {
        try JSONValueEncoder().encodeFieldsText(fields)
    }

    /// Fields from their stored JSON form.
    public static func decodeFields(_ text: String) throws -> [String: FieldValue] {
        try Record.fields(fromJSON: text)
    }

    /// The change tag of the change with sequence number `sequence`: short, and unique within
    /// the zone because sequence numbers are.
    public static func changeTag(_ sequence: Int64) -> String { String(sequence, radix: 36) }
}
