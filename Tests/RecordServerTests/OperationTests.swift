import Foundation
import RecordModel
import Testing

/// Item 2: the seven operation types, atomic and non-atomic batches, desiredKeys.
@Suite struct OperationTests {
    @Test func createFailsWhenTheRecordExists() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([.artist("monet")])
            let results = try await alice.modify([RecordOperation(.create, RecordPayload(.artist("monet")))])
            #expect(results.first?.error?.code == .exists)
        }
    }

    @Test func updateChangesOnlyTheGivenFieldsAndNeedsTheCurrentTag() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            var saved = try await alice.save([Record(recordName: "m", recordType: "Artist", fields: ["name": .string("Monet"), "born": .int64(1840)])])[0]
            saved.fields = ["born": .int64(1841)]
            let updated = try #require(try await alice.modify([RecordOperation(.update, RecordPayload(saved))]).first?.record)
            #expect(updated.fields == ["name": .string("Monet"), "born": .int64(1841)])
            #expect(updated.recordChangeTag != saved.recordChangeTag)

            // The old tag is stale now: CONFLICT, carrying the server's record.
            let stale = try #require(try await alice.modify([RecordOperation(.update, RecordPayload(saved))]).first?.error)
            #expect(stale.code == .conflict)
            #expect(stale.serverRecord?.recordChangeTag == updated.recordChangeTag)
            #expect(stale.serverRecord?.fields["born"] == .int64(1841))

            // A null value removes a field.
            let removal = try await alice.post("records/modify", #"""
                {"operations": [{"operationType": "update", "record": {"recordName": "m", "recordType": "Artist",
                 "recordChangeTag": "\#(updated.recordChangeTag!)", "fields": {"born": {"value": null}}}}]}
                """#)
            #expect(try removal.decode(RecordsResponse.self).records.first?.record?.fields == ["name": .string("Monet")])
        }
    }

    @Test func replaceDropsUnspecifiedFields() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let saved = try await alice.save([Record(recordName: "m", recordType: "Artist", fields: ["name": .string("Monet"), "born": .int64(1840)])])[0]
            var replacement = saved
            replacement.fields = ["born": .int64(1840)]
            let replaced = try #require(try await alice.modify([RecordOperation(.replace, RecordPayload(replacement))]).first?.record)
            #expect(replaced.fields == ["born": .int64(1840)])
            let stale = try await alice.modify([RecordOperation(.replace, RecordPayload(replacement))])
            #expect(stale.first?.error?.code == .conflict)
        }
    }

    @Test func forceOperationsSkipTheTagCheckAndCreate() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let created = try await alice.modify([RecordOperation(.forceUpdate, RecordPayload(.artist("new")))])
            #expect(created.first?.record?.fields["name"] == .string("new"))
            var stale = Record.artist("new", "Renamed")
            stale.recordChangeTag = "stale"
            #expect(try await alice.modify([RecordOperation(.forceUpdate, RecordPayload(stale))]).first?.record?.fields["name"] == .string("Renamed"))
            var replacement = Record(recordName: "new", recordType: "Artist", fields: ["born": .int64(1)])
            replacement.recordChangeTag = "stale"
            #expect(try await alice.modify([RecordOperation(.forceReplace, RecordPayload(replacement))]).first?.record?.fields == ["born": .int64(1)])
        }
    }

    @Test func deleteNeedsTheTagAndForceDeleteDoesNot() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let saved = try await alice.save([.artist("a"), .artist("b")])
            let stale = try await alice.modify([RecordOperation(.delete, RecordPayload(recordName: "a", recordChangeTag: "old"))])
            #expect(stale.first?.error?.code == .conflict)
            let deleted = try await alice.modify([RecordOperation(.delete, RecordPayload(recordName: "a", recordChangeTag: saved[0].recordChangeTag))])
            #expect(deleted.first?.record?.deleted == true)
            #expect(try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "b"))]).first?.record?.deleted == true)
            #expect(try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "b"))]).first?.error?.code == .notFound)
        }
    }

    @Test func updateOfAMissingRecordIsNotFound() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            var ghost = Record.artist("ghost")
            ghost.recordChangeTag = "1"
            #expect(try await alice.modify([RecordOperation(.update, RecordPayload(ghost))]).first?.error?.code == .notFound)
        }
    }

    @Test func aFailedAtomicBatchLeavesNothingBehind() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([.artist("exists")])
            let before = try await alice.allChanges()
            let results = try await alice.modify([
                RecordOperation(.create, RecordPayload(.artist("fresh"))),
                RecordOperation(.create, RecordPayload(.artwork("work", by: "fresh"))),
                RecordOperation(.create, RecordPayload(.artist("exists"))),
            ])
            #expect(results.map { $0.error?.code } == [.atomicError, .atomicError, .exists])
            let lookup = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "fresh"), .init(recordName: "work")]))
            #expect(try lookup.decode(RecordsResponse.self).records.map { $0.error?.code } == [.notFound, .notFound])
            // The change feed did not move.
            #expect(try await alice.allChanges(since: before.token).records.isEmpty)
        }
    }

    @Test func aNonAtomicBatchReportsEachRecord() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([.artist("exists")])
            let results = try await alice.modify([
                RecordOperation(.create, RecordPayload(.artist("fresh"))),
                RecordOperation(.create, RecordPayload(.artist("exists"))),
                RecordOperation(.create, RecordPayload(.artwork("work", by: "fresh"))),
            ], atomic: false)
            #expect(results.map { $0.error?.code } == [nil, .exists, nil])
            #expect(results[1].error?.recordName == "exists")
        }
    }

    @Test func desiredKeysLimitTheReturnedFields() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let reply = try await alice.post("records/modify", ModifyRecordsRequest(
                operations: [RecordOperation(.create, RecordPayload(.artwork("w", by: "a", action: .none)))], desiredKeys: ["title"]))
            #expect(try reply.decode(RecordsResponse.self).records.first?.record?.fields.keys.sorted() == ["title"])
            let lookup = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "w")], desiredKeys: []))
            #expect(try lookup.decode(RecordsResponse.self).records.first?.record?.fields.isEmpty == true)
        }
    }

    @Test func oneRecordMayAppearInOnlyOneOperation() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let results = try await alice.modify([RecordOperation(.create, RecordPayload(.artist("a"))), RecordOperation(.forceDelete, RecordPayload(recordName: "a"))], atomic: false)
            #expect(results.map { $0.error?.code } == [nil, .badRequest])
        }
    }

    @Test func createWithoutANameGetsAUUID() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let results = try await alice.modify([RecordOperation(.create, RecordPayload(recordType: "Note", fields: ["text": RawFieldValue(value: .string("hi"))]))])
            let name = try #require(results.first?.record?.recordName)
            #expect(UUID(uuidString: name) != nil)
        }
    }
}
