import Foundation
import GRDB
import RecordModel
import RecordStorage
import RecordStorageSQL
import RecordSQL

extension SQLiteTransaction {
    /// The generic change page's statement (``SQLStatement/changePage(inZone:after:tombstonesAfter:recordTypes:limit:in:)``),
    /// its rows read through SQLite's C API: a change page reads hundreds of rows, and their user
    /// names (the same few over and over) are made into a string when they change, not twice a
    /// row (docs/architecture.md gives the figure).
    func changes(inZone zone: Int64, zoneID: ZoneID, after sequence: Int64, tombstonesAfter: Int64,
                 recordTypes: [String]?, limit: Int) throws -> [FeedChange] {
        let (sql, values) = SQLStatement.changePage(inZone: zone, after: sequence, tombstonesAfter: tombstonesAfter, recordTypes: recordTypes,
                                                    limit: limit, in: .sqlite).rendered(in: .sqlite)
        var rows = try SQLiteRowReader(try db.cachedStatement(sql: sql), arguments: Self.arguments(values), in: db)
        defer { rows.finish() }
        var changes: [FeedChange] = []
        changes.reserveCapacity(limit)
        while try rows.step() {
            let sequence = rows.int64(0)
            if rows.int64(1) == 1 {
                changes.append(FeedChange(sequence: sequence, entry: .init(record: Record(recordName: rows.text(2), recordType: rows.text(3), zoneID: zoneID, deleted: true))))
            } else {
                let record = Record(recordName: rows.text(2), recordType: rows.text(3), zoneID: zoneID, recordChangeTag: rows.optionalText(4),
                                    created: Stamp(timestamp: rows.int64(6), userRecordName: rows.repeatedText(7), deviceID: rows.optionalText(8)),
                                    modified: Stamp(timestamp: rows.int64(9), userRecordName: rows.repeatedText(10), deviceID: rows.optionalText(11)),
                                    parent: rows.optionalText(12))
                changes.append(FeedChange(sequence: sequence, entry: .init(record: record, fieldsJSON: rows.optionalText(5))))
            }
        }
        return changes
    }
}
