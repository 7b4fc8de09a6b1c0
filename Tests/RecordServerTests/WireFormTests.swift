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

    /// A save's answer (written from the fields text the save stored) is the record a lookup
    /// reads back (written from the fields decoded), for fields of every kind, created,
    /// replaced and updated (merged with stored fields).
    @Test func aSavesAnswerIsTheRecordALookupReads() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let fields = #"""
                {"title":{"value":"quote \" tab \t é 😀 \u0001","type":"STRING"},"year":{"value":-9007199254740993,"type":"INT64"},
                "price":{"value":0.1,"type":"DOUBLE"},"whole":{"value":2.0,"type":"DOUBLE"},"when":{"value":1700000000000,"type":"TIMESTAMP"},
                "tags":{"value":["a","b\"c"],"type":"STRING_LIST"},"place":{"value":{"latitude":1.5,"longitude":-2.25},"type":"LOCATION"},
                "data":{"value":"AAEC","type":"BYTES"},"ref":{"value":{"recordName":"t","action":"NONE"},"type":"REFERENCE"}}
                """#
            let operations = [("create", "a", fields), ("forceReplace", "a", fields), ("create", "t", "{}"),
                              ("forceUpdate", "a", #"{"extra":{"value":7,"type":"INT64"}}"#)]
            for (operation, name, fields) in operations {
                let body = #"{"operations":[{"operationType":"\#(operation)","record":{"recordName":"\#(name)","recordType":"Thing","fields":\#(fields)}}]}"#
                let saved = try await alice.post("records/modify", body).json["records"]?[0]
                #expect(saved?["serverErrorCode"] == nil, "\(operation): \(String(describing: saved))")
                let looked = try await alice.post("records/lookup", #"{"records":[{"recordName":"\#(name)"}]}"#).json["records"]?[0]
                #expect(saved == looked, "\(operation) \(name)")
            }
        }
    }
}

/// What CloudKit JS sends beyond Apple's reference: `numbersAsStrings`, `NOT_LIST_CONTAINS_ANY`,
/// and `zones/changes`.
@Suite struct CloudKitJSRequestTests {
    @Test func numbersAsStringsWritesInt64AndDoubleAsStrings() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([Record(recordName: "p", recordType: "Point", fields: [
                "big": .int64(9_007_199_254_740_993), "ratio": .double(0.5), "when": .timestamp(1_700_000_000_000),
                "ids": .list(.int64, [.int64(1), .int64(-2)]), "name": .string("7"),
            ])])
            let want: [String: JSONValue] = [
                "big": .object(["type": .string("INT64"), "value": .string("9007199254740993")]),
                "ratio": .object(["type": .string("DOUBLE"), "value": .string("0.5")]),
                "when": .object(["type": .string("TIMESTAMP"), "value": .int(1_700_000_000_000)]),
                "ids": .object(["type": .string("INT64_LIST"), "value": .array([.string("1"), .string("-2")])]),
                "name": .object(["type": .string("STRING"), "value": .string("7")]),
            ]
            let answers: [(String, JSONValue?)] = [
                ("lookup", try await alice.post("records/lookup", #"{"records":[{"recordName":"p"}],"numbersAsStrings":true}"#).json["records"]?[0]),
                ("query", try await alice.post("records/query", #"{"query":{"recordType":"Point"},"numbersAsStrings":true}"#).json["records"]?[0]),
                ("changes", try await alice.post("records/changes", #"{"numbersAsStrings":true}"#).json["records"]?[0]),
                ("changes/zone", try await alice.post("changes/zone", #"{"zones":[{"zoneID":{"zoneName":"_defaultZone"}}],"numbersAsStrings":true}"#).json["zones"]?[0]?["records"]?[0]),
                ("modify", try await alice.post("records/modify", #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"p","recordType":"Point","fields":{"big":{"value":"9007199254740995","type":"INT64"}}}}],"numbersAsStrings":true}"#).json["records"]?[0]),
            ]
            for (endpoint, record) in answers {
                for (field, expected) in want where !(endpoint == "modify" && field == "big") {
                    #expect(record?["fields"]?[field] == expected, "\(endpoint) \(field): \(String(describing: record))")
                }
            }
            // The string sent for an INT64 was read as the number, exactly.
            let plain = try await alice.post("records/lookup", #"{"records":[{"recordName":"p"}]}"#).json["records"]?[0]
            #expect(plain?["fields"]?["big"]?["value"] == .int(9_007_199_254_740_995))
            #expect(plain?["fields"]?["ratio"]?["value"] == .double(0.5))
        }
    }

    @Test func notListContainsAnyMatchesListsHoldingNoneOfTheValues() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([Record(recordName: "a", recordType: "Tag"), Record(recordName: "b", recordType: "Tag")])
            try await alice.save([
                Record(recordName: "x", recordType: "Post", fields: ["tags": .list(.string, [.string("red"), .string("blue")]), "refs": .list(.reference, [.reference(Reference(recordName: "a"))])]),
                Record(recordName: "y", recordType: "Post", fields: ["tags": .list(.string, [.string("green")]), "refs": .list(.reference, [.reference(Reference(recordName: "b"))])]),
                Record(recordName: "z", recordType: "Post", fields: ["tags": .list(.string, [.string("blue")]), "refs": .list(.reference, [.reference(Reference(recordName: "a")), .reference(Reference(recordName: "b"))])]),
            ])
            func names(_ filter: String) async throws -> [String] {
                let reply = try await alice.post("records/query", #"{"query":{"recordType":"Post","filterBy":[\#(filter)],"sortBy":[{"systemFieldName":"recordName"}]}}"#)
                #expect(reply.status == 200, "\(reply.json)")
                return reply.json["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } ?? []
            }
            #expect(try await names(#"{"comparator":"NOT_LIST_CONTAINS_ANY","fieldName":"tags","fieldValue":{"value":["red","green"]}}"#) == ["z"])
            #expect(try await names(#"{"comparator":"LIST_CONTAINS_ANY","fieldName":"tags","fieldValue":{"value":["red","green"]}}"#) == ["x", "y"])
            #expect(try await names(#"{"comparator":"NOT_LIST_CONTAINS_ANY","fieldName":"tags","fieldValue":{"value":[]}}"#) == ["x", "y", "z"])
            #expect(try await names(#"{"comparator":"NOT_LIST_CONTAINS_ANY","fieldName":"refs","fieldValue":{"value":[{"recordName":"b"}]}}"#) == ["x"])
        }
    }

    @Test func zonesChangesListsChangedZonesWithTheirTokens() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("A", "B")
            let first = try await alice.post("zones/changes", "")
            #expect(first.status == 200, "\(first.json)")
            let zones = first.json["zones"]?.arrayValue ?? []
            #expect(zones.compactMap { $0["zoneID"]?["zoneName"]?.stringValue }.sorted() == ["A", "B", "_defaultZone"])
            #expect(zones.allSatisfy { $0["syncToken"]?.stringValue != nil && $0["atomic"] == .bool(true) && $0["zoneID"]?["ownerRecordName"]?.stringValue == alice.userRecordName })
            #expect(first.json["moreComing"] == .bool(false))
            guard let token = first.json["metaSyncToken"]?.stringValue else { Issue.record("\(first.json)"); return }
            #expect(first.json["syncToken"]?.stringValue == token)

            try await alice.save([Record(recordName: "r", recordType: "T")], zone: "B")
            _ = try await alice.post("zones/modify", ModifyZonesRequest(operations: [.init(.delete, ZoneID(zoneName: "A"))]))
            for key in ["metaSyncToken", "syncToken"] {
                let next = try await alice.post("zones/changes", #"{"\#(key)":"\#(token)"}"#)
                let changed = next.json["zones"]?.arrayValue ?? []
                #expect(changed.count == 2, "\(key): \(next.json)")
                #expect(changed.first { $0["zoneID"]?["zoneName"]?.stringValue == "A" }?["deleted"] == .bool(true))
                // B's token is its current one: a fetch with it finds nothing new.
                let b = changed.first { $0["zoneID"]?["zoneName"]?.stringValue == "B" }
                guard let bToken = b?["syncToken"]?.stringValue else { Issue.record("\(next.json)"); continue }
                let records = try await alice.post("records/changes", RecordChangesRequest(zoneID: ZoneID(zoneName: "B"), syncToken: bToken))
                #expect(records.json["records"]?.arrayValue?.isEmpty == true, "\(records.json)")
            }
            let clash = try await alice.post("zones/changes", #"{"metaSyncToken":"\#(token)","syncToken":"x"}"#)
            #expect(clash.code == "BAD_REQUEST")
            let garbage = try await alice.post("zones/changes", #"{"syncToken":"garbage"}"#)
            #expect(garbage.code == "BAD_REQUEST")
        }
    }
}
