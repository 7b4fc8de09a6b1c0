import Foundation
import RecordModel
import Testing

/// Item 4: DELETE_SELF cascades.
@Suite struct CascadeTests {
    /// An update that names only some fields keeps the references of the others: the record
    /// still goes with its owner.
    @Test func anUpdateOfOtherFieldsKeepsTheRecordsReferences() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let saved = try await alice.save([.artist("monet"), .artwork("lilies", by: "monet")])
            let tag = try #require(saved.first { $0.recordName == "lilies" }?.recordChangeTag)
            let update = try await alice.modify([RecordOperation(.update, RecordPayload(recordName: "lilies", recordType: "Artwork", recordChangeTag: tag,
                                                                                         fields: ["title": RawFieldValue(FieldValue.string("Water Lilies"))]))])
            #expect(update.first?.record?.fields["artist"] == .reference(Reference(recordName: "monet", action: .deleteSelf)))
            let results = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "monet"))])
            guard case .success(_, let cascaded)? = results.first else { Issue.record("delete failed: \(results)"); return }
            #expect(cascaded == ["lilies"])
        }
    }

    /// `recordSyncDryRun`: the answer names what a delete would take along, and nothing is
    /// deleted, announced or changed in the feed.
    @Test func aDryRunSaysWhatACascadeWouldDeleteAndDeletesNothing() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([.artist("monet"), .artwork("lilies", by: "monet"), .artwork("study", by: "monet"),
                                  Record(recordName: "note", recordType: "Note", fields: ["on": .reference(Reference(recordName: "lilies", action: .deleteSelf))])])
            let before = try await alice.allChanges()
            let reply = try await alice.post("records/modify", #"{"operations": [{"operationType": "forceDelete", "record": {"recordName": "monet"}}], "recordSyncDryRun": true}"#)
            #expect(reply.status == 200, "\(reply.reason)")
            guard case .success(_, let cascaded)? = try reply.decode(RecordsResponse.self).records.first else { Issue.record("\(reply.json)"); return }
            #expect(cascaded == ["lilies", "note", "study"])
            #expect(try await alice.allChanges(since: before.token).records.isEmpty)
            let still = try await alice.post("records/lookup", LookupRecordsRequest(records: ["monet", "lilies", "note"].map { LookupRecordsRequest.Entry(recordName: $0) }))
            #expect(try still.decode(RecordsResponse.self).records.allSatisfy { $0.error == nil })
            // The same request without the flag deletes them.
            let done = try await alice.post("records/modify", #"{"operations": [{"operationType": "forceDelete", "record": {"recordName": "monet"}}]}"#)
            #expect(try done.decode(RecordsResponse.self).records.first?.error == nil)
            #expect(try await alice.allChanges(since: before.token).records.count == 4)
        }
    }

    /// Within a level, a cascade removes a record's owners by reference field, in the order the
    /// field names were first stored; a batch stores the names its saves carry sorted by name
    /// (whatever order it saves in), so `alpha` comes before `zeta` though `zeta` is saved first.
    @Test func theFieldNamesOfOneBatchOrderACascadeByName() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let owned = { (name: String, field: String) in
                Record(recordName: name, recordType: "Part", fields: [field: .reference(Reference(recordName: "root", action: .deleteSelf))])
            }
            try await alice.save([.artist("root"), owned("p", "zeta"), owned("c", "alpha")])
            let before = try await alice.allChanges()
            _ = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "root"))])
            #expect(try await alice.allChanges(since: before.token).records.map(\.recordName) == ["root", "c", "p"])
        }
    }

    /// In a zone without VALIDATE references the deletes of a batch run without savepoints:
    /// a failed delete of a non-atomic batch still changes nothing, and a failed delete of an
    /// atomic one undoes the cascades before it.
    @Test func failedDeletesChangeNothingInAZoneWithoutValidateReferences() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let saved = try await alice.save([.artist("monet"), .artwork("lilies", by: "monet"), .artist("manet"), .artwork("olympia", by: "manet")])
            let before = try await alice.allChanges()
            // Atomic: the second delete's stale tag undoes the first delete and its cascade.
            let atomic = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "monet")),
                                                 RecordOperation(.delete, RecordPayload(recordName: "manet", recordChangeTag: "stale"))])
            #expect(atomic.map { $0.error?.code } == [.atomicError, .conflict])
            #expect(try await alice.allChanges(since: before.token).records.isEmpty)
            // Non-atomic: the missing record and the stale tag fail alone.
            let manetTag = try #require(saved.first { $0.recordName == "manet" }?.recordChangeTag)
            let results = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "missing")),
                                                  RecordOperation(.delete, RecordPayload(recordName: "monet", recordChangeTag: "stale")),
                                                  RecordOperation(.delete, RecordPayload(recordName: "manet", recordChangeTag: manetTag))], atomic: false)
            #expect(results.map { $0.error?.code } == [.notFound, .conflict, nil])
            let after = try await alice.allChanges(since: before.token)
            #expect(after.records.allSatisfy { $0.deleted })
            #expect(after.records.map(\.recordName).sorted() == ["manet", "olympia"])
            let lookup = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "monet"), .init(recordName: "lilies")]))
            #expect(try lookup.decode(RecordsResponse.self).records.map(\.error) == [nil, nil])
        }
    }

    @Test func aThreeLevelCascadeLeavesTombstonesInTheChangeFeed() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("Gallery")
            let comment = { (name: String, on: String) in
                Record(recordName: name, recordType: "Comment", fields: ["artwork": .reference(Reference(recordName: on, action: .deleteSelf))])
            }
            try await alice.save([.artist("monet"), .artist("manet"), .artwork("lilies", by: "monet"), .artwork("haystacks", by: "monet"),
                                  .artwork("olympia", by: "manet"), comment("c1", "lilies"), comment("c2", "lilies"), comment("c3", "olympia")], zone: "Gallery")
            let before = try await alice.allChanges(zone: "Gallery")

            let results = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "monet"))], zone: "Gallery")
            guard case .success(let deleted, let cascaded)? = results.first else {
                Issue.record("delete failed: \(results)")
                return
            }
            #expect(deleted.deleted)
            #expect(cascaded == ["c1", "c2", "haystacks", "lilies"])

            let after = try await alice.allChanges(zone: "Gallery", since: before.token)
            #expect(after.records.allSatisfy { $0.deleted })
            #expect(after.records.map(\.recordName).sorted() == ["c1", "c2", "haystacks", "lilies", "monet"])
            #expect(after.records.first { $0.recordName == "c1" }?.recordType == "Comment")
            // Manet's branch is untouched.
            let lookup = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "olympia"), .init(recordName: "c3")], zoneID: ZoneID(zoneName: "Gallery")))
            #expect(try lookup.decode(RecordsResponse.self).records.map(\.error) == [nil, nil])
        }
    }

    @Test func aRecordWithSeveralOwnersGoesWithTheFirstOwnerDeleted() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let shared = Record(recordName: "collab", recordType: "Artwork", fields: [
                "artist": .reference(Reference(recordName: "a", action: .deleteSelf)),
                "coauthors": .list(.reference, [.reference(Reference(recordName: "b", action: .deleteSelf))]),
            ])
            try await alice.save([.artist("a"), .artist("b"), shared])
            let results = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "b"))])
            guard case .success(_, let cascaded)? = results.first else { Issue.record("delete failed"); return }
            #expect(cascaded == ["collab"])
            let lookup = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "a"), .init(recordName: "collab")]))
            #expect(try lookup.decode(RecordsResponse.self).records.map { $0.error?.code } == [nil, .notFound])
        }
    }

    @Test func aCascadeOverACycleTerminates() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let node = { (name: String, owner: String) in
                Record(recordName: name, recordType: "Node", fields: ["owner": .reference(Reference(recordName: owner, action: .deleteSelf))])
            }
            try await alice.save([node("a", "c"), node("b", "a"), node("c", "b"), .artist("bystander")])
            let results = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "a"))])
            guard case .success(_, let cascaded)? = results.first else { Issue.record("delete failed"); return }
            #expect(cascaded == ["b", "c"])
            #expect(try await alice.queryNames(Query(recordType: "Node")).isEmpty)
            #expect(try await alice.queryNames(Query(recordType: "Artist")) == ["bystander"])
        }
    }

    /// The cascade walks one level at a time: its tombstones enter the change feed root first,
    /// then level by level (each level's records in the order of the records they reference,
    /// here in name order), and a record reached on two levels (here `deep`, owned by the root
    /// and by a grandchild) is deleted once, on the first.
    @Test func aCascadesTombstonesFollowItsWalkLevelByLevel() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("Tree")
            let node = { (name: String, owners: [String]) in
                Record(recordName: name, recordType: "Node", fields: Dictionary(uniqueKeysWithValues: owners.enumerated().map { index, owner in
                    ("owner\(index)", FieldValue.reference(Reference(recordName: owner, action: .deleteSelf)))
                }))
            }
            // root ← b, a ← a1 ← a1x ← a1xy; deep ← root and a1.
            try await alice.save([node("root", []), node("b", ["root"]), node("a", ["root"]), node("a1", ["a"]), node("a1x", ["a1"]),
                                  node("a1xy", ["a1x"]), node("deep", ["a1", "root"]), node("other", [])], zone: "Tree")
            let before = try await alice.allChanges(zone: "Tree")
            let results = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "root"))], zone: "Tree")
            guard case .success(_, let cascaded)? = results.first else { Issue.record("delete failed: \(results)"); return }
            #expect(cascaded == ["a", "a1", "a1x", "a1xy", "b", "deep"])
            let after = try await alice.allChanges(zone: "Tree", since: before.token)
            #expect(after.records.map(\.recordName) == ["root", "a", "b", "deep", "a1", "a1x", "a1xy"])
            #expect(after.records.allSatisfy { $0.deleted })
            #expect(try await alice.queryNames(Query(recordType: "Node"), zone: "Tree") == ["other"])
        }
    }

    @Test func aCascadeIsBlockedByAValidateReferenceFromOutside() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let review = Record(recordName: "review", recordType: "Review", fields: ["artwork": .reference(Reference(recordName: "w", action: .validate))])
            try await alice.save([.artist("a"), .artwork("w", by: "a"), review])
            let results = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "a"))])
            #expect(results.first?.error?.code == .validatingReferenceError)
            #expect(try await alice.queryNames(Query(recordType: "Artwork")) == ["w"])
        }
    }

    /// A delete blocked by several `VALIDATE` references names the first blocked target in byte
    /// order and the first of its holders, the same on every engine.
    @Test func aBlockedDeleteNamesTheFirstBlockedTargetAndHolderInByteOrder() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            func review(_ name: String, of target: String) -> Record {
                Record(recordName: name, recordType: "Review", fields: ["artwork": .reference(Reference(recordName: target, action: .validate))])
            }
            try await alice.save([.artist("a"), .artwork("w1", by: "a"), .artwork("w2", by: "a"),
                                  review("zeta", of: "w1"), review("yak", of: "w1"), review("alpha", of: "w2")])
            let results = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "a"))])
            #expect(results.first?.error?.code == .validatingReferenceError)
            #expect(results.first?.error?.reason == "cannot delete 'w1': 'yak' holds a VALIDATE reference to it (delete that record in the same batch)")
        }
    }

    @Test func deletingARecordAlreadyRemovedByACascadeInTheSameBatchSucceeds() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([.artist("a"), .artwork("w", by: "a")])
            let results = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "a")), RecordOperation(.forceDelete, RecordPayload(recordName: "w"))])
            #expect(results.map(\.error) == [nil, nil])
        }
    }
}
