import Foundation
import RecordClient
import TestSupport
import Testing

/// A fetch through a proxy that spoils one `records/changes` answer: the sync engine reads
/// each page's token ahead of decoding it, and must neither lose a page nor store a token the
/// page does not carry.
@Suite struct FetchAnswerTests {
    /// Seeds 30 Artworks (and their Artist) in the gallery zone, then runs `body` with a
    /// sync engine fetching pages of 10 through a proxy that gives the `spoiled`-th page of the
    /// gallery zone (from 1) to `spoil` and passes every other answer on; `changePages` counts
    /// the gallery zone's pages.
    static func fetching(spoiling spoiled: Int, with spoil: @escaping @Sendable (Data) -> Data,
                         _ body: @escaping @Sendable (SyncEngine, _ changePages: @escaping @Sendable () -> Int) async throws -> Void) async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let direct = Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)).privateCloudDatabase
            try await direct.save(RecordZone(zoneID: Gallery.zone))
            let saved = try await direct.modifyRecords(saving: [Gallery.artist("monet")] + (0..<30).map { Gallery.artwork("w\($0)", by: "monet") },
                                                       deleting: [])
            #expect(saved.saveResults.values.allSatisfy { (try? $0.get()) != nil })
            let count = LockedCounter()
            let zone = #""zoneName":"\#(Gallery.zone.zoneName)""#
            try await withTamperingProxy(to: server.url, tamper: { path, answer in
                // The gallery zone's pages (the default zone is fetched too, and empty).
                guard path.hasSuffix("/records/changes"), String(decoding: answer, as: UTF8.self).contains(zone) else { return answer }
                return count.next() == spoiled ? spoil(answer) : answer
            }) { proxy in
                var configuration = SyncEngine.Configuration()
                configuration.pageSize = 10
                configuration.maximumAttempts = 2
                let container = Container(serverURL: proxy, identifier: "iCloud.test", credentials: .bearerToken(token))
                let engine = SyncEngine(database: container.privateCloudDatabase, cache: try RecordCache(path: ":memory:"), configuration: configuration)
                try await body(engine, { count.value })
            }
        }
    }

    @Test func anUnreadableAnswerIsAskedForAgain() async throws {
        try await Self.fetching(spoiling: 2, with: { _ in Data(#"{"moreComing":tr"#.utf8) }) { engine, changePages in
            let report = try await engine.fetchChanges()
            #expect(report.changedRecordCount == 31)
            #expect(try await engine.cache.allRecords(inZoneWith: Gallery.zone).count == 31)
            // Four pages of 10, one of them asked for twice.
            #expect(changePages() == 5)
        }
    }

    /// The token read ahead is the first `syncToken` member; decoding keeps the last. A page
    /// whose two differ fails the fetch rather than storing a token its next page was not asked
    /// for with; the next fetch starts from where the cache is.
    @Test func aPageDecodingToAnotherTokenThanTheOneReadAheadFailsTheFetch() async throws {
        try await Self.fetching(spoiling: 1, with: { answer in
            var text = String(decoding: answer, as: UTF8.self)
            text.removeLast()  // the closing brace
            return Data((text + #","syncToken":"not-the-one-read-ahead"}"#).utf8)
        }) { engine, _ in
            do {
                try await engine.fetchChanges()
                Issue.record("the fetch went through a page whose token differs from the one read ahead")
            } catch let error as RecordSyncError {
                #expect(error.code == .networkFailure, "\(error)")
            }
            #expect(try await engine.cache.changeToken(for: Gallery.zone) == nil)
            #expect(try await engine.fetchChanges().changedRecordCount == 31)
            #expect(try await engine.cache.allRecords(inZoneWith: Gallery.zone).count == 31)
        }
    }
}
