import Foundation
import RecordClient
import TestSupport
import Testing

/// The sync engine reads a zone's changes in RecordSync's compact form where the server offers
/// it, and in CloudKit's form from a server that does not: one that ignores the extension's key
/// (it answers in CloudKit's form), or one that refuses keys it does not know (the engine asks
/// again without, and from then on). Each way, the cache ends up holding the same records.
@Suite struct CompactFetchTests {
    /// How a server in front of the real one treats `recordSyncCompact`.
    enum Server: CaseIterable {
        case offersIt, ignoresIt, refusesIt
    }

    /// What each request to `records/changes` carried.
    final class Requests: @unchecked Sendable {
        private let lock = NSLock()
        private var bodies: [Data] = []
        func note(_ body: Data) { lock.withLock { bodies.append(body) } }
        var all: [String] { lock.withLock { bodies.map { String(decoding: $0, as: UTF8.self) } } }
        var compact: Int { all.filter { $0.contains(#""recordSyncCompact":true"#) }.count }
    }

    /// Seeds the gallery zone: an Artist and 24 Artworks referring to it, one of them with
    /// fields of more kinds.
    static func seed(_ database: Database) async throws {
        try await database.save(RecordZone(zoneID: Gallery.zone))
        var works = (0..<24).map { Gallery.artwork("w\($0)", by: "monet") }
        works[5]["place"] = .location(Location(latitude: 48.86, longitude: 2.34, horizontalAccuracy: 5))
        works[5]["tags"] = .list(.string, [.string("water"), .string("lilies \"1\"")])
        works[5]["year"] = .int64(1872)
        works[5]["rating"] = .double(4.5)
        works[5]["sketch"] = .bytes(Data([0, 1, 2]))
        let saved = try await database.modifyRecords(saving: [Gallery.artist("monet")] + works, deleting: [])
        #expect(saved.saveResults.values.allSatisfy { (try? $0.get()) != nil })
    }

    /// The gallery zone as a cache holds it, by record name.
    static func held(_ engine: SyncEngine) async throws -> [String: Record] {
        Dictionary(uniqueKeysWithValues: try await engine.cache.allRecords(inZoneWith: Gallery.zone).map { ($0.recordID.recordName, $0) })
    }

    @Test func theEngineReadsTheFormTheServerOffersToTheSameCache() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let direct = Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)).privateCloudDatabase
            try await Self.seed(direct)
            var caches: [Server: [[String: Record]]] = [:]
            var requests: [Server: Requests] = [:]
            for kind in Server.allCases {
                let seen = Requests()
                requests[kind] = seen
                caches[kind] = try await withRequestRewritingProxy(to: server.url, request: { path, body in
                    guard path.hasSuffix("/records/changes") else { return .forward(body) }
                    seen.note(body)
                    guard String(decoding: body, as: UTF8.self).contains(#""recordSyncCompact""#) else { return .forward(body) }
                    switch kind {
                    case .offersIt: return .forward(body)
                    case .ignoresIt:
                        guard case .object(var members)? = try? JSONValue.parse(body) else { return .forward(body) }
                        members["recordSyncCompact"] = nil
                        return .forward((try? JSONValue.object(members).serialized()) ?? body)
                    case .refusesIt:
                        return .answer(status: 400, body: #"{"uuid":"2F3D1A56-0E0C-4A7B-9C39-2B1E7C1E9B44","serverErrorCode":"BAD_REQUEST","reason":"unexpected key recordSyncCompact"}"#)
                    }
                }) { proxy in
                    var configuration = SyncEngine.Configuration()
                    // Pages of 10 but for the server offering it, which is asked for its own.
                    if kind != .offersIt { configuration.pageSize = 10 }
                    configuration.maximumAttempts = 2
                    let container = Container(serverURL: proxy, identifier: "iCloud.test", credentials: .bearerToken(token))
                    let engine = SyncEngine(database: container.privateCloudDatabase, cache: try RecordCache(path: ":memory:"), configuration: configuration)
                    var held: [[String: Record]] = []
                    let first = try await engine.fetchChanges()
                    #expect(first.changedRecordCount == 25, "\(kind)")
                    held.append(try await Self.held(engine))
                    #expect(try await engine.cache.records(referencing: Record.ID(recordName: "monet", zoneID: Gallery.zone)).count == 24, "\(kind)")
                    // A delta: one changed, one deleted, one new; each engine reads the same one.
                    if kind == .offersIt {
                        var changed = try #require(held[0]["w4"])
                        changed["title"] = .string("Water Lilies")
                        let result = try await direct.modifyRecords(saving: [changed, Gallery.artwork("w24", by: "monet")],
                                                                    deleting: [Record.ID(recordName: "w3", zoneID: Gallery.zone)])
                        #expect(result.saveResults.values.allSatisfy { (try? $0.get()) != nil })
                    }
                    let delta = try await engine.fetchChanges()
                    let expected = kind == .offersIt ? (2, 1) : (0, 0)
                    #expect((delta.changedRecordCount, delta.deletedRecordCount) == expected, "\(kind)")
                    held.append(try await Self.held(engine))
                    // The database's own page reads ask as the engine does, and learn with it.
                    let page = try await container.privateCloudDatabase.recordZoneChanges(inZoneWith: Gallery.zone, since: nil)
                    #expect(page.modifications.count == 25 && !page.moreComing, "\(kind)")
                    #expect(page.modifications.first { $0.recordID.recordName == "w5" }?["year"] == .int64(1872), "\(kind)")
                    switch kind {
                    case .offersIt:
                        // Once the server has answered the compact form, a request it refuses
                        // is refused for itself: sent once, its error given back.
                        let before = seen.all.count
                        let refused = await #expect(throws: RecordSyncError.self) {
                            try await container.privateCloudDatabase.recordZoneChanges(inZoneWith: Gallery.zone, since: ServerChangeToken(rawValue: "not a token"))
                        }
                        #expect(refused?.code == .badRequest && seen.all.count == before + 1, "\(String(describing: refused))")
                    case .refusesIt:
                        // What a container learned is its own: another asks once more.
                        let other = Container(serverURL: proxy, identifier: "iCloud.test", credentials: .bearerToken(token))
                        _ = try await other.privateCloudDatabase.recordZoneChanges(inZoneWith: Gallery.zone, since: nil)
                        _ = try await other.privateCloudDatabase.recordZoneChanges(inZoneWith: Gallery.zone, since: nil)
                    case .ignoresIt: break
                    }
                    return held
                }
            }
            // The engines that came after the delta read it from scratch; all hold the same.
            let offered = try #require(caches[.offersIt])
            #expect(offered[0].count == 25 && offered[1].count == 25)
            #expect(offered[1]["w4"]?["title"] == .string("Water Lilies") && offered[1]["w3"] == nil && offered[1]["w24"] != nil)
            #expect(offered[0]["w5"]?["tags"] == .list(.string, [.string("water"), .string("lilies \"1\"")]))
            for kind in [Server.ignoresIt, .refusesIt] {
                #expect(caches[kind]?[0] == offered[1], "\(kind)")
                #expect(caches[kind]?[1] == offered[1], "\(kind)")
            }
            // What each engine asked for: the compact form of a server that offers or ignores it
            // every time (a page the default size, without resultsLimit); of one that refuses it,
            // once.
            let offeredRequests = try #require(requests[.offersIt]?.all)
            #expect(offeredRequests.count >= 2 && requests[.offersIt]?.compact == offeredRequests.count)
            #expect(offeredRequests.allSatisfy { !$0.contains("resultsLimit") })
            #expect(requests[.ignoresIt]?.compact == requests[.ignoresIt]?.all.count)
            // Of one that refuses it, once per container (the engine's and the database's
            // reads share theirs).
            #expect(requests[.refusesIt]?.compact == 2)
            #expect((requests[.refusesIt]?.all.count ?? 0) >= 9)  // 3 pages of 10, the delta, 3 reads, each refused once
        }
    }

