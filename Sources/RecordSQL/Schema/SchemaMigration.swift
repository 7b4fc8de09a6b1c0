import RecordModel

/// A change to the schema after the shipped migrations, written once in the description's terms
/// and run by both engines (``StorageSchema/migrations``): change the description, then add the
/// migration that brings a database there.
public struct SchemaMigration: Sendable {
    /// One step of a migration.
    public enum Change: Sendable {
        /// Creates a table of the description (its indexes too).
        case createTable(TableDefinition)
        /// Adds a column of the description to its table.
        case addColumn(String, to: TableDefinition)
        /// Creates an index of the description.
        case createIndex(String, on: TableDefinition)
        /// Statements of each dialect's own (a backfill, say).
        case statements(sqlite: [String], postgres: [String])
    }

    /// The migration's name, unique among both engines' migrations (SQLite's `v15-…`,
    /// PostgreSQL's `v11`… were the shipped ones' names; these are named once for both).
    public var name: String
    public var changes: [Change]

    public init(_ name: String, _ changes: [Change]) {
        self.name = name
        self.changes = changes
    }

    /// The statements that run the migration in `dialect`. A change naming a column or index
    /// its table does not describe is a programming error, stopped at once (every test that
    /// opens a store runs it).
    public func statements(in dialect: SQLDialect) -> [String] {
        changes.flatMap { change -> [String] in
            switch change {
            case .createTable(let table):
                return table.dialects.contains(dialect) ? table.createStatements(in: dialect) : []
            case .addColumn(let name, let table):
                guard table.dialects.contains(dialect) else { return [] }
                guard let column = table.column(name) else { preconditionFailure("migration \(self.name): \(table.name) describes no column \(name)") }
                return ["ALTER TABLE \(table.name) ADD COLUMN \(column.definition(in: dialect, soleKey: false))"]
            case .createIndex(let name, let table):
                guard table.dialects.contains(dialect) else { return [] }
                guard let index = table.indexes.first(where: { $0.name == name }) else {
                    preconditionFailure("migration \(self.name): \(table.name) describes no index \(name)")
                }
                return [index.createStatement(on: table, in: dialect)]
            case .statements(let sqlite, let postgres):
                return dialect == .sqlite ? sqlite : postgres
            }
        }
    }
}

extension StorageSchema {
    /// The migrations after the shipped ones, in order, each run by both engines (after
    /// SQLite's `v14-api-tokens` and PostgreSQL's `v10`). Never edit one once shipped.
    public static let migrations: [SchemaMigration] = [
        SchemaMigration("identities", [.createTable(identities)]),
        SchemaMigration("accounts", [.createTable(accounts), .createTable(accountCodes), .createTable(signInAttempts)]),
        SchemaMigration("operators", [.createTable(operators), .createTable(operatorAudit)]),
        SchemaMigration("web-sign-in", [.addColumn("sign_in_callback", to: apiTokens), .createTable(signInFlows)]),
        SchemaMigration("schema-lifecycle", [
            .addColumn("schema_locked", to: containers),
            .addColumn("queryable", to: schemaFields), .addColumn("sortable", to: schemaFields),
            .addColumn("searchable", to: schemaFields), .addColumn("encrypted", to: schemaFields),
            .createTable(schemaTypes), .createTable(schemaGrants), .createTable(schemaRoles), .createTable(schemaHistory),
            .statements(sqlite: schemaLifecycleBackfill, postgres: schemaLifecycleBackfill),
        ]),
        SchemaMigration("search-index-builds", [.createTable(searchBuilds)]),
        SchemaMigration("search-word-blocks", [.createTable(searchBlocks), .createTable(searchPostings), .createTable(searchMembers)]),
        SchemaMigration("user-roles", [.createTable(userRoles)]),
        SchemaMigration("shares", [.createTable(shares), .createTable(shareParticipants)]),
        SchemaMigration("record-shares", [
            .addColumn("parent", to: records), .addColumn("charged_to", to: records), .createIndex("records_by_parent", on: records), .createTable(shareDepartures),
            .statements(sqlite: ["DROP TRIGGER records_usage_insert", "DROP TRIGGER records_usage_update", "DROP TRIGGER records_usage_delete",
                                 usageInsertTrigger, usageUpdateTrigger, usageDeleteTrigger],
                        postgres: ["DROP FUNCTION recordsync_change_page(BIGINT, BIGINT, BIGINT, TEXT[], INT)", changePageFunction,
                                   usageInsertedFunction, usageUpdatedFunction, usageDeletedFunction]),
        ]),
        SchemaMigration("console", [.createTable(consoleSessions), .createTable(requestLog)]),
        SchemaMigration("console-metrics", [.createTable(metricMinutes), .createTable(storageSamples), .createTable(nodes)]),
        SchemaMigration("records-by-modified", [.createIndex("records_by_modified", on: records)]),
    ]

    /// What the schema held before `schema-lifecycle`, in its terms (docs/deploying.md,
    /// "Upgrading to the schema lifecycle"): every field marked as the server let queries use
    /// it (`QUERYABLE` unless an asset or nested value, `SORTABLE` unless also a list or bytes;
    /// `SEARCHABLE` text where a word search had indexed its type); every type with a field or
    /// a record a type, with CloudKit's default grants and its system fields marked as today's
    /// filters and sorts use them. Every container stays unlocked.
    static let schemaLifecycleBackfill: [String] = [
        """
        UPDATE schema_fields SET
            queryable = (type NOT IN ('ASSETID', 'ASSETID_LIST', 'NESTED', 'NESTED_LIST')),
            sortable = (type NOT IN ('ASSETID', 'BYTES', 'NESTED') AND type NOT LIKE '%!_LIST' ESCAPE '!'),
            searchable = (type IN ('STRING', 'STRING_LIST') AND EXISTS (
                SELECT 1 FROM search_types s WHERE s.container_id = schema_fields.container_id AND s.record_type = schema_fields.record_type))
        """,
        """
        INSERT INTO schema_types(container_id, record_type)
        SELECT container_id, record_type FROM schema_fields
        UNION SELECT d.container_id, r.type FROM records r JOIN zones z ON z.id = r.zone_id JOIN databases d ON d.id = z.database_id
        """,
        "INSERT INTO schema_grants(container_id, record_type, grantee, permissions) SELECT container_id, record_type, '_creator', \(SchemaPermissionBits.write) FROM schema_types",
        "INSERT INTO schema_grants(container_id, record_type, grantee, permissions) SELECT container_id, record_type, '_icloud', \(SchemaPermissionBits.create) FROM schema_types",
        "INSERT INTO schema_grants(container_id, record_type, grantee, permissions) SELECT container_id, record_type, '_world', \(SchemaPermissionBits.read) FROM schema_types",
    ] + SchemaField.systemFields.filter { $0.name != "___etag" }.map { field in
        """
        INSERT INTO schema_fields(container_id, record_type, field, type, queryable, sortable)
        SELECT container_id, record_type, '\(field.name)', '\(field.type.rawValue)', (1 = 1), (1 = 1) FROM schema_types
        """
    }
}
