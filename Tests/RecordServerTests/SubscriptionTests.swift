import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import RecordModel
import RecordServer
import TestSupport
import Testing

/// Subscriptions, `tokens/create` and the `webcourierURL` long poll, through real HTTP.
@Suite(.serialized) struct SubscriptionTests {
    /// The next notification at a webcourier URL (`nil`: a keep-alive, which is JSON `null`:
    /// CloudKit JS takes it as no notification, where an empty body is a parse error it logs).
    static func poll(_ url: String) async throws -> JSONValue? {
        let response = try await AssetTests.http.execute(HTTPClientRequest(url: AssetTests.reachable(url)), timeout: .seconds(60))
        #expect(response.status.code == 200)
        let body = try await response.body.collect(upTo: 1 << 20)
        let value = try JSONValue.parse(Data(buffer: body))
        return value == .null ? nil : value
    }

    /// A webcourier URL for a session, from `tokens/create` at `path` (relative to the container).
    static func webcourier(_ session: Session, path: String = "private/tokens/create") async throws -> String {
        AssetTests.port = session.client.port
        let response = try await session.client.executeRequest(
            uri: "/database/1/\(session.container)/development/\(path)", method: .post,
            headers: [.authorization: "Bearer \(session.token)", .contentType: "application/json"], body: ByteBuffer(string: #"{"apnsEnvironment":"development"}"#))
        let json = try JSONValue.parse(Data(buffer: response.body))
        #expect(response.status == .ok, "\(json)")
        #expect(json["apnsEnvironment"]?.stringValue == "development" && json["apnsToken"]?.stringValue != nil)
        return try #require(json["webcourierURL"]?.stringValue)
    }

    static func subscribe(_ session: Session, _ subscription: String) async throws -> Reply {
        try await session.post("subscriptions/modify", #"{"operations":[{"operationType":"create","subscription":\#(subscription)}]}"#)
    }

    static let modernArt = #"{"subscriptionID":"modern","subscriptionType":"query","query":{"recordType":"Artwork","filterBy":[{"fieldName":"year","comparator":"GREATER_THAN","fieldValue":{"value":1900}}]},"firesOn":["create","update","delete"],"notificationInfo":{"alertBody":"new art","shouldSendContentAvailable":true}}"#

    /// The `qry` of a notification: (rid, fo).
    static func query(_ notification: JSONValue?) -> (String, Int64)? {
        guard let qry = notification?["ck"]?["qry"], let rid = qry["rid"]?.stringValue, case .int(let fo)? = qry["fo"] else { return nil }
        return (rid, fo)
    }

    @Test func aQuerySubscriptionFiresForMatchingCreatesUpdatesAndDeletesOnly() async throws {
        try await withServer(configure: { $0.webcourierWait = .milliseconds(600) }) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let created = try await Self.subscribe(alice, Self.modernArt)
            #expect(created.json["subscriptions"]?[0]?["subscriptionID"]?.stringValue == "modern", "\(created.json)")
            #expect(try await Self.subscribe(bob, Self.modernArt).status == 200)
            // A second client of Alice's (a device with a token of its own), and Bob's.
            let device = Credentials.newToken()
            _ = try await server.store.addToken(forUserNamed: "alice", tokenHash: Credentials.hash(device))
            let secondClient = Session(client: alice.client, token: device, container: alice.container, userRecordName: alice.userRecordName)
            let aliceURL = try await Self.webcourier(secondClient)
            let bobURL = try await Self.webcourier(bob, path: "tokens/create")
            #expect(try await Self.poll(aliceURL) == nil)

            try await alice.save([Record(recordName: "a", recordType: "Artwork", fields: ["year": .int64(1950)]),
                                  Record(recordName: "b", recordType: "Artwork", fields: ["year": .int64(1800)])])
            let first = try await Self.poll(aliceURL)
            #expect(Self.query(first)! == ("a", 1), "\(String(describing: first))")
            #expect(first?["ck"]?["cid"]?.stringValue == alice.container && first?["ck"]?["nid"]?.stringValue != nil)
            #expect(first?["ck"]?["qry"]?["sid"]?.stringValue == "modern" && first?["ck"]?["qry"]?["zid"]?.stringValue == "_defaultZone")
            // dbs numbered as CloudKit JS reads it: 0 public, 1 private.
            #expect(first?["ck"]?["qry"]?["dbs"] == .int(1) && first?["ck"]?["qry"]?["zoid"]?.stringValue == alice.userRecordName)
            // aps.alert a dictionary: CloudKit JS reads alert.body.
            #expect(first?["aps"]?["alert"]?["body"]?.stringValue == "new art" && first?["aps"]?["content-available"] == .int(1))
            #expect(try await Self.poll(aliceURL) == nil)
            // b comes to match by an update; a is updated still matching; then both are deleted,
            // and a record that never matched is deleted too.
            _ = try await alice.modify([RecordOperation(.forceUpdate, RecordPayload(recordName: "b", recordType: "Artwork", fields: ["year": RawFieldValue(FieldValue.int64(1999))]))])
            #expect(Self.query(try await Self.poll(aliceURL))! == ("b", 2))
            _ = try await alice.modify([RecordOperation(.forceUpdate, RecordPayload(recordName: "a", recordType: "Artwork", fields: ["year": RawFieldValue(FieldValue.int64(1960))]))])
            #expect(Self.query(try await Self.poll(aliceURL))! == ("a", 2))
            try await alice.save([Record(recordName: "old", recordType: "Artwork", fields: ["year": .int64(1500)])])
            _ = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "old")), RecordOperation(.forceDelete, RecordPayload(recordName: "a"))])
            #expect(Self.query(try await Self.poll(aliceURL))! == ("a", 3))
            #expect(try await Self.poll(aliceURL) == nil)
            // Bob's subscription, on the same container, zone name and record type, heard nothing.
            #expect(try await Self.poll(bobURL) == nil)
            // Bob's own public... and private writes reach Bob only.
            try await bob.save([Record(recordName: "z", recordType: "Artwork", fields: ["year": .int64(2000)])])
            #expect(Self.query(try await Self.poll(bobURL))! == ("z", 1))
            #expect(try await Self.poll(aliceURL) == nil)
        }
    }

    /// A query subscription takes the whole query language (compound filters, string matching).
    @Test func aSubscriptionMatchesWithTheWholeQueryLanguage() async throws {
        try await withServer(configure: { $0.webcourierWait = .milliseconds(300) }) { server in
            let alice = try await server.user("alice")
            let url = try await Self.webcourier(alice)
            let predicate = try RecordPredicate(format: "title CONTAINS[cd] 'monet' OR NOT year < 2000")
            let filters = String(decoding: try JSONEncoder().encode(predicate.filters), as: UTF8.self)
            #expect(try await Self.subscribe(alice, #"{"subscriptionID":"monet","subscriptionType":"query","query":{"recordType":"Artwork","filterBy":\#(filters)},"firesOn":["create"]}"#).status == 200)
            var hit = Record.artwork("hit", by: "a", action: .none, year: 1900)
            hit["title"] = .string("Claude MONÉT")
            var late = Record.artwork("late", by: "a", action: .none, year: 2001)
            late["title"] = .string("other")
            var miss = Record.artwork("miss", by: "a", action: .none, year: 1900)
            miss["title"] = .string("Manet")
            try await alice.save([hit, late, miss])
            var received: [JSONValue] = []
            while let next = try await Self.poll(url) { received.append(next) }
            #expect(received.compactMap(Self.query).map(\.0).sorted() == ["hit", "late"], "\(received)")
        }
    }

    @Test func cascadesZoneSubscriptionsFiresOnceAndTheSubscriptionEndpoints() async throws {
        try await withServer(configure: { $0.webcourierWait = .milliseconds(600) }) { server in
            let alice = try await server.user("alice")
            try await alice.createZones("Gallery")
            let url = try await Self.webcourier(alice, path: "private/tokens/create")
            #expect(try await Self.subscribe(alice, #"{"subscriptionID":"works","subscriptionType":"query","query":{"recordType":"Artwork"},"zoneID":{"zoneName":"Gallery"},"firesOn":["delete"]}"#).status == 200)
            #expect(try await Self.subscribe(alice, #"{"subscriptionID":"gallery","subscriptionType":"zone","zoneID":{"zoneName":"Gallery"}}"#).status == 200)
            #expect(try await Self.subscribe(alice, #"{"subscriptionID":"once","subscriptionType":"query","query":{"recordType":"Artist"},"firesOnce":true,"zoneWide":true}"#).status == 200)

            try await alice.save([Record.artist("monet"), Record.artwork("lilies", by: "monet")], zone: "Gallery")
            var received: [JSONValue] = []
            while let next = try await Self.poll(url) { received.append(next) }
            // The Artist creation fired "once"; the zone fired once for the batch.
            #expect(received.compactMap { $0["ck"]?["qry"]?["sid"]?.stringValue } == ["once"], "\(received)")
            #expect(received.compactMap { $0["ck"]?["fet"]?["zid"]?.stringValue } == ["Gallery"], "\(received)")
            // Deleting the artist cascades to the artwork: a delete the subscription matches.
            _ = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "monet"))], zone: "Gallery")
            received = []
            while let next = try await Self.poll(url) { received.append(next) }
            #expect(received.compactMap(Self.query).map { "\($0.0)/\($0.1)" } == ["lilies/3"], "\(received)")
            #expect(received.compactMap { $0["ck"]?["fet"]?["sid"]?.stringValue } == ["gallery"])

            // "once" fired and is gone; list and lookup show the rest in CloudKit's shapes.
            let list = try await alice.post("subscriptions/list", "")
            #expect(list.json["subscriptions"]?.arrayValue?.compactMap { $0["subscriptionID"]?.stringValue } == ["gallery", "works"], "\(list.json)")
            let lookup = try await alice.post("subscriptions/lookup", #"{"subscriptions":[{"subscriptionID":"works"},{"subscriptionID":"once"}]}"#)
            #expect(lookup.json["subscriptions"]?[0]?["firesOn"] == .array([.string("delete")]))
            #expect(lookup.json["subscriptions"]?[1]?["serverErrorCode"]?.stringValue == "NOT_FOUND")
            #expect(lookup.json["subscriptions"]?[1]?["subscriptionID"]?.stringValue == "once")
            let deleted = try await alice.post("subscriptions/modify", #"{"operations":[{"operationType":"delete","subscription":{"subscriptionID":"works"}}]}"#)
            #expect(deleted.json["subscriptions"]?[0] == .object(["subscriptionID": .string("works"), "deleted": .bool(true)]), "\(deleted.json)")
            // Bad subscriptions are refused by item, naming what is wrong; an unknown comparator
            // is a request that cannot be read at all.
            let bad = try await alice.post("subscriptions/modify", #"""
                {"operations":[
                 {"operationType":"create","subscription":{"subscriptionID":"x","subscriptionType":"query","query":{"recordType":"Artwork","filterBy":[{"fieldName":"year","comparator":"NEAR","fieldValue":{"value":1}}]}}},
                 {"operationType":"create","subscription":{"subscriptionID":"y","subscriptionType":"record"}},
                 {"operationType":"upsert","subscription":{"subscriptionID":"z","subscriptionType":"zone"}},
                 {"operationType":"create","subscription":{"subscriptionID":"w","subscriptionType":"query","query":{"recordType":"Artwork"},"firesOn":["explode"]}}]}
                """#)
            let items = bad.json["subscriptions"]?.arrayValue ?? []
            #expect(items.count == 4 && items.allSatisfy { $0["serverErrorCode"]?.stringValue == "BAD_REQUEST" }, "\(bad.json)")
            #expect(items.map { $0["subscriptionID"]?.stringValue } == ["x", "y", "z", "w"])
            #expect(items[0]["reason"]?.stringValue?.contains("NEAR") == true && items[2]["reason"]?.stringValue?.contains("upsert") == true)
            #expect(try await alice.post("subscriptions/modify", #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"v","subscriptionType":"query","query":{"recordType":"A","filterBy":[{"fieldName":"y","comparator":"SOUNDS_LIKE","fieldValue":{"value":1}}]}}}]}"#).code == "BAD_REQUEST")
            #expect(try await alice.post("tokens/create", #"{"apnsEnvironment":"staging"}"#).code == "BAD_REQUEST")
            // tokens/create answers on every path clients use; register needs both keys.
            _ = try await Self.webcourier(alice, path: "tokens/create")
            let device = try await server.send(.post, "/device/1/\(alice.container)/development/tokens/create", headers: [.authorization: "Bearer \(alice.token)"], body: "{}")
            #expect(device.json["webcourierURL"]?.stringValue != nil, "\(device.json)")
            let register = try await alice.post("tokens/register", #"{"apnsEnvironment":"production"}"#)
            #expect(register.code == "BAD_REQUEST")
            let forged = try await AssetTests.http.execute(HTTPClientRequest(url: AssetTests.reachable(url.replacingOccurrences(of: "/webcourier/1/", with: "/webcourier/1/x"))), timeout: .seconds(10))
            #expect(forged.status.code == 401)
        }
    }

    @Test(.enabled(if: TestPostgres.url != nil)) func aNotificationWrittenThroughOneNodeArrivesThroughAnother() async throws {
        try await withTemporaryDirectory { directory in
            let deployment = try await Deployment(directory: directory, nodes: 2)
            defer { deployment.kill() }
            let token = try await deployment.addUser("alice")
            func post(_ node: URL, _ endpoint: String, _ body: String) async throws -> JSONValue {
                try await AssetTests.post(body, to: node, "iCloud.test.Push", endpoint, token: token)
            }
            let (first, second) = (deployment.nodes[0].url, deployment.nodes[1].url)
            _ = try await post(first, "subscriptions/modify", #"{"operations":[{"operationType":"create","subscription":\#(Self.modernArt)}]}"#)
            let url = try #require(try await post(second, "tokens/create", "{}")["webcourierURL"]?.stringValue)
            #expect(url.hasPrefix(second.absoluteString))
            async let polled = Self.poll(url)
            try await Task.sleep(for: .milliseconds(300))
            _ = try await post(first, "records/modify", #"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Artwork","fields":{"year":{"value":1990}}}}]}"#)
            let notification = try await polled
            #expect(Self.query(notification)! == ("n", 1), "\(String(describing: notification))")
        }
    }

    /// A subscription searching words marks its type searchable, so the records written after
    /// it (and before any word query) are matched by their words.
    @Test func aWordSearchSubscriptionMatchesTheRecordsWrittenAfterIt() async throws {
        try await withServer(configure: { $0.webcourierWait = .milliseconds(600) }) { server in
            let alice = try await server.user("alice")
            try await alice.save([Record(recordName: "old", recordType: "Note", fields: ["text": .string("water lilies")])])
            let subscription = #"{"subscriptionID":"lilies","subscriptionType":"query","query":{"recordType":"Note","filterBy":[{"comparator":"CONTAINS_ALL_TOKENS","fieldValue":{"value":"LILIES"}}]},"firesOn":["create","update"]}"#
            #expect(try await Self.subscribe(alice, subscription).status == 200)
            let url = try await Self.webcourier(alice)
            try await alice.save([Record(recordName: "roses", recordType: "Note", fields: ["text": .string("roses")]),
                                  Record(recordName: "new", recordType: "Note", fields: ["text": .string("more Lilies")])])
            let notification = try await Self.poll(url)
            #expect(Self.query(notification)?.0 == "new", "\(String(describing: notification))")
            #expect(try await Self.poll(url) == nil)
            // The records stored before were indexed when the subscription was made.
            let found = try await alice.post("records/query", #"{"query": {"recordType": "Note", "filterBy": [{"comparator": "CONTAINS_ALL_TOKENS", "fieldValue": {"value": "lilies"}}]}}"#)
            #expect(try found.decode(QueryRecordsResponse.self).records.map(\.recordName) == ["new", "old"])
        }
    }

    @Test func aSubscriptionWhoseQueryNoLongerCompilesNeverFailsAWrite() async throws {
        try await withServer(configure: { $0.webcourierWait = .milliseconds(300) }) { server in
            let alice = try await server.user("alice")
            // Saved before the schema knows `year`: the filter compares it as a STRING.
            #expect(try await Self.subscribe(alice, #"{"subscriptionID":"s","subscriptionType":"query","query":{"recordType":"Poem","filterBy":[{"fieldName":"year","comparator":"EQUALS","fieldValue":{"value":"x"}}]}}"#).status == 200)
            let url = try await Self.webcourier(alice)
            let saved = try await alice.modify([RecordOperation(.create, RecordPayload(Record(recordName: "p", recordType: "Poem", fields: ["year": .int64(1900)])))])
            #expect(saved.first?.error == nil, "\(String(describing: saved.first?.error))")
            #expect(try await Self.poll(url) == nil)
        }
    }
}
