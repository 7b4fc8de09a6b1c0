import Foundation
import PostgresNIO
import RecordModel
import RecordSQL
import RecordStorage

/// Cascading deletes, set-based, as in the SQLite engine: the doomed records are collected level
/// by level into a temporary table over `refs_by_target` and removed by a few set statements.
extension PostgresTransaction {
    /// Creates the connection's temporary tables the first time it runs a write, before the
    /// write's transaction begins (so that no rollback undoes them). They last as long as the
    /// connection; their rows go at each commit.
    func prepareTemporaryTables() throws {
        let id = connection.id
        guard !engine.preparedConnections.withLockedValue({ $0.contains(id) }) else { return }
        try execute("""
            CREATE TEMP TABLE IF NOT EXISTS doomed(pos BIGINT PRIMARY KEY, name TEXT COLLATE "C" NOT NULL UNIQUE) ON COMMIT DELETE ROWS
            """)
        try execute("""
            CREATE TEMP TABLE IF NOT EXISTS batch_deleted(name TEXT COLLATE "C" PRIMARY KEY, operation BIGINT NOT NULL) ON COMMIT DELETE ROWS
            """)
        try execute("""
            CREATE TEMP TABLE IF NOT EXISTS nullified(pos BIGINT PRIMARY KEY, name TEXT COLLATE "C" NOT NULL UNIQUE) ON COMMIT DELETE ROWS
            """)
        engine.preparedConnections.withLockedValue { _ = $0.insert(id) }
    }

    func anyValidatingReference(inZone zone: Int64) throws -> Bool {
        try !rows("SELECT 1 FROM refs WHERE zone_id = \(zone) AND action = \(unescaped: ReferenceActionCode.sql(.validate)) LIMIT 1").isEmpty
    }

    /// Each level is one statement: the `DELETE_SELF` sources of the level before (a range of
    /// `pos`) not doomed yet, each once where it is first reached, numbered on in the contract's
    /// order (the level before's order, then field key, then name).
    func collectCascade(from root: String, inZone zone: Int64) throws -> Int {
        try execute("DELETE FROM doomed")
        try execute("INSERT INTO doomed(pos, name) VALUES (1, \(root))")
        var count: Int64 = 1
        var levelStart: Int64 = 0
        while true {
            let added = try execute("""
                INSERT INTO doomed(pos, name)
                SELECT \(count) + row_number() OVER (ORDER BY s.pos, s.field, s.source), s.source FROM (
                    SELECT DISTINCT ON (refs.source) refs.source, d.pos, refs.field
                    FROM doomed d JOIN refs ON refs.zone_id = \(zone) AND refs.target = d.name AND refs.action = \(unescaped: ReferenceActionCode.sql(.deleteSelf))
                    WHERE d.pos > \(levelStart) AND d.pos <= \(count)
                      AND NOT EXISTS (SELECT 1 FROM doomed x WHERE x.name = refs.source)
                    ORDER BY refs.source, d.pos, refs.field) s
                """)
            if added == 0 { return Int(count) }
            levelStart = count
            count += Int64(added)
            // A temporary table has no statistics until asked: past a few thousand rows, the
            // next level's plan (its anti-join against `doomed`, its sorts) needs them. 13 ms
            // for 100,000 rows; the 90,000-record level of the `cascade` scenario took 169 ms
            // with them, 227 without.
            if added >= 5_000 { try execute("ANALYZE doomed") }
        }
    }

    func noteValidatedInCascade(operation: Int, inZone zone: Int64) throws {
        try execute("""
            INSERT INTO batch_deleted(name, operation)
            SELECT d.name, \(operation) FROM doomed d
            WHERE EXISTS (SELECT 1 FROM refs WHERE refs.zone_id = \(zone) AND refs.target = d.name AND refs.action = \(unescaped: ReferenceActionCode.sql(.validate)))
            ON CONFLICT (name) DO UPDATE SET operation = excluded.operation
            """)
    }

