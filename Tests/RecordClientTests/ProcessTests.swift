import Foundation
import RecordClient
import TestSupport
import Testing

/// Separate client processes (`recordsync-testclient`), each with its own cache file.
@Suite(.serialized) struct ProcessTests {
    /// Every record of a zone as the server has it, by name.
    static func serverRecords(_ database: Database, zone: ZoneID) async throws -> [String: Record] {
        var records: [String: Record] = [:]
        var token: ServerChangeToken?
        while true {
            let page = try await database.recordZoneChanges(inZoneWith: zone, since: token)
            for record in page.modifications { records[record.recordName] = record }
            token = page.changeToken
            if !page.moreComing { return records }
        }
    }

    @Test func fourConcurrentClientProcessesConvergeOnTheServersZone() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            try await Self.converge(servers: Array(repeating: server.url, count: 4), token: token, directory: server.directory)
        }
    }

    /// The same four processes, two on each of two `recordserver` nodes over one PostgreSQL.
    @Test(.enabled(if: TestPostgres.url != nil, "needs RECORDSYNC_TEST_POSTGRES"))
    func fourClientProcessesConvergeOverTwoNodesOfOnePostgreSQL() async throws {
        try await withTemporaryDirectory { directory in
            let deployment = try await Deployment(directory: directory, nodes: 2)
            defer { deployment.kill() }
            let token = try await deployment.addUser("alice")
            try await Self.converge(servers: (0..<4).map { deployment.nodes[$0 % 2].url }, token: token, directory: directory)
        }
    }

    /// Four `recordsync-testclient` processes, the `n`th talking to `servers[n]`, work on one
    /// zone at once, then each syncs once more: every cache holds the server's zone, and every
    /// write a process saw acknowledged is on the server.
    static func converge(servers: [URL], token: String, directory: String) async throws {
        let caches = (0..<4).map { "\(directory)/client-\($0).sqlite" }
        let workers = try (0..<4).map { index in
            try ChildProcess("recordsync-testclient", ["work", servers[index].absoluteString, token, caches[index], "p\(index)", "\(index + 1)", "60"])
        }
        var acknowledgedLedger: [String] = []
        for worker in workers {
            let result = await worker.wait()
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("done"))
            acknowledgedLedger += result.output.split(separator: "\n").filter { $0.hasPrefix("ledger ") }.map { String($0.dropFirst(7)) }
        }
        // After they stop, each syncs once more.
        for (index, cache) in caches.enumerated() {
            let sync = try await ChildProcess.run("recordsync-testclient", ["sync", servers[index].absoluteString, token, cache], mergeErrors: true)
            #expect(sync.status == 0, "\(sync.output)")
        }

        let database = Container(serverURL: servers[0], identifier: "iCloud.test.Processes", credentials: .bearerToken(token)).privateCloudDatabase
        let zone = ZoneID(zoneName: "Shared")
        let onServer = try await Self.serverRecords(database, zone: zone)
        #expect(onServer.values.contains { $0.recordType == "Artwork" })
        #expect(onServer.values.contains { $0.fields["editedBy"] != nil })
        for cache in caches {
            let local = try await RecordCache(path: cache).allRecords(inZoneWith: zone)
            #expect(local.count == onServer.count, "\(cache): \(local.count) records, the server has \(onServer.count)")
            for record in local {
                let remote = onServer[record.recordName]
                #expect(remote?.recordChangeTag == record.recordChangeTag, "\(record.recordName)")
                #expect(remote?.fields == record.fields, "\(record.recordName)")
                #expect(remote?.recordType == record.recordType)
            }
            #expect(try await RecordCache(path: cache).pendingChangeCount() == 0)
        }
        // No acknowledged write is lost: every ledger record a process saw acknowledged is there.
        #expect(!acknowledgedLedger.isEmpty)
        for name in acknowledgedLedger {
            #expect(onServer[name] != nil, "acknowledged \(name) is missing")
        }
    }

    /// An owner's process and a `READ_WRITE` participant's (syncing its shared database) work on
    /// Alice's shared zone at once, each editing offline between syncs: both caches end as the
    /// server's zone, and every acknowledged write of either is there.
    @Test func anOwnersAndAParticipantsProcessesConvergeOnASharedZone() async throws {
        try await withServer { server in
            let aliceToken = try await server.token(forNewUser: "alice")
            let bobToken = try await server.token(forNewUser: "bob")
            let alice = Container(serverURL: server.url, identifier: "iCloud.test.Processes", credentials: .bearerToken(aliceToken))
            let bob = Container(serverURL: server.url, identifier: "iCloud.test.Processes", credentials: .bearerToken(bobToken))
            let aliceID = try await alice.userRecordID().recordName
            let zone = ZoneID(zoneName: "Shared")
            try await alice.privateCloudDatabase.save(RecordZone(zoneID: zone))
            var share = Share(recordZoneID: zone)
            share.participants = [.user(try await bob.userRecordID().recordName, permission: .readWrite)]
            let guid = try #require(try await alice.privateCloudDatabase.save(share).shortGUID)
            _ = try #require(try await bob.acceptShares([guid]).first).get()

            let caches = ["\(server.directory)/owner.sqlite", "\(server.directory)/participant.sqlite"]
            let participant = ["RECORDSYNC_TESTCLIENT_SHARED_OWNER": aliceID]
            let workers = [
                try ChildProcess("recordsync-testclient", ["work", server.url.absoluteString, aliceToken, caches[0], "alice", "11", "60"]),
                try ChildProcess("recordsync-testclient", ["work", server.url.absoluteString, bobToken, caches[1], "bob", "12", "60"], environment: participant),
            ]
            var acknowledged: [String] = [], edits: [Int] = []
            for worker in workers {
                let result = await worker.wait()
                #expect(result.status == 0 && result.output.contains("done"), "\(result.output)")
                acknowledged += result.output.split(separator: "\n").filter { $0.hasPrefix("ledger ") }.map { String($0.dropFirst(7)) }
                edits.append(result.output.split(separator: "\n").filter { $0.hasPrefix("edited ") }.count)
            }
            // Each process's edits reached the server (the server acknowledged some of each; a
            // later edit by the other, or a cascade, may have replaced them since).
            #expect(edits.count == 2 && edits.allSatisfy { $0 > 0 }, "acknowledged edits: \(edits)")
            for (cache, token, environment) in [(caches[0], aliceToken, [String: String]()), (caches[1], bobToken, participant)] {
                let sync = try ChildProcess("recordsync-testclient", ["sync", server.url.absoluteString, token, cache], environment: environment)
                let result = await sync.wait()
                #expect(result.status == 0 && result.output.contains("synced"), "\(result.output)")
            }
            let onServer = try await Self.serverRecords(alice.privateCloudDatabase, zone: zone)
            for (cache, cachedZone) in [(caches[0], zone), (caches[1], ZoneID(zoneName: "Shared", ownerRecordName: aliceID))] {
                let opened = try RecordCache(path: cache)
                let local = try await opened.allRecords(inZoneWith: cachedZone).filter { $0.recordType != ShareInfo.recordType }
                #expect(local.count == onServer.count - 1, "\(cache): \(local.count) records, the server has \(onServer.count) with the share")
                for record in local {
                    #expect(onServer[record.recordName]?.recordChangeTag == record.recordChangeTag && onServer[record.recordName]?.fields == record.fields, "\(cache): \(record.recordName)")
                }
                #expect(try await opened.pendingChangeCount() == 0)
            }
            #expect(acknowledged.contains { $0.hasPrefix("bob-") } && acknowledged.contains { $0.hasPrefix("alice-") })
            for name in acknowledged { #expect(onServer[name] != nil, "acknowledged \(name) is missing") }
        }
    }

    @Test func aClientKilledBetweenItsLocalWriteAndItsSendDeliversTheChangeExactlyOnce() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let cache = "\(server.directory)/crash.sqlite"
            let doomed = try ChildProcess("recordsync-testclient", ["write-then-hang", server.url.absoluteString, token, cache, "crash-note"])
            #expect(try await doomed.waitFor("written") != nil, "\(doomed.text)")
            let killed = await doomed.stop(signal: SIGKILL)
            #expect(killed.reason == .uncaughtSignal)

            let database = Container(serverURL: server.url, identifier: "iCloud.test.Processes", credentials: .bearerToken(token)).privateCloudDatabase
            let id = Record.ID(recordName: "crash-note")
            #expect(try await database.records(for: [id]).errors[id]?.code == .notFound)

            let restarted = try await ChildProcess.run("recordsync-testclient", ["send", server.url.absoluteString, token, cache])
            #expect(restarted.status == 0)
            #expect(restarted.output == "saved crash-note\n")
            let again = try await ChildProcess.run("recordsync-testclient", ["send", server.url.absoluteString, token, cache])
            #expect(again.output.isEmpty)

            // Exactly one change reached the server: the feed holds the record once, at its first version.
            let page = try await database.recordZoneChanges(inZoneWith: .defaultZone, since: nil)
            #expect(page.modifications.map(\.recordName) == ["crash-note"])
            #expect(page.modifications.first?.fields["text"] == .string("written before the crash"))
            #expect(page.modifications.first?.created?.timestamp == page.modifications.first?.modified?.timestamp)
        }
    }

    @Test func anAssetEditSurvivesAKillBeforeItsUpload() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let cache = "\(server.directory)/asset-crash.sqlite"
            let file = "\(server.directory)/scan.bin"
            let bytes = Data((0..<500_000).map { UInt8(truncatingIfNeeded: $0 &* 11) })
            try bytes.write(to: URL(fileURLWithPath: file))
            let doomed = try ChildProcess("recordsync-testclient", ["asset-then-hang", server.url.absoluteString, token, cache, "scan", file])
            #expect(try await doomed.waitFor("written") != nil, "\(doomed.text)")
            #expect(await doomed.stop(signal: SIGKILL).reason == .uncaughtSignal)
            // The app's own file goes; the cache kept a copy with the edit.
            try FileManager.default.removeItem(atPath: file)

            let restarted = try await ChildProcess.run("recordsync-testclient", ["send", server.url.absoluteString, token, cache])
            #expect(restarted.output == "saved scan\n", "\(restarted.output)")
            let container = Container(serverURL: server.url, identifier: "iCloud.test.Processes", credentials: .bearerToken(token))
            let database = container.privateCloudDatabase
            let asset = try #require(try await database.record(for: Record.ID(recordName: "scan"))["file"]?.asset)
            #expect(try Data(contentsOf: try await database.fetchAsset(asset)) == bytes)
            // Acknowledged: the kept copy is gone.
            let pending = (try? FileManager.default.contentsOfDirectory(atPath: cache + "-assets/pending")) ?? []
            #expect(pending.isEmpty, "\(pending)")
        }
    }
}
