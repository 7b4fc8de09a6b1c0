import Foundation
import RecordClient
import TestSupport
import Testing

/// The sync engine and the cache against a live server: two clients, each with its own cache.
@Suite struct SyncEngineTests {
    /// A client: a database handle and an engine over its own in-memory cache.
    static func client(_ container: Container, configure: (inout SyncEngine.Configuration) -> Void = { _ in },
                       resolver: SyncEngine.ConflictResolver? = nil) throws -> SyncEngine {
        var configuration = SyncEngine.Configuration()
        configuration.maximumAttempts = 2
        configure(&configuration)
        return SyncEngine(database: container.privateCloudDatabase, cache: try RecordCache(path: ":memory:"), configuration: configuration, conflictResolver: resolver)
    }

    @Test func aCascadeOnTheServerRemovesRecordsFromAnotherClientsCache() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let a = try Self.client(Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)))
            let b = try Self.client(Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)))
            try await a.database.save(RecordZone(zoneID: Gallery.zone))
            try await a.save(Gallery.artwork("lilies", by: "monet"))
            try await a.save(Gallery.artwork("haystacks", by: "monet"))
            try await a.save(Gallery.artist("monet"))
            let sent = try await a.sendChanges()
            #expect(sent.saved.count == 3 && sent.failures.isEmpty)
            try await b.fetchChanges()
            #expect(try await b.cache.allRecords(inZoneWith: Gallery.zone).map(\.recordName) == ["haystacks", "lilies", "monet"])

            try await a.delete(Record.ID(recordName: "monet", zoneID: Gallery.zone))
            #expect(try await a.sendChanges().deleted.count == 1)
            let report = try await b.fetchChanges()
            #expect(report.deletedRecordCount == 3)
            #expect(try await b.cache.allRecords(inZoneWith: Gallery.zone).isEmpty)
            // A learns of the cascade the same way.
            try await a.fetchChanges()
            #expect(try await a.cache.allRecords(inZoneWith: Gallery.zone).isEmpty)
        }
    }

    /// Pages are fetched ahead while the previous one is written; the cache still ends up with
    /// exactly the server's state, and the counts cover every page.
    @Test func aFetchOfManyPagesAppliesEveryPageInOrder() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let a = try Self.client(Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)))
            let b = try Self.client(Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token))) {
                $0.pageSize = 3
            }
            try await a.database.save(RecordZone(zoneID: Gallery.zone))
            for index in 0..<20 { try await a.save(Gallery.artist("artist\(index)")) }
            #expect(try await a.sendChanges().saved.count == 20)
            let first = try await b.fetchChanges()
            #expect(first.changedRecordCount == 20)
            #expect(try await b.cache.allRecords(inZoneWith: Gallery.zone).count == 20)

            // Changes spread over several pages: renames, deletes, and a record renamed twice.
            for index in [2, 5, 11, 17] {
                var record = try #require(try await a.cache.record(for: Record.ID(recordName: "artist\(index)", zoneID: Gallery.zone)))
                record["name"] = .string("renamed \(index)")
                try await a.save(record)
                try await a.sendChanges()
            }
            for index in [3, 8, 13] { try await a.delete(Record.ID(recordName: "artist\(index)", zoneID: Gallery.zone)) }
            try await a.sendChanges()
            var twice = try #require(try await a.cache.record(for: Record.ID(recordName: "artist2", zoneID: Gallery.zone)))
            twice["name"] = .string("renamed again")
            try await a.save(twice)
            try await a.sendChanges()

            let second = try await b.fetchChanges()
            #expect(second.changedRecordCount == 4 && second.deletedRecordCount == 3)
            let names = try await b.cache.allRecords(inZoneWith: Gallery.zone).map { $0.recordName }
            #expect(names.count == 17 && !names.contains("artist3") && !names.contains("artist8") && !names.contains("artist13"))
            #expect(try await b.cache.record(for: Record.ID(recordName: "artist2", zoneID: Gallery.zone))?["name"] == .string("renamed again"))
            #expect(try await b.cache.record(for: Record.ID(recordName: "artist17", zoneID: Gallery.zone))?["name"] == .string("renamed 17"))
        }
    }

    /// A fetched new version of a cached record replaces its references in the cache: local
    /// queries by reference follow the change.
    @Test func aFetchedReferenceChangeMovesTheRecordBetweenLocalQueries() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let a = try Self.client(Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)))
            let b = try Self.client(Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)))
            try await a.database.save(RecordZone(zoneID: Gallery.zone))
            try await a.save(Gallery.artist("monet"))
            try await a.save(Gallery.artist("manet"))
            try await a.save(Gallery.artwork("lilies", by: "monet"))
            try await a.sendChanges()
            try await b.fetchChanges()
            func works(by artist: String) async throws -> [String] {
                let query = RecordQuery(recordType: "Artwork", predicate: try RecordPredicate(format: "artist == %@", Record.ID(recordName: artist, zoneID: Gallery.zone)))
                return try await b.cache.records(matching: query, inZoneWith: Gallery.zone).map(\.recordName)
            }
            #expect(try await works(by: "monet") == ["lilies"])

            var lilies = try #require(try await a.cache.record(for: Record.ID(recordName: "lilies", zoneID: Gallery.zone)))
            lilies["artist"] = .reference(Record.Reference(recordID: Record.ID(recordName: "manet", zoneID: Gallery.zone), action: .deleteSelf))
            try await a.save(lilies)
            try await a.sendChanges()
            try await b.fetchChanges()
            #expect(try await works(by: "monet").isEmpty)
            #expect(try await works(by: "manet") == ["lilies"])
        }
    }

    @Test func theDefaultPolicyReappliesLocallyChangedFieldsOntoTheServerRecord() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let a = try Self.client(Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)))
            let b = try Self.client(Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)))
            var monet = Record(recordType: "Artist", recordID: Record.ID(recordName: "monet"))
            monet["name"] = .string("Monet")
            monet["born"] = .int64(1800)
            try await a.save(monet)
            try await a.sendChanges()
            try await b.fetchChanges()

            var fromA = try #require(try await a.cache.record(for: monet.recordID))
            fromA["name"] = .string("Claude Monet")
            try await a.save(fromA)
            try await a.sendChanges()

            var fromB = try #require(try await b.cache.record(for: monet.recordID))
            fromB["born"] = .int64(1840)
            try await b.save(fromB)
            let report = try await b.sendChanges()
            #expect(report.resolvedConflicts == [monet.recordID])
            #expect(report.saved == [monet.recordID])

            let onServer = try await a.database.record(for: monet.recordID)
            #expect(onServer.fields == ["name": .string("Claude Monet"), "born": .int64(1840)])
            try await a.fetchChanges()
            #expect(try await a.cache.record(for: monet.recordID)?.fields == onServer.fields)
            #expect(try await b.cache.record(for: monet.recordID)?.fields == onServer.fields)
            #expect(try await b.cache.pendingChangeCount() == 0)
        }
    }

    @Test func aCustomResolverSeesServerClientAndAncestor() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let seen = Seen()
            let resolver: SyncEngine.ConflictResolver = { conflict in
                await seen.record(conflict)
                // Keep the larger count.
                var merged = conflict.serverRecord
                let server: Int64 = conflict.serverRecord["count"].flatMap { if case .int64(let n) = $0 { n } else { nil } } ?? 0
                let client: Int64 = conflict.clientRecord["count"].flatMap { if case .int64(let n) = $0 { n } else { nil } } ?? 0
                merged["count"] = .int64(max(server, client))
                return merged
            }
            let a = try Self.client(Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)))
            let b = try Self.client(Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)), resolver: resolver)
            var counter = Record(recordType: "Counter", recordID: Record.ID(recordName: "c"))
            counter["count"] = .int64(1)
            try await a.save(counter)
            try await a.sendChanges()
            try await b.fetchChanges()
            counter = try #require(try await a.cache.record(for: counter.recordID))
            counter["count"] = .int64(3)
            try await a.save(counter)
            try await a.sendChanges()
            var local = try #require(try await b.cache.record(for: counter.recordID))
            local["count"] = .int64(7)
            try await b.save(local)
            try await b.sendChanges()

            let conflict = try #require(await seen.first)
            #expect(conflict.serverRecord["count"] == .int64(3))
            #expect(conflict.clientRecord["count"] == .int64(7))
            #expect(conflict.ancestorRecord?["count"] == .int64(1))
            #expect(try await a.database.record(for: counter.recordID)["count"] == .int64(7))

            // A resolver that returns nil keeps the server's version.
            let yielding = try Self.client(Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)), resolver: { _ in nil })
            try await yielding.fetchChanges()
            var stale = try #require(try await yielding.cache.record(for: counter.recordID))
            counter = try await a.database.record(for: counter.recordID)
            counter["count"] = .int64(9)
            try await a.database.save(counter)
            stale["count"] = .int64(100)
            try await yielding.save(stale)
            let report = try await yielding.sendChanges()
            #expect(report.resolvedConflicts.count == 1 && report.saved.isEmpty)
            #expect(try await yielding.cache.record(for: counter.recordID)?["count"] == .int64(9))
            #expect(try await a.database.record(for: counter.recordID)["count"] == .int64(9))
        }
    }

    @Test func anExpiredZoneTokenIsRecoveredByFetchingTheZoneAgain() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let a = try Self.client(Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)))
            let b = try Self.client(Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)))
            try await a.database.save(RecordZone(zoneID: Gallery.zone))
            _ = try await a.database.modifyRecords(saving: [Gallery.artist("old")], deleting: [])
            try await b.fetchChanges()
            #expect(try await b.cache.allRecords(inZoneWith: Gallery.zone).map(\.recordName) == ["old"])

            try await a.database.deleteRecordZone(withID: Gallery.zone)
            try await a.database.save(RecordZone(zoneID: Gallery.zone))
            _ = try await a.database.modifyRecords(saving: [Gallery.artist("new")], deleting: [])
            let report = try await b.fetchChanges()
            #expect(report.resetZones == [Gallery.zone])
            #expect(try await b.cache.allRecords(inZoneWith: Gallery.zone).map(\.recordName) == ["new"])
        }
    }

    @Test func aZoneDeletedOnTheServerIsPurgedLocally() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let a = try Self.client(Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)))
            let b = try Self.client(Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)))
            try await a.database.save(RecordZone(zoneID: Gallery.zone))
            _ = try await a.database.modifyRecords(saving: [Gallery.artist("x")], deleting: [])
            try await b.fetchChanges()
            try await a.database.deleteRecordZone(withID: Gallery.zone)
            let report = try await b.fetchChanges()
            #expect(report.purgedZones.map(\.zoneName) == ["Gallery"])
            #expect(try await b.cache.zoneIDs().map(\.zoneName) == ["_defaultZone"])
        }
    }

    @Test func aSaveThenADeleteSendsOnlyTheDelete() async throws {
        try await withServer { server in
            let engine = try Self.client(try await server.container(forNewUser: "alice"))
            let id = Record.ID(recordName: "fleeting")
            try await engine.save(Record(recordType: "Note", recordID: id))
            try await engine.save(Record(recordType: "Note", recordID: id))
            try await engine.delete(id)
            let report = try await engine.sendChanges()
            #expect(report.saved.isEmpty)
            #expect(report.deleted == [id])
            #expect(try await engine.cache.pendingChangeCount() == 0)
            let fetched = try await engine.database.records(for: [id])
            #expect(fetched.errors[id]?.code == .notFound)
        }
    }

    @Test func editsMadeOfflineAreSentAfterReconnecting() async throws {
        try await withTemporaryDirectory { directory in
            let (port, token) = try await withLiveServer(directory: directory) { server in
                (server.port, try await server.token(forNewUser: "alice"))
            }
            // The server is down now.
            let engine = try Self.client(Container(serverURL: URL(string: "http://127.0.0.1:\(port)")!, identifier: "iCloud.test", credentials: .bearerToken(token)),
                                         configure: { $0.maximumAttempts = 1 })
            try await engine.save(Gallery.artist("offline", in: .defaultZone))
            await #expect { try await engine.sendChanges() } throws: { ($0 as? RecordSyncError)?.code == .networkFailure }
            #expect(try await engine.cache.pendingChangeCount() == 1)
            try await withLiveServer(directory: directory, port: port) { _ in
                let report = try await engine.sendChanges()
                #expect(report.saved.map(\.recordName) == ["offline"])
                #expect(try await engine.database.record(for: Record.ID(recordName: "offline"))["name"] == .string("offline"))
            }
        }
    }

    /// The reader polls only every 5 minutes, so a change arriving within the 30 s allowed (a
    /// deadline generous enough for a loaded 2-core machine) can only have come through the push
    /// channel. (How fast it arrives is measured by recordbench's `propagation` scenario, not here.)
    @Test func aRunningEngineLearnsOfAnotherClientsChangeThroughPush() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let writer = Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)).privateCloudDatabase
            let reader = try Self.client(Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)),
                                         configure: { $0.pollInterval = .seconds(300); $0.connectedPollInterval = .seconds(300) })
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await reader.run() }
                // Wait for the first pass and the push channel.
                #expect(try await eventually(within: 30) { try await reader.cache.zoneIDs().count == 1 })
                try await Task.sleep(for: .milliseconds(200))
                for round in 0..<5 {
                    let id = Record.ID(recordName: "r\(round)")
                    try await writer.save(Record(recordType: "Note", recordID: id))
                    #expect(try await eventually(within: 30) { try await reader.cache.record(for: id) != nil })
                }
                group.cancelAll()
            }
        }
    }

    @Test func aRunningEngineSendsLocalEditsAsTheyAreMade() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let engine = try Self.client(Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await engine.run() }
                try await engine.save(Gallery.artist("live", in: .defaultZone))
                #expect(try await eventually { try await engine.cache.pendingChangeCount() == 0 })
                #expect(try await engine.database.record(for: Record.ID(recordName: "live"))["name"] == .string("live"))
                group.cancelAll()
            }
        }
    }
}

/// Collects what a resolver saw.
actor Seen {
    private(set) var conflicts: [SyncEngine.Conflict] = []
    func record(_ conflict: SyncEngine.Conflict) { conflicts.append(conflict) }
    var first: SyncEngine.Conflict? { conflicts.first }
}
