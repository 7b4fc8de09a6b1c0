import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
#if canImport(Glibc)
import Glibc
#endif
import RecordModel
import TestSupport
import Testing

/// Faults under a real `recordserver` process: `kill -9` in the middle of a cascade and of
/// change paging, the SQLite engine's disk filling up, PostgreSQL stopped and started again
/// under load. Nothing acknowledged is lost, errors are clear, the server recovers by itself.
@Suite(.serialized) struct FaultTests {
    static func addUser(_ data: String) async throws -> String {
        try await ChildProcess.run("recordserver", ["user", "add", "alice", "--data", data]).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func names(_ json: JSONValue?) -> [String] {
        guard case .array(let records)? = json?["records"] else { return [] }
        return records.compactMap { record in if case .string(let name)? = record["recordName"] { name } else { nil } }
    }

    /// Looks `names` up: which were found.
    static func found(_ names: [String], _ server: ServerProcess, token: String, container: String = "iCloud.test.Durable") async throws -> Set<String> {
        var found: Set<String> = []
        for first in stride(from: 0, to: names.count, by: 400) {
            let batch = names[first..<min(first + 400, names.count)]
            let reply = try await server.post("records/lookup", #"{"records":[\#(batch.map { #"{"recordName":"\#($0)"}"# }.joined(separator: ","))]}"#,
                                              token: token, container: container)
            #expect(reply.status == 200)
            guard case .array(let records)? = try JSONValue.parse(reply.data)["records"] else { continue }
            for (name, record) in zip(batch, records) where record["serverErrorCode"] == nil { found.insert(name) }
        }
        return found
    }

    /// A cascade of 8,001 records is killed (`kill -9`) at several moments while it runs: after
    /// each restart the tree is whole or entirely gone, never in part, and every record
    /// acknowledged before is there. The first kill is certain to land with the whole cascade
    /// done and not committed (the server pauses 3 s before each commit): the tree is whole.
    @Test func aServerKilledDuringACascadeKeepsItWholeOrGone() async throws {
        try await withTemporaryDirectory { directory in
            let token = try await Self.addUser(directory)
            var server = try await ServerProcess(data: directory)
            let tree = ["root"] + (0..<8_000).map { "c\($0)" }
            let operations = tree.map { name in
                name == "root" ? #"{"operationType":"create","record":{"recordName":"root","recordType":"Node"}}"#
                    : #"{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Node","fields":{"parent":{"value":{"recordName":"root","action":"DELETE_SELF"}}}}}"#
            }
            for first in stride(from: 0, to: operations.count, by: 400) {
                let reply = try await server.post("records/modify", #"{"operations":[\#(operations[first..<min(first + 400, operations.count)].joined(separator: ","))]}"#, token: token)
                #expect(reply.status == 200)
            }
            let others = (0..<50).map { "other\($0)" }
            let reply = try await server.post("records/modify", #"{"operations":[\#(others.map { #"{"operationType":"create","record":{"recordName":"\#($0)","recordType":"Note"}}"# }.joined(separator: ","))]}"#, token: token)
            #expect(reply.status == 200)
            // Started again pausing before each commit, then killed in the pause.
            _ = await server.stop(signal: SIGTERM)
            server = try await ServerProcess(data: directory, environment: ["RECORDSYNC_TEST_COMMIT_DELAY_MS": "3000"])
            let paused = server
            let deleting = Task { try? await paused.post("records/modify", #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"root"}}]}"#, token: token) }
            try await Task.sleep(for: .milliseconds(1500))
            _ = await paused.stop(signal: SIGKILL)
            #expect(await deleting.value == nil, "the delete was answered before the kill")
            server = try await ServerProcess(data: directory)
            #expect(try await Self.found(tree, server, token: token).count == tree.count, "the cascade killed before its commit left the tree whole")
            var outcomes: [Int] = []
            for delay in [5, 20, 60, 150, 400] {
                let doomed = server
                let deleting = Task { try? await doomed.post("records/modify", #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"root"}}]}"#, token: token) }
                try await Task.sleep(for: .milliseconds(delay))
                _ = await doomed.stop(signal: SIGKILL)
                _ = await deleting.value
                server = try await ServerProcess(data: directory)
                let present = try await Self.found(tree, server, token: token)
                #expect(present.count == tree.count || present.isEmpty, "after a kill at \(delay) ms: \(present.count) of \(tree.count) records")
                #expect(try await Self.found(others, server, token: token).count == others.count)
                outcomes.append(present.count)
                if present.isEmpty { break }
            }
            _ = await server.stop(signal: SIGTERM)
            #expect(!outcomes.isEmpty)
        }
    }

    /// A client paging through 3,000 changes holds its token across a `kill -9` and restart of
    /// the server, and goes on from it: every record once, none skipped or doubled, the
    /// records written meanwhile included.
    @Test func changePagingResumesAfterTheServerIsKilled() async throws {
        try await withTemporaryDirectory { directory in
            let token = try await Self.addUser(directory)
            var server = try await ServerProcess(data: directory)
            let zone = #""zoneID":{"zoneName":"Paged"}"#
            #expect(try await server.post("zones/modify", #"{"operations":[{"operationType":"create","zone":{\#(zone)}}]}"#, token: token).status == 200)
            let written = (0..<3_000).map { "n\($0)" }
            for first in stride(from: 0, to: written.count, by: 400) {
                let batch = written[first..<min(first + 400, written.count)]
                let reply = try await server.post("records/modify", #"{\#(zone),"operations":[\#(batch.map { #"{"operationType":"create","record":{"recordName":"\#($0)","recordType":"Note"}}"# }.joined(separator: ","))]}"#, token: token)
                #expect(reply.status == 200)
            }
            var seen: [String] = [], syncToken: String?, pages = 0, more = true
            var extra: [String] = []
            while more {
                let body = #"{\#(zone),"resultsLimit":100\#(syncToken.map { #","syncToken":"\#($0)""# } ?? "")}"#
                let reply = try await server.post("records/changes", body, token: token)
                #expect(reply.status == 200)
                let page = try JSONValue.parse(reply.data)
                seen += Self.names(page)
                if case .string(let next)? = page["syncToken"] { syncToken = next }
                more = page["moreComing"] == .bool(true)
                pages += 1
                if pages == 7 {
                    // Killed while the next pages are being read ahead; more written after the restart.
                    _ = await server.stop(signal: SIGKILL)
                    server = try await ServerProcess(data: directory)
                    extra = (0..<30).map { "late\($0)" }
                    let reply = try await server.post("records/modify", #"{\#(zone),"operations":[\#(extra.map { #"{"operationType":"create","record":{"recordName":"\#($0)","recordType":"Note"}}"# }.joined(separator: ","))]}"#, token: token)
                    #expect(reply.status == 200)
                }
            }
            #expect(seen.count == written.count + extra.count, "\(seen.count) changes for \(written.count + extra.count) records")
            #expect(Set(seen) == Set(written + extra))
            _ = await server.stop(signal: SIGTERM)
        }
    }

    /// Runs a command; its status.
    @discardableResult
    static func run(_ path: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// The SQLite engine's disk fills up (a 4 MB filesystem of the test's own): a save is
    /// refused with `TRY_AGAIN_LATER` (503) saying the disk is full, the server stays up and
    /// answers reads, and once there is room again it saves; nothing acknowledged is lost.
    @Test(.enabled(if: getuid() == 0, "mounting a small filesystem needs root"))
    func aFullDiskIsAClearErrorAndTheServerWorksOnceThereIsRoom() async throws {
        try await withTemporaryDirectory { directory in
            let mount = directory + "/small"
            try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
            guard try Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mount]) == 0 else {
                Issue.record("cannot mount a tmpfs at \(mount)")
                return
            }
            defer { _ = try? Self.run("/bin/umount", ["-l", mount]) }
            let data = mount + "/data"
            let token = try await Self.addUser(data)
            // Room to give back later.
            FileManager.default.createFile(atPath: mount + "/ballast", contents: Data(count: 1 << 20))
            let server = try await ServerProcess(data: data)
            var acknowledged: [String] = []
            var refusal: (status: Int, data: Data)?
            let text = String(repeating: "x", count: 20_000)
            for batch in 0..<400 where refusal == nil {
                let names = (0..<10).map { "r\(batch)-\($0)" }
                let reply = try await server.post("records/modify", #"{"operations":[\#(names.map { #"{"operationType":"create","record":{"recordName":"\#($0)","recordType":"Note","fields":{"text":{"value":"\#(text)"}}}}"# }.joined(separator: ","))]}"#, token: token)
                if reply.status == 200 { acknowledged += names } else { refusal = reply }
            }
            let refused = try #require(refusal, "the disk never filled")
            let answer = try JSONValue.parse(refused.data)
            #expect(refused.status == 503 && answer["serverErrorCode"] == .string("TRY_AGAIN_LATER"), "\(String(decoding: refused.data, as: UTF8.self))")
            #expect(String(decoding: refused.data, as: UTF8.self).contains("disk is full"))
            #expect(!acknowledged.isEmpty)
            // Still up: reads answer.
            #expect(try await Self.found(Array(acknowledged.prefix(10)), server, token: token).count == 10)
            // Room again: saves go through.
            try FileManager.default.removeItem(atPath: mount + "/ballast")
            let again = try await server.post("records/modify", #"{"operations":[{"operationType":"create","record":{"recordName":"after","recordType":"Note"}}]}"#, token: token)
            #expect(again.status == 200, "\(String(decoding: again.data, as: UTF8.self))")
            #expect(try await Self.found(acknowledged + ["after"], server, token: token).count == acknowledged.count + 1)
            #expect(await server.stop(signal: SIGTERM).status == 0)
        }
    }

    /// `Scripts/postgres-cluster` of this source tree.
    static let clusterScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Scripts/postgres-cluster").path

    /// `postgres-cluster COMMAND DIR`, its output in `DIR.out`: its exit status.
    static func cluster(_ command: String, _ directory: String) -> Int32 {
        system("'\(clusterScript)' \(command) '\(directory)' > '\(directory).out' 2>&1")
    }

    static var hasPostgreSQL: Bool {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).contains {
            FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/\($0)/bin/pg_ctl")
        }
    }

    /// PostgreSQL (a cluster of the test's own) stopped and started again while saves run: the
    /// saves meanwhile fail with a JSON error within seconds (`TRY_AGAIN_LATER` for a connection
    /// lost or none leased within 5 s; never a hang or a crash), the same `recordserver` saves
    /// again once the database is back, every save acknowledged is there, and the node still
    /// stops gracefully (no request left unanswered holds it up).
    @Test(.enabled(if: hasPostgreSQL, "needs PostgreSQL's server"))
    func postgreSQLStoppedAndStartedUnderLoadFailsCleanlyAndRecovers() async throws {
        let cluster = "/tmp/recordsync-fault-\(UUID().uuidString)"
        defer {
            _ = Self.cluster("stop", cluster)
            try? FileManager.default.removeItem(atPath: cluster)
            try? FileManager.default.removeItem(atPath: cluster + ".out")
        }
        // Through a shell, its output to a file: the PostgreSQL server started keeps the
        // script's standard output and error open, which a pipe would wait on.
        try #require(Self.cluster("start", cluster) == 0)
        let url = try String(contentsOfFile: cluster + ".out", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) + "?sslmode=disable"
        try #require(url.hasPrefix("postgres://"), "\(url)")
        try await withTemporaryDirectory { directory in
            let token = try await ChildProcess.run("recordserver", ["user", "add", "alice", "--database", url]).output.trimmingCharacters(in: .whitespacesAndNewlines)
            let server = try await ServerProcess(data: directory, arguments: ["--database", url])
            let log = Outcomes()
            let writers = (0..<4).map { writer in
                Task {
                    var batch = 0
                    while !log.stopped {
                        let names = (0..<5).map { "w\(writer)-\(batch)-\($0)" }
                        batch += 1
                        let body = #"{"operations":[\#(names.map { #"{"operationType":"create","record":{"recordName":"\#($0)","recordType":"Note"}}"# }.joined(separator: ","))]}"#
                        let started = ContinuousClock.now
                        guard let reply = try? await Self.post(body, port: server.port, token: token) else {
                            log.note(failure: "no answer")
                            continue
                        }
                        log.note(reply, names: names, took: ContinuousClock.now - started)
                        if reply.status != 200 { try? await Task.sleep(for: .milliseconds(50)) }
                    }
                }
            }
            try await Task.sleep(for: .seconds(1))
            #expect(Self.cluster("stop", cluster) == 0)
            try await Task.sleep(for: .seconds(3))
            let failuresWhileDown = log.failures
            #expect(Self.cluster("start", cluster) == 0)
            let back = log.acknowledged.count
            #expect(try await Self.eventually(within: 30) { log.acknowledged.count > back + 20 }, "saves never went through again: \(server.logText)")
            log.stop()
            for writer in writers { await writer.value }
            #expect(!failuresWhileDown.isEmpty, "the stop was noticed")
            #expect(failuresWhileDown.allSatisfy { $0.hasPrefix("503") && $0.contains("TRY_AGAIN_LATER") }, "\(Set(failuresWhileDown))")
            #expect(log.slowest < .seconds(10), "a request waited \(log.slowest)")
            #expect(!log.failures.contains("no answer"), "a request got no answer")
            let acknowledged = log.acknowledged
            #expect(try await Self.found(acknowledged, server, token: token).count == acknowledged.count)
            // SIGTERM waits for requests in flight: one never answered would hold it for good.
            let pid = server.child.process.processIdentifier
            let killer = Task {
                try await Task.sleep(for: .seconds(20))
                kill(pid, SIGKILL)
            }
            let stopped = await server.stop(signal: SIGTERM)
            killer.cancel()
            #expect(stopped.reason == .exit, "SIGTERM did not stop the node within 20 s: \(server.logText.suffix(2000))")
        }
    }

    static let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)

    /// POSTs a `records/modify` body to the private database of `iCloud.test.Durable` on a node,
    /// giving up after 15 s (a hung request is a failure, never a hung test).
    static func post(_ body: String, port: Int, token: String) async throws -> (status: Int, data: Data) {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/database/1/iCloud.test.Durable/development/private/records/modify")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await http.execute(request, timeout: .seconds(15))
        return (Int(response.status.code), Data(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    /// Waits until `condition` holds, checking every 50 ms, for at most `seconds`.
    static func eventually(within seconds: Double, _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }

    /// What the writers of the PostgreSQL test saw.
    final class Outcomes: @unchecked Sendable {
        private let lock = NSLock()
        private var names: [String] = []
        private var failed: [String] = []
        private var longest: Duration = .zero
        private var done = false

        var stopped: Bool { lock.withLock { done } }
        var acknowledged: [String] { lock.withLock { names } }
        var failures: [String] { lock.withLock { failed } }
        var slowest: Duration { lock.withLock { longest } }
        func stop() { lock.withLock { done = true } }
        func note(failure: String) { lock.withLock { failed.append(failure) } }
        func note(_ reply: (status: Int, data: Data), names written: [String], took: Duration) {
            lock.withLock {
                longest = max(longest, took)
                if reply.status == 200 {
                    names += written
                } else {
                    let code = (try? JSONValue.parse(reply.data))?["serverErrorCode"].map { "\($0)" } ?? "not JSON: \(String(decoding: reply.data.prefix(100), as: UTF8.self))"
                    failed.append("\(reply.status) \(code)")
                }
            }
        }
    }
}
