import Foundation
import RecordClient
import TestSupport
import Testing

/// Faults between the client and the server: an answer lost after the server committed the
/// write, and a fetch whose pages are lost part way.
@Suite struct FaultTests {
    static func engine(_ url: URL, token: String, pageSize: Int = 400, resolved: LockedCounter) throws -> SyncEngine {
        var configuration = SyncEngine.Configuration()
        configuration.initialBackoff = .milliseconds(10)
        configuration.pageSize = pageSize
        let container = Container(serverURL: url, identifier: "iCloud.test", credentials: .bearerToken(token))
        return SyncEngine(database: container.privateCloudDatabase, cache: try RecordCache(path: ":memory:"), configuration: configuration,
                          conflictResolver: { conflict in
                              _ = resolved.next()
                              return try await SyncEngine.reapplyLocalChanges(conflict)
                          })
    }

    /// The answer to a save is lost after the server committed it (a 502 from the proxy in
    /// front); the engine sends the save again and the server answers `EXISTS` (a create) or
    /// `CONFLICT` (an update with the tag it started from). The engine recognises its own
    /// write: the save is reported saved, no conflict reaches the resolver, nothing is written
    /// twice, and the cache holds the server's record.
    @Test func aSaveWhoseAnswerWasLostIsRecognisedWhenSentAgain() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let direct = Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)).privateCloudDatabase
            try await direct.save(RecordZone(zoneID: Gallery.zone))
            let losses = LockedCounter()
            let resolved = LockedCounter()
            try await withLossyProxy(to: server.url, lose: { path in
                // The first answer of each records/modify pair is lost.
                guard path.hasSuffix("/records/modify") else { return false }
                return losses.next() % 2 == 1
            }) { proxy in
                let engine = try Self.engine(proxy, token: token, resolved: resolved)
                try await engine.save(Gallery.artist("monet"))
                let created = try await engine.sendChanges()
                #expect(created.saved.map(\.recordName) == ["monet"] && created.resolvedConflicts.isEmpty && created.failures.isEmpty, "\(created)")

                var edited = try #require(try await engine.cache.record(for: Record.ID(recordName: "monet", zoneID: Gallery.zone)))
                #expect(edited.recordChangeTag != nil)
                edited["born"] = .int64(1840)
                try await engine.save(edited)
                let updated = try await engine.sendChanges()
                #expect(updated.saved.map(\.recordName) == ["monet"] && updated.resolvedConflicts.isEmpty && updated.failures.isEmpty, "\(updated)")
                #expect(losses.value == 4, "each save was answered once, lost once")
                #expect(resolved.value == 0)
                // Written once each: the server's tag is the cache's, and the record changed twice in all.
                let onServer = try #require(try await direct.records(for: [Record.ID(recordName: "monet", zoneID: Gallery.zone)]).records.first)
                let cached = try await engine.cache.record(for: Record.ID(recordName: "monet", zoneID: Gallery.zone))
                #expect(cached?.recordChangeTag == onServer.recordChangeTag && onServer["born"] == .int64(1840))
                let changes = try await direct.recordZoneChanges(inZoneWith: Gallery.zone, since: nil)
                #expect(changes.modifications.count == 1 && onServer.recordChangeTag == "2", "\(String(describing: onServer.recordChangeTag))")
                #expect(try await engine.cache.pendingChangeCount() == 0)
            }
        }
    }

    /// Pages of a fetch are lost part way (every third `records/changes` answer): the engine
    /// asks for each again with the token it holds and ends with every record once, and a later
    /// fetch brings exactly the changes made since.
    @Test func aFetchWhosePagesAreLostResumesWithoutASkippedOrDoubledChange() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let direct = Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)).privateCloudDatabase
            try await direct.save(RecordZone(zoneID: Gallery.zone))
            _ = try await direct.modifyRecords(saving: (0..<1_000).map { Gallery.artist("a\($0)") }, deleting: [])
            let answers = LockedCounter()
            let resolved = LockedCounter()
            try await withLossyProxy(to: server.url, lose: { path in
                guard path.hasSuffix("/records/changes") else { return false }
                return answers.next() % 3 == 0
            }) { proxy in
                let engine = try Self.engine(proxy, token: token, pageSize: 50, resolved: resolved)
                let first = try await engine.fetchChanges()
                #expect(first.changedRecordCount == 1_000, "\(first)")
                #expect(try await engine.cache.records(matching: Query(recordType: "Artist"), inZoneWith: Gallery.zone).count == 1_000)
                #expect(answers.value > 25, "pages were lost and asked for again")
                _ = try await direct.modifyRecords(saving: (0..<120).map { index in
                    var record = Gallery.artist("a\(index * 7)")
                    record["born"] = .int64(Int64(1800 + index))
                    return record
                }, deleting: [], savePolicy: .allKeys)
                let second = try await engine.fetchChanges()
                #expect(second.changedRecordCount == 120, "\(second)")
                #expect(try await engine.cache.records(matching: Query(recordType: "Artist"), inZoneWith: Gallery.zone)
                            .filter { $0["born"] != nil }.count == 120)
            }
        }
    }
}
