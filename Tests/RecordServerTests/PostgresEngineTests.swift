import Foundation
import Logging
import PostgresNIO
import RecordPostgresEngine
import TestSupport
import Testing

/// What the PostgreSQL engine keeps in its schema besides tables.
@Suite struct PostgresEngineTests {
    /// A change page is read in sequence order from each `(zone_id, seq)` index whatever the
    /// table's statistics: the function that reads it turns the other scans off for its own
    /// statements (a table filled before autovacuum analysed it was read whole and sorted).
    @Test(.enabled(if: TestPostgres.url != nil, "needs RECORDSYNC_TEST_POSTGRES"))
    func theChangePageIsReadInIndexOrderWhateverTheStatistics() async throws {
        try await withTemporaryDirectory { directory in
            try await Backend.postgres.withStore(directory) { _ in }
            let location = try PostgresLocation(url: try await TestPostgres.databaseURL(for: directory))
            let settings = try await PostgresEngine.withConnection(to: location, logger: Logger(label: "test")) { connection in
                try await connection.query("SELECT proconfig FROM pg_proc WHERE oid = 'recordsync_change_page'::regproc", logger: Logger(label: "test"))
                    .collect().first?.decode([String].self)
            }
            #expect(Set(settings ?? []) == ["enable_bitmapscan=off", "enable_seqscan=off"])
        }
    }
}
