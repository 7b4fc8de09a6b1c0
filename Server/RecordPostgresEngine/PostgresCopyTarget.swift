import Foundation
import Logging
import PostgresNIO
import RecordSQL

/// The receiving end of `recordserver data copy`: one transaction on a connection of its own
/// that fills the engine's tables with rows given as they are (keys included), so that a copy
/// interrupted anywhere leaves the database as it was and can simply be run again.
///
/// Its statements wait on the calling thread, which must not be an event loop (the copy runs
/// them from the SQLite engine's reader).
public final class PostgresCopyTarget: @unchecked Sendable {
    /// The engine's tables `data copy` fills, in the order it fills them (targets of foreign keys first).
    public static let tables = StorageSchema.tables(in: .postgres).filter(\.copied).map(\.name)
    /// The size of the chunks asset bytes are kept in.
    public static let assetChunkSize = StorageSchema.assetChunkSize
    /// The tables whose `id` an identity hands out.
    static let identityTables = StorageSchema.tables(in: .postgres)
        .filter { $0.columns.contains { $0.generated == .rowid || $0.generated == .neverReused } }.map(\.name)

    /// How a copied column is read in: its SQL type, and how its value becomes the column's.
    public enum Column: Sendable {
        case integer(String)
        case real(String)
        case text(String)
        case bytes(String)
        /// 16 bytes into a `UUID` column.
        case uuid(String)
        /// 0 or 1 into a `BOOLEAN` column.
        case boolean(String)

        /// How the described column is read in.
        public init(_ column: ColumnDefinition) {
            switch column.type {
            case .int64, .int32, .int16: self = .integer(column.name)
            case .double: self = .real(column.name)
            case .text: self = .text(column.name)
            case .bytes: self = .bytes(column.name)
            case .uuid: self = .uuid(column.name)
            case .bool: self = .boolean(column.name)
            }
        }

        /// The column's name.
        public var name: String {
            switch self {
            case .integer(let name), .real(let name), .text(let name), .bytes(let name), .uuid(let name), .boolean(let name): name
            }
        }

        func value(_ placeholder: String) -> String {
            switch self {
            case .integer: "\(placeholder)::bigint"
            case .real: "\(placeholder)::double precision"
            case .text: "\(placeholder)::text"
            case .bytes: "\(placeholder)::bytea"
            case .uuid: "encode(\(placeholder)::bytea, 'hex')::uuid"
            case .boolean: "(\(placeholder)::bigint <> 0)"
            }
        }
    }

    private let connection: PostgresConnection
    private let logger: Logger

    private init(connection: PostgresConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    /// Brings the schema of the database at `location` up to date and opens a connection for
    /// the copy.
    public static func open(_ location: PostgresLocation, logger: Logger) async throws -> PostgresCopyTarget {
        try await PostgresEngine.migrate(location, logger: logger)
        return PostgresCopyTarget(connection: try await PostgresEngine.connect(location, logger: logger, applicationName: "recordsync-copy"), logger: logger)
    }

    /// Whether the database holds any user or database.
    public func isEmpty() async throws -> Bool {
        let rows = try await connection.query("SELECT EXISTS (SELECT 1 FROM users) OR EXISTS (SELECT 1 FROM databases)", logger: logger).collect()
        return try !(rows.first?.decode(Bool.self) ?? false)
    }

    /// Begins the copy's transaction; with `replacing`, empties every table first (in it).
    public func begin(replacing: Bool) throws {
        try run("BEGIN")
        if replacing { try run(PostgresQuery(unsafeSQL: "TRUNCATE \(Self.tables.joined(separator: ", "))")) }
    }

    /// Stores `rows` (values in `columns` order) in `table`.
    public func insert(_ rows: [[SQLValue]], into table: String, columns: [Column]) throws {
        guard !rows.isEmpty else { return }
        var binds = PostgresBindings(capacity: rows.count * columns.count)
        var tuples: [String] = []
        tuples.reserveCapacity(rows.count)
        var number = 0
        for row in rows {
            var values: [String] = []
            for (column, value) in zip(columns, row) {
                number += 1
                values.append(column.value("$\(number)"))
                try binds.append(value)
            }
            tuples.append("(\(values.joined(separator: ", ")))")
        }
        let sql = "INSERT INTO \(table)(\(columns.map(\.name).joined(separator: ", "))) VALUES \(tuples.joined(separator: ", "))"
        try run(PostgresQuery(unsafeSQL: sql, binds: binds))
    }

    /// Counts every user's usage from the records copied, moves each identity past the largest
    /// key copied, then commits.
    public func commit() throws {
        try run("DELETE FROM user_usage")
        try run(PostgresQuery(unsafeSQL: StorageSchema.countUsageSQL(in: .postgres)))
        for table in Self.identityTables {
            try run(PostgresQuery(unsafeSQL: """
                SELECT setval(pg_get_serial_sequence('\(table)', 'id'), COALESCE((SELECT max(id) FROM \(table)), 0) + 1, false)
                """))
        }
        // Notification numbers go on above every number a webcourier token has seen.
        try run(PostgresQuery(unsafeSQL: """
            SELECT setval(pg_get_serial_sequence('notifications', 'id'),
                          GREATEST(COALESCE((SELECT max(id) FROM notifications), 0), COALESCE((SELECT max(floor) FROM push_tokens), 0)) + 1, false)
            """))
        try run("COMMIT")
    }

    /// Ends the connection (a transaction still open is rolled back).
    public func close() async {
        try? await connection.close()
    }

    private func run(_ query: PostgresQuery) throws {
        _ = try connection.answering(query, logger: logger).wait()
    }
}
