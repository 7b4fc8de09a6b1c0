import RecordModel
import RecordSQL
import RecordStorage

/// A cascading delete, set-based: the records it removes are found level by level over the
/// `refs_by_target` index (one statement a level) into the connection's temporary table
/// `doomed`, and removed by a handful of set statements, never by loading the zone.
/// SQLite overrides the walk (``collectCascadeLevels(from:inZone:)``, docs/architecture.md).
extension SQLStorageTransaction {
    public func collectCascade(from root: String, inZone zone: Int64) throws -> Int {
        try collectCascadeLevels(from: root, inZone: zone)
    }

    /// Fills `doomed` with `root` and every record that holds a `DELETE_SELF` reference to a
    /// doomed record, transitively, numbered (`pos`, from 1) in the contract's order: `root`
    /// first, then breadth first, each level in the order of the level before and each
    /// record's sources by field key, then name. Each level is one statement
    /// (``SQLStatement/cascadeLevel(inZone:after:through:in:)``) until a level adds nothing; a
    /// doomed record is never added again, so cycles end the walk. A statement a level costs
    /// about 10 µs: one recursive `WITH RECURSIVE … UNION` statement finds the same records,
    /// but keeps a queue and a set of its own and took 2.5 times as long for a tree 10,000
    /// wide on SQLite; it wins only for a chain one record wide (0.08 s against 0.21 s for
    /// 20,000 deep: docs/performance.md, "The cascade walks level by level").
    ///
    /// - Returns: how many records are doomed, `root` included.
    public func collectCascadeLevels(from root: String, inZone zone: Int64) throws -> Int {
        try prepareTemporaryTable(.doomed)
        let doomed = dialect.temporary("doomed")
        try run("DELETE FROM \(raw: doomed)")
        try run("INSERT INTO \(raw: doomed)(pos, name) VALUES (1, \(root))")
        var count: Int64 = 1
        var levelStart: Int64 = 0
        while true {
            let added = try run(.cascadeLevel(inZone: zone, after: levelStart, through: count, in: dialect))
            if added == 0 { return Int(count) }
            levelStart = count
            count += Int64(added)
            // Past a few thousand rows, the next level's plan (its anti-join against `doomed`,
            // its sorts) needs statistics, which PostgreSQL keeps for a temporary table only
            // when asked: 13 ms for 100,000 rows; the 90,000-record level of the `cascade`
            // scenario took 169 ms with them, 227 without.
            if added >= 5_000, dialect == .postgres { try run("ANALYZE doomed") }
        }
    }

    /// The doomed records in the order reached (subscriptions firing on the deletes).
    public func doomedNames() throws -> [String] {
        try fetch("SELECT name FROM \(raw: dialect.temporary("doomed")) ORDER BY pos").map { try $0.string(0) }
    }

    /// Fills `nullified` (``SQLStatement/collectingNullifying(inZone:in:)``).
    public func collectNullifying(inZone zone: Int64) throws -> Int {
        try prepareTemporaryTable(.nullified)
        try run("DELETE FROM \(raw: dialect.temporary("nullified"))")
        return try run(.collectingNullifying(inZone: zone, in: dialect))
    }

    /// The records of `nullified` within `positions` (``SQLStatement/nullifyingRecords(inZone:positions:in:)``).
    public func nullifyingRecords(inZone zone: Int64, positions: ClosedRange<Int>) throws -> [NullifyingRecord] {
        var found: [NullifyingRecord] = []
        for row in try fetch(.nullifyingRecords(inZone: zone, positions: positions, in: dialect)) {
            let name = try row.string(0)
            if found.last?.name != name {
                found.append(NullifyingRecord(name: name, recordType: try row.string(1), fields: try row.string(2),
                                              created: Stamp(timestamp: try row.int64(3), userRecordName: try row.string(4)), references: [],
                                              parent: try row.optionalString(7)))
            }
            found[found.count - 1].references.append((try row.string(5), try row.string(6)))
        }
        return found
    }

