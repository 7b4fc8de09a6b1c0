import Foundation
import RecordModel
import Testing

/// Edge cases found by probing the server with hostile input; each once broke it.
@Suite struct EdgeCaseTests {
    static func validating(_ target: String) -> FieldValue { .reference(Reference(recordName: target, action: .validate)) }

    @Test func aLocationTimestampBeyondSixtyFourBitsIsABadRequestNotACrash() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            for timestamp in ["9223372036854775807", "1e19", "-1e19"] {
                let save = try await alice.post("records/modify", #"{"operations": [{"operationType": "create", "record": {"recordName": "p", "recordType": "Place", "fields": {"at": {"value": {"latitude": 1, "longitude": 2, "timestamp": \#(timestamp)}}}}}]}"#)
                #expect(try save.decode(RecordsResponse.self).records.first?.error?.code == .badRequest)
                let query = try await alice.post("records/query", #"{"query": {"recordType": "Place", "filterBy": [{"comparator": "EQUALS", "fieldName": "at", "fieldValue": {"value": {"latitude": 1, "longitude": 2, "timestamp": \#(timestamp)}}}]}}"#)
                #expect(query.code == "BAD_REQUEST")
            }
            // The server is still up.
            #expect(try await alice.post("users/current", "").status == 200)
        }
    }

