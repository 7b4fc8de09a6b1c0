import Foundation
import RecordModel
import RecordRules
import Synchronization
import TestSupport
import Testing

/// A type's stored records are indexed by a build, a step (a write transaction of
/// `searchIndexBatch` records) at a time, once its first word search marks it (`SearchTypes`).
@Suite struct SearchIndexBuildTests {
    static let search = #"{"query": {"recordType": "Artwork", "filterBy": [{"comparator": "CONTAINS_ALL_TOKENS", "fieldName": "note", "fieldValue": {"value": "lilies"}}]}}"#

    /// 95 Artworks; those whose number is a multiple of 3 hold "lilies".
    static let seeded = (0..<95).map { artwork($0, $0 % 3 == 0 ? "water lilies \($0)" : "roses \($0)") }
    static let seededMatches = Set((0..<95).filter { $0 % 3 == 0 }.map { "a\($0)" })

    static func artwork(_ n: Int, _ note: String) -> Record {
        Record(recordName: "a\(n)", recordType: "Artwork", fields: ["note": .string(note)])
    }

    static func names(_ reply: Reply) -> Set<String> {
        Set(reply.json["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } ?? [])
    }

    /// Checks that a search answers `TRY_AGAIN_LATER` (HTTP 503) naming the type, with a `retryAfter`.
    static func expectBuilding(_ reply: Reply, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(reply.status == 503, sourceLocation: sourceLocation)
        #expect(reply.code == "TRY_AGAIN_LATER", "\(reply.reason)", sourceLocation: sourceLocation)
        #expect(reply.reason.contains("Artwork"), sourceLocation: sourceLocation)
        #expect(reply.json["retryAfter"] == .int(5) || reply.json["retryAfter"] == .double(5), sourceLocation: sourceLocation)
    }

    /// While the build runs, a search answers `TRY_AGAIN_LATER`, and writes are answered and
    /// indexed themselves: records the build has passed and records it has not reached yet,
    /// updated (words changed), created and deleted between its steps, are found exactly as
    /// they stand once it is done (no word of an old version, no row of a deleted record).
    @Test func aSearchWaitsForTheBuildWhileWritesGoOn() async throws {
        try await withServer(configure: { configuration in
            configuration.limits.searchIndexBatch = 10
            configuration.limits.searchIndexWait = .zero
            configuration.searchIndexBuildInterval = .seconds(3600)
        }) { server in
            let alice = try await server.user("alice")
            try await alice.save(Self.seeded)
            Self.expectBuilding(try await alice.post("records/query", Self.search))
            // The first step indexes a0, a1, a10 … a17 (by name).
            guard case .advanced(let first) = try await server.store.advanceSearchBuild() else { Issue.record("no step"); return }
            #expect(first.indexed == 10 && first.after?.name == "a17")
            Self.expectBuilding(try await alice.post("records/query", Self.search))
            // A query subscription searching words fires by the stored words: it is made only
            // once they are all indexed.
            let subscribe = #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"lilies","subscriptionType":"query","query":{"recordType":"Artwork","filterBy":[{"comparator":"CONTAINS_ALL_TOKENS","fieldValue":{"value":"lilies"}}]},"firesOn":["create","update","delete"]}}]}"#
            Self.expectBuilding(try await alice.post("subscriptions/modify", subscribe))
            var expected = Self.seededMatches
            try await alice.save([Self.artwork(0, "roses"), Self.artwork(90, "roses"), Self.artwork(1, "lilies"), Self.artwork(94, "lilies again"),
                                  Self.artwork(100, "white lilies")])
            expected.subtract(["a0", "a90"])
            expected.formUnion(["a1", "a94", "a100"])
            #expect(try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "a93")),
                                           RecordOperation(.forceDelete, RecordPayload(recordName: "a3"))]).allSatisfy { $0.error == nil })
            expected.subtract(["a93", "a3"])
            var steps = 1
            while case .advanced = try await server.store.advanceSearchBuild() {
                steps += 1
                if steps == 5 {
                    try await alice.save([Self.artwork(96, "lilies in the middle")])
                    expected.insert("a96")
                }
            }
            #expect(steps == 9)
            #expect(try await server.store.advanceSearchBuild() == .none)
            let found = try await alice.post("records/query", Self.search)
            #expect(found.status == 200, "\(found.reason)")
            #expect(Self.names(found) == expected)
            let subscribed = try await alice.post("subscriptions/modify", subscribe)
            #expect(subscribed.status == 200 && subscribed.json["subscriptions"]?[0]?["subscriptionID"]?.stringValue == "lilies", "\(subscribed.reason)")
            // Deleted records left no words behind: saved again without the word, they are not found.
            try await alice.save([Self.artwork(93, "roses"), Self.artwork(3, "roses")])
            #expect(Self.names(try await alice.post("records/query", Self.search)) == expected)
        }
    }

    /// Records a build indexed (in word blocks of several steps) are searched as they stand after it: saved with
    /// other words, deleted, saved again under the same name, or saved with the same words; by
    /// one word, all of several, any of several; and a deleted zone's blocks go with it.
    @Test func recordsABuildIndexedAreFoundAsTheyStandAfterIt() async throws {
        try await withServer(configure: { configuration in
            configuration.limits.searchIndexBatch = 10
            // Blocks of three or four steps each.
            configuration.limits.searchBlockRecords = 30
            configuration.searchIndexBuildInterval = .seconds(3600)
        }) { server in
            let alice = try await server.user("alice")
            try await alice.save(Self.seeded)
            try await alice.createZones("A")
            try await alice.save([Self.artwork(0, "lilies"), Self.artwork(3, "lilies"), Self.artwork(4, "roses")], zone: "A")
            #expect(Self.names(try await alice.post("records/query", Self.search)) == Self.seededMatches)
            var expected = Self.seededMatches
            // a6 loses the word, a7 gains it, a9 keeps it with another field changed, a12 is
            // deleted, a15 deleted and saved again without it, a18 deleted and saved again with it.
            try await alice.save([Self.artwork(6, "roses"), Self.artwork(7, "lilies"),
                                  Record(recordName: "a9", recordType: "Artwork", fields: ["note": .string("water lilies 9"), "year": .int64(1900)])])
            #expect(try await alice.modify(["a12", "a15", "a18"].map { RecordOperation(.forceDelete, RecordPayload(recordName: $0)) }).allSatisfy { $0.error == nil })
            try await alice.save([Self.artwork(15, "roses"), Self.artwork(18, "lilies")])
            expected.subtract(["a6", "a12", "a15"])
            expected.insert("a7")
            #expect(Self.names(try await alice.post("records/query", Self.search)) == expected)
            let all = #"{"query": {"recordType": "Artwork", "filterBy": [{"comparator": "CONTAINS_ALL_TOKENS", "fieldName": "note", "fieldValue": {"value": "water lilies"}}]}}"#
            #expect(Self.names(try await alice.post("records/query", all)) == expected.subtracting(["a7", "a18"]))
            let any = #"{"query": {"recordType": "Artwork", "filterBy": [{"comparator": "CONTAINS_ANY_TOKENS", "fieldName": "allTokens", "fieldValue": {"value": "lilies 5 roses"}}]}}"#
            #expect(Self.names(try await alice.post("records/query", any)) == Set((0..<95).map { "a\($0)" }).subtracting(["a12"]))
            // Over every zone (each record tested against its own block).
            let wide = try await alice.post("records/query", QueryRecordsRequest(query: try JSONDecoder().decode(QueryRecordsRequest.self, from: Data(Self.search.utf8)).query, zoneWide: true))
            #expect(wide.status == 200, "\(wide.reason)")
            #expect(wide.json["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue }.sorted() == (Array(expected) + ["a0", "a3"]).sorted(),
                    "\(wide.json)")
            // A zone's blocks go with it: in the zone made again, a record saved again without the
            // word is not found, one with it is.
            let inA = #"{"zoneID": {"zoneName": "A"}, "query": {"recordType": "Artwork", "filterBy": [{"comparator": "CONTAINS_ALL_TOKENS", "fieldName": "note", "fieldValue": {"value": "lilies"}}]}}"#
            #expect(Self.names(try await alice.post("records/query", inA)) == ["a0", "a3"])
            let deleted = try await alice.post("zones/modify", ModifyZonesRequest(operations: [.init(.delete, ZoneID(zoneName: "A"))]))
            #expect(deleted.status == 200, "\(deleted.reason)")
            try await alice.createZones("A")
            try await alice.save([Self.artwork(0, "roses"), Self.artwork(3, "lilies")], zone: "A")
            #expect(Self.names(try await alice.post("records/query", inA)) == ["a3"])
        }
    }

    /// A record a build indexed, deleted and saved again under its name as another type (whose
    /// words are not indexed yet) with other words, is indexed again by that type's build, into
    /// the same block: only its new words find it.
    @Test func aRecordIndexedAgainIsFoundByItsNewWordsOnly() async throws {
        try await withServer(configure: { configuration in
            configuration.searchIndexBuildInterval = .seconds(3600)
        }) { server in
            let alice = try await server.user("alice")
            try await alice.save(Self.seeded)
            #expect(Self.names(try await alice.post("records/query", Self.search)) == Self.seededMatches)
            #expect(try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "a3"))]).allSatisfy { $0.error == nil })
            try await alice.save([Record(recordName: "a3", recordType: "Photo", fields: ["note": .string("roses")])])
            let photos = #"{"query": {"recordType": "Photo", "filterBy": [{"comparator": "CONTAINS_ANY_TOKENS", "fieldName": "note", "fieldValue": {"value": "lilies roses"}}]}}"#
            #expect(Self.names(try await alice.post("records/query", photos)) == ["a3"])
            let lilies = #"{"query": {"recordType": "Photo", "filterBy": [{"comparator": "CONTAINS_ALL_TOKENS", "fieldName": "note", "fieldValue": {"value": "lilies"}}]}}"#
            let found = try await alice.post("records/query", lilies)
            #expect(found.status == 200, "\(found.reason)")
            #expect(Self.names(found).isEmpty)
        }
    }

    /// A type of a few hundred records is built within the search that marks it: the first
    /// search answers.
    @Test func aSmallTypeIsBuiltWithinItsFirstSearch() async throws {
        try await withServer(configure: { configuration in
            configuration.limits.searchIndexBatch = 10
            configuration.searchIndexBuildInterval = .seconds(3600)
        }) { server in
            let alice = try await server.user("alice")
            try await alice.save(Self.seeded)
            let found = try await alice.post("records/query", Self.search)
            #expect(found.status == 200, "\(found.reason)")
            #expect(Self.names(found) == Self.seededMatches)
            #expect(try await server.store.advanceSearchBuild() == .none)
        }
    }

    /// A build is kept in the store: a server started later over the same data (and without
    /// searches to drive it) finishes the build a stopped one left.
    @Test func aServerStartedLaterFinishesABuild() async throws {
        try await withTemporaryDirectory { directory in
            let sessions = Mutex<[String: (token: String, user: String)]>([:])
            try await withServer(directory: directory, configure: { configuration in
                configuration.limits.searchIndexBatch = 10
                configuration.limits.searchIndexWait = .zero
                configuration.searchIndexBuildInterval = .seconds(3600)
            }) { server in
                let alice = try await server.user("alice")
                sessions.withLock { $0[server.backend.description] = (alice.token, alice.userRecordName) }
                try await alice.save(Self.seeded)
                Self.expectBuilding(try await alice.post("records/query", Self.search))
                guard case .advanced = try await server.store.advanceSearchBuild() else { Issue.record("no step"); return }
            }
            try await withServer(directory: directory, configure: { configuration in
                configuration.limits.searchIndexBatch = 10
                configuration.limits.searchIndexWait = .zero
                configuration.searchIndexBuildInterval = .milliseconds(50)
            }) { server in
                let (token, user) = try #require(sessions.withLock { $0[server.backend.description] })
                let alice = Session(client: server.client, token: token, container: "iCloud.test.Gallery", userRecordName: user)
                let deadline = ContinuousClock.now + .seconds(30)
                var found = try await alice.post("records/query", Self.search)
                while found.status == 503, ContinuousClock.now < deadline {
                    Self.expectBuilding(found)
                    try await Task.sleep(for: .milliseconds(50))
                    found = try await alice.post("records/query", Self.search)
                }
                #expect(found.status == 200, "\(found.reason)")
                #expect(Self.names(found) == Self.seededMatches)
            }
        }
    }
}