    public func startDeleteRound() throws {
        try prepareTemporaryTable(.batchDeleted)
        try run("DELETE FROM \(raw: dialect.temporary("batch_deleted"))")
    }

    /// ``SQLStatement/validatingBlockers(inZone:in:)``.
    public func validatingBlockers(inZone zone: Int64) throws -> [ValidatingBlocker] {
        try fetch(.validatingBlockers(inZone: zone, in: dialect)).map { ValidatingBlocker(operation: try $0.int(0), source: try $0.string(1), target: try $0.string(2)) }
    }

    public func anyValidatingReference(inZone zone: Int64) throws -> Bool {
        try !fetch(.anyValidatingReference(inZone: zone)).isEmpty
    }

    public func noteValidatedInCascade(operation: Int, inZone zone: Int64) throws {
        try run(.notingValidated(operation: operation, inZone: zone, in: dialect))
    }

    /// Deletes every doomed record: tombstones numbered `firstSequence`, `firstSequence + 1`, …
    /// in `doomed` order (root first), their references and search rows, then the rows.
    ///
    /// - Returns: the names deleted besides `root`, sorted.
    public func deleteCascade(root: String, inZone zone: Int64, firstSequence: Int64) throws -> [String] {
        for statement in SQLStatement.deletingDoomed(inZone: zone, firstSequence: firstSequence, in: dialect) { try run(statement) }
        return try fetch("SELECT name FROM \(raw: dialect.temporary("doomed")) WHERE name <> \(root) ORDER BY name").map { try $0.string(0) }
    }

    public func removeNullifiedReferences(inZone zone: Int64) throws {
        try run("""
            DELETE FROM refs WHERE zone_id = \(zone) AND action = \(raw: ReferenceActionCode.sql(.nullify))
              AND source IN (SELECT name FROM \(raw: dialect.temporary("nullified"))) AND target IN (SELECT name FROM \(raw: dialect.temporary("doomed")))
            """)
    }
}

extension SQLStatement {
    /// One level of a cascade's walk: the `DELETE_SELF` sources of the doomed records numbered
    /// in (`after`, `through`], not doomed yet, each once where it is first reached, numbered on
    /// from `through + 1` in the contract's order (the level before's, then field key, then
    /// name). The level before leads (a range of `pos`), each name one covering search of
    /// `refs_by_target`.
    public static func cascadeLevel(inZone zone: Int64, after levelStart: Int64, through count: Int64, in dialect: SQLDialect) -> SQLStatement {
        let doomed = dialect.temporary("doomed")
        return """
            INSERT INTO \(raw: doomed)(pos, name)
            SELECT \(count) + row_number() OVER (ORDER BY s.pos, s.field, s.source), s.source FROM (
                SELECT refs.source, d.pos, refs.field,
                       row_number() OVER (PARTITION BY refs.source ORDER BY d.pos, refs.field) AS reach
                FROM \(raw: doomed) d \(raw: dialect.orderedJoin) refs
                ON refs.zone_id = \(zone) AND refs.target = d.name AND refs.action = \(raw: ReferenceActionCode.sql(.deleteSelf))
                WHERE d.pos > \(levelStart) AND d.pos <= \(count)
                  AND NOT EXISTS (SELECT 1 FROM \(raw: doomed) x WHERE x.name = refs.source)) s
            WHERE s.reach = 1
            """
    }

    /// Fills `nullified` with the records of the zone, not doomed, holding a `NULLIFY`
    /// reference to a doomed one, numbered from 1 in byte order of name: each doomed name one
    /// search of `refs_by_target`.
    public static func collectingNullifying(inZone zone: Int64, in dialect: SQLDialect) -> SQLStatement {
        let doomed = dialect.temporary("doomed")
        let names: SQLStatement = """
            SELECT DISTINCT refs.source AS name FROM \(raw: doomed) d \(raw: dialect.orderedJoin) refs
            ON refs.zone_id = \(zone) AND refs.target = d.name AND refs.action = \(raw: ReferenceActionCode.sql(.nullify))
            WHERE NOT EXISTS (SELECT 1 FROM \(raw: doomed) x WHERE x.name = refs.source)
            """
        return names.numbered(into: .nullified, in: dialect)
    }

