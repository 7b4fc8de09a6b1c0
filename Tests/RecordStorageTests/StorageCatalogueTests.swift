import Foundation
import GRDB
import Logging
import PostgresNIO
import RecordPostgresEngine
import RecordSQL
import RecordSQLiteEngine
import TestSupport
import Testing

/// The schema described once (``StorageSchema``) is what the shipped migrations build: on each
/// engine, a database made by the migrations and one made from the description have the same
/// catalogue (tables, columns with their types, nullability, defaults and collations, keys,
/// unique, check and foreign-key constraints, indexes with their predicates, functions and
/// triggers). Neither can change alone.
@Suite struct StorageCatalogueTests {
    @Test func sqliteMigrationsBuildTheDescribedSchema() async throws {
        try await withTemporaryDirectory { directory in
            let migrated = try SQLiteEngine(path: directory + "/migrated.sqlite")
            let fromMigrations = try await migrated.pool.read { try Self.sqliteCatalogue($0) }
            let described = try DatabaseQueue(path: directory + "/described.sqlite")
            try await described.write { db in
                for statement in StorageSchema.createStatements(in: .sqlite) { try db.execute(sql: statement) }
            }
            let fromDescription = try await described.read { try Self.sqliteCatalogue($0) }
            Self.expectSame(fromMigrations, fromDescription)
            #expect(fromMigrations.contains { $0.hasPrefix("table records ") })
        }
    }

