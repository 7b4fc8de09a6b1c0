import Foundation
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RecordModel
import RecordRules
import RecordServer
import Testing
import TestSupport

/// Named tokens (one per device), listed and revoked by name; revocation reaching every server
/// within a second, from another process; expiry; deleting a user.
@Suite struct TokenTests {
    static let base = "/database/1/iCloud.test.Gallery/development/private"

    /// The data places a command-line test runs against: a SQLite directory, and PostgreSQL
    /// when a test server is given.
    static func places(_ directory: String) async throws -> [[String]] {
        var places = [["--data", "\(directory)/data"]]
        if TestPostgres.url != nil { places.append(["--database", try await TestPostgres.databaseURL(for: directory)]) }
        return places
    }

    /// `recordserver ARGUMENTS`: status, standard output and error together.
    static func recordserver(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await ChildProcess.run("recordserver", arguments, mergeErrors: true)
    }

    /// The rows of a tab-separated listing.
    static func rows(_ output: String) -> [[String]] {
        output.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
    }

    @Test func tokensAreIssuedListedAndRevokedByNameFromTheCommandLine() async throws {
        try await withTemporaryDirectory { directory in
            for place in try await Self.places(directory) {
                // A user called "revoke" cannot be mistaken for a command.
                let laptop = try await ChildProcess.run("recordserver", ["user", "add", "revoke", "--token-name", "laptop"] + place)
                #expect(laptop.status == 0 && laptop.output.hasPrefix("rs_"), "\(place) \(laptop.output)")
                let phone = try await ChildProcess.run("recordserver", ["user", "token", "revoke", "--token-name", "phone", "--expires-in", "30d"] + place)
                #expect(phone.status == 0 && phone.output.hasPrefix("rs_"))
                #expect(try await ChildProcess.run("recordserver", ["user", "token", "revoke"] + place).status == 0)
                let taken = try await Self.recordserver(["user", "token", "revoke", "--token-name", "phone"] + place)
                #expect(taken.status == 1 && taken.output.contains("already holds a token named 'phone'"), "\(taken.output)")
                for bad in ["0", "3x", "-5d", ""] {
                    #expect(try await Self.recordserver(["user", "token", "revoke", "--expires-in", bad] + place).status == 64, "\(bad)")
                }

                let listed = try await Self.recordserver(["user", "tokens", "revoke"] + place)
                let rows = Self.rows(listed.output)
                #expect(rows.map { $0.first } == ["laptop", "phone", "token-1"], "\(listed.output)")
                #expect(rows.map { $0.last?.split(separator: " ").first } == ["never", "expires", "never"], "\(listed.output)")
                let expiry = try #require(rows[1].last?.split(separator: " ").last.map(String.init))
                let days = try Date.ISO8601FormatStyle().parse(expiry).timeIntervalSinceNow / 86400
                #expect(abs(days - 30) < 0.01, "\(expiry)")

                #expect(try await Self.recordserver(["user", "revoke-token", "revoke", "phone"] + place).status == 0)
                #expect(Self.rows(try await Self.recordserver(["user", "tokens", "revoke"] + place).output).map { $0.first } == ["laptop", "token-1"])
                let again = try await Self.recordserver(["user", "revoke-token", "revoke", "phone"] + place)
                #expect(again.status == 1 && again.output.contains("holds no token named 'phone'"), "\(again.output)")
                #expect(try await Self.recordserver(["user", "tokens", "nobody"] + place).status == 1)
                #expect(Self.rows(try await Self.recordserver(["user", "list"] + place).output).first?[3] == "2 tokens")

                // Deleting asks for confirmation, then removes the user.
                #expect(try await Self.recordserver(["user", "delete", "revoke"] + place).status == 64)
                let deleted = try await Self.recordserver(["user", "delete", "revoke", "--yes"] + place)
                #expect(deleted.status == 0 && deleted.output.hasPrefix("deleted user revoke (_"), "\(deleted.output)")
                #expect(try await Self.recordserver(["user", "list"] + place).output == "")
                #expect(try await Self.recordserver(["user", "delete", "revoke", "--yes"] + place).status == 1)
            }
        }
    }

