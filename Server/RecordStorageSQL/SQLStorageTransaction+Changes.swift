import Foundation
import RecordModel
import RecordSQL
import RecordStorage

/// A zone's change feed read a page at a time, and queries. Both engines override the change
/// page (docs/architecture.md): SQLite reads its rows through its C API, PostgreSQL through a
/// function of its own; ``changePage(inZone:zoneID:after:tombstonesAfter:recordTypes:limit:)``
/// is the statement they are tested against.
extension SQLStorageTransaction {
    public func changes(inZone zone: Int64, zoneID: ZoneID, after sequence: Int64, tombstonesAfter: Int64,
                        recordTypes: [String]?, limit: Int) throws -> [FeedChange] {
        try changePage(inZone: zone, zoneID: zoneID, after: sequence, tombstonesAfter: tombstonesAfter, recordTypes: recordTypes, limit: limit)
    }

    /// Records and tombstones after a place in the feed, in feed order, optionally of some
    /// record types: ``changePageStatement(inZone:after:tombstonesAfter:recordTypes:limit:in:)``.
    public func changePage(inZone zone: Int64, zoneID: ZoneID, after sequence: Int64, tombstonesAfter: Int64,
                           recordTypes: [String]?, limit: Int) throws -> [FeedChange] {
        try fetch(.changePage(inZone: zone, after: sequence, tombstonesAfter: tombstonesAfter, recordTypes: recordTypes, limit: limit, in: dialect)).map {
            try Self.feedChange(from: $0, zoneID: zoneID)
        }
    }

    public func changes(ofRecords names: [String], inZone zone: Int64, zoneID: ZoneID, after sequence: Int64, recordTypes: [String]?, limit: Int) throws -> [FeedChange] {
        guard !names.isEmpty else { return [] }
        let typeFilter: SQLStatement = recordTypes.map { types -> SQLStatement in " AND \(SQLStatement.member("type", of: types, in: dialect))" } ?? ""
        return try fetch("""
            SELECT seq, 0 AS deleted, \(raw: RecordRow.columns) FROM records
            WHERE zone_id = \(zone) AND \(SQLStatement.member("name", of: names, in: dialect)) AND seq > \(sequence)\(typeFilter)
            ORDER BY seq LIMIT \(limit)
            """).map { try Self.feedChange(from: $0, zoneID: zoneID) }
    }

    /// A change from a row of ``SQLStatement/changePage(inZone:after:tombstonesAfter:recordTypes:limit:in:)``'s columns.
    static func feedChange(from row: SQLRow, zoneID: ZoneID) throws -> FeedChange {
        let sequence = try row.int64(0)
        if try row.bool(1) {
            return FeedChange(sequence: sequence, entry: .init(record: Record(recordName: try row.string(2), recordType: try row.string(3), zoneID: zoneID, deleted: true)))
        }
        let record = Record(recordName: try row.string(2), recordType: try row.string(3), zoneID: zoneID, recordChangeTag: try row.string(4),
                            created: Stamp(timestamp: try row.int64(6), userRecordName: try row.string(7), deviceID: try row.optionalString(8)),
                            modified: Stamp(timestamp: try row.int64(9), userRecordName: try row.string(10), deviceID: try row.optionalString(11)),
                            parent: try row.optionalString(12))
        return FeedChange(sequence: sequence, entry: .init(record: record, fieldsJSON: try row.string(5)))
    }

    /// The records of a query's page (``QueryCompiler``): the zone's key, ``RecordRow/columns``,
    /// the sort keys' values, then the flags' truth.
    public func query(_ query: Query, inZones zones: [Int64: ZoneID], schema: QuerySchema,
                      after marker: ContinuationMarker?, limit: Int) throws -> [QueryMatch] {
        let compiler = QueryCompiler(zoneKeys: zones.keys.sorted(), schema: schema, keyedReferenceFields: true, wordBlocks: true, dialect: dialect)
        let compiled = try compiler.compile(query, after: marker, limit: limit)
        let firstKey = 1 + RecordRow.columnCount
        return try fetch(SQLStatement(compiled: compiled.sql, values: compiled.values)).map { row in
            let zoneKey = try row.int64(0)
            return QueryMatch(record: try row.record(zoneID: zones[zoneKey] ?? .defaultZone, offset: 1), zoneKey: zoneKey,
                              sortValues: (0..<compiled.sortKeyCount).map { QueryCompiler.markerValue(row.cells[firstKey + $0]) },
                              flags: try (0..<compiled.flagCount).map { try row.optionalBool(firstKey + compiled.sortKeyCount + $0) })
        }
    }
}

extension SQLStatement {
    /// One page of a zone's changes: its records after `sequence` and its tombstones after the
    /// larger of `sequence` and `tombstonesAfter` (given two bounds, SQLite may range-scan from
    /// the smaller), optionally only of `recordTypes`, in feed order, at most `limit`. Columns:
    /// `seq`, deleted (0 or 1), then ``RecordRow/columns`` (a tombstone's all null after `type`).
    ///
    /// Each half is read in sequence order from its `(zone_id, seq)` index and the two merged:
    /// the ORDER BY belongs to the compound select itself, so SQLite merges the halves and stops
    /// at the LIMIT. (Wrapped in `SELECT * FROM (…) ORDER BY`, it would materialise and sort
    /// everything after the place, for every page.)
    public static func changePage(inZone zone: Int64, after sequence: Int64, tombstonesAfter: Int64, recordTypes: [String]?,
                                  limit: Int, in dialect: SQLDialect) -> SQLStatement {
        let typeFilter: SQLStatement = recordTypes.map { types -> SQLStatement in " AND \(member("type", of: types, in: dialect))" } ?? ""
        let nulls = Array(repeating: "NULL", count: RecordRow.columnCount - 2).joined(separator: ", ")
        return """
            SELECT seq, 0 AS deleted, \(raw: RecordRow.columns) FROM records
            WHERE zone_id = \(zone) AND seq > \(sequence)\(typeFilter)
            UNION ALL
            SELECT seq, 1, name, type, \(raw: nulls) FROM tombstones
            WHERE zone_id = \(zone) AND seq > \(max(sequence, tombstonesAfter))\(typeFilter)
            ORDER BY 1 LIMIT \(limit)
            """
    }
}
