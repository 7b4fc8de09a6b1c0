import Foundation
import RecordModel
import RecordRules
import RecordServer
import TestSupport
import Testing

/// Item 10 and the executable: data survives restarts and `kill -9`; `user add` prints only
/// the token; SIGTERM shuts the server down cleanly.
@Suite(.serialized) struct DurabilityTests {
    @Test func dataSurvivesAServerRestart() async throws {
        try await withTemporaryDirectory { directory in
            let token = Credentials.newTokenForTests()
            try await withServer(directory: directory) { server in
                _ = try await server.store.createUser(named: "alice", tokenHash: token.hash)
                let alice = Session(client: server.client, token: token.value, container: "iCloud.test.Gallery", userRecordName: "")
                try await alice.createZones("Gallery")
                try await alice.save([.artist("monet"), .artwork("lilies", by: "monet")], zone: "Gallery")
            }
            try await withServer(directory: directory) { server in
                let alice = Session(client: server.client, token: token.value, container: "iCloud.test.Gallery", userRecordName: "")
                let changes = try await alice.allChanges(zone: "Gallery")
                #expect(changes.records.map(\.recordName) == ["monet", "lilies"])
            }
        }
    }

    @Test func userAddPrintsOnlyAToken() async throws {
        try await withTemporaryDirectory { directory in
            let first = try await ChildProcess.run("recordserver", ["user", "add", "alice", "--data", directory])
            #expect(first.status == 0)
            let lines = first.output.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count == 2 && lines[1].isEmpty)
            #expect(lines[0].hasPrefix("rs_") && Base64URL.decode(String(lines[0].dropFirst(3)))?.count == 32)
            let again = try await ChildProcess.run("recordserver", ["user", "add", "alice", "--data", directory])
            #expect(again.status != 0)
            #expect(again.output.isEmpty)
            let second = try await ChildProcess.run("recordserver", ["user", "token", "alice", "--data", directory])
            #expect(second.status == 0 && second.output != first.output)
        }
    }

    @Test func acknowledgedWritesSurviveKillDashNine() async throws {
        try await withTemporaryDirectory { directory in
            let token = try await ChildProcess.run("recordserver", ["user", "add", "alice", "--data", directory]).output.trimmingCharacters(in: .whitespacesAndNewlines)
            let server = try await ServerProcess(data: directory)
            var acknowledged: [String] = []
            for batch in 0..<20 {
                let names = (0..<10).map { "r\(batch)-\($0)" }
                let operations = names.map { #"{"operationType": "create", "record": {"recordName": "\#($0)", "recordType": "Note", "fields": {"n": {"value": \#(batch)}}}}"# }
                let reply = try await server.post("records/modify", #"{"operations": [\#(operations.joined(separator: ","))]}"#, token: token)
                #expect(reply.status == 200)
                acknowledged += names
            }
            let stopped = await server.stop(signal: SIGKILL)
            #expect(stopped.reason == .uncaughtSignal)

            let restarted = try await ServerProcess(data: directory)
            
            let lookup = #"{"records": [\#(acknowledged.prefix(200).map { #"{"recordName": "\#($0)"}"# }.joined(separator: ","))]}"#
            let reply = try await restarted.post("records/lookup", lookup, token: token)
            let results = try JSONDecoder().decode(RecordsResponse.self, from: reply.data).records
            #expect(results.count == acknowledged.count)
            #expect(results.allSatisfy { $0.record != nil })
            _ = await restarted.stop(signal: SIGTERM)
        }
    }

    @Test func sigtermShutsTheServerDownCleanly() async throws {
        try await withTemporaryDirectory { directory in
            let server = try await ServerProcess(data: directory)
            #expect(server.logText.contains("listening on http://127.0.0.1:\(server.port)"))
            let stopped = await server.stop(signal: SIGTERM)
            #expect(stopped.reason == .exit)
            #expect(stopped.status == 0)
        }
    }
}

extension Credentials {
    /// A token and its hash, for tests that create users directly in a store.
    static func newTokenForTests() -> (value: String, hash: Data) {
        let token = newToken()
        return (token, hash(token))
    }
}
