import Foundation
import Logging
import PostgresNIO
import RecordPostgresEngine
import RecordRules
import RecordServer
import RecordSQLiteEngine

/// The storage engine the scenarios run on (`recordbench --backend`).
enum BenchBackend: Sendable, Equatable {
    case sqlite
    /// PostgreSQL at a server URL: every bench server gets a schema of its own, dropped after.
    case postgres(url: String)

    var name: String {
        switch self {
        case .sqlite: "sqlite"
        case .postgres: "postgres"
        }
    }
}

/// The engine of this run (set once by `recordbench run` before any scenario starts).
nonisolated(unsafe) var benchBackend: BenchBackend = .sqlite

/// A place for one bench server's data: a directory for SQLite, a fresh schema for PostgreSQL.
struct BenchStorage: Sendable {
    /// The scratch directory (floors, client caches, SQLite's data).
    var directory: String
    /// The URL of the schema, for PostgreSQL.
    var databaseURL: String?
    /// The schema's name, for PostgreSQL.
    var schema: String?

    static let logger: Logger = {
        var logger = Logger(label: "recordbench.postgres")
        logger.logLevel = .error
        return logger
    }()

    /// Makes the place; `body` runs with it; it is removed after.
    static func with<T>(_ body: (BenchStorage) async throws -> T) async throws -> T {
        let directory = (NSTemporaryDirectory() as NSString).appendingPathComponent("recordbench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard case .postgres(let url) = benchBackend else {
            return try await body(BenchStorage(directory: directory))
        }
        let schema = "bench_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        try await withAdminConnection(url) { connection in
            try await connection.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(schema)"), logger: logger)
        }
        let storage = BenchStorage(directory: directory, databaseURL: url + (url.contains("?") ? "&" : "?") + "options=-c%20search_path%3D\(schema)", schema: schema)
        do {
            let result = try await body(storage)
            try await storage.drop(url)
            return result
        } catch {
            try? await storage.drop(url)
            throw error
        }
    }

    private func drop(_ url: String) async throws {
        guard let schema else { return }
        try await Self.withAdminConnection(url) { connection in
            try await connection.query(PostgresQuery(unsafeSQL: "DROP SCHEMA \(schema) CASCADE"), logger: Self.logger)
        }
    }

    /// On PostgreSQL, gathers the planner's statistics of the engine's tables, as autovacuum
    /// does within a minute of a large change (a scenario measures right after seeding).
    func analyze() async throws {
        guard let databaseURL else { return }
        try await Self.withAdminConnection(databaseURL) { connection in
            try await connection.query("ANALYZE records, refs, tombstones, zones", logger: Self.logger)
        }
    }

    /// An engine over this place.
    func engine(poolSize: Int = 16) async throws -> any StorageEngine {
        if let databaseURL {
            return try await PostgresEngine(location: try PostgresLocation(url: databaseURL), maximumConnections: poolSize, logger: Self.logger)
        }
        let path = directory + "/server"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return try SQLiteEngine(path: path + "/records.sqlite")
    }

    /// Runs `body` on a connection of its own to the server at `url` (the schema's, if `databaseURL`).
    static func withAdminConnection<T>(_ url: String, _ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await PostgresEngine.withConnection(to: try PostgresLocation(url: url), logger: logger, body)
    }
}
