import Foundation
import GRDB
import Logging
import PostgresNIO
import RecordModel
import RecordPostgresEngine
import TestSupport
import Testing

/// What a client built on Apple's documents reads: Apple's field types on the wire, RecordSync's
/// finer type beside them, for records saved now and records stored by earlier releases.
@Suite struct WireFormTests {
    /// Replaces the stored fields text of record `name` (in the user's default zone) with `text`,
    /// as an earlier release would have stored it.
    static func storeFieldsText(_ text: String, ofRecord name: String, in server: TestServer) async throws {
        if server.backend.description == "SQLite" {
            let queue = try DatabaseQueue(path: (server.directory as NSString).appendingPathComponent("records.sqlite"))
            try await queue.write { db in try db.execute(sql: "UPDATE records SET fields = ? WHERE name = ?", arguments: [text, name]) }
        } else {
            let location = try PostgresLocation(url: try await TestPostgres.databaseURL(for: server.directory))
            try await PostgresEngine.withConnection(to: location, logger: Logger(label: "test")) { connection in
                try await connection.query("UPDATE records SET fields = \(text) WHERE name = \(name)", logger: Logger(label: "test"))
            }
        }
    }

    @Test func booleansTravelAsInt64WithTheirTypeBeside() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([Record(recordName: "todo", recordType: "Task", fields: ["done": .boolean(true), "flags": .list(.boolean, [.boolean(false), .boolean(true)])])])
            try await alice.save([Record(recordName: "old", recordType: "Task", fields: ["title": .string("old")])])
            // "old" as the release before stored it: BOOLEAN with JSON booleans.
            try await Self.storeFieldsText(#"{"done":{"type":"BOOLEAN","value":false},"flags":{"type":"BOOLEAN_LIST","value":[true]}}"#, ofRecord: "old", in: server)
            let expected: [String: (done: JSONValue, flags: JSONValue)] = ["todo": (.int(1), .array([.int(0), .int(1)])), "old": (.int(0), .array([.int(1)]))]
            func check(_ records: [JSONValue], _ endpoint: String) {
                #expect(records.count == 2, "\(endpoint)")
                for record in records {
                    guard let name = record["recordName"]?.stringValue, let want = expected[name] else { Issue.record("\(endpoint): \(record)"); continue }
                    #expect(record["fields"]?["done"] == .object(["type": .string("INT64"), "recordSyncType": .string("BOOLEAN"), "value": want.done]), "\(endpoint) \(name)")
                    #expect(record["fields"]?["flags"] == .object(["type": .string("INT64_LIST"), "recordSyncType": .string("BOOLEAN_LIST"), "value": want.flags]), "\(endpoint) \(name)")
                }
            }
            let changes = try await alice.post("records/changes", #"{}"#)
            check(changes.json["records"]?.arrayValue ?? [], "records/changes")
            let zoneChanges = try await alice.post("changes/zone", #"{"zones":[{"zoneID":{"zoneName":"_defaultZone"}}]}"#)
            check(zoneChanges.json["zones"]?[0]?["records"]?.arrayValue ?? [], "changes/zone")
            let lookup = try await alice.post("records/lookup", #"{"records":[{"recordName":"todo"},{"recordName":"old"}]}"#)
            check(lookup.json["records"]?.arrayValue ?? [], "records/lookup")
            let query = try await alice.post("records/query", #"{"query":{"recordType":"Task"}}"#)
            check(query.json["records"]?.arrayValue ?? [], "records/query")

            // A client knowing only Apple's types filters and saves the field as INT64.
            let filtered = try await alice.post("records/query", #"{"query":{"recordType":"Task","filterBy":[{"comparator":"EQUALS","fieldName":"done","fieldValue":{"value":1,"type":"INT64"}}]}}"#)
            #expect(filtered.json["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } == ["todo"], "\(filtered.json)")
            let saved = try await alice.post("records/modify", #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"todo","recordType":"Task","fields":{"done":{"value":0,"type":"INT64"}}}}]}"#)
            #expect(saved.json["records"]?[0]?["fields"]?["done"] == .object(["type": .string("INT64"), "recordSyncType": .string("BOOLEAN"), "value": .int(0)]), "\(saved.json)")
            // And RecordSync's readers give the booleans back.
            let records = try await alice.allChanges().records
            #expect(records.first { $0.recordName == "old" }?.fields["done"] == .boolean(false))
            #expect(records.first { $0.recordName == "todo" }?.fields["done"] == .boolean(false))
            #expect(records.first { $0.recordName == "todo" }?.fields["flags"] == .list(.boolean, [.boolean(false), .boolean(true)]))
            // A value that is no boolean is still refused.
            let bad = try await alice.post("records/modify", #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"todo","recordType":"Task","fields":{"done":{"value":2,"type":"INT64"}}}}]}"#)
            #expect(bad.json["records"]?[0]?["serverErrorCode"]?.stringValue == "BAD_REQUEST", "\(bad.json)")
        }
    }
}
