import Crypto
import Foundation
import Logging
import PostgresNIO
import RecordPostgresEngine

/// The PostgreSQL server the tests use, if any: `RECORDSYNC_TEST_POSTGRES` holds the URL of a
/// server the tests may create schemas in (`.ci/run` starts one; `Scripts/postgres-cluster`
/// starts one by hand). Each data directory of a test gets a schema of its own.
public enum TestPostgres {
    /// No server was named.
    public struct Unavailable: Error {}

    /// `RECORDSYNC_TEST_POSTGRES`, or `nil` (said once on standard output).
    public static let url: String? = {
        let url = ProcessInfo.processInfo.environment["RECORDSYNC_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 }
        if url == nil { print("RECORDSYNC_TEST_POSTGRES is not set: the tests run on SQLite only") }
        return url
    }()

    /// `RECORDSYNC_TEST_POSTGRES_CA`: the PEM certificate the test server presents for TLS, if
    /// it speaks TLS (`Scripts/postgres-cluster` makes one when openssl is there).
    public static let certificate: String? = ProcessInfo.processInfo.environment["RECORDSYNC_TEST_POSTGRES_CA"].flatMap { $0.isEmpty ? nil : $0 }

    static let logger = Logger(label: "test.postgres")

    /// Schemas are named after their directory; those of earlier runs are dropped on first use.
    private static let sweep = Task {
        try await withConnection { connection in
            let schemas = try await connection.query("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'rs\\_t\\_%'", logger: logger).collect()
            for row in schemas {
                try await connection.query(PostgresQuery(unsafeSQL: "DROP SCHEMA \"\(try row.decode(String.self))\" CASCADE"), logger: logger)
            }
        }
    }

    /// The URL of the schema of `directory` (created if missing): the same directory, the
    /// same data, as a restarted server opens its file again.
    public static func databaseURL(for directory: String) async throws -> String {
        guard let url else { throw Unavailable() }
        try await sweep.value
        let digest = SHA256.hash(data: Data(directory.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
        let schema = "rs_t_\(digest)"
        try await withConnection { connection in
            try await connection.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \(schema)"), logger: logger)
        }
        return url + (url.contains("?") ? "&" : "?") + "options=-c%20search_path%3D\(schema)"
    }

    /// Runs `body` on a connection of its own to the server.
    public static func withConnection<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        guard let url else { throw Unavailable() }
        return try await PostgresEngine.withConnection(to: try PostgresLocation(url: url), logger: logger, body)
    }
}