    @Test(.enabled(if: TestPostgres.url != nil, "needs RECORDSYNC_TEST_POSTGRES"))
    func postgresMigrationsBuildTheDescribedSchema() async throws {
        try await withTemporaryDirectory { directory in
            let migratedURL = try await TestPostgres.databaseURL(for: directory + "/migrated")
            let describedURL = try await TestPostgres.databaseURL(for: directory + "/described")
            let engine = try await PostgresEngine(location: try PostgresLocation(url: migratedURL))
            await engine.shutdown()
            let logger = Logger(label: "test.catalogue")
            try await PostgresEngine.withConnection(to: try PostgresLocation(url: describedURL), logger: logger) { connection in
                for statement in StorageSchema.createStatements(in: .postgres) {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
            }
            let fromMigrations = try await Self.postgresCatalogue(schema: Self.schema(of: migratedURL))
            let fromDescription = try await Self.postgresCatalogue(schema: Self.schema(of: describedURL))
            Self.expectSame(fromMigrations, fromDescription)
            #expect(fromMigrations.contains { $0.hasPrefix("table records") })
        }
    }

    /// A migration written once, in the description's terms, brings a database of either engine
    /// from one description to the next: a table created from the first, then migrated, has
    /// the catalogue of the table created from the second.
    @Test func aMigrationWrittenOnceBuildsTheNextDescriptionOnEveryEngine() async throws {
        let before = TableDefinition("notes", [ColumnDefinition("id", .int64, generated: .rowid), .name("title")], primaryKey: ["id"])
        let after = TableDefinition(before.name, before.columns + [ColumnDefinition("pinned", .bool, default: .bool(false))], primaryKey: before.primaryKey,
                                    indexes: [IndexDefinition("notes_pinned", ["title"], where: "pinned")])
        let migration = SchemaMigration("v-test-pinned", [.addColumn("pinned", to: after), .createIndex("notes_pinned", on: after)])
        try await withTemporaryDirectory { directory in
            let migrated = try DatabaseQueue(path: directory + "/migrated.sqlite"), described = try DatabaseQueue(path: directory + "/described.sqlite")
            try await migrated.write { db in
                for statement in before.createStatements(in: .sqlite) + migration.statements(in: .sqlite) { try db.execute(sql: statement) }
            }
            try await described.write { db in
                for statement in after.createStatements(in: .sqlite) { try db.execute(sql: statement) }
            }
            let fromMigration = try await migrated.read { try Self.sqliteCatalogue($0) }
            Self.expectSame(fromMigration, try await described.read { try Self.sqliteCatalogue($0) })
            #expect(fromMigration.contains { $0.contains("pinned INTEGER notnull=1 default=0") }, "\(fromMigration)")
            guard TestPostgres.url != nil else { return }
            let logger = Logger(label: "test.catalogue")
            let migratedURL = try await TestPostgres.databaseURL(for: directory + "/migrated")
            let describedURL = try await TestPostgres.databaseURL(for: directory + "/described")
            for (url, statements) in [(migratedURL, before.createStatements(in: .postgres) + migration.statements(in: .postgres)),
                                      (describedURL, after.createStatements(in: .postgres))] {
                try await PostgresEngine.withConnection(to: try PostgresLocation(url: url), logger: logger) { connection in
                    for statement in statements { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
                }
            }
            let postgresMigrated = try await Self.postgresCatalogue(schema: Self.schema(of: migratedURL))
            Self.expectSame(postgresMigrated, try await Self.postgresCatalogue(schema: Self.schema(of: describedURL)))
            #expect(postgresMigrated.contains { $0.contains("pinned boolean nullable=NO default=false") }, "\(postgresMigrated)")
        }
    }

    /// Each line the two catalogues do not share.
    static func expectSame(_ migrated: [String], _ described: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        let onlyMigrated = migrated.filter { !described.contains($0) }, onlyDescribed = described.filter { !migrated.contains($0) }
        #expect(onlyMigrated.isEmpty && onlyDescribed.isEmpty,
                "only from the migrations:\n\(onlyMigrated.joined(separator: "\n"))\nonly from the description:\n\(onlyDescribed.joined(separator: "\n"))",
                sourceLocation: sourceLocation)
    }

    /// Text with every run of white space one space, without a final `;`.
    static func normalised(_ text: String) -> String {
        var words = text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        while words.hasSuffix(";") { words.removeLast() }
        return words
    }

    // MARK: SQLite

    /// A SQLite database's catalogue, one sorted line per fact (the migrations' bookkeeping left out).
    static func sqliteCatalogue(_ db: Database) throws -> [String] {
        var lines: [String] = []
        let objects = try Row.fetchAll(db, sql: """
            SELECT type, name, tbl_name, sql FROM sqlite_master
            WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE 'grdb\\_%' ESCAPE '\\'
            """)
        let withoutRowid = try Set(String.fetchAll(db, sql: "SELECT name FROM pragma_table_list WHERE wr = 1"))
        for object in objects {
            let type: String = object["type"], name: String = object["name"], sql: String = object["sql"] ?? ""
            switch type {
            case "table":
                lines.append("table \(name) withoutRowid=\(withoutRowid.contains(name)) autoincrement=\(sql.uppercased().contains("AUTOINCREMENT"))")
                for column in try Row.fetchAll(db, sql: "SELECT cid, name, type, \"notnull\", dflt_value, pk FROM pragma_table_xinfo(?)", arguments: [name]) {
                    let columnName: String = column["name"], columnType: String = column["type"]
                    let notNull: Int = column["notnull"], key: Int = column["pk"], position: Int = column["cid"]
                    let defaultValue: String? = column["dflt_value"]
                    lines.append("column \(name) #\(position) \(columnName) \(columnType) notnull=\(notNull) default=\(defaultValue ?? "-") key=\(key)")
                }
                for check in checks(in: sql) { lines.append("check \(name) \(check)") }
                for key in try Row.fetchAll(db, sql: "SELECT \"from\", \"table\", \"to\" FROM pragma_foreign_key_list(?)", arguments: [name]) {
                    let from: String = key["from"], table: String = key["table"], to: String = key["to"]
                    lines.append("foreign key \(name).\(from) -> \(table)(\(to))")
                }
                for index in try Row.fetchAll(db, sql: "SELECT name, \"unique\", origin, partial FROM pragma_index_list(?)", arguments: [name]) {
                    let indexName: String = index["name"], unique: Int = index["unique"], origin: String = index["origin"]
                    let columns = try Row.fetchAll(db, sql: "SELECT name, \"desc\", coll FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno", arguments: [indexName])
                        .map { row -> String in
                            let column: String = row["name"], descending: Int = row["desc"], collation: String = row["coll"]
                            return "\(column)\(descending == 1 ? " DESC" : "") \(collation)"
                        }
                    // Constraints' automatic indexes are numbered in the order declared.
                    let label = indexName.hasPrefix("sqlite_autoindex_") ? "(\(origin))" : indexName
                    lines.append("index \(name) \(label) unique=\(unique) origin=\(origin) (\(columns.joined(separator: ", ")))")
                }
            case "index":
                if let range = sql.range(of: " WHERE ", options: [.caseInsensitive, .backwards]) {
                    lines.append("index predicate \(name) \(normalised(String(sql[range.upperBound...])))")
                }
            default:
                lines.append("\(type) \(name) on \(object["tbl_name"] as String): \(normalised(sql))")
            }
        }
        return lines.sorted()
    }

    /// The `CHECK (…)` clauses of a `CREATE TABLE` statement.
    static func checks(in sql: String) -> [String] {
        var found: [String] = []
        var rest = sql[...]
        while let range = rest.range(of: "CHECK", options: .caseInsensitive) {
            rest = rest[range.upperBound...]
            guard let open = rest.firstIndex(of: "(") else { break }
            var depth = 0, index = open
            while index < rest.endIndex {
                if rest[index] == "(" { depth += 1 }
                if rest[index] == ")" { depth -= 1; if depth == 0 { break } }
                index = rest.index(after: index)
            }
            found.append(normalised(String(rest[rest.index(after: open)..<min(index, rest.endIndex)])))
            rest = rest[min(index, rest.endIndex)...]
        }
        return found
    }

    // MARK: PostgreSQL

    /// The schema a test URL's `search_path` names.
    static func schema(of url: String) -> String {
        String(url[url.range(of: "search_path%3D")!.upperBound...])
    }

    /// A PostgreSQL schema's catalogue, one sorted line per fact (the migrations' bookkeeping
    /// left out), with the schema's name taken out of every definition.
    static func postgresCatalogue(schema: String) async throws -> [String] {
        let logger = Logger(label: "test.catalogue")
        return try await TestPostgres.withConnection { connection in
            var lines: [String] = []
            func strip(_ text: String) -> String { normalised(text.replacingOccurrences(of: "\(schema).", with: "")) }
            let columns = try await connection.query("""
                SELECT table_name::text, ordinal_position::int, column_name::text, data_type::text, is_nullable::text,
                       COALESCE(column_default, '-')::text, COALESCE(collation_name, '-')::text, is_identity::text, COALESCE(identity_generation, '-')::text
                FROM information_schema.columns WHERE table_schema = \(schema) AND table_name <> 'recordsync_migrations'
                ORDER BY table_name, ordinal_position
                """, logger: logger)
            var position: [String: Int] = [:]
            for try await (table, _, name, type, nullable, defaultValue, collation, identity, generation)
                in columns.decode((String, Int, String, String, String, String, String, String, String).self) {
                // Numbered among the columns not dropped.
                let number = position[table, default: 0]
                position[table] = number + 1
                lines.append("column \(table) #\(number) \(name) \(type) nullable=\(nullable) default=\(strip(defaultValue)) collation=\(collation) identity=\(identity) \(generation)")
            }
            for table in position.keys { lines.append("table \(table)") }
            let constraints = try await connection.query("""
                SELECT c.conrelid::regclass::text, c.conname::text, c.contype::text, pg_get_constraintdef(c.oid)
                FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = \(schema)
                """, logger: logger)
            for try await (table, name, type, definition) in constraints.decode((String, String, String, String).self)
                where !table.hasSuffix("recordsync_migrations") {
                lines.append("constraint \(strip(table)) \(name) \(type) \(strip(definition))")
            }
            let indexes = try await connection.query("""
                SELECT tablename::text, indexname::text, indexdef FROM pg_indexes
                WHERE schemaname = \(schema) AND tablename <> 'recordsync_migrations'
                """, logger: logger)
            for try await (table, name, definition) in indexes.decode((String, String, String).self) {
                lines.append("index \(table) \(name) \(strip(definition))")
            }
            let functions = try await connection.query("""
                SELECT p.proname::text, pg_get_functiondef(p.oid) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = \(schema)
                """, logger: logger)
            for try await (name, definition) in functions.decode((String, String).self) {
                lines.append("function \(name) \(strip(definition))")
            }
            let triggers = try await connection.query("""
                SELECT t.tgname::text, pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
                JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = \(schema) AND NOT t.tgisinternal
                """, logger: logger)
            for try await (name, definition) in triggers.decode((String, String).self) {
                lines.append("trigger \(name) \(strip(definition))")
            }
            return lines.sorted()
        }
    }
}
