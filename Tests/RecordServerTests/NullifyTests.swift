import Foundation
import RecordModel
import Testing

/// The `NULLIFY` reference action (an extension), through real HTTP on each engine.
@Suite struct NullifyTests {
    static func ref(_ name: String, _ action: Reference.Action) -> FieldValue { .reference(Reference(recordName: name, action: action)) }

    @Test func deletingTheTargetClearsTheFieldOrTheElementAsAChange() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("Gallery")
            try await alice.save([
                .artist("monet"), .artist("manet"),
                Record(recordName: "w1", recordType: "Artwork", fields: ["title": .string("Lilies"), "artist": Self.ref("monet", .nullify)]),
                Record(recordName: "w2", recordType: "Artwork", fields: ["artists": .list(.reference, [Self.ref("monet", .nullify), Self.ref("manet", .none)])]),
                Record(recordName: "w3", recordType: "Artwork", fields: ["artist": Self.ref("manet", .nullify)]),
            ], zone: "Gallery")
            let before = try await alice.allChanges(zone: "Gallery")
            let tags = Dictionary(uniqueKeysWithValues: before.records.map { ($0.recordName, $0.recordChangeTag) })
            let deleted = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "monet"))], zone: "Gallery")
            #expect(deleted.first?.error == nil)
            let changes = try await alice.allChanges(zone: "Gallery", since: before.token)
            #expect(changes.records.map(\.recordName) == ["w1", "w2", "monet"], "the cleared records, then the tombstone")
            let w1 = try #require(changes.records.first { $0.recordName == "w1" })
            #expect(w1.fields["artist"] == nil && w1.fields["title"] == .string("Lilies"))
            #expect(w1.recordChangeTag != tags["w1"] ?? nil)
            #expect(w1.modified?.userRecordName == alice.userRecordName)
            let w2 = try #require(changes.records.first { $0.recordName == "w2" })
            #expect(w2.fields["artists"] == .list(.reference, [Self.ref("manet", .none)]))
            // Nothing refers to monet any more; w3 still refers to manet.
            let backlinks = try await alice.post("records/backlinks", BacklinksRequest(recordName: "monet", zoneID: ZoneID(zoneName: "Gallery"))).decode(BacklinksResponse.self)
            #expect(backlinks.backlinks.isEmpty)
            #expect(try await alice.queryNames(Query(recordType: "Artwork", filterBy: [QueryFilter("artist", .equals, RawFieldValue(value: .string("manet")))]), zone: "Gallery") == ["w3"])
        }
    }

    /// A list holding DELETE_SELF and NULLIFY references: deleting the NULLIFY target removes
    /// its element; deleting the DELETE_SELF target deletes the record.
    @Test func aListWithDeleteSelfAndNullifyReferences() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([.artist("owner"), .artist("friend"),
                                  Record(recordName: "s", recordType: "Sketch", fields: ["links": .list(.reference, [Self.ref("owner", .deleteSelf), Self.ref("friend", .nullify)])])])
            _ = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "friend"))])
            let kept = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "s")])).decode(RecordsResponse.self)
            #expect(kept.records.first?.record?.fields["links"] == .list(.reference, [Self.ref("owner", .deleteSelf)]))
            let gone = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "owner"))])
            guard case .success(_, let cascaded)? = gone.first else { Issue.record("\(gone)"); return }
            #expect(cascaded == ["s"])
        }
    }

    /// A NULLIFY source deleted in the same batch as its target: deleted after (cleared first,
    /// then deleted) or before (nothing to clear); either way the batch succeeds and it is gone.
    @Test func aSourceDeletedInTheSameBatchAsItsTarget() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("Gallery")
            try await alice.save([.artist("a"), .artist("b"),
                                  Record(recordName: "x", recordType: "Artwork", fields: ["artist": Self.ref("a", .nullify)]),
                                  Record(recordName: "y", recordType: "Artwork", fields: ["artist": Self.ref("b", .nullify)])], zone: "Gallery")
            let token = try await alice.allChanges(zone: "Gallery").token
            let results = try await alice.modify([
                RecordOperation(.forceDelete, RecordPayload(recordName: "a")), RecordOperation(.forceDelete, RecordPayload(recordName: "x")),
                RecordOperation(.forceDelete, RecordPayload(recordName: "y")), RecordOperation(.forceDelete, RecordPayload(recordName: "b")),
            ], zone: "Gallery", atomic: true)
            let failures = results.filter { $0.error != nil }
            #expect(failures.isEmpty)
            let changes = try await alice.allChanges(zone: "Gallery", since: token)
            #expect(Set(changes.records.map(\.recordName)) == ["a", "b", "x", "y"])
            let survivors = changes.records.filter { !$0.deleted }
            #expect(survivors.isEmpty)
        }
    }

    /// In the public database a NULLIFY reference held by another user's record is cleared by
    /// the target's owner's delete: the record is modified by the deleter.
    @Test func aSourceInAnotherUsersPublicRecordIsCleared() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            try await bob.save([.artist("bobs")], database: "public")
            try await alice.save([Record(recordName: "alices", recordType: "Artwork", fields: ["artist": Self.ref("bobs", .nullify), "title": .string("t")])], database: "public")
            let deleted = try await bob.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "bobs"))], database: "public")
            #expect(deleted.first?.error == nil)
            let found = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "alices")]), database: "public").decode(RecordsResponse.self)
            let record = try #require(found.records.first?.record)
            #expect(record.fields["artist"] == nil && record.fields["title"] == .string("t"))
            #expect(record.modified?.userRecordName == bob.userRecordName)
            #expect(record.created?.userRecordName == alice.userRecordName)
        }
    }

    /// On the wire NULLIFY is Apple's NONE with `recordSyncAction` beside it, so an Apple-only
    /// client reads a reference it can do nothing about; RecordSync's readers take the extension.
    @Test func nullifyTravelsAsNoneWithItsExtensionKey() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let saved = try await alice.post("records/modify", #"""
                {"operations": [{"operationType": "forceReplace", "record": {"recordName": "t", "recordType": "A"}},
                                {"operationType": "forceReplace", "record": {"recordName": "s", "recordType": "B", "fields": {"to": {"value": {"recordName": "t", "action": "NONE", "recordSyncAction": "NULLIFY"}}}}}]}
                """#)
            #expect(saved.status == 200, "\(saved.reason)")
            let value = saved.json["records"]?[1]?["fields"]?["to"]?["value"]
            #expect(value?["action"] == .string("NONE") && value?["recordSyncAction"] == .string("NULLIFY"), "\(saved.json)")
            let bad = try await alice.post("records/modify", #"{"operations": [{"operationType": "forceReplace", "record": {"recordName": "u", "recordType": "B", "fields": {"to": {"value": {"recordName": "t", "action": "SOMETIMES"}}}}}]}"#)
            #expect(bad.json["records"]?[0]?["serverErrorCode"]?.stringValue == "BAD_REQUEST" || bad.code == "BAD_REQUEST", "\(bad.json)")
            _ = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "t"))])
            let after = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "s")])).decode(RecordsResponse.self)
            #expect(after.records.first?.record?.fields["to"] == nil)
        }
    }
}
