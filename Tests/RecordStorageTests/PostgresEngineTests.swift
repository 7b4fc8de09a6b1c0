import Foundation
import Logging
import PostgresNIO
import RecordModel
import RecordPostgresEngine
import RecordRules
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

    /// The read-ahead's single statements go over a connection of their own: opened again when
    /// it drops (the next read still answers), closed when the engine shuts down.
    @Test(.enabled(if: TestPostgres.url != nil, "needs RECORDSYNC_TEST_POSTGRES"))
    func theConnectionOfSingleReadsIsOpenedAgainAfterItDropsAndClosedAtShutdown() async throws {
        let logger = Logger(label: "test")
        func readers() async throws -> Set<Int32> {
            try await TestPostgres.withConnection { connection in
                Set(try await connection.query("SELECT pid FROM pg_stat_activity WHERE application_name = 'recordsync-reads'", logger: logger)
                    .collect().map { try $0.decode(Int32.self) })
            }
        }
        try await withTemporaryDirectory { directory in
            let before = try await readers()
            let store = try await Backend.postgres.makeStore(directory)
            let alice = try await store.createUser(named: "alice", tokenHash: Data([1]))
            let scope = DatabaseScope(container: "iCloud.test", environment: "development", kind: .private, user: alice)
            _ = try await store.modifyZones(ModifyZonesRequest(operations: [.init(.create, ZoneID(zoneName: "Z"))]), in: scope)
            #expect(try await store.engine.database(at: DatabaseAddress(scope), withZoneNamed: "Z")?.zone?.name == "Z")
            let first = try await readers().subtracting(before)
            #expect(first.count == 1)
            for pid in first {
                try await TestPostgres.withConnection { connection in
                    _ = try await connection.query("SELECT pg_terminate_backend(\(pid))", logger: logger).collect()
                }
            }
            #expect(try await store.engine.database(at: DatabaseAddress(scope), withZoneNamed: "Z")?.zone?.name == "Z")
            let second = try await readers().subtracting(before)
            #expect(second.count == 1 && second.isDisjoint(with: first))
            await Backend.close(store.engine)
            let deadline = ContinuousClock.now + .seconds(10)
            while try await !readers().subtracting(before).isEmpty, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(try await readers().subtracting(before).isEmpty)
        }
    }
}
