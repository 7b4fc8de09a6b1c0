import Foundation
import PostgresNIO
import RecordModel
import RecordStorage
import RecordSQL

extension PostgresTransaction {
    /// Records and tombstones after a place in the feed, from the function that reads a page
    /// (migration `v2`: each half read in sequence order from its `(zone_id, seq)` index and
    /// limited, then merged).
    func changes(inZone zone: Int64, zoneID: ZoneID, after sequence: Int64, tombstonesAfter: Int64,
                 recordTypes: [String]?, limit: Int) throws -> [FeedChange] {
        var changes: [FeedChange] = []
        changes.reserveCapacity(limit)
        for row in try rows("""
            SELECT * FROM recordsync_change_page(\(zone), \(sequence), \(max(sequence, tombstonesAfter)), \(recordTypes), \(Int32(clamping: limit)))
            """) {
            var cells = PostgresCells(row)
            let number = try cells.int64(), deleted = try cells.bool(), name = try cells.string(), type = try cells.string()
            if deleted {
                changes.append(FeedChange(sequence: number, entry: .init(record: Record(recordName: name, recordType: type, zoneID: zoneID, deleted: true))))
            } else {
                let tag = try cells.optionalString(), fields = try cells.optionalString()
                let created = Stamp(timestamp: try cells.optionalInt64() ?? 0, userRecordName: try cells.optionalString() ?? "", deviceID: try cells.optionalString())
                let modified = Stamp(timestamp: try cells.optionalInt64() ?? 0, userRecordName: try cells.optionalString() ?? "", deviceID: try cells.optionalString())
                let record = Record(recordName: name, recordType: type, zoneID: zoneID, recordChangeTag: tag, created: created, modified: modified,
                                    parent: try cells.optionalString())
                changes.append(FeedChange(sequence: number, entry: .init(record: record, fieldsJSON: fields)))
            }
        }
        return changes
    }
}