    /// The tombstones are plain inserts: a stored record never has a tombstone (a save removes
    /// its name's), so none can conflict, and `ON CONFLICT` would cost a speculative insertion
    /// a row (377 ms against 231 ms for 90,000 tombstones). Were one there, the insert would fail
    /// and the delete with it, never leave two.
    func deleteCascade(root: String, inZone zone: Int64, firstSequence: Int64) throws -> [String] {
        try execute("""
            INSERT INTO tombstones(zone_id, name, type, seq)
            SELECT r.zone_id, r.name, r.type, \(firstSequence) + d.pos - 1 FROM doomed d JOIN records r ON r.zone_id = \(zone) AND r.name = d.name
            """)
        try execute("DELETE FROM refs WHERE zone_id = \(zone) AND source IN (SELECT name FROM doomed)")
        try execute("DELETE FROM search_tokens WHERE zone_id = \(zone) AND name IN (SELECT name FROM doomed)")
        try execute("DELETE FROM search_locations WHERE zone_id = \(zone) AND name IN (SELECT name FROM doomed)")
        try execute("DELETE FROM records WHERE zone_id = \(zone) AND name IN (SELECT name FROM doomed)")
        return try rows("SELECT name FROM doomed WHERE name <> \(root) ORDER BY name").map { try $0.decode(String.self) }
    }

    func collectNullifying(inZone zone: Int64) throws -> Int {
        try execute("DELETE FROM nullified")
        return try execute("""
            INSERT INTO nullified(pos, name)
            SELECT row_number() OVER (ORDER BY s.source), s.source FROM (
                SELECT DISTINCT refs.source FROM doomed d JOIN refs ON refs.zone_id = \(zone) AND refs.target = d.name AND refs.action = \(unescaped: ReferenceActionCode.sql(.nullify))
                WHERE NOT EXISTS (SELECT 1 FROM doomed x WHERE x.name = refs.source)) s
            """)
    }

    func nullifyingRecords(inZone zone: Int64, positions: ClosedRange<Int>) throws -> [NullifyingRecord] {
        var found: [NullifyingRecord] = []
        for row in try rows("""
            SELECT r.name, r.type, r.fields, r.created_at, r.created_by, f.name, refs.target
            FROM nullified n
            JOIN records r ON r.zone_id = \(zone) AND r.name = n.name
            JOIN refs ON refs.zone_id = \(zone) AND refs.source = n.name AND refs.action = \(unescaped: ReferenceActionCode.sql(.nullify))
            JOIN ref_fields f ON f.id = refs.field
            WHERE n.pos BETWEEN \(Int64(positions.lowerBound)) AND \(Int64(positions.upperBound))
              AND EXISTS (SELECT 1 FROM doomed d WHERE d.name = refs.target)
            ORDER BY n.pos, f.name COLLATE "C", refs.target
            """) {
            let (name, type, fields, createdAt, createdBy, field, target) = try row.decode((String, String, String, Int64, String, String, String).self)
            if found.last?.name != name {
                found.append(NullifyingRecord(name: name, recordType: type, fields: fields, created: Stamp(timestamp: createdAt, userRecordName: createdBy), references: []))
            }
            found[found.count - 1].references.append((field, target))
        }
        return found
    }

    func removeNullifiedReferences(inZone zone: Int64) throws {
        try execute("""
            DELETE FROM refs WHERE zone_id = \(zone) AND action = \(unescaped: ReferenceActionCode.sql(.nullify)) AND source IN (SELECT name FROM nullified)
              AND target IN (SELECT name FROM doomed)
            """)
    }

    func startDeleteRound() throws {
        try execute("DELETE FROM batch_deleted")
    }

    func validatingBlockers(inZone zone: Int64) throws -> [ValidatingBlocker] {
        try rows("""
            SELECT DISTINCT ON (b.operation) b.operation, refs.source, refs.target
            FROM batch_deleted b JOIN refs ON refs.zone_id = \(zone) AND refs.target = b.name AND refs.action = \(unescaped: ReferenceActionCode.sql(.validate))
            ORDER BY b.operation, refs.target, refs.field, refs.source
            """).map { let (operation, source, target) = try $0.decode((Int64, String, String).self); return ValidatingBlocker(operation: Int(operation), source: source, target: target) }
    }
}
