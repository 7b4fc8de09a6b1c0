import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RecordClient
import RecordModel
import TestSupport
import Testing

/// Several `recordserver` processes over one PostgreSQL database (``Deployment``): any request
/// may reach any node, and every node's answers are the database's.
@Suite(.serialized, .enabled(if: TestPostgres.url != nil, "needs RECORDSYNC_TEST_POSTGRES"))
struct MultiNodeTests {
    /// The container the `recordsync-testclient` processes use.
    static let container = "iCloud.test.Processes"

    /// POSTs JSON to an endpoint of the private database through `node`.
    static func post(_ node: URL, _ endpoint: String, _ body: String, token: String) async throws -> (status: Int, json: JSONValue) {
        var request = URLRequest(url: node.appendingPathComponent("database/1/\(container)/development/private/\(endpoint)"))
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, (try? JSONDecoder().decode(JSONValue.self, from: data)) ?? .null)
    }

    /// One page of zone `Shared`'s changes through `node`, or `nil` while the zone does not exist.
    static func page(_ node: URL, token: String, since syncToken: String?, limit: Int) async throws -> ZoneChanges? {
        let body = String(decoding: try JSONEncoder().encode(RecordChangesRequest(zoneID: ZoneID(zoneName: "Shared"), syncToken: syncToken, resultsLimit: limit)), as: UTF8.self)
        let (status, json) = try await post(node, "records/changes", body, token: token)
        if json["serverErrorCode"]?.stringValue == "ZONE_NOT_FOUND" { return nil }
        #expect(status == 200, "\(json)")
        return try JSONDecoder().decode(ZoneChanges.self, from: JSONEncoder().encode(json))
    }

    /// What a reader knows of a zone after applying pages in order: each record's change tag.
    struct ReaderState {
        var tags: [String: String] = [:]
        /// Every record change seen (name and tag), in order: none may come twice.
        var seen: [String] = []
        var ledger: [String] = []

        mutating func apply(_ page: ZoneChanges) {
            for record in page.records {
                if record.deleted == true {
                    tags[record.recordName] = nil
                } else {
                    tags[record.recordName] = record.recordChangeTag
                    seen.append("\(record.recordName)@\(record.recordChangeTag ?? "")")
                    if record.recordType == "Ledger" { ledger.append(record.recordName) }
                }
            }
        }
    }

    /// 4 writer processes, spread over two nodes, create, update, delete and cascade in one zone
    /// while every commit waits a little after taking its numbers (`RECORDSYNC_TEST_COMMIT_DELAY_MS`),
    /// so that commits land out of the order of their numbers if anything lets them; a reader
    /// paging through a third node with a small limit sees every acknowledged change once.
    @Test func aReaderOnAnotherNodeSeesEveryAcknowledgedChangeExactlyOnce() async throws {
        try await withTemporaryDirectory { directory in
            let deployment = try await Deployment(directory: directory, nodes: 3, environment: ["RECORDSYNC_TEST_COMMIT_DELAY_MS": "15"])
            defer { deployment.kill() }
            let token = try await deployment.addUser("alice")
            let writers = try (0..<4).map { index in
                try ChildProcess("recordsync-testclient", ["work", deployment.nodes[index % 2].url.absoluteString, token,
                                                           "\(directory)/client-\(index).sqlite", "p\(index)", "\(index + 11)", "40"])
            }
            let reader = deployment.nodes[2].url
            var state = ReaderState()
            var syncToken: String?
            var writing = true
            while true {
                writing = writers.contains { $0.process.isRunning }
                guard let page = try await Self.page(reader, token: token, since: syncToken, limit: 3) else {
                    try await Task.sleep(for: .milliseconds(20))
                    continue
                }
                state.apply(page)
                syncToken = page.syncToken
                if !page.moreComing {
                    if !writing { break }
                    try await Task.sleep(for: .milliseconds(5))
                }
            }
            var acknowledged: [String] = []
            for writer in writers {
                let result = await writer.wait()
                #expect(result.status == 0, "\(result.output)")
                acknowledged += result.output.split(separator: "\n").filter { $0.hasPrefix("ledger ") }.map { String($0.dropFirst(7)) }
            }
            #expect(!acknowledged.isEmpty)
            #expect(Set(state.seen).count == state.seen.count, "a change was delivered twice")
            for name in acknowledged {
                #expect(state.ledger.filter { $0 == name }.count == 1, "acknowledged \(name) seen \(state.ledger.filter { $0 == name }.count) times")
            }
            // The reader's picture is the zone as a fresh fetch through another node gives it.
            var fresh = ReaderState()
            var freshToken: String?
            while let page = try await Self.page(deployment.nodes[0].url, token: token, since: freshToken, limit: 200) {
                fresh.apply(page)
                freshToken = page.syncToken
                if !page.moreComing { break }
            }
            #expect(fresh.tags == state.tags)
            #expect(!state.tags.isEmpty)
        }
    }

    /// The push channel of one node carries a write made through another.
    @Test func aClientOnOneNodeIsPushedAWriteMadeThroughAnother() async throws {
        try await withTemporaryDirectory { directory in
            let deployment = try await Deployment(directory: directory, nodes: 2)
            defer { deployment.kill() }
            let token = try await deployment.addUser("alice")
            let events = try await EventStream(node: deployment.nodes[0].url, token: token)
            let (status, json) = try await Self.post(deployment.nodes[1].url, "records/modify", """
                {"operations": [{"operationType": "forceReplace", "record": {"recordName": "pushed", "recordType": "Note", "fields": {"text": {"value": "hi"}}}}]}
                """, token: token)
            #expect(status == 200, "\(json)")
            #expect(try await events.next(containing: "_defaultZone") != nil, "no push: \(events.text)")
            events.cancel()
        }
    }

    /// When a node's listening connection drops, the streams it serves end (their clients
    /// reconnect and fetch), and once it listens again pushes arrive again.
    @Test func whenANodeStopsListeningItsClientsAreToldToRefetch() async throws {
        try await withTemporaryDirectory { directory in
            let deployment = try await Deployment(directory: directory, nodes: 2)
            defer { deployment.kill() }
            let token = try await deployment.addUser("alice")
            let events = try await EventStream(node: deployment.nodes[0].url, token: token)
            let terminated = try await TestPostgres.withConnection { connection in
                try await connection.query("""
                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'recordsync-listen'
                    """, logger: .init(label: "test")).collect().count
            }
            #expect(terminated >= 2)
            #expect(try await events.ended(within: .seconds(10)), "the stream did not end: \(events.text)")

            // The node listens again within a second or two (ending, once more, the streams
            // opened meanwhile); from then on it relays again.
            var pushed = false
            for attempt in 0..<10 where !pushed {
                let again = try await EventStream(node: deployment.nodes[0].url, token: token)
                _ = try await Self.post(deployment.nodes[1].url, "records/modify", """
                    {"operations": [{"operationType": "forceReplace", "record": {"recordName": "later\(attempt)", "recordType": "Note", "fields": {}}}]}
                    """, token: token)
                pushed = try await again.next(containing: "_defaultZone", within: .seconds(2)) != nil
                again.cancel()
            }
            #expect(pushed, "no push after the node listens again")
        }
    }

    /// A request to `path` (under the server) through `node`, with `secret` (a user's token or
    /// an operator's).
    static func send(_ node: URL, _ path: String, _ body: String?, secret: String) async throws -> JSONValue {
        var request = URLRequest(url: node.appendingPathComponent(path))
        request.httpMethod = body == nil ? "GET" : "POST"
        request.httpBody = body.map { Data($0.utf8) }
        request.setValue("Bearer \(secret)", forHTTPHeaderField: "Authorization")
        let (data, _) = try await URLSession.shared.data(for: request)
        return (try? JSONDecoder().decode(JSONValue.self, from: data)) ?? .null
    }

    /// A role given through one node: another node's writes are judged by it at once, its reads
    /// within a second (docs/protocol.md, "Security roles").
    @Test func aRoleGivenThroughOneNodeReachesTheOthers() async throws {
        try await withTemporaryDirectory { directory in
            let deployment = try await Deployment(directory: directory, nodes: 2)
            defer { deployment.kill() }
            let alice = try await deployment.addUser("alice"), erin = try await deployment.addUser("erin")
            let made = try await ChildProcess.run("recordserver", ["operator", "add", "ops", "--scope", "schema", "--scope", "users", "--database", deployment.databaseURL])
            let secret = made.output.trimmingCharacters(in: .whitespacesAndNewlines)
            let (first, second) = (deployment.nodes[0].url, deployment.nodes[1].url)
            let schema = "DEFINE SCHEMA\n    CREATE ROLE editors;\n    RECORD TYPE Memo (\n        note STRING,\n        GRANT CREATE TO \"_icloud\",\n        GRANT WRITE TO editors\n    );\n"
            var importing = URLRequest(url: first.appendingPathComponent("admin/1/\(Self.container)/development/schema/import"))
            importing.httpMethod = "POST"
            importing.httpBody = Data(schema.utf8)
            importing.setValue("Bearer \(secret)", forHTTPHeaderField: "Authorization")
            #expect((try await URLSession.shared.data(for: importing).1 as? HTTPURLResponse)?.statusCode == 200)
            let publicDatabase = "database/1/\(Self.container)/development/public/"
            let create = #"{"operations":[{"operationType":"create","record":{"recordName":"memo","recordType":"Memo","fields":{"note":{"value":"for editors"}}}}]}"#
            #expect(try await Self.send(first, publicDatabase + "records/modify", create, secret: alice)["records"]?[0]?["recordName"]?.stringValue == "memo")
            let lookup = #"{"records":[{"recordName":"memo"}]}"#
            // The second node reads (and keeps) Erin's roles: none.
            #expect(try await Self.send(second, publicDatabase + "records/lookup", lookup, secret: erin)["records"]?[0]?["serverErrorCode"]?.stringValue == "NOT_FOUND")
            let given = try await Self.send(first, "admin/1/\(Self.container)/development/roles/give", #"{"name":"erin","role":"editors"}"#, secret: secret)
            #expect(given["changed"] == .bool(true), "\(given)")
            // A write through the second node is judged by what its transaction reads.
            let edit = #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"memo","recordType":"Memo","fields":{"note":{"value":"edited"}}}}]}"#
            let edited = try await Self.send(second, publicDatabase + "records/modify", edit, secret: erin)
            #expect(edited["records"]?[0]?["serverErrorCode"] == nil, "\(edited)")
            // Its reads see the role within a second.
            let start = ContinuousClock.now
            var found = false
            while !found, ContinuousClock.now - start < .seconds(3) {
                found = try await Self.send(second, publicDatabase + "records/lookup", lookup, secret: erin)["records"]?[0]?["fields"]?["note"]?["value"]?.stringValue == "edited"
                if !found { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(found && ContinuousClock.now - start < .milliseconds(1_500), "read after \(ContinuousClock.now - start)")
        }
    }

    /// A participant removed through one node is refused by the other at its next request
    /// (docs/protocol.md, "Sharing": a participation is read in each request's transaction).
    @Test func aParticipantRemovedThroughOneNodeIsRefusedByTheOthersAtOnce() async throws {
        try await withTemporaryDirectory { directory in
            let deployment = try await Deployment(directory: directory, nodes: 2)
            defer { deployment.kill() }
            let alice = try await deployment.addUser("alice"), bob = try await deployment.addUser("bob")
            let (first, second) = (deployment.nodes[0].url, deployment.nodes[1].url)
            let database = "database/1/\(Self.container)/development/"
            let bobName = try await Self.send(first, database + "public/users/caller", "{}", secret: bob)["userRecordName"]?.stringValue ?? ""
            let aliceName = try await Self.send(first, database + "public/users/caller", "{}", secret: alice)["userRecordName"]?.stringValue ?? ""
            _ = try await Self.send(first, database + "private/zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Trip"}}}]}"#, secret: alice)
            let share = try await Self.send(first, database + "private/records/modify", #"{"zoneID":{"zoneName":"Trip"},"operations":[{"operationType":"create","record":{"recordName":"note","recordType":"Note","fields":{}}},{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"participants":[{"userIdentity":{"lookupInfo":{"userRecordName":"\#(bobName)"}},"permission":"READ_WRITE"}]}}]}"#, secret: alice)
            let guid = share["records"]?[1]?["shortGUID"]?.stringValue ?? ""
            #expect(!guid.isEmpty, "\(share)")
            _ = try await Self.send(second, database + "public/records/accept", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#, secret: bob)
            let lookup = #"{"zoneID":{"zoneName":"Trip","ownerRecordName":"\#(aliceName)"},"records":[{"recordName":"note"}]}"#
            #expect(try await Self.send(second, database + "shared/records/lookup", lookup, secret: bob)["records"]?[0]?["recordName"]?.stringValue == "note")
            let removed = try await Self.send(first, database + "private/records/modify", #"{"zoneID":{"zoneName":"Trip"},"operations":[{"operationType":"forceUpdate","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"participants":[]}}]}"#, secret: alice)
            #expect(removed["records"]?[0]?["participants"] == .array([]), "\(removed)")
            #expect(try await Self.send(second, database + "shared/records/lookup", lookup, secret: bob)["serverErrorCode"]?.stringValue == "ZONE_NOT_FOUND")
            let write = #"{"zoneID":{"zoneName":"Trip","ownerRecordName":"\#(aliceName)"},"operations":[{"operationType":"forceReplace","record":{"recordName":"late","recordType":"Note","fields":{}}}]}"#
            #expect(try await Self.send(second, database + "shared/records/modify", write, secret: bob)["serverErrorCode"]?.stringValue == "ZONE_NOT_FOUND")
        }
    }

    /// `kill -9` of a node while a batch is written through it: the batch's transaction dies
    /// with its connection, so none of it is stored, and every acknowledged write is.
    @Test func killingANodeMidBatchLosesNoAcknowledgedWriteAndKeepsNoPartOfTheBatch() async throws {
        try await withTemporaryDirectory { directory in
            let deployment = try await Deployment(directory: directory, nodes: 1)
            defer { deployment.kill() }
            let slow = try await deployment.startNode(environment: ["RECORDSYNC_TEST_COMMIT_DELAY_MS": "4000"])
            let token = try await deployment.addUser("alice")
            let steady = deployment.nodes[0].url
            func batch(_ prefix: String, _ count: Int) -> String {
                let operations = (0..<count).map { """
                    {"operationType": "create", "record": {"recordName": "\(prefix)\($0)", "recordType": "Note", "fields": {"n": {"value": \($0)}}}}
                    """ }
                return "{\"operations\": [\(operations.joined(separator: ","))]}"
            }
            #expect(try await Self.post(steady, "records/modify", batch("kept-", 20), token: token).status == 200)

            let doomed = Task { try? await Self.post(slow.url, "records/modify", batch("doomed-", 100), token: token) }
            // The batch is written and waiting to commit (4 s) when the node dies.
            try await Task.sleep(for: .milliseconds(1500))
            let stopped = await slow.stop(signal: SIGKILL)
            #expect(stopped.reason == .uncaughtSignal)
            _ = await doomed.value

            let names = (0..<20).map { "{\"recordName\": \"kept-\($0)\"}" } + (0..<100).map { "{\"recordName\": \"doomed-\($0)\"}" }
            let (status, json) = try await Self.post(steady, "records/lookup", "{\"records\": [\(names.joined(separator: ","))]}", token: token)
            #expect(status == 200)
            let results = json["records"]?.arrayValue ?? []
            #expect(results.count == 120)
            let found = results.filter { $0["serverErrorCode"] == nil }.compactMap { $0["recordName"]?.stringValue }
            #expect(found.sorted() == (0..<20).map { "kept-\($0)" }.sorted())
        }
    }
}

/// A node's push channel as the client library reads it, its events kept as they arrive.
final class EventStream: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [ChangeNotification] = []
    private var finished = false
    private var task: Task<Void, Never>?

    /// Opens the stream and waits until the node says it is connected.
    init(node: URL, token: String) async throws {
        let database = Container(serverURL: node, identifier: MultiNodeTests.container, credentials: .bearerToken(token)).privateCloudDatabase
        task = Task { [self] in
            do {
                for try await event in database.changeNotifications() { lock.withLock { events.append(event) } }
            } catch {}
            lock.withLock { finished = true }
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while !lock.withLock({ events.contains(.connected) }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
    }

    var text: String { lock.withLock { "\(events)" } }

    /// Waits for an event naming the zone `zoneName`.
    func next(containing zoneName: String, within limit: Duration = .seconds(10)) async throws -> ChangeNotification? {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let match = lock.withLock {
                events.first { if case .zonesChanged(let zones) = $0 { zones.contains { $0.zoneName == zoneName } } else { false } }
            }
            if let match { return match }
            try await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    /// Whether the server ended the stream within `limit`.
    func ended(within limit: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if lock.withLock({ finished }) { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    func cancel() { task?.cancel() }
}
