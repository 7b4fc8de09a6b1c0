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
                let record = Record(recordName: name, recordType: type, zoneID: zoneID, recordChangeTag: tag, created: created, modified: modified)
                changes.append(FeedChange(sequence: number, entry: .init(record: record, fieldsJSON: fields)))
            }
        }
        return changes
    }

    func query(_ query: Query, inZones zones: [Int64: ZoneID], schema: QuerySchema,
               after marker: ContinuationMarker?, limit: Int) throws -> [QueryMatch] {
        let compiler = QueryCompiler(zoneKeys: zones.keys.sorted(), schema: schema, keyedReferenceFields: true, dialect: .postgres)
        let statement = try compiler.compile(query, after: marker, limit: limit)
        let firstKey = 1 + RecordRow.columnCount
        return try rows(try Self.statement(statement.sql, statement.values)).map { row in
            let cells = Array(row)
            let zoneKey = try cells[0].decode(Int64.self)
            func cell<T: PostgresDecodable>(_ index: Int, _ type: T.Type) throws -> T { try cells[1 + index].decode(T.self) }
            let record = Record(
                recordName: try cell(0, String.self), recordType: try cell(1, String.self), zoneID: zones[zoneKey] ?? .defaultZone,
                recordChangeTag: try cell(2, String.self), fields: try RecordRow.decodeFields(try cell(3, String.self)),
                created: Stamp(timestamp: try cell(4, Int64.self), userRecordName: try cell(5, String.self), deviceID: try cell(6, String?.self)),
                modified: Stamp(timestamp: try cell(7, Int64.self), userRecordName: try cell(8, String.self), deviceID: try cell(9, String?.self)))
            return QueryMatch(record: record, zoneKey: zoneKey,
                              sortValues: try (0..<statement.sortKeyCount).map { try Self.markerValue(cells[firstKey + $0]) },
                              flags: try (0..<statement.flagCount).map { try cells[firstKey + statement.sortKeyCount + $0].decode(Bool?.self) })
        }
    }

    /// The JSON value of a sort-key column, for a continuation marker (as the SQLite engine's:
    /// an integer, a double, a string, or null).
    static func markerValue(_ cell: PostgresCell) throws -> JSONValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int2, .int4, .int8: return .int(try cell.decode(Int64.self))
        case .float4, .float8: return .double(try cell.decode(Double.self))
        default: return .string(try cell.decode(String.self))
        }
    }
}