    /// Inserts the `name`s this statement selects into `table` (emptied before), numbered
    /// (`pos`) from 1 in byte order: SQLite lets the rowid number them as they come in that
    /// order; PostgreSQL numbers them with `row_number()`, which on SQLite costs a second sort
    /// (0.35 s against 0.17 s for 100,000 names).
    func numbered(into table: TemporaryTable, in dialect: SQLDialect) -> SQLStatement {
        let target = dialect.temporary(table.rawValue)
        return dialect == .sqlite
            ? "INSERT INTO \(raw: target)(name) SELECT name FROM (\(self)) s ORDER BY name"
            : "INSERT INTO \(raw: target)(pos, name) SELECT row_number() OVER (ORDER BY name), name FROM (\(self)) s"
    }

    /// The records of `nullified` within `positions`, one row per `NULLIFY` reference to a
    /// doomed record: name, type, fields, creation, field name, target. The range leads the
    /// joins (``SQLDialect/orderedJoin``), each name one search of the references' and the
    /// records' keys: left to itself, SQLite walked every reference to the doomed records for
    /// each range (2.4 s of reads for 100,000 records, against 0.1 s).
    public static func nullifyingRecords(inZone zone: Int64, positions: ClosedRange<Int>, in dialect: SQLDialect) -> SQLStatement {
        let join = dialect.orderedJoin
        return """
            SELECT r.name, r.type, r.fields, r.created_at, r.created_by, f.name, refs.target, r.parent
            FROM \(raw: dialect.temporary("nullified")) n
            \(raw: join) refs ON refs.source = n.name AND refs.zone_id = \(zone) AND refs.action = \(raw: ReferenceActionCode.sql(.nullify))
            \(raw: join) records r ON r.zone_id = \(zone) AND r.name = n.name
            \(raw: join) ref_fields f ON f.id = refs.field
            WHERE n.pos BETWEEN \(positions.lowerBound) AND \(positions.upperBound)
              AND refs.target IN (SELECT name FROM \(raw: dialect.temporary("doomed")))
            ORDER BY n.pos, f.name, refs.target
            """
    }

    /// For each delete operation noted in `batch_deleted`, the first record of the zone holding
    /// a `VALIDATE` reference to a record it deleted, by (target, field key, source): operation,
    /// source, target. The noted names lead, each one search of `refs_by_target`; left to
    /// itself, SQLite walked every `VALIDATE` reference of the zone, even with nothing noted.
    public static func validatingBlockers(inZone zone: Int64, in dialect: SQLDialect) -> SQLStatement {
        """
        SELECT operation, source, target FROM (
            SELECT b.operation, refs.source, refs.target,
                   row_number() OVER (PARTITION BY b.operation ORDER BY refs.target, refs.field, refs.source) AS n
            FROM \(raw: dialect.temporary("batch_deleted")) b \(raw: dialect.orderedJoin) refs
            ON refs.zone_id = \(zone) AND refs.target = b.name AND refs.action = \(raw: ReferenceActionCode.sql(.validate))) v
        WHERE n = 1
        """
    }

    /// Whether any record of the zone holds a `VALIDATE` reference: one probe of the partial
    /// index `refs_validating` (its predicate names the code as a literal, as this does).
    public static func anyValidatingReference(inZone zone: Int64) -> SQLStatement {
        "SELECT 1 FROM refs WHERE zone_id = \(zone) AND action = \(raw: ReferenceActionCode.sql(.validate)) LIMIT 1"
    }

