import Foundation
import PostgresNIO
import RecordModel
import RecordRules
import RecordSQL

extension PostgresTransaction {
    /// Records and tombstones after a place in the feed, each half read in sequence order from
    /// its `(zone_id, seq)` index and limited, then merged (PostgreSQL's Merge Append stops at
    /// the limit).
    func changes(inZone zone: Int64, zoneID: ZoneID, after sequence: Int64, tombstonesAfter: Int64,
                 recordTypes: [String]?, limit: Int) throws -> [FeedChange] {
        let tombstoneBound = max(sequence, tombstonesAfter)
        let allTypes = recordTypes == nil
        let types = recordTypes ?? []
        var changes: [FeedChange] = []
        for row in try rows("""
            (SELECT seq, FALSE AS deleted, \(unescaped: Self.recordColumns) FROM records
             WHERE zone_id = \(zone) AND seq > \(sequence) AND (\(allTypes) OR type = ANY(\(types)))
             ORDER BY seq LIMIT \(limit))
            UNION ALL
            (SELECT seq, TRUE, name, type, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM tombstones
             WHERE zone_id = \(zone) AND seq > \(tombstoneBound) AND (\(allTypes) OR type = ANY(\(types)))
             ORDER BY seq LIMIT \(limit))
            ORDER BY 1 LIMIT \(limit)
            """) {
            let (number, deleted, name, type) = try row.decode((Int64, Bool, String, String).self)
            if deleted {
                changes.append(FeedChange(sequence: number, entry: .init(record: Record(recordName: name, recordType: type, zoneID: zoneID, deleted: true))))
            } else {
                let (record, fields) = try Self.storedRecord(from: row, zoneID: zoneID, offset: 2)
                changes.append(FeedChange(sequence: number, entry: .init(record: record, fieldsJSON: fields)))
            }
        }
        return changes
    }

    func query(_ query: Query, inZones zones: [Int64: ZoneID], schema: [String: FieldType],
               after marker: ContinuationMarker?, limit: Int) throws -> [QueryMatch] {
        let compiler = QueryCompiler(zoneKeys: zones.keys.sorted(), schema: schema, keyedReferenceFields: true, dialect: .postgres)
        let statement = try compiler.compile(query, after: marker, limit: limit)
        let firstKey = 1 + RecordRow.columnCount
        return try rows(try Self.statement(statement.sql, statement.values)).map { row in
            let zoneKey = try row.decode(Int64.self)
            let cells = Array(row)
            return QueryMatch(record: try Self.record(from: row, zoneID: zones[zoneKey] ?? .defaultZone, offset: 1), zoneKey: zoneKey,
                              sortValues: try (0..<statement.sortKeyCount).map { try Self.markerValue(cells[firstKey + $0]) })
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
