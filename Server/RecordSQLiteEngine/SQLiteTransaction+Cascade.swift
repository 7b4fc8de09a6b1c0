import Foundation
import GRDB
import RecordModel
import RecordSQL
import RecordStorage

extension SQLiteTransaction {
    func anyValidatingReference(inZone zone: Int64) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: Cascade.anyValidatingSQL), arguments: [zone]) == true
    }

    func collectCascade(from root: String, inZone zone: Int64) throws -> Int {
        try Cascade.collect(root: root, zoneKey: zone, in: db)
    }

    func noteValidatedInCascade(operation: Int, inZone zone: Int64) throws {
        try db.execute(sql: Cascade.noteValidatedSQL, arguments: [operation, zone])
    }

    func deleteCascade(root: String, inZone zone: Int64, firstSequence: Int64) throws -> [String] {
        try Cascade.deleteDoomed(root: root, zoneKey: zone, firstSequence: firstSequence, in: db)
    }

    func collectNullifying(inZone zone: Int64) throws -> Int {
        try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS nullified(pos INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")
        try db.execute(sql: "DELETE FROM temp.nullified")
        try db.execute(sql: Cascade.collectNullifyingSQL, arguments: [zone])
        return try Int.fetchOne(db, sql: "SELECT count(*) FROM temp.nullified") ?? 0
    }

    func nullifyingRecords(inZone zone: Int64, positions: ClosedRange<Int>) throws -> [NullifyingRecord] {
        var found: [NullifyingRecord] = []
        for row in try Row.fetchAll(db.cachedStatement(sql: Cascade.nullifyingRecordsSQL), arguments: [zone, positions.lowerBound, positions.upperBound]) {
            let name: String = row[0]
            if found.last?.name != name {
                found.append(NullifyingRecord(name: name, recordType: row[1], fields: row[2], created: Stamp(timestamp: row[3], userRecordName: row[4]), references: []))
            }
            found[found.count - 1].references.append((row[5], row[6]))
        }
        return found
    }

    func removeNullifiedReferences(inZone zone: Int64) throws {
        try db.execute(sql: """
            DELETE FROM refs WHERE zone_id = ?1 AND action = \(ReferenceActionCode.nullify) AND source IN (SELECT name FROM temp.nullified)
              AND target IN (SELECT name FROM temp.doomed)
            """, arguments: [zone])
    }

    func startDeleteRound() throws {
        try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS batch_deleted(name TEXT PRIMARY KEY, operation INTEGER NOT NULL) WITHOUT ROWID")
        try db.execute(sql: "DELETE FROM temp.batch_deleted")
    }

    func validatingBlockers(inZone zone: Int64) throws -> [ValidatingBlocker] {
        try Row.fetchAll(db, sql: Cascade.blockersSQL, arguments: [zone]).map { ValidatingBlocker(operation: $0[0], source: $0[1], target: $0[2]) }
    }
}

