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
