import Foundation
import RecordModel
import Testing

/// Item 5: lookup order, NOT_FOUND, and the `include` extension.
@Suite struct LookupTests {
    @Test func resultsFollowTheRequestOrderWithNotFoundForMissingRecords() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([.artist("a"), .artist("b")])
            let reply = try await alice.post("records/lookup", #"{"records": [{"recordName": "b"}, {"recordName": "zzz"}, {"recordName": "a"}]}"#)
            let results = try reply.decode(RecordsResponse.self).records
            #expect(results.map { $0.record?.recordName ?? $0.error?.code.rawValue } == ["b", "NOT_FOUND", "a"])
            #expect(results[1].error?.recordName == "zzz")
            #expect(try reply.decode(RecordsResponse.self).includedRecords == nil)
        }
    }

    @Test func includeReturnsReferencedRecordsTargetsFirst() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let label = Record(recordName: "label", recordType: "Label", fields: ["name": .string("Impressionists")])
            var artist = Record.artist("monet")
            artist["label"] = .reference(Reference(recordName: "label"))
            let comment = Record(recordName: "c", recordType: "Comment", fields: ["artwork": .reference(Reference(recordName: "lilies", action: .deleteSelf))])
            try await alice.save([label, artist, .artwork("lilies", by: "monet"), comment])

            let one = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "c")], include: ["artwork", "artist", "label"]))
            #expect(try one.decode(RecordsResponse.self).includedRecords?.map(\.recordName) == ["lilies"])

            let deep = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "c")], include: ["artwork", "artist", "label"], includeDepth: 3))
            #expect(try deep.decode(RecordsResponse.self).includedRecords?.map(\.recordName) == ["label", "monet", "lilies"])

            let onlyArtwork = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "c")], include: ["artwork"], includeDepth: 3))
            #expect(try onlyArtwork.decode(RecordsResponse.self).includedRecords?.map(\.recordName) == ["lilies"])

            let tooDeep = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "c")], include: ["artwork"], includeDepth: 99))
            #expect(tooDeep.code == "BAD_REQUEST")
        }
    }
}