    /// Notes in `batch_deleted`, for `operation`, the doomed records that something in the zone
    /// holds a `VALIDATE` reference to: each doomed name one search of `refs_by_target`.
    public static func notingValidated(operation: Int, inZone zone: Int64, in dialect: SQLDialect) -> SQLStatement {
        """
        INSERT INTO \(raw: dialect.temporary("batch_deleted"))(name, operation)
        SELECT d.name, \(operation) FROM \(raw: dialect.temporary("doomed")) d
        WHERE EXISTS (SELECT 1 FROM refs WHERE refs.zone_id = \(zone) AND refs.target = d.name AND refs.action = \(raw: ReferenceActionCode.sql(.validate)))
        ON CONFLICT (name) DO UPDATE SET operation = excluded.operation
        """
    }

    /// The statements that delete the doomed records of a zone, in order: their tombstones,
    /// references, search rows, then the rows. Each reaches a doomed row by its key.
    ///
    /// The tombstones are numbered straight from `doomed.pos`: numbering by name instead (a
    /// window function) sorted the whole cascade and took twice as long as inserting them.
    /// They are plain inserts: a stored record never has a tombstone (a save removes its
    /// name's), so none can conflict, and an upsert would cost PostgreSQL a speculative
    /// insertion a row (377 ms against 231 ms for 90,000 tombstones). Were one there, the
    /// insert would fail and the delete with it, never leave two. `doomed` leads the join
    /// (``SQLDialect/orderedJoin``): left to itself, SQLite walked the zone's `records_by_type`
    /// index and probed `doomed` for every record of the zone.
    public static func deletingDoomed(inZone zone: Int64, firstSequence: Int64, in dialect: SQLDialect) -> [SQLStatement] {
        let doomed = dialect.temporary("doomed")
        return [
            """
            INSERT INTO tombstones(zone_id, name, type, seq)
            SELECT r.zone_id, r.name, r.type, \(firstSequence) + d.pos - 1 FROM \(raw: doomed) d \(raw: dialect.orderedJoin) records r ON r.zone_id = \(zone) AND r.name = d.name
            """,
        ] + [("refs", "source"), ("search_tokens", "name"), ("search_members", "name"), ("search_locations", "name"), ("records", "name")].map { table, name in
            "DELETE FROM \(raw: table) WHERE zone_id = \(zone) AND \(raw: name) IN (SELECT name FROM \(raw: doomed))"
        }
    }
}

/// The connection's temporary tables a delete works in, each declared here once. They last as
/// long as the connection; PostgreSQL's empty themselves at each commit, SQLite's are emptied
/// before each use.
public enum TemporaryTable: String, CaseIterable, Sendable {
    /// The records a cascade deletes, numbered in the order reached.
    case doomed
    /// The records holding `NULLIFY` references to doomed ones, numbered in byte order of name.
    case nullified
    /// The doomed records something holds a `VALIDATE` reference to, by delete operation.
    case batchDeleted = "batch_deleted"

    /// The statement that creates the table if the connection has none.
    public func createStatement(in dialect: SQLDialect) -> String {
        let integer = dialect == .sqlite ? "INTEGER" : "BIGINT"
        let text = dialect == .sqlite ? "TEXT" : #"TEXT COLLATE "C""#
        let columns = switch self {
        case .doomed, .nullified: "pos \(integer) PRIMARY KEY, name \(text) NOT NULL UNIQUE"
        case .batchDeleted: "name \(text) PRIMARY KEY, operation \(integer) NOT NULL"
        }
        let options = switch (self, dialect) {
        case (.batchDeleted, .sqlite): " WITHOUT ROWID"
        case (_, .sqlite): ""
        case (_, .postgres): " ON COMMIT DELETE ROWS"
        }
        return "CREATE TEMP TABLE IF NOT EXISTS \(rawValue)(\(columns))\(options)"
    }
}