    /// A compact answer the engine cannot read is asked for again in CloudKit's form, with the
    /// same token.
    @Test func anUnreadableCompactAnswerIsAskedForAgainInCloudKitsForm() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let direct = Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)).privateCloudDatabase
            try await Self.seed(direct)
            let seen = Requests()
            let spoiled = LockedCounter()
            try await withRequestRewritingProxy(to: server.url, request: { path, body in
                if path.hasSuffix("/records/changes"), String(decoding: body, as: UTF8.self).contains("Gallery") { seen.note(body) }
                return .forward(body)
            }, tamper: { path, answer in
                // The gallery zone's first compact page: valid JSON, records the reader refuses.
                let text = String(decoding: answer, as: UTF8.self)
                guard path.hasSuffix("/records/changes"), text.contains("recordSyncFieldTypes"), text.contains("Gallery"), spoiled.next() == 1 else { return answer }
                return Data(text.replacingOccurrences(of: #""records":[["#, with: #""records":[[7,"#).utf8)
            }) { proxy in
                var configuration = SyncEngine.Configuration()
                configuration.maximumAttempts = 2
                let container = Container(serverURL: proxy, identifier: "iCloud.test", credentials: .bearerToken(token))
                let engine = SyncEngine(database: container.privateCloudDatabase, cache: try RecordCache(path: ":memory:"), configuration: configuration)
                let report = try await engine.fetchChanges()
                #expect(report.changedRecordCount == 25)
                #expect(try await Self.held(engine).count == 25)
            }
            let asked = seen.all
            #expect(asked.count == 2, "\(asked)")
            #expect(asked.first?.contains(#""recordSyncCompact":true"#) == true && asked.last?.contains("recordSyncCompact") == false, "\(asked)")
        }
    }
}
