import Foundation
import RecordModel
import Testing

/// Item 1: field types, the inferred schema, system fields, the record size limit.
@Suite struct RecordTypeTests {
    @Test func everyFieldTypeIsStoredAndReadBack() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let fields: [String: FieldValue] = [
                "s": .string("Café ☕"), "i": .int64(Int64.min), "d": .double(-0.5), "t": .timestamp(1_700_000_000_123),
                "b": .bytes(Data([0, 1, 2, 255])), "r": .reference(Reference(recordName: "other")),
                "loc": .location(Location(latitude: 48.85, longitude: 2.35, horizontalAccuracy: 5, altitude: 35, timestamp: 9)),
                "asset": .asset(.object(["fileChecksum": .string("abc"), "size": .int(3)])), "flag": .boolean(true),
                "sl": .list(.string, [.string("a"), .string("b")]), "il": .list(.int64, [.int64(1), .int64(-2)]),
                "dl": .list(.double, [.double(1.5)]), "tl": .list(.timestamp, [.timestamp(5)]),
                "bl": .list(.bytes, [.bytes(Data([9]))]), "rl": .list(.reference, [.reference(Reference(recordName: "x", action: .deleteSelf))]),
                "ll": .list(.location, [.location(Location(latitude: 0, longitude: 0))]), "fl": .list(.boolean, [.boolean(false)]),
            ]
            try await alice.save([Record(recordName: "all", recordType: "Everything", fields: fields)])
            let reply = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "all")]))
            let record = try #require(try reply.decode(RecordsResponse.self).records.first?.record)
            #expect(record.fields == fields)
            #expect(record.recordType == "Everything")
            #expect(record.created?.userRecordName == alice.userRecordName)
            #expect(record.modified?.userRecordName == alice.userRecordName)
            #expect((record.created?.timestamp ?? 0) > 1_700_000_000_000)
            #expect(record.recordChangeTag?.isEmpty == false)
        }
    }

    @Test func theSchemaIsInferredFromTheFirstSaveAndEnforced() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let first = try await alice.post("records/modify", #"""
                {"operations": [{"operationType": "create", "record": {"recordName": "a", "recordType": "Artist",
                 "fields": {"born": {"value": 1853}, "debut": {"value": 1880000000000, "type": "TIMESTAMP"}}}}]}
                """#)
            #expect(first.status == 200)
            // Untyped values are read by the schema: 1880000000001 becomes a TIMESTAMP.
            let second = try await alice.post("records/modify", #"""
                {"operations": [{"operationType": "create", "record": {"recordName": "b", "recordType": "Artist",
                 "fields": {"debut": {"value": 1880000000001}}}}]}
                """#)
            let record = try #require(try second.decode(RecordsResponse.self).records.first?.record)
            #expect(record.fields["debut"] == .timestamp(1_880_000_000_001))
            // A value of another type is refused, naming the field and both types.
            let wrong = try await alice.post("records/modify", #"""
                {"operations": [{"operationType": "create", "record": {"recordName": "c", "recordType": "Artist",
                 "fields": {"born": {"value": "1853", "type": "STRING"}}}}]}
                """#)
            let error = try #require(try wrong.decode(RecordsResponse.self).records.first?.error)
            #expect(error.code == .badRequest)
            #expect(error.reason.contains("'born'") && error.reason.contains("INT64") && error.reason.contains("STRING"))
            let untyped = try await alice.post("records/modify", #"""
                {"operations": [{"operationType": "create", "record": {"recordName": "c", "recordType": "Artist",
                 "fields": {"born": {"value": "1853"}}}}]}
                """#)
            let untypedError = try #require(try untyped.decode(RecordsResponse.self).records.first?.error)
            #expect(untypedError.code == .badRequest)
            #expect(untypedError.reason.contains("'born'") && untypedError.reason.contains("INT64"))
            // Nothing was saved by the failed requests.
            let lookup = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "c")]))
            #expect(try lookup.decode(RecordsResponse.self).records.first?.error?.code == .notFound)
        }
    }

    /// Within one batch, a field's type introduced by an earlier operation already applies to
    /// the later ones: an untyped value is read by it, a value of another type is refused.
    @Test func aTypeIntroducedEarlierInABatchAppliesToTheRestOfIt() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let reply = try await alice.post("records/modify", #"""
                {"atomic": false, "operations": [
                 {"operationType": "create", "record": {"recordName": "a", "recordType": "Artist", "fields": {"debut": {"value": 1880000000000, "type": "TIMESTAMP"}}}},
                 {"operationType": "create", "record": {"recordName": "b", "recordType": "Artist", "fields": {"debut": {"value": 1880000000001}}}},
                 {"operationType": "create", "record": {"recordName": "c", "recordType": "Artist", "fields": {"debut": {"value": "1880", "type": "STRING"}}}}]}
                """#)
            let results = try reply.decode(RecordsResponse.self).records
            #expect(results.count == 3)
            #expect(results[0].record?.fields["debut"] == .timestamp(1_880_000_000_000))
            #expect(results[1].record?.fields["debut"] == .timestamp(1_880_000_000_001))
            let error = try #require(results[2].error)
            #expect(error.code == .badRequest && error.reason.contains("TIMESTAMP") && error.reason.contains("STRING"), "\(error.reason)")
        }
    }

    /// Fields are resolved in any order, but a record with several bad fields is refused
    /// naming the first by name, whatever order the request (or a dictionary) gives them in.
    @Test func theFirstBadFieldByNameIsTheOneReported() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            var fields: [String: RawFieldValue] = [:]
            for index in (0..<8).reversed() { fields["f\(index)"] = RawFieldValue(value: .string("not a number"), type: FieldType(.int64)) }
            fields["aFineOne"] = RawFieldValue(FieldValue.string("fine"))
            let results = try await alice.modify([RecordOperation(.create, RecordPayload(recordName: "bad", recordType: "Thing", fields: fields))])
            let error = try #require(results.first?.error)
            #expect(error.code == .badRequest)
            #expect(error.reason.contains("'f0'"), "\(error.reason)")
        }
    }

    @Test func moreThanOneMegabyteOfFieldDataIsRefused() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let big = Record(recordName: "big", recordType: "Blob", fields: ["data": .bytes(Data(count: 1_100_000))])
            let results = try await alice.modify([RecordOperation(.create, RecordPayload(big))])
            #expect(results.first?.error?.code == .limitExceeded)
            #expect(results.first?.error?.reason.contains("'big'") == true)
            let fits = Record(recordName: "fits", recordType: "Blob", fields: ["data": .bytes(Data(count: 700_000))])
            #expect(try await alice.modify([RecordOperation(.create, RecordPayload(fits))]).first?.error == nil)
        }
    }
}
