import RecordModel
import RecordSQL
import RecordStorage

extension SQLStorageTransaction {
    public func recordExists(named name: String, inZone zone: Int64) throws -> Bool {
        try !fetch("SELECT 1 FROM records WHERE zone_id = \(zone) AND name = \(name)").isEmpty
    }

    public func zoneHasTombstones(_ zone: Int64) throws -> Bool {
        try !fetch("SELECT 1 FROM tombstones WHERE zone_id = \(zone) LIMIT 1").isEmpty
    }

    /// A page of the records holding references to `target`: whole sources (every reference
    /// each holds to it), `limit` of them after `source`, each source's references by field name.
    public func references(to target: String, inZone zone: Int64, after source: String?, limit: Int) throws -> [(source: String, field: String, action: Reference.Action)] {
        let sources: SQLStatement = """
            SELECT DISTINCT source FROM refs WHERE zone_id = \(zone) AND target = \(target) AND source > \(source ?? "") ORDER BY source LIMIT \(limit)
            """
        return try fetch("""
            SELECT r.source, f.name, r.action FROM refs r JOIN ref_fields f ON f.id = r.field
            WHERE r.zone_id = \(zone) AND r.target = \(target) AND \(.member("r.source", ofRows: sources, in: dialect))
            ORDER BY r.source, f.name
            """).map { (try $0.string(0), try $0.string(1), ReferenceActionCode.action(try $0.int(2))) }
    }

    public func searchableTypes(inContainer container: Int64) throws -> Set<String> {
        try lockSearchTypes(inContainer: container, exclusive: false)
        return Set(try fetch("SELECT record_type FROM search_types WHERE container_id = \(container)").map { try $0.string(0) })
    }

    public func markSearchable(_ recordType: String, inContainer container: Int64) throws -> Bool {
        try lockSearchTypes(inContainer: container, exclusive: true)
        return try run("INSERT INTO search_types(container_id, record_type) VALUES (\(container), \(recordType)) ON CONFLICT DO NOTHING") > 0
    }

    /// The key of the reference field `name` in `ref_fields` (what `refs.field` holds), added
    /// if the store has none yet. A field name's key never changes and is never removed; keys
    /// are shared by every zone, and the order they were added in orders a cascade's sources.
    /// Looked up first, so a name already stored never spends a key (PostgreSQL's sequence
    /// moves on at each `INSERT`, even one that conflicts); a concurrent writer adding the same
    /// name leaves the insert nothing, and its key is read after it.
    public func fieldKey(_ name: String) throws -> Int64 {
        if let key = fieldKeys[name] { return key }
        let select: SQLStatement = "SELECT id FROM ref_fields WHERE name = \(name)"
        let key = try fetch(select).first?.int64(0)
            ?? fetch("INSERT INTO ref_fields(name) VALUES (\(name)) ON CONFLICT (name) DO NOTHING RETURNING id").first?.int64(0)
            ?? fetch(select).first?.int64(0)
        guard let key else { throw StaleWrite("reference field \(name) vanished") }
        fieldKeys[name] = key
        return key
    }

    public func registerReferenceFields(_ names: [String]) throws {
        for name in names { _ = try fieldKey(name) }
    }

    /// Zone by zone, each read by `records_by_type` from where the last left off (one row
    /// comparison over zone and name would walk the zone's records from its first).
    public func records(ofType recordType: String, inContainer container: Int64, after: (zone: Int64, name: String)?, limit: Int) throws
        -> [(zone: Int64, name: String, fields: String)] {
        var rows: [(zone: Int64, name: String, fields: String)] = []
        var position = after
        while rows.count < limit {
            if let (zone, name) = position {
                rows += try fetch("""
                    SELECT r.zone_id, r.name, r.fields FROM records r WHERE r.zone_id = \(zone) AND r.type = \(recordType) AND r.name > \(name)
                    ORDER BY r.name LIMIT \(limit - rows.count)\(raw: dialect.rowShareLock(of: "r"))
                    """).map { (try $0.int64(0), try $0.string(1), try $0.string(2)) }
                if rows.count == limit { break }
            }
            guard let next = try fetch("""
                SELECT z.id FROM zones z JOIN databases d ON d.id = z.database_id
                WHERE d.container_id = \(container) AND z.id > \(position?.zone ?? Int64.min)
                  AND EXISTS (SELECT 1 FROM records r WHERE r.zone_id = z.id AND r.type = \(recordType))
                ORDER BY z.id LIMIT 1
                """).first?.int64(0) else { break }
            position = (next, "")
        }
        return rows
    }

    public func searchBuilds(inContainer container: Int64) throws -> Set<String> {
        Set(try fetch("SELECT record_type FROM search_builds WHERE container_id = \(container)").map { try $0.string(0) })
    }

    public func startSearchBuild(_ build: SearchBuild) throws {
        try run("""
            INSERT INTO search_builds(container_id, record_type, after_zone, after_name, indexed, started_at)
            VALUES (\(build.container), \(build.recordType), \(build.after?.zone), \(build.after?.name), \(build.indexed), \(build.startedAt))
            ON CONFLICT DO NOTHING
            """)
    }

    public func takeSearchBuild(inContainer container: Int64?, ofType recordType: String?) throws -> SearchBuild? {
        let columns = "container_id, record_type, after_zone, after_name, indexed, started_at"
        let statement: SQLStatement = if let container, let recordType {
            "SELECT \(raw: columns) FROM search_builds WHERE container_id = \(container) AND record_type = \(recordType)\(raw: dialect.rowLock)"
        } else {
            "SELECT \(raw: columns) FROM search_builds ORDER BY indexed, started_at, container_id, record_type LIMIT 1\(raw: dialect.rowLockSkippingLocked)"
        }
        guard let row = try fetch(statement).first else { return nil }
        let zone = try row.optionalInt64(2), name = try row.optionalString(3)
        let build = SearchBuild(container: try row.int64(0), recordType: try row.string(1),
                                after: zone.flatMap { zone in name.map { SearchBuild.Position(zone: zone, name: $0) } },
                                indexed: try row.int64(4), startedAt: try row.int64(5))
        try lockSchema(inContainer: build.container, exclusive: true)
        return build
    }

    public func updateSearchBuild(_ build: SearchBuild, finished: Bool) throws {
        if finished {
            try run("DELETE FROM search_builds WHERE container_id = \(build.container) AND record_type = \(build.recordType)")
            // PostgreSQL plans a word search by the tables' statistics, which autovacuum would
            // bring up to date only a while after the build filled them (SQLite's order is fixed).
            if dialect == .postgres { try run("ANALYZE search_blocks, search_postings, search_members") }
        } else {
            try run("""
                UPDATE search_builds SET after_zone = \(build.after?.zone), after_name = \(build.after?.name), indexed = \(build.indexed)
                WHERE container_id = \(build.container) AND record_type = \(build.recordType)
                """)
        }
    }
}
