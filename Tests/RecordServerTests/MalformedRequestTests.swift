import Foundation
import Hummingbird
import RecordModel
import Testing

/// Item 9: every kind of bad request gets its error code and a reason naming the bad part,
/// and changes nothing.
@Suite struct MalformedRequestTests {
    struct Case: Sendable, CustomStringConvertible {
        var description: String
        var endpoint: String
        var body: String
        var status: Int
        var code: String
        var reasonFragment: String
        var path = "/database/1/iCloud.test.Gallery/development/private/"
    }

    static let longName = String(repeating: "n", count: 300)
    static let nested = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)

    static let requestCases: [Case] = [
        Case(description: "not JSON", endpoint: "records/modify", body: "{", status: 400, code: "BAD_REQUEST", reasonFragment: "not valid JSON"),
        Case(description: "empty body", endpoint: "records/modify", body: "", status: 400, code: "BAD_REQUEST", reasonFragment: "empty"),
        Case(description: "JSON of the wrong kind", endpoint: "records/modify", body: "[1, 2]", status: 400, code: "BAD_REQUEST", reasonFragment: "request body"),
        Case(description: "missing operations", endpoint: "records/modify", body: "{}", status: 400, code: "BAD_REQUEST", reasonFragment: "missing field operations"),
        Case(description: "operations not an array", endpoint: "records/modify", body: #"{"operations": 5}"#, status: 400, code: "BAD_REQUEST", reasonFragment: "operations: expected an array"),
        Case(description: "unknown operation type", endpoint: "records/modify", body: #"{"operations": [{"operationType": "upsert", "record": {}}]}"#, status: 400, code: "BAD_REQUEST", reasonFragment: "operations[0].operationType: unknown value 'upsert'"),
        Case(description: "missing record", endpoint: "records/modify", body: #"{"operations": [{"operationType": "create"}]}"#, status: 400, code: "BAD_REQUEST", reasonFragment: "operations[0]: missing field record"),
        Case(description: "unknown field type", endpoint: "records/modify", body: #"{"operations": [{"operationType": "create", "record": {"recordType": "T", "fields": {"x": {"value": 1, "type": "FLOAT"}}}}]}"#, status: 400, code: "BAD_REQUEST", reasonFragment: "operations[0].record.fields.x.type"),
        Case(description: "atomic not a boolean", endpoint: "records/modify", body: #"{"operations": [], "atomic": "yes"}"#, status: 400, code: "BAD_REQUEST", reasonFragment: "atomic: expected a boolean"),
        Case(description: "unknown zone", endpoint: "records/modify", body: #"{"zoneID": {"zoneName": "Nope"}, "operations": [{"operationType": "create", "record": {"recordType": "T"}}]}"#, status: 404, code: "ZONE_NOT_FOUND", reasonFragment: "'Nope'"),
        Case(description: "oversized zone name", endpoint: "records/lookup", body: #"{"zoneID": {"zoneName": "\#(longName)"}, "records": []}"#, status: 400, code: "BAD_REQUEST", reasonFragment: "zoneName is 300 bytes"),
        Case(description: "too many operations", endpoint: "records/modify", body: #"{"operations": [\#(Array(repeating: #"{"operationType": "create", "record": {"recordType": "T"}}"#, count: 6).joined(separator: ","))]}"#, status: 400, code: "LIMIT_EXCEEDED", reasonFragment: "6 operations; the limit is 5"),
        Case(description: "too many lookups", endpoint: "records/lookup", body: #"{"records": [\#(Array(repeating: #"{"recordName": "a"}"#, count: 6).joined(separator: ","))]}"#, status: 400, code: "LIMIT_EXCEEDED", reasonFragment: "6 records"),
        Case(description: "body too large", endpoint: "records/modify", body: #"{"operations": [], "pad": "\#(String(repeating: "x", count: 70_000))"}"#, status: 400, code: "LIMIT_EXCEEDED", reasonFragment: "larger than the limit"),
        Case(description: "deeply nested JSON", endpoint: "records/modify", body: String(nested.prefix(60_000)), status: 400, code: "BAD_REQUEST", reasonFragment: "JSON"),
        Case(description: "number out of range", endpoint: "records/query", body: #"{"query": {"recordType": "T"}, "resultsLimit": 1e400}"#, status: 400, code: "BAD_REQUEST", reasonFragment: "JSON"),
        Case(description: "non-positive resultsLimit", endpoint: "records/query", body: #"{"query": {"recordType": "T"}, "resultsLimit": 0}"#, status: 400, code: "BAD_REQUEST", reasonFragment: "resultsLimit"),
        Case(description: "garbage marker", endpoint: "records/query", body: #"{"query": {"recordType": "T"}, "continuationMarker": "garbage"}"#, status: 400, code: "BAD_REQUEST", reasonFragment: "continuationMarker"),
        Case(description: "unknown comparator", endpoint: "records/query", body: #"{"query": {"recordType": "T", "filterBy": [{"comparator": "SOUNDS_LIKE", "fieldName": "a", "fieldValue": {"value": 1}}]}}"#, status: 400, code: "BAD_REQUEST", reasonFragment: "query.filterBy[0].comparator"),
        Case(description: "non-positive change page resultsLimit", endpoint: "records/changes", body: #"{"resultsLimit": -3}"#, status: 400, code: "BAD_REQUEST", reasonFragment: "resultsLimit must be a positive integer, not -3"),
        Case(description: "hostile sync token", endpoint: "records/changes", body: #"{"syncToken": "'; DROP TABLE records; --"}"#, status: 400, code: "BAD_REQUEST", reasonFragment: "syncToken"),
        Case(description: "hostile database token", endpoint: "changes/database", body: #"{"syncToken": "\u0000\u0001"}"#, status: 400, code: "BAD_REQUEST", reasonFragment: "syncToken"),
        Case(description: "zone operation of unknown type", endpoint: "zones/modify", body: #"{"operations": [{"operationType": "rename", "zone": {"zoneID": {"zoneName": "A"}}}]}"#, status: 400, code: "BAD_REQUEST", reasonFragment: "operations[0].operationType"),
        Case(description: "unknown endpoint", endpoint: "records/frobnicate", body: "{}", status: 404, code: "NOT_FOUND", reasonFragment: "records/frobnicate"),
        Case(description: "unknown environment", endpoint: "zones/list", body: "", status: 400, code: "BAD_REQUEST", reasonFragment: "environment", path: "/database/1/iCloud.test.Gallery/staging/private/"),
        Case(description: "unknown database", endpoint: "zones/list", body: "", status: 400, code: "BAD_REQUEST", reasonFragment: "database must be", path: "/database/1/iCloud.test.Gallery/development/secret/"),
    ]

    @Test(arguments: requestCases)
    func aMalformedRequestGetsItsErrorAndChangesNothing(_ test: Case) async throws {
        try await withServer(configure: { configuration in
            configuration.limits.maximumOperationsPerRequest = 5
            configuration.maximumBodyBytes = 64 * 1024
        }) { server in
            let alice = try await server.user("alice")
            let reply = try await server.send(.post, test.path + test.endpoint,
                                              headers: [.authorization: "Bearer \(alice.token)", .contentType: "application/json"], body: test.body)
            #expect(reply.status == test.status, "\(reply.code ?? "-"): \(reply.reason)")
            #expect(reply.code == test.code)
            #expect(reply.reason.contains(test.reasonFragment), "reason was: \(reply.reason)")
            #expect(reply.json["uuid"]?.stringValue != nil)
            #expect(try await alice.allChanges().records.isEmpty)
        }
    }

    static let recordCases: [(String, String, String)] = [
        ("oversized record name", #"{"recordName": "\#(longName)", "recordType": "T"}"#, "recordName is 300 bytes"),
        ("control character in a name", #"{"recordName": "a\u0000b", "recordType": "T"}"#, "control character"),
        ("missing record type", #"{"recordName": "a"}"#, "needs record.recordType"),
        ("bad field name", #"{"recordName": "a", "recordType": "T", "fields": {"a.b": {"value": 1}}}"#, "'a.b'"),
        ("value of the wrong type", #"{"recordName": "a", "recordType": "T", "fields": {"n": {"value": "x", "type": "INT64"}}}"#, "field 'n'"),
        ("untypable value", #"{"recordName": "a", "recordType": "T", "fields": {"n": {"value": {"what": 1}}}}"#, "field 'n'"),
        ("bad reference action", #"{"recordName": "a", "recordType": "T", "fields": {"r": {"value": {"recordName": "b", "action": "CASCADE"}}}}"#, "action"),
        ("bad base64", #"{"recordName": "a", "recordType": "T", "fields": {"b": {"value": "%%%", "type": "BYTES"}}}"#, "base64"),
        ("mixed list", #"{"recordName": "a", "recordType": "T", "fields": {"l": {"value": [1, "x"]}}}"#, "field 'l'"),
        ("location timestamp out of range", #"{"recordName": "a", "recordType": "T", "fields": {"p": {"value": {"latitude": 1, "longitude": 2, "timestamp": 1e19}}}}"#, "LOCATION timestamp"),
        ("location out of range", #"{"recordName": "a", "recordType": "T", "fields": {"p": {"value": {"latitude": 91, "longitude": 0}}}}"#, "out of range"),
    ]

    @Test(arguments: recordCases)
    func aMalformedRecordFailsThatRecordAndChangesNothing(_ description: String, _ record: String, _ fragment: String) async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let reply = try await alice.post("records/modify", #"{"operations": [{"operationType": "create", "record": \#(record)}]}"#)
            #expect(reply.status == 200)
            let error = try #require(try reply.decode(RecordsResponse.self).records.first?.error)
            #expect(error.code == .badRequest)
            #expect(error.reason.contains(fragment), "reason was: \(error.reason)")
            #expect(try await alice.allChanges().records.isEmpty)
        }
    }
}
