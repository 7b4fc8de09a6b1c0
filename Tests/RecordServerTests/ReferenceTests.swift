import Foundation
import RecordModel
import Testing

/// Item 3: targets before sources, VALIDATE, same-zone references, cycles.
@Suite struct ReferenceTests {
    @Test func sourcesListedBeforeTheirTargetsAreSaved() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("Gallery")
            // Artworks first, holding VALIDATE references to an artist created later in the batch.
            let results = try await alice.modify([
                RecordOperation(.create, RecordPayload(.artwork("starry-night", by: "van-gogh", action: .validate))),
                RecordOperation(.create, RecordPayload(.artwork("sunflowers", by: "van-gogh", action: .validate))),
                RecordOperation(.create, RecordPayload(.artist("van-gogh"))),
            ], zone: "Gallery")
            #expect(results.map(\.error) == [nil, nil, nil])
            // Results come back in request order.
            #expect(results.map { $0.record?.recordName } == ["starry-night", "sunflowers", "van-gogh"])
            // The change feed shows the order they were written: the target first.
            let changes = try await alice.allChanges(zone: "Gallery")
            #expect(changes.records.map(\.recordName) == ["van-gogh", "starry-night", "sunflowers"])
        }
    }

    @Test func aValidateReferenceToNothingFails() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let results = try await alice.modify([RecordOperation(.create, RecordPayload(.artwork("w", by: "nobody", action: .validate)))])
            #expect(results.first?.error?.code == .validatingReferenceError)
            #expect(results.first?.error?.reason.contains("'nobody'") == true)
            // A NONE reference may dangle.
            #expect(try await alice.modify([RecordOperation(.create, RecordPayload(.artwork("w", by: "nobody", action: .none)))]).first?.error == nil)
        }
    }

    @Test func aValidateTargetCannotBeDeletedWhileSourcesRemain() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([.artist("a"), .artwork("w1", by: "a", action: .validate), .artwork("w2", by: "a", action: .validate)])
            let blocked = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "a"))])
            #expect(blocked.first?.error?.code == .validatingReferenceError)
            // Deleting one source is not enough…
            let partial = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "a")), RecordOperation(.forceDelete, RecordPayload(recordName: "w1"))])
            #expect(partial.map { $0.error?.code } == [.validatingReferenceError, .atomicError])
            // …deleting every source in the same batch is, in any order.
            let all = try await alice.modify([
                RecordOperation(.forceDelete, RecordPayload(recordName: "a")),
                RecordOperation(.forceDelete, RecordPayload(recordName: "w1")),
                RecordOperation(.forceDelete, RecordPayload(recordName: "w2")),
            ])
            #expect(all.map(\.error) == [nil, nil, nil])
        }
    }

    @Test func inANonAtomicBatchASourceWhoseTargetFailedFailsToo() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([.artist("taken")])
            let results = try await alice.modify([
                RecordOperation(.create, RecordPayload(.artwork("w", by: "taken", action: .validate))),
                RecordOperation(.create, RecordPayload(.artist("taken"))),
                RecordOperation(.create, RecordPayload(.artwork("ok", by: "taken", action: .none))),
            ], atomic: false)
            #expect(results.map { $0.error?.code } == [.validatingReferenceError, .exists, nil])
            // The failed source wrote nothing (single records are checked before any write).
            #expect(try await alice.queryNames(Query(recordType: "Artwork")) == ["ok"])
        }
    }

    @Test func referencesAcrossZonesAreRefused() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("A", "B")
            try await alice.save([.artist("x")], zone: "B")
            let crossing = Record(recordName: "w", recordType: "Artwork", fields: [
                "artist": .reference(Reference(recordName: "x", zoneID: ZoneID(zoneName: "B"), action: .none)),
            ])
            let results = try await alice.modify([RecordOperation(.create, RecordPayload(crossing))], zone: "A")
            #expect(results.first?.error?.code == .badRequest)
            #expect(results.first?.error?.reason.contains("'B'") == true)
        }
    }

    @Test func aReferenceCycleInOneBatchIsSaved() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let a = Record(recordName: "a", recordType: "Node", fields: ["next": .reference(Reference(recordName: "b", action: .validate))])
            let b = Record(recordName: "b", recordType: "Node", fields: ["next": .reference(Reference(recordName: "a", action: .validate))])
            let results = try await alice.modify([RecordOperation(.create, RecordPayload(a)), RecordOperation(.create, RecordPayload(b))])
            #expect(results.map(\.error) == [nil, nil])
        }
    }
}