    /// A record's own checks come before its references', so a stale save is still a CONFLICT
    /// carrying the server's record (what a client needs to merge), even when it also names a
    /// missing VALIDATE target.
    @Test func aStaleSaveWithAMissingValidateTargetIsAConflict() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            _ = try await alice.save([.artist("A")])
            let stale = RecordPayload(recordName: "A", recordType: "Artist", recordChangeTag: "stale",
                                      fields: ["friend": RawFieldValue(Self.validating("missing"))])
            for atomic in [true, false] {
                let results = try await alice.modify([RecordOperation(.update, stale)], atomic: atomic)
                #expect(results.first?.error?.code == .conflict, "atomic: \(atomic)")
                #expect(results.first?.error?.serverRecord?.recordName == "A", "atomic: \(atomic)")
            }
        }
    }

    @Test func aSourceWithSeveralValidateReferencesStillBlocksItsTarget() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([
                .artist("T"),
                Record(recordName: "S", recordType: "Note", fields: ["a": Self.validating("T"), "b": Self.validating("T"), "c": Self.validating("T")]),
                Record(recordName: "B", recordType: "Note", fields: ["z": Self.validating("T")]),
            ])
            let results = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "T")), RecordOperation(.forceDelete, RecordPayload(recordName: "S"))])
            #expect(results.first?.error?.code == .validatingReferenceError)
            #expect(results.first?.error?.reason.contains("'B'") == true)
            #expect(try await alice.queryNames(Query(recordType: "Artist")) == ["T"])
        }
    }

    @Test func aNonAtomicDeleteIsNotLetThroughByALaterDeleteThatFails() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([.artist("T"), Record(recordName: "S", recordType: "Note", fields: ["p": Self.validating("T")])])
            let results = try await alice.modify([
                RecordOperation(.forceDelete, RecordPayload(recordName: "T")),
                RecordOperation(.delete, RecordPayload(recordName: "S", recordChangeTag: "bogus")),
            ], atomic: false)
            #expect(results.map { $0.error?.code } == [.validatingReferenceError, .conflict])
            #expect(try await alice.queryNames(Query(recordType: "Artist")) == ["T"])
            // With a good tag, both go.
            let tag = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "S")])).decode(RecordsResponse.self).records.first?.record?.recordChangeTag
            let retry = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "T")), RecordOperation(.delete, RecordPayload(recordName: "S", recordChangeTag: tag))], atomic: false)
            #expect(retry.map(\.error) == [nil, nil])
        }
    }

    @Test func aListHoldingOneTargetWithTwoActionsKeepsBoth() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let owned = Record(recordName: "owned", recordType: "Note", fields: ["owners": .list(.reference, [
                .reference(Reference(recordName: "X", action: .deleteSelf)), .reference(Reference(recordName: "X", action: .none)),
            ])])
            let validated = Record(recordName: "validated", recordType: "Note", fields: ["owners": .list(.reference, [
                .reference(Reference(recordName: "Y", action: .validate)), .reference(Reference(recordName: "Y", action: .none)),
            ])])
            try await alice.save([.artist("X"), .artist("Y"), owned, validated])
            let deleteX = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "X"))])
            guard case .success(_, let cascaded)? = deleteX.first else { Issue.record("delete failed"); return }
            #expect(cascaded == ["owned"])
            let deleteY = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "Y"))])
            #expect(deleteY.first?.error?.code == .validatingReferenceError)
        }
    }

    @Test func aFailedOperationDoesNotFixAFieldTypeForTheRestOfTheBatch() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([.artist("E1")])
            let results = try await alice.post("records/modify", #"""
                {"atomic": false, "operations": [
                  {"operationType": "create", "record": {"recordName": "E1", "recordType": "Artist", "fields": {"newf": {"value": "s"}}}},
                  {"operationType": "forceReplace", "record": {"recordName": "E2", "recordType": "Artist", "fields": {"newf": {"value": 5}}}}]}
                """#).decode(RecordsResponse.self).records
            #expect(results.map { $0.error?.code } == [.exists, nil])
        }
    }

    @Test func oversizedQueriesAreBadRequestsNotServerErrors() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([Record(recordName: "t", recordType: "Tagged", fields: ["tags": .list(.string, [.string("v999")])])])
            let many = (0..<1000).map { JSONValue.string("v\($0)") }
            let any = QueryFilter("tags", .listContainsAny, RawFieldValue(value: .array(many)))
            #expect(try await alice.queryNames(Query(recordType: "Tagged", filterBy: [any])) == ["t"])
            let tooMany: [Query] = [
                Query(recordType: "Tagged", filterBy: Array(repeating: QueryFilter(system: .recordName, .notEquals, RawFieldValue(value: .string("x"))), count: 65)),
                Query(recordType: "Tagged", sortBy: Array(repeating: QuerySort(system: .recordName), count: 17)),
                Query(recordType: "Tagged", filterBy: [QueryFilter("tags", .listContainsAll, RawFieldValue(value: .array(Array(many.prefix(65)))))]),
            ]
            for query in tooMany {
                let reply = try await alice.post("records/query", QueryRecordsRequest(query: query))
                #expect(reply.status == 400)
                #expect(reply.code == "BAD_REQUEST")
                #expect(reply.reason.contains("limit"))
            }
        }
    }

    @Test func inThePublicDatabaseAnOwnerMustExist() async throws {
        try await withServer { server in
            let eve = try await server.user("eve")
            let planted = Record(recordName: "P", recordType: "Note", fields: ["owner": .reference(Reference(recordName: "ghost", action: .deleteSelf))])
            let results = try await eve.modify([RecordOperation(.create, RecordPayload(planted))], database: "public")
            #expect(results.first?.error?.code == .validatingReferenceError)
            // An owner created in the same batch is fine.
            let together = try await eve.modify([RecordOperation(.create, RecordPayload(planted)), RecordOperation(.create, RecordPayload(.artist("ghost")))], database: "public")
            #expect(together.map(\.error) == [nil, nil])
        }
    }

    @Test func aReferenceNamingAnotherOwnersZoneIsRefused() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let record = Record(recordName: "r", recordType: "Note", fields: [
                "other": .reference(Reference(recordName: "x", zoneID: ZoneID(zoneName: "_defaultZone", ownerRecordName: "_someoneelse"))),
            ])
            #expect(try await alice.modify([RecordOperation(.create, RecordPayload(record))]).first?.error?.code == .badRequest)
        }
    }

    @Test func includeStopsAtTheResultsLimit() async throws {
        try await withServer(configure: { $0.limits.maximumResultsLimit = 5 }) { server in
            let alice = try await server.user("alice")
            var chain: [Record] = [Record(recordName: "n0", recordType: "Node")]
            for i in 1...8 {
                chain.append(Record(recordName: "n\(i)", recordType: "Node", fields: ["next": .reference(Reference(recordName: "n\(i - 1)"))]))
            }
            try await alice.save(chain)
            let reply = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "n8")], include: ["next"], includeDepth: 8))
            #expect(reply.code == "LIMIT_EXCEEDED")
            let fits = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "n8")], include: ["next"], includeDepth: 4))
            #expect(try fits.decode(RecordsResponse.self).includedRecords?.map(\.recordName) == ["n4", "n5", "n6", "n7"])
        }
    }
}
