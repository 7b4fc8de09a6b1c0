import Foundation
import GRDB
import RecordModel
import RecordStorage
import RecordSQL

extension SQLiteTransaction {
    func changes(inZone zone: Int64, zoneID: ZoneID, after sequence: Int64, tombstonesAfter: Int64,
                 recordTypes: [String]?, limit: Int) throws -> [FeedChange] {
        var typeArguments = StatementArguments()
        if let recordTypes { typeArguments = StatementArguments(recordTypes) }
        let sql = Self.changesSQL(recordTypeCount: recordTypes?.count)
        let arguments: StatementArguments = [zone, sequence] + typeArguments + [zone, tombstonesAfter] + typeArguments + [limit]
        // The usual page (no type filter) reuses one prepared statement; a filter's SQL depends
        // on how many types it lists, so it is prepared for the request (GRDB's statement
        // cache never evicts, and a client could list any number).
        let statement = recordTypes == nil ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
        // Read through SQLite's C API: a change page reads hundreds of rows, and their user
        // names (the same few over and over) are made into a string when they change, not
        // twice a row. The columns: seq, deleted, then ``RecordRow/columns``.
        var rows = try SQLiteRowReader(statement, arguments: arguments, in: db)
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
                                    modified: Stamp(timestamp: rows.int64(9), userRecordName: rows.repeatedText(10), deviceID: rows.optionalText(11)))
                changes.append(FeedChange(sequence: sequence, entry: .init(record: record, fieldsJSON: rows.optionalText(5))))
            }
        }
        return changes
    }

    /// The query of one page of a zone's changes: records and tombstones after a place in the
    /// feed, in feed order, optionally of `recordTypeCount` record types. Arguments: zone,
    /// sequence, types…, zone, tombstone bound, types…, limit.
    ///
    /// Both halves are read in sequence order from their `(zone_id, seq)` indexes and merged;
    /// the ORDER BY belongs to the compound select itself, so SQLite merges the halves and stops
    /// at the LIMIT. (Wrapped in `SELECT * FROM (…) ORDER BY`, it materialised and sorted
    /// everything after the token, for every page: fetching a large cascade's tombstones took
    /// quadratic time.) Tombstones get one lower bound, the larger of the token's place and its
    /// floor: given two, SQLite may range-scan from the smaller.
    static func changesSQL(recordTypeCount: Int?) -> String {
        let typeFilter = recordTypeCount.map { " AND type IN (\(Array(repeating: "?", count: $0).joined(separator: ", ")))" } ?? ""
        return """
            SELECT seq, 0 AS deleted, \(RecordRow.columns) FROM records
            WHERE zone_id = ? AND seq > ?\(typeFilter)
            UNION ALL
            SELECT seq, 1, name, type, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM tombstones
            WHERE zone_id = ? AND seq > ?\(typeFilter)
            ORDER BY 1 LIMIT ?
            """
    }

    func query(_ query: Query, inZones zones: [Int64: ZoneID], schema: QuerySchema,
               after marker: ContinuationMarker?, limit: Int) throws -> [QueryMatch] {
        let compiler = QueryCompiler(zoneKeys: zones.keys.sorted(), schema: schema, keyedReferenceFields: true)
        let statement = try compiler.compile(query, after: marker, limit: limit)
        var matches: [QueryMatch] = []
        let rows = try Row.fetchCursor(db, sql: statement.sql, arguments: statement.arguments)
        let firstKey = 1 + RecordRow.columnCount
        while let row = try rows.next() {
            let zoneKey: Int64 = row[0]
            matches.append(QueryMatch(record: try RecordRow.record(from: row, zoneID: zones[zoneKey] ?? .defaultZone, offset: 1), zoneKey: zoneKey,
                                      sortValues: (0..<statement.sortKeyCount).map { QueryCompiler.markerValue(row[firstKey + $0] as DatabaseValue) },
                                      flags: (0..<statement.flagCount).map { row[firstKey + statement.sortKeyCount + $0] as Bool? }))
        }
        return matches
    }
}

