import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import RecordPostgresEngine
import RecordRules
import RecordServer
import TestSupport
import Testing

/// `GET /healthz`: ready only while the store answers.
@Suite struct HealthTests {
    @Test func healthzIsReadyWhileTheStoreAnswers() async throws {
        try await withServer { server in
            let reply = try await server.send(.get, "/healthz")
            #expect(reply.status == 200, "\(server.backend)")
            #expect(reply.json["status"]?.stringValue == "ready", "\(server.backend)")
        }
    }

    /// A PostgreSQL server that refuses the server's connections (its role may no longer log
    /// in, its sessions ended): `/healthz` answers 503 within its timeout, a request fails
    /// cleanly, and both work again once PostgreSQL lets the role in, without a restart.
    @Test func healthzIsUnavailableWhilePostgreSQLRefusesTheServerAndRecovers() async throws {
        guard let base = TestPostgres.url, var components = URLComponents(string: base) else { return }
        let role = "rs_health_" + UUID().uuidString.prefix(8).lowercased()
        @Sendable func admin(_ statements: String...) async throws {
            try await TestPostgres.withConnection { connection in
                for statement in statements { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: Logger(label: "test")) }
            }
        }
        try await admin("CREATE ROLE \(role) LOGIN", "CREATE SCHEMA \(role) AUTHORIZATION \(role)")
        components.user = role
        let url = components.string! + (base.contains("?") ? "&" : "?") + "options=-c%20search_path%3D\(role)"
        var logger = Logger(label: "test.health")
        logger.logLevel = .critical
        let engine = try await PostgresEngine(location: try PostgresLocation(url: url), maximumConnections: 2, logger: logger)
        let store = RecordStore(engine: engine)
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.healthTimeout = .seconds(1)
        configuration.logger.logLevel = .critical
        let user = Credentials.newToken()
        _ = try await store.createUser(named: "alice", tokenHash: Credentials.hash(user))
        do {
            try await buildApplication(configuration: configuration, store: store).test(.live) { client in
                func health() async throws -> Int {
                    try await client.executeRequest(uri: "/healthz", method: .get, headers: [:], body: nil).status.code
                }
                func zones() async throws -> Int {
                    try await client.executeRequest(uri: "/database/1/iCloud.test/development/private/zones/list", method: .get,
                                                    headers: [.authorization: "Bearer \(user)"], body: nil).status.code
                }
                #expect(try await health() == 200)
                #expect(try await zones() == 200)

                try await admin("ALTER ROLE \(role) NOLOGIN", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '\(role)'")
                let started = ContinuousClock.now
                #expect(try await health() == 503)
                #expect(ContinuousClock.now - started < .seconds(5))

                try await admin("ALTER ROLE \(role) LOGIN")
                var status = 0
                for _ in 0..<60 where status != 200 {
                    status = try await health()
                    if status != 200 { try await Task.sleep(for: .milliseconds(250)) }
                }
                #expect(status == 200)
                #expect(try await zones() == 200)
            }
        } catch {
            await engine.shutdown()
            try? await admin("ALTER ROLE \(role) LOGIN", "DROP SCHEMA \(role) CASCADE", "DROP ROLE \(role)")
            throw error
        }
        await engine.shutdown()
        try await admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '\(role)'", "DROP SCHEMA \(role) CASCADE", "DROP ROLE \(role)")
    }
}