/// Cascading deletes, set-based: the records a delete removes are found level by level over the
/// `refs_by_target` index (one statement a level) and removed by a handful of set statements,
/// never by loading the zone.
enum Cascade {
    /// Fills the temporary table `doomed` with `root` and every record that holds a
    /// `DELETE_SELF` reference to a doomed record, transitively, numbered (`pos`, from 1) in the
    /// order they were reached: `root` first, then breadth first, each level in the order of
    /// the level before and each record's sources in `refs_by_target` order (by field key,
    /// then name).
    ///
    /// The walk goes one level at a time: one statement adds the sources of the level just
    /// added (a range of `pos`) through `refs_by_target` alone (a covering search), until a
    /// level adds nothing. The `UNIQUE` name of `doomed` makes it stop on cycles: a record
    /// already doomed is not added (`OR IGNORE`) and so not walked again. One recursive
    /// `WITH RECURSIVE … UNION` statement finds the same records in the same order, but keeps a
    /// queue and a set of names of its own besides `doomed` (the walk keeps only a scratch copy
    /// of each level, since each statement reads the table it fills): it takes 2.5 times as long
    /// for a tree 10,000 wide. The walk costs a statement a level, about 10 µs, so a chain one
    /// record wide is where the recursive statement wins: 0.21 s against 0.08 s for a chain
    /// 20,000 deep (docs/performance.md, "The cascade walks level by level"). The later
    /// statements reach each doomed row by its key, (name, zone).
    ///
    /// - Returns: how many records are doomed, `root` included.
    static func collect(root: String, zoneKey: Int64, in db: Database) throws -> Int {
        try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS doomed(pos INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")
        try db.execute(sql: "DELETE FROM temp.doomed")
        try db.cachedStatement(sql: "INSERT INTO temp.doomed(pos, name) VALUES (1, ?)").execute(arguments: [root])
        let level = try db.cachedStatement(sql: levelSQL)
        var count: Int64 = 1
        var levelStart: Int64 = 0
        while true {
            try level.execute(arguments: [zoneKey, levelStart, count])
            // Rows are numbered in order (the largest `pos` plus one), so the level just added
            // is (count, count + changes].
            let added = Int64(db.changesCount)
            if added == 0 { return Int(count) }
            levelStart = count
            count += added
        }
    }

    /// One level of ``collect(root:zoneKey:in:)``: the zone, then the range of `pos` holding the
    /// level before (exclusive start, inclusive end). CROSS JOIN keeps that range the outer
    /// loop, each of its names one search of `refs_by_target`.
    static let levelSQL = """
        INSERT OR IGNORE INTO temp.doomed(name)
        SELECT refs.source FROM temp.doomed d CROSS JOIN refs
        ON refs.target = d.name AND refs.zone_id = ?1 AND refs.action = \(ReferenceActionCode.deleteSelf)
        WHERE d.pos > ?2 AND d.pos <= ?3
        """

    /// Whether any record of the zone (argument) holds a `VALIDATE` reference: one probe of the
    /// partial index `refs_validating`.
    static let anyValidatingSQL = "SELECT EXISTS (SELECT 1 FROM refs WHERE zone_id = ? AND action = \(ReferenceActionCode.validate))"

    /// Notes in `temp.batch_deleted`, for the operation (first argument), the doomed records
    /// that something in the zone (second argument) holds a `VALIDATE` reference to.
    static let noteValidatedSQL = """
        INSERT OR REPLACE INTO temp.batch_deleted(name, operation)
        SELECT d.name, ? FROM temp.doomed d
        WHERE EXISTS (SELECT 1 FROM refs WHERE refs.zone_id = ? AND refs.target = d.name AND refs.action = \(ReferenceActionCode.validate))
        """

    /// The tombstones of the doomed records (first sequence, zone). CROSS JOIN keeps `doomed`
    /// the outer loop, each row one search of the records' key; left to itself, SQLite walked
    /// the zone's `records_by_type` index and probed `doomed` for every record of the zone.
    static let tombstonesSQL = """
        INSERT OR REPLACE INTO tombstones(zone_id, name, type, seq)
        SELECT r.zone_id, r.name, r.type, ? + d.pos - 1
        FROM temp.doomed d CROSS JOIN records r ON r.zone_id = ?2 AND r.name = d.name
        """

    /// The records holding `NULLIFY` references to doomed ones (zone), not doomed themselves,
    /// numbered in byte order of name: each doomed name one search of `refs_by_target`.
    static let collectNullifyingSQL = """
        INSERT OR IGNORE INTO temp.nullified(name)
        SELECT DISTINCT refs.source FROM temp.doomed d CROSS JOIN refs
        ON refs.target = d.name AND refs.zone_id = ?1 AND refs.action = \(ReferenceActionCode.nullify)
        WHERE refs.source NOT IN (SELECT name FROM temp.doomed)
        ORDER BY refs.source
        """

    /// The records of ``collectNullifyingSQL`` numbered within a range (zone, first, last),
    /// one row per `NULLIFY` reference to a doomed record: name, type, fields, creation, field
    /// name, target. CROSS JOINs keep the range the outer loop, each name one search of the
    /// references' and the records' keys; left to itself, SQLite walked every reference to the
    /// doomed records for each range (2.4 s of reads for 100,000 records, against 0.1 s).
    static let nullifyingRecordsSQL = """
        SELECT r.name, r.type, r.fields, r.created_at, r.created_by, f.name, refs.target
        FROM temp.nullified n
        CROSS JOIN refs ON refs.source = n.name AND refs.zone_id = ?1 AND refs.action = \(ReferenceActionCode.nullify)
        CROSS JOIN records r ON r.zone_id = ?1 AND r.name = n.name
        CROSS JOIN ref_fields f ON f.id = refs.field
        WHERE n.pos BETWEEN ?2 AND ?3 AND refs.target IN (SELECT name FROM temp.doomed)
        ORDER BY n.pos, f.name, refs.target
        """

    /// The doomed rows of the zone (argument), each one search of the records' key.
    static let deleteRowsSQL = "DELETE FROM records WHERE zone_id = ? AND name IN (SELECT name FROM temp.doomed)"

    /// For each delete operation of the batch, the first record left in the zone (argument) that
    /// holds a `VALIDATE` reference to a record it deleted, in `refs_by_target` order (target,
    /// field key, source). CROSS JOIN keeps the noted names the outer loop, each one search of
    /// `refs_by_target`; otherwise SQLite walked every `VALIDATE` reference of the zone, even
    /// with nothing noted.
    static let blockersSQL = """
        SELECT operation, source, target FROM (
            SELECT b.operation, refs.source, refs.target,
                   row_number() OVER (PARTITION BY b.operation ORDER BY refs.target, refs.field, refs.source) AS n
            FROM temp.batch_deleted b CROSS JOIN refs
            ON refs.zone_id = ? AND refs.target = b.name AND refs.action = \(ReferenceActionCode.validate))
        WHERE n = 1
        """

    /// Deletes every doomed record: tombstones numbered `firstSequence`, `firstSequence + 1`, …
    /// in `doomed` order (root first), their references and search rows, then the rows.
    ///
    /// The numbering comes straight from `doomed.pos`: numbering by name instead (a window
    /// function) sorted the whole cascade and took twice as long as inserting the tombstones.
    ///
    /// - Returns: the names deleted besides `root`, sorted.
    static func deleteDoomed(root: String, zoneKey: Int64, firstSequence: Int64, in db: Database) throws -> [String] {
        try db.execute(sql: tombstonesSQL, arguments: [firstSequence, zoneKey])
        try db.execute(sql: "DELETE FROM refs WHERE zone_id = ? AND source IN (SELECT name FROM temp.doomed)", arguments: [zoneKey])
        try db.execute(sql: "DELETE FROM search_tokens WHERE zone_id = ? AND name IN (SELECT name FROM temp.doomed)", arguments: [zoneKey])
        try db.execute(sql: "DELETE FROM search_locations WHERE zone_id = ? AND name IN (SELECT name FROM temp.doomed)", arguments: [zoneKey])
        try db.execute(sql: deleteRowsSQL, arguments: [zoneKey])
        return try String.fetchAll(db, sql: "SELECT name FROM temp.doomed WHERE name <> ? ORDER BY name", arguments: [root])
    }
}
