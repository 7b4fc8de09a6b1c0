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
    ]
}