    /// Polls `url` with `token` until it is refused; the seconds that took.
    static func secondsUntilRefused(_ node: URL, token: String) async throws -> Double {
        let start = ContinuousClock.now
        while true {
            let status = try await Self.status(node, token: token)
            if status == 401 { return Double((ContinuousClock.now - start) / .milliseconds(1)) / 1000 }
            #expect(status == 200)
            if ContinuousClock.now - start > .seconds(10) { return .infinity }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    static func status(_ node: URL, token: String) async throws -> Int {
        var request = URLRequest(url: node.appendingPathComponent("\(base)/users/current"))
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    /// The token of `user token NAME --token-name TOKEN` at `place`.
    static func issue(_ user: String, _ token: String, _ place: [String]) async throws -> String {
        let issued = try await ChildProcess.run("recordserver", ["user", "token", user, "--token-name", token] + place)
        #expect(issued.status == 0)
        return issued.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A token revoked by another process stops working within a second on a SQLite server and
    /// on each of two servers sharing PostgreSQL, though each had just accepted it (and kept it
    /// in memory); the user's other token goes on working.
    @Test func aRevokedTokenStopsWorkingOnEveryServerWithinASecond() async throws {
        try await withTemporaryDirectory { directory in
            var setups: [(place: [String], nodes: [URL], stop: @Sendable () async -> Void)] = []
            let data = "\(directory)/data"
            _ = try await ChildProcess.run("recordserver", ["user", "add", "alice", "--token-name", "laptop", "--data", data])
            let server = try await ServerProcess(data: data)
            setups.append((["--data", data], [URL(string: "http://127.0.0.1:\(server.port)")!], { _ = await server.stop(signal: SIGKILL) }))
            if TestPostgres.url != nil {
                let deployment = try await Deployment(directory: directory, nodes: 2)
                _ = try await ChildProcess.run("recordserver", ["user", "add", "alice", "--token-name", "laptop", "--database", deployment.databaseURL])
                setups.append((["--database", deployment.databaseURL], deployment.nodes.map(\.url), { await deployment.stop() }))
            }
            for setup in setups {
                let laptop = try await Self.issue("alice", "laptop-2", setup.place)
                let phone = try await Self.issue("alice", "phone", setup.place)
                var streams: [Int32] = []
                for node in setup.nodes {
                    for token in [laptop, phone] { #expect(try await Self.status(node, token: token) == 200) }
                    // A push stream the phone holds open.
                    let stream = try LimitsTests.connect(port: node.port!)
                    LimitsTests.send(stream, "GET \(Self.base)/notifications HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(phone)\r\n\r\n")
                    #expect(LimitsTests.receive(stream, until: "event-stream", within: .seconds(2)).hasPrefix("HTTP/1.1 200"))
                    streams.append(stream)
                }
                defer { streams.forEach { close($0) } }
                let revoked = try await Self.recordserver(["user", "revoke-token", "alice", "phone"] + setup.place)
                #expect(revoked.status == 0, "\(revoked.output)")
                for (node, stream) in zip(setup.nodes, streams) {
                    let seconds = try await Self.secondsUntilRefused(node, token: phone)
                    #expect(seconds < 1, "\(setup.place): refused after \(seconds) s")
                    #expect(try await Self.status(node, token: laptop) == 200)
                    // The stream it had open ended with it (the last chunk of its answer came).
                    #expect(LimitsTests.receive(stream, until: "0\r\n\r\n", within: .seconds(2)).hasSuffix("0\r\n\r\n"), "\(setup.place)")
                }
                await setup.stop()
            }
        }
    }

    @Test func anExpiredTokenIsRefusedSayingWhen() async throws {
        try await withServer { server in
            let token = Credentials.newToken()
            let expiry = Int64(Date().timeIntervalSince1970 * 1000) + 800
            _ = try await server.store.createUser(named: "alice", tokenHash: Credentials.hash(token), expiresAt: expiry)
            for _ in 0..<2 {
                #expect(try await server.send(.get, "\(Self.base)/users/current", headers: [.authorization: "Bearer \(token)"]).status == 200)
            }
            try await Task.sleep(for: .milliseconds(900))
            let refused = try await server.send(.get, "\(Self.base)/users/current", headers: [.authorization: "Bearer \(token)"])
            #expect(refused.status == 401 && refused.code == "AUTHENTICATION_FAILED")
            #expect(refused.reason.contains("expired at"), "\(refused.reason)")
            await #expect { try await server.store.addToken(forUserNamed: "alice", tokenHash: Data([1]), expiresAt: expiry) } throws: {
                ($0 as? RecordSyncError)?.code == .badRequest
            }
        }
    }

    /// Deleting a user removes their private data, the assets only they held, their
    /// subscriptions, webcourier tokens and tokens; their public records and assets other users
    /// hold stay; the name can be given to a new, empty user.
    @Test func deletingAUserRemovesTheirPrivateDataAndKeepsTheirPublicRecords() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            try await alice.createZones("Secret")
            _ = try await alice.save([.artist("hidden")], zone: "Secret")
            let own = AssetTests.bytes(3000), shared = AssetTests.bytes(3001)
            let ownValue = try await AssetTests.upload(own, alice), sharedValue = try await AssetTests.upload(shared, alice)
            _ = try await AssetTests.save(alice, "mine", fields: #""image":{"value":\#(try ownValue.serializedString())}"#)
            _ = try await AssetTests.save(alice, "both", fields: #""image":{"value":\#(try sharedValue.serializedString())}"#)
            let bobShared = try await AssetTests.upload(shared, bob)
            _ = try await AssetTests.save(bob, "his", fields: #""image":{"value":\#(try bobShared.serializedString())}"#)
            let ownURL = try #require(try await AssetTests.downloadURL(alice, "mine"))
            let bobURL = try #require(try await AssetTests.downloadURL(bob, "his"))
            #expect(try await SubscriptionTests.subscribe(alice, SubscriptionTests.modernArt).status == 200)
            _ = try await SubscriptionTests.webcourier(alice)
            _ = try await alice.save([.artist("famous")], database: "public")
            let aliceKey = try #require(try await server.store.users().first { $0.user.name == "alice" }?.user.id)

            let deletion = try await server.store.deleteUser(named: "alice")
            #expect(deletion.databases == 1 && deletion.zones == 2)
            let ownChecksum = try #require(ownValue["fileChecksum"]?.stringValue.flatMap { Data(base64Encoded: $0) })
            #expect(deletion.assets == [ownChecksum.map { String(format: "%02x", $0) }.joined()], "\(deletion.assets)")

            // Refused within a second (the server had the token in memory).
            let start = ContinuousClock.now
            var refused = try await alice.post("users/current", "")
            while refused.status == 200, ContinuousClock.now - start < .seconds(1) {
                try await Task.sleep(for: .milliseconds(20))
                refused = try await alice.post("users/current", "")
            }
            #expect(refused.status == 401 && refused.code == "AUTHENTICATION_FAILED")
            #expect(try await AssetTests.get(ownURL).status == 404)
            #expect(try await AssetTests.get(bobURL).data == shared)
            let famous = try await bob.post("records/lookup", #"{"records":[{"recordName":"famous"}]}"#, database: "public")
            #expect(famous.json["records"]?[0]?["created"]?["userRecordName"]?.stringValue == alice.userRecordName, "\(famous.json)")
            let left = try await server.store.engine.read { transaction in
                (try transaction.privateDatabases(ofUser: aliceKey), try transaction.tokens(ofUser: aliceKey),
                 try transaction.subscriptions(inContainer: "iCloud.test.Gallery", environment: "development", kind: "private", user: aliceKey),
                 try transaction.users().map(\.user.name))
            }
            #expect(left.0.isEmpty && left.1.isEmpty && left.2.isEmpty && left.3 == ["bob"])

            // The name is free again, for a new user with nothing.
            let again = try await server.user("alice")
            #expect(again.userRecordName != alice.userRecordName)
            #expect(try await again.allChanges().records.isEmpty)
            #expect(try await again.post("records/changes", RecordChangesRequest(zoneID: ZoneID(zoneName: "Secret"))).code == "ZONE_NOT_FOUND")

            // A deleted user's key is never given to a later user, even when it was the last one.
            func key(_ name: String) async throws -> Int64 { try #require(try await server.store.users().first { $0.user.name == name }?.user.id) }
            _ = try await server.user("carol")
            let carol = try await key("carol")
            try await server.store.deleteUser(named: "carol")
            _ = try await server.user("dave")
            #expect(try await key("dave") > carol)
        }
    }
}
