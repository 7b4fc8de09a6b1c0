import Foundation
import Logging
import PostgresNIO
import TestSupport
import Testing

/// `recordserver --database`: a URL it cannot use is one line and exit status 1, never a hang;
/// servers starting together on an empty database migrate it once.
@Suite struct DatabaseOptionTests {
    @Test(arguments: [
        ("postgres://nobody@127.0.0.1:1/nothing", "cannot connect to the database at postgres://nobody@127.0.0.1:1/nothing"),
        ("mysql://u@127.0.0.1/d", "unsupported database URL scheme \"mysql\""),
        ("postgres://127.0.0.1/d", "the database URL names no user"),
        ("postgres://u@127.0.0.1/", "the database URL names no database"),
        ("postgres://u@127.0.0.1/d?sslmode=sometimes", "sslmode must be disable, prefer, require or verify-full"),
        ("postgres://u@127.0.0.1/d?colour=blue", "unknown database URL parameter \"colour\""),
    ])
    func aDatabaseItCannotUseIsOneLineAndExitStatusOne(url: String, message: String) async throws {
        let start = ContinuousClock.now
        let result = try await ChildProcess.run("recordserver", ["--port", "0", "--database", url], mergeErrors: true)
        #expect(result.status == 1)
        let lines = result.output.split(separator: "\n")
        #expect(lines.count == 1, "\(result.output)")
        #expect(result.output.hasPrefix("recordserver: " + message), "\(result.output)")
        #expect(ContinuousClock.now - start < .seconds(15))
        let user = try await ChildProcess.run("recordserver", ["user", "add", "alice", "--database", url], mergeErrors: true)
        #expect(user.status == 1 && user.output.hasPrefix("recordserver: " + message), "\(user.output)")
    }

    /// Three servers started at the same moment on an empty schema: each waits for the
    /// migration lock, one creates the tables, and all serve; each stops cleanly on SIGTERM.
    @Test(.enabled(if: TestPostgres.url != nil, "needs RECORDSYNC_TEST_POSTGRES"))
    func serversStartingTogetherMigrateOnce() async throws {
        try await withTemporaryDirectory { directory in
            let url = try await TestPostgres.databaseURL(for: directory)
            let children = try (0..<3).map { _ in try ChildProcess("recordserver", ["--port", "0", "--database", url]) }
            for child in children {
                #expect(try await child.waitFor(#"listening on http://127\.0\.0\.1:\d+"#) != nil, "\(child.text)")
            }
            // SIGTERM: each shuts down cleanly, its pool and listening connection closed.
            for child in children {
                let stopped = await child.stop(signal: SIGTERM)
                #expect(stopped.reason == .exit && stopped.status == 0, "\(stopped.output)")
            }
        }
    }

    /// TLS where the URL asks for it: `require` encrypts without checking the certificate,
    /// `verify-full` checks it against `sslrootcert` (and refuses the test server's self-signed
    /// one against the system's roots).
    @Test(.enabled(if: TestPostgres.url != nil && TestPostgres.certificate != nil, "needs RECORDSYNC_TEST_POSTGRES and its RECORDSYNC_TEST_POSTGRES_CA"))
    func tlsIsUsedWhereTheURLAsksForIt() async throws {
        try await withTemporaryDirectory { directory in
            let url = try await TestPostgres.databaseURL(for: directory)
            let certificate = TestPostgres.certificate ?? ""
            let required = try await ChildProcess.run("recordserver", ["user", "add", "alice", "--database", url + "&sslmode=require"], mergeErrors: true)
            #expect(required.status == 0, "\(required.output)")
            let verified = try await ChildProcess.run("recordserver", ["user", "add", "bob", "--database", url + "&sslmode=verify-full&sslrootcert=" + certificate], mergeErrors: true)
            #expect(verified.status == 0, "\(verified.output)")
            let refused = try await ChildProcess.run("recordserver", ["user", "add", "carol", "--database", url + "&sslmode=verify-full"], mergeErrors: true)
            #expect(refused.status == 1)
            #expect(refused.output.hasPrefix("recordserver: cannot connect to the database"), "\(refused.output)")

            // A server told to require TLS: its connections (the listening one included) are encrypted.
            let server = try ChildProcess("recordserver", ["--port", "0", "--database", url + "&sslmode=require"])
            #expect(try await server.waitFor(#"listening on http://127\.0\.0\.1:\d+"#) != nil, "\(server.text)")
            var encrypted = 0
            for _ in 0..<100 where encrypted == 0 {
                encrypted = try await TestPostgres.withConnection { connection in
                    try await connection.query("""
                        SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid
                        WHERE s.ssl AND a.application_name = 'recordsync-listen'
                        """, logger: Logger(label: "test")).collect().first.map { Int(try $0.decode(Int64.self)) } ?? 0
                }
                if encrypted == 0 { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(encrypted >= 1)
            _ = await server.stop(signal: SIGTERM)
        }
    }
}
