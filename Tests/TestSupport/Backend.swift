import Foundation
import Logging
import RecordPostgresEngine
import RecordRules
import RecordSQLiteEngine
import RecordStorageSQL
import RecordStorage

/// A storage engine the suite runs against. Every test that goes through ``withServer`` runs
/// once per engine, so these tests are the conformance suite of ``StorageEngine``: a new
/// engine is added here and must pass them unchanged.
///
/// PostgreSQL runs when `RECORDSYNC_TEST_POSTGRES` holds the URL of a server the tests may
/// create schemas in (`.ci/run` starts one; `Scripts/postgres-cluster` starts one by hand).
/// Without it the suite runs on SQLite alone and says so once.
public struct Backend: Sendable, CustomStringConvertible {
    public var description: String
    public var makeEngine: @Sendable (_ directory: String) async throws -> any StorageEngine

    public static let sqlite = Backend(description: "SQLite") { directory in
        try SQLiteEngine(path: (directory as NSString).appendingPathComponent("records.sqlite"))
    }

    /// PostgreSQL, a schema of its own per data directory (the same directory opens the same
    /// schema again, as a restarted server opens its file).
    public static let postgres = Backend(description: "PostgreSQL") { directory in
        let location = try PostgresLocation(url: try await TestPostgres.databaseURL(for: directory))
        var logger = Logger(label: "test.postgres")
        logger.logLevel = .warning
        return try await PostgresEngine(location: location, maximumConnections: 8, logger: logger)
    }

    /// A store of this engine's under `directory`.
    public func makeStore(_ directory: String, _ limits: StoreLimits = StoreLimits()) async throws -> RecordStore {
        RecordStore(engine: try await makeEngine(directory), limits: limits)
    }

    /// Runs `body` with a store of this engine's under `directory`, then closes the engine.
    public func withStore<T>(_ directory: String, _ limits: StoreLimits = StoreLimits(), _ body: (RecordStore) async throws -> T) async throws -> T {
        let store = try await makeStore(directory, limits)
        do {
            let result = try await body(store)
            await Self.close(store.engine)
            return result
        } catch {
            await Self.close(store.engine)
            throw error
        }
    }

    /// Closes an engine's connections (SQLite's close with the last reference).
    public static func close(_ engine: any StorageEngine) async {
        if let engine = engine as? PostgresEngine { await engine.shutdown() }
    }

    public static let all: [Backend] = TestPostgres.url == nil ? [.sqlite] : [.sqlite, .postgres]
}

extension Backend {
    /// The plan the engine's database makes for `sql` (SQLite's `EXPLAIN QUERY PLAN` details,
    /// PostgreSQL's `EXPLAIN` with sequential scans discouraged, so that a usable index shows
    /// even in a table of a few rows), a line per step.
    public static func plan(of sql: String, on engine: any StorageEngine) async throws -> String {
        let postgres = engine is PostgresEngine
        return try await engine.read { transaction in
            guard let session = transaction as? any SQLSession else { return "" }
            // SQLite checks its schema is current only when a statement reads: a plan alone
            // could be made from an index another connection dropped.
            _ = try session.fetch(postgres ? "SET LOCAL enable_seqscan = off" : "SELECT count(*) FROM sqlite_master")
            return try session.fetch("\(raw: postgres ? "EXPLAIN" : "EXPLAIN QUERY PLAN") \(raw: sql)")
                .map { try $0.string(postgres ? 0 : 3) }.joined(separator: "\n")
        }
    }
}
