import Foundation
import RecordModel
import RecordRules
import RecordStorage
@testable import RecordServer
import Testing

/// Sharing (docs/protocol.md, "Sharing") through HTTP on both engines: Alice owns the zones;
/// Bob is invited by user record name (`READ_WRITE`), Carol by an address she verified
/// (`READ_ONLY`); Dave comes through a public link; Eve is no one's participant.
@Suite(.serialized) struct SharingTests {
    static let container = "iCloud.test.Gallery"

    enum Member: String, CaseIterable, Sendable { case alice, bob, carol, dave, eve }

    struct World: Sendable {
        let server: TestServer
        let sessions: [Member: Session]

        subscript(_ member: Member) -> Session { sessions[member]! }

        /// Alice's zone ID, as participants name it.
        func zone(_ name: String) -> String {
            #"{"zoneName":"\#(name)","ownerRecordName":"\#(self[.alice].userRecordName)"}"#
        }

        /// `POST` to `endpoint` of the shared database, in Alice's zone `zone`.
        func shared(_ member: Member, _ endpoint: String, _ body: String) async throws -> Reply {
            try await self[member].post(endpoint, body, database: "shared")
        }

        func resolve(_ member: Member, _ guid: String, accept: Bool = false) async throws -> Reply {
            try await self[member].post(accept ? "records/accept" : "records/resolve", #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#, database: "public")
        }
    }

    static func withWorld(quota: Quota = Quota(), _ body: @escaping @Sendable (World) async throws -> Void) async throws {
        try await withServer(configure: { $0.webcourierWait = .milliseconds(600); $0.limits.quota = quota }) { server in
            var sessions: [Member: Session] = [:]
            for member in Member.allCases { sessions[member] = try await server.user(member.rawValue) }
            // Carol's and Alice's addresses are verified (an account is made only for a verified address).
            for name in ["carol", "alice"] {
                let user = try #require(try await server.store.user(named: name))
                try await server.store.engine.write { transaction in
                    .commit(try transaction.insertAccount(StoredAccount(email: "\(name)@example.com", passwordHash: "-", createdAt: 0, passwordChangedAt: 0), userKey: user.id))
                }
            }
            try await sessions[.alice]!.createZones("Trip", "Open", "Other")
            let world = World(server: server, sessions: sessions)
            try await body(world)
        }
    }

    static func save(_ name: String, _ type: String = "Item", note: String = "x", extra: String = "") -> String {
        #"{"operationType":"forceReplace","record":{"recordName":"\#(name)","recordType":"\#(type)","fields":{"note":{"value":"\#(note)"}}\#(extra)}}"#
    }

    static func modify(_ zone: String, _ operations: String...) -> String {
        #"{"zoneID":\#(zone),"operations":[\#(operations.joined(separator: ","))]}"#
    }

    /// The record result at `index`.
    static func result(_ reply: Reply, _ index: Int = 0, sourceLocation: SourceLocation = #_sourceLocation) -> JSONValue {
        #expect(reply.status == 200, "\(reply.status) \(reply.json)", sourceLocation: sourceLocation)
        return reply.json["records"]?[index] ?? .null
    }

    static func code(_ reply: Reply, _ index: Int = 0, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        result(reply, index, sourceLocation: sourceLocation)["serverErrorCode"]?.stringValue
    }

    /// The zone share of `Trip`, inviting Bob (read-write, by user record name) and Carol
    /// (read-only, by address); returns its short GUID.
    static func shareTrip(_ world: World) async throws -> String {
        let participants = #"[{"userIdentity":{"lookupInfo":{"userRecordName":"\#(world[.bob].userRecordName)"}},"permission":"READ_WRITE"},{"userIdentity":{"lookupInfo":{"emailAddress":"Carol@Example.com"}},"permission":"READ_ONLY"}]"#
        let reply = try await world[.alice].post("records/modify", modify(#"{"zoneName":"Trip"}"#, save("r1"), save("r2"),
            #"{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudKit.share","fields":{"cloudkit.title":{"value":"Our trip"}},"publicPermission":"NONE","participants":\#(participants)}}"#))
        let share = result(reply, 2)
        #expect(share["serverErrorCode"] == nil, "\(share)")
        #expect(share["recordType"]?.stringValue == "cloudkit.share")
        #expect(share["owner"]?["type"]?.stringValue == "OWNER" && share["currentUserParticipant"]?["type"]?.stringValue == "OWNER", "\(share)")
        #expect(share["publicPermission"]?.stringValue == "NONE")
        let invited = share["participants"]?.arrayValue ?? []
        #expect(invited.count == 2 && invited.allSatisfy { $0["acceptanceStatus"]?.stringValue == "INVITED" && $0["type"]?.stringValue == "USER" }, "\(invited)")
        let guid = try #require(share["shortGUID"]?.stringValue)
        #expect(guid.count == 26)
        return guid
    }

    @Test func aZoneShareIsMadeResolvedAcceptedReadAndWrittenByPermission() async throws {
        try await Self.withWorld { world in
            let guid = try await Self.shareTrip(world)
            let trip = world.zone("Trip")
            // Before accepting, the zone is not in Bob's shared database.
            #expect(try await world.shared(.bob, "zones/list", "{}").json["zones"] == .array([]))
            let early = try await world.shared(.bob, "records/lookup", #"{"zoneID":\#(trip),"records":[{"recordName":"r1"}]}"#)
            #expect(early.code == "ZONE_NOT_FOUND", "\(early.json)")

            // Eve, uninvited, gets what a missing share gets.
            let eve = try await world.resolve(.eve, guid)
            let missing = try await world.resolve(.eve, "nosuchguidnosuchguidnosuch")
            #expect(eve.json["results"]?[0]?["serverErrorCode"]?.stringValue == "NOT_FOUND", "\(eve.json)")
            #expect(eve.json["results"]?[0]?["reason"]?.stringValue?.replacingOccurrences(of: guid, with: "G")
                    == missing.json["results"]?[0]?["reason"]?.stringValue?.replacingOccurrences(of: "nosuchguidnosuchguidnosuch", with: "G"), "\(eve.json) \(missing.json)")
            #expect(try await world.resolve(.eve, guid, accept: true).json["results"]?[0]?["serverErrorCode"]?.stringValue == "NOT_FOUND")

            // Bob resolves, then accepts.
            let resolved = try await world.resolve(.bob, guid).json["results"]?[0] ?? .null
            #expect(resolved["participantStatus"]?.stringValue == "INVITED" && resolved["participantPermission"]?.stringValue == "READ_WRITE"
                    && resolved["participantType"]?.stringValue == "USER" && resolved["databaseScope"]?.stringValue == "SHARED", "\(resolved)")
            #expect(resolved["zoneID"]?["ownerRecordName"]?.stringValue == world[.alice].userRecordName && resolved["zoneID"]?["zoneName"]?.stringValue == "Trip")
            #expect(resolved["share"]?["shortGUID"]?.stringValue == guid && resolved["ownerIdentity"]?["userRecordName"]?.stringValue == world[.alice].userRecordName)
            let accepted = try await world.resolve(.bob, guid, accept: true).json["results"]?[0] ?? .null
            #expect(accepted["participantStatus"]?.stringValue == "ACCEPTED", "\(accepted)")
            #expect(accepted["share"]?["currentUserParticipant"]?["userIdentity"]?["userRecordName"]?.stringValue == world[.bob].userRecordName, "\(accepted)")
            // Carol is matched by the address she verified (given in another case), and sees herself
            // in the share before she accepts.
            let invited = try await world.resolve(.carol, guid).json["results"]?[0] ?? .null
            #expect(invited["share"]?["currentUserParticipant"]?["acceptanceStatus"]?.stringValue == "INVITED"
                    && invited["share"]?["currentUserParticipant"]?["userIdentity"]?["lookupInfo"]?["emailAddress"]?.stringValue == "carol@example.com", "\(invited)")
            let carol = try await world.resolve(.carol, guid, accept: true).json["results"]?[0] ?? .null
            #expect(carol["participantStatus"]?.stringValue == "ACCEPTED" && carol["participantPermission"]?.stringValue == "READ_ONLY", "\(carol)")
            // Participants see each other's record names, never each other's addresses.
            let seen = (carol["share"]?["participants"]?.arrayValue ?? []).first { $0["userIdentity"]?["userRecordName"]?.stringValue == world[.bob].userRecordName }
            #expect(seen?["userIdentity"]?["lookupInfo"]?["emailAddress"] == nil && seen?["permission"]?.stringValue == "READ_WRITE", "\(carol)")
            let bobsView = try await world.resolve(.bob, guid).json["results"]?[0]?["share"]?["participants"]?.arrayValue ?? []
            #expect(!bobsView.description.contains("carol@example.com"), "\(bobsView)")
            // The owner resolves its own share as the owner.
            let own = try await world.resolve(.alice, guid).json["results"]?[0] ?? .null
            #expect(own["participantType"]?.stringValue == "OWNER" && own["databaseScope"]?.stringValue == "PRIVATE", "\(own)")

            // Bob's shared database lists Trip under Alice's name.
            let zones = try await world.shared(.bob, "zones/list", "{}").json["zones"]?.arrayValue ?? []
            #expect(zones.count == 1 && zones.first?["zoneID"]?["zoneName"]?.stringValue == "Trip"
                    && zones.first?["zoneID"]?["ownerRecordName"]?.stringValue == world[.alice].userRecordName, "\(zones)")
            let feed = try await world.shared(.bob, "changes/database", "{}").json
            #expect(feed["zones"]?[0]?["zoneID"]?["zoneName"]?.stringValue == "Trip", "\(feed)")

            // Both read; the records and the share come with the zone.
            for member in [Member.bob, .carol] {
                let looked = try await world.shared(member, "records/lookup", #"{"zoneID":\#(trip),"records":[{"recordName":"r1"},{"recordName":"cloudkit.zoneshare"}]}"#)
                #expect(Self.result(looked)["fields"]?["note"]?["value"]?.stringValue == "x", "\(looked.json)")
                #expect(Self.result(looked, 1)["shortGUID"]?.stringValue == guid, "\(looked.json)")
                let query = try await world.shared(member, "records/query", #"{"zoneID":\#(trip),"query":{"recordType":"Item"}}"#)
                #expect(query.json["records"]?.arrayValue?.count == 2, "\(query.json)")
                let changes = try await world.shared(member, "records/changes", #"{"zoneID":\#(trip)}"#)
                let names = Set((changes.json["records"]?.arrayValue ?? []).compactMap { $0["recordName"]?.stringValue })
                #expect(names == ["r1", "r2", "cloudkit.zoneshare"], "\(changes.json)")
                let zoneChanges = try await world.shared(member, "changes/zone", #"{"zones":[{"zoneID":\#(trip)}]}"#)
                #expect(zoneChanges.json["zones"]?[0]?["records"]?.arrayValue?.count == 3, "\(zoneChanges.json)")
            }

            // Bob (READ_WRITE) writes; his records are his, in Alice's zone.
            let written = try await world.shared(.bob, "records/modify", Self.modify(trip, Self.save("r3", note: "bob's"), Self.save("r1", note: "edited")))
            #expect(Self.code(written) == nil && Self.code(written, 1) == nil, "\(written.json)")
            #expect(Self.result(written)["created"]?["userRecordName"]?.stringValue == world[.bob].userRecordName)
            #expect(Self.result(written)["zoneID"]?["ownerRecordName"]?.stringValue == world[.alice].userRecordName)
            let alices = try await world[.alice].post("records/lookup", #"{"zoneID":{"zoneName":"Trip"},"records":[{"recordName":"r3"}]}"#)
            #expect(Self.result(alices)["fields"]?["note"]?["value"]?.stringValue == "bob's", "\(alices.json)")
            // Carol (READ_ONLY) may not create, change or delete.
            for body in [Self.modify(trip, Self.save("c1")), Self.modify(trip, Self.save("r1", note: "carol's")),
                         Self.modify(trip, #"{"operationType":"forceDelete","record":{"recordName":"r2"}}"#)] {
                let refused = try await world.shared(.carol, "records/modify", body)
                #expect(Self.code(refused) == "ACCESS_DENIED", "\(refused.json)")
                #expect((Self.result(refused)["reason"]?.stringValue ?? "").contains("read-only"), "\(refused.json)")
            }
            // Only the owner changes the share; Bob may not, nor create another.
            let edit = try await world.shared(.bob, "records/modify", Self.modify(trip, #"{"operationType":"forceUpdate","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"publicPermission":"READ_WRITE"}}"#))
            #expect(Self.code(edit) == "ACCESS_DENIED" && (Self.result(edit)["reason"]?.stringValue ?? "").contains("only the owner"), "\(edit.json)")
            // Nothing else of Alice's is in reach: another zone, her default zone, her own name.
            let other = try await world.shared(.bob, "records/lookup", #"{"zoneID":\#(world.zone("Other")),"records":[{"recordName":"r1"}]}"#)
            #expect(other.code == "ZONE_NOT_FOUND", "\(other.json)")
            let unnamed = try await world.shared(.bob, "records/lookup", #"{"zoneID":{"zoneName":"Trip"},"records":[{"recordName":"r1"}]}"#)
            #expect(unnamed.code == "BAD_REQUEST", "\(unnamed.json)")
            #expect(try await world.shared(.bob, "zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Mine"}}}]}"#).code == "BAD_REQUEST")
            // Naming a user who has no database here makes none for them.
            let eves = #"{"zoneName":"Trip","ownerRecordName":"\#(world[.eve].userRecordName)"}"#
            #expect(try await world.shared(.bob, "records/lookup", #"{"zoneID":\#(eves),"records":[{"recordName":"r1"}]}"#).code == "ZONE_NOT_FOUND")
            #expect(try await world.shared(.bob, "records/modify", Self.modify(eves, Self.save("x"))).code == "ZONE_NOT_FOUND")
            let eveUser = try #require(try await world.server.store.user(named: "eve"))
            #expect(try await world.server.store.engine.read {
                try $0.database(at: DatabaseAddress(container: Self.container, environment: "development", kind: .private, ownerKey: eveUser.id))
            } == nil)
        }
    }

    @Test func databaseSubscriptionsFireForEveryZoneOfThePrivateAndSharedDatabases() async throws {
        try await Self.withWorld { world in
            let guid = try await Self.shareTrip(world)
            _ = try await world.resolve(.bob, guid, accept: true)
            let everything = #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"everything","subscriptionType":"database"}}]}"#
            let alices = try await world[.alice].post("subscriptions/modify", everything)
            #expect(alices.json["subscriptions"]?[0]?["subscriptionType"]?.stringValue == "database", "\(alices.json)")
            let bobs = try await world.shared(.bob, "subscriptions/modify", everything)
            #expect(bobs.json["subscriptions"]?[0]?["subscriptionType"]?.stringValue == "database", "\(bobs.json)")
            #expect(try await world.shared(.bob, "subscriptions/list", "{}").json["subscriptions"]?.arrayValue?.count == 1)
            #expect(try await world.shared(.carol, "subscriptions/modify", everything).status == 200)
            // The shared database takes database subscriptions only; the public one takes none.
            let query = try await world.shared(.bob, "subscriptions/modify", #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"q","subscriptionType":"query","query":{"recordType":"Item"}}}]}"#)
            #expect(query.json["subscriptions"]?[0]?["serverErrorCode"]?.stringValue == "BAD_REQUEST", "\(query.json)")
            let open = try await world[.alice].post("subscriptions/modify", everything, database: "public")
            #expect(open.json["subscriptions"]?[0]?["serverErrorCode"]?.stringValue == "BAD_REQUEST", "\(open.json)")
            let aliceURL = try await SubscriptionTests.webcourier(world[.alice])
            let bobURL = try await SubscriptionTests.webcourier(world[.bob])
            let carolURL = try await SubscriptionTests.webcourier(world[.carol])
            // A write in a zone Alice shares with no one fires her subscription alone.
            #expect(Self.code(try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Other"}"#, Self.save("o1")))) == nil)
            let own = try await SubscriptionTests.poll(aliceURL)
            #expect(own?["ck"]?["fet"]?["sid"]?.stringValue == "everything" && own?["ck"]?["fet"]?["dbs"] == .int(1) && own?["ck"]?["fet"]?["zid"] == nil, "\(own ?? .null)")
            // Bob's write in the shared zone fires Alice's (her private database) and his (his shared one).
            #expect(Self.code(try await world.shared(.bob, "records/modify", Self.modify(world.zone("Trip"), Self.save("b1")))) == nil)
            #expect(try await SubscriptionTests.poll(aliceURL)?["ck"]?["fet"]?["dbs"] == .int(1))
            let his = try await SubscriptionTests.poll(bobURL)
            #expect(his?["ck"]?["fet"]?["sid"]?.stringValue == "everything" && his?["ck"]?["fet"]?["dbs"] == .int(2), "\(his ?? .null)")
            #expect(try await SubscriptionTests.poll(bobURL) == nil)
            // Carol has not accepted: nothing yet. Accepting fires hers, and Alice's and Bob's.
            #expect(try await SubscriptionTests.poll(carolURL) == nil)
            _ = try await world.resolve(.carol, guid, accept: true)
            #expect(try await SubscriptionTests.poll(carolURL)?["ck"]?["fet"]?["dbs"] == .int(2))
            #expect(try await SubscriptionTests.poll(bobURL)?["ck"]?["fet"]?["dbs"] == .int(2))
            #expect(try await SubscriptionTests.poll(aliceURL)?["ck"]?["fet"]?["dbs"] == .int(1))
        }
    }

    /// Opens `member`'s push stream on its shared database (docs/protocol.md, "Push").
    static func pushStream(_ world: World, _ member: Member) throws -> Int32 {
        let session = world[member]
        let stream = try LimitsTests.connect(port: world.server.client.port!)
        LimitsTests.send(stream, "GET /database/1/\(session.container)/development/shared/notifications HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(session.token)\r\n\r\n")
        #expect(LimitsTests.receive(stream, until: ": connected", within: .seconds(5)).contains(": connected"))
        return stream
    }

    /// Two record shares of one zone: Bob's by invitation, Dave's through a public link. A
    /// write reaches (database subscription, push stream) only the participants of the share
    /// whose records it changed; deleting the zone reaches both.
    @Test func aRecordSharesParticipantsHearOnlyOfTheirShare() async throws {
        try await Self.withWorld { world in
            let other = world.zone("Other")
            func child(_ name: String, of parent: String) -> String {
                Self.save(name, extra: #","parent":{"recordName":"\#(parent)"}"#)
            }
            func alice(_ operations: String...) async throws {
                let reply = try await world[.alice].post("records/modify", #"{"zoneID":{"zoneName":"Other"},"operations":[\#(operations.joined(separator: ","))]}"#)
                #expect(reply.status == 200 && !"\(reply.json)".contains("serverErrorCode"), "\(reply.json)")
            }
            try await alice(Self.save("list"), child("a", of: "list"), Self.save("doc"), child("page", of: "doc"), Self.save("secret"))
            let bob = #"[{"userIdentity":{"lookupInfo":{"userRecordName":"\#(world[.bob].userRecordName)"}},"permission":"READ_WRITE"}]"#
            let shares = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Other"}"#,
                #"{"operationType":"create","record":{"recordName":"listshare","recordType":"cloudkit.share","fields":{},"forRecord":{"recordName":"list"},"participants":\#(bob)}}"#,
                #"{"operationType":"create","record":{"recordName":"docshare","recordType":"cloudkit.share","fields":{},"forRecord":{"recordName":"doc"},"publicPermission":"READ_WRITE"}}"#))
            let listGUID = try #require(Self.result(shares)["shortGUID"]?.stringValue, "\(shares.json)")
            let docGUID = try #require(Self.result(shares, 1)["shortGUID"]?.stringValue, "\(shares.json)")
            #expect(try await world.resolve(.bob, listGUID, accept: true).json["results"]?[0]?["participantStatus"]?.stringValue == "ACCEPTED")
            // Dave, through the link, is a public user of the doc share alone.
            let daves = try await world.resolve(.dave, docGUID, accept: true).json["results"]?[0] ?? .null
            #expect(daves["participantType"]?.stringValue == "PUBLIC_USER" && daves["participantPermission"]?.stringValue == "READ_WRITE"
                    && daves["rootRecordName"]?.stringValue == "doc", "\(daves)")
            #expect(try await world.resolve(.dave, listGUID).json["results"]?[0]?["serverErrorCode"]?.stringValue == "NOT_FOUND")
            let davesView = try await world.shared(.dave, "records/lookup", #"{"zoneID":\#(other),"records":[{"recordName":"page"},{"recordName":"a"},{"recordName":"secret"}]}"#)
            #expect(Self.code(davesView) == nil && Self.code(davesView, 1) == "NOT_FOUND" && Self.code(davesView, 2) == "NOT_FOUND", "\(davesView.json)")
            #expect(Self.code(try await world.shared(.dave, "records/modify", Self.modify(other, child("note", of: "page")))) == nil)
            #expect(Self.code(try await world.shared(.dave, "records/modify", Self.modify(other, child("sneak", of: "a")))) == "ACCESS_DENIED")

            let everything = #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"everything","subscriptionType":"database"}}]}"#
            for member in [Member.bob, .dave] { #expect(try await world.shared(member, "subscriptions/modify", everything).status == 200) }
            let bobURL = try await SubscriptionTests.webcourier(world[.bob])
            let daveURL = try await SubscriptionTests.webcourier(world[.dave])
            let bobStream = try Self.pushStream(world, .bob)
            defer { close(bobStream) }
            let daveStream = try Self.pushStream(world, .dave)
            defer { close(daveStream) }
            /// Whether `member` heard of a change of Alice's zone Other: a database notification
            /// (shared, `dbs` 2) and a push event naming the zone with its owner.
            func heard(_ member: Member, _ url: String, _ stream: Int32) async throws -> Bool {
                let notification = try await SubscriptionTests.poll(url)
                let event = LimitsTests.receive(stream, until: "}]}", within: notification == nil ? .milliseconds(800) : .seconds(5))
                let pushed = event.contains("event: zones") && event.contains(#""zoneName":"Other""#) && event.contains(world[.alice].userRecordName)
                #expect((notification != nil) == pushed, "\(member): \(notification ?? .null) / \(event)")
                if let notification { #expect(notification["ck"]?["fet"]?["dbs"] == .int(2), "\(notification)") }
                #expect(try await SubscriptionTests.poll(url) == nil, "\(member) heard twice")
                return notification != nil && pushed
            }
            // A record outside both shares: neither hears.
            try await alice(Self.save("secret", note: "y"))
            #expect(try await heard(.bob, bobURL, bobStream) == false)
            #expect(try await heard(.dave, daveURL, daveStream) == false)
            // Bob's share: Bob alone; Dave's: Dave alone (his own write included).
            try await alice(Self.save("a", note: "y", extra: #","parent":{"recordName":"list"}"#))
            #expect(try await heard(.bob, bobURL, bobStream))
            #expect(try await heard(.dave, daveURL, daveStream) == false)
            #expect(Self.code(try await world.shared(.dave, "records/modify", Self.modify(other, Self.save("note", note: "y", extra: #","parent":{"recordName":"page"}"#)))) == nil)
            #expect(try await heard(.dave, daveURL, daveStream))
            #expect(try await heard(.bob, bobURL, bobStream) == false)
            // A record moving from one share to the other: both hear (a departure and an arrival).
            try await alice(child("page", of: "a"))
            #expect(try await heard(.bob, bobURL, bobStream))
            #expect(try await heard(.dave, daveURL, daveStream))
            // A change of Dave's share record (Bob's share untouched): Dave alone.
            try await alice(#"{"operationType":"forceUpdate","record":{"recordName":"docshare","recordType":"cloudkit.share","fields":{"cloudkit.title":{"value":"Docs"}}}}"#)
            #expect(try await heard(.dave, daveURL, daveStream))
            #expect(try await heard(.bob, bobURL, bobStream) == false)
            // Deleting the zone takes it from both shared databases: both hear.
            let deleted = try await world[.alice].post("zones/modify", #"{"operations":[{"operationType":"delete","zone":{"zoneID":{"zoneName":"Other"}}}]}"#)
            #expect(deleted.status == 200, "\(deleted.json)")
            #expect(try await heard(.bob, bobURL, bobStream))
            #expect(try await heard(.dave, daveURL, daveStream))
            #expect(try await world.shared(.dave, "zones/list", "{}").json["zones"] == .array([]))
        }
    }

    @Test func aRemovedParticipantsDownloadURLsStopWorking() async throws {
        try await Self.withWorld { world in
            let guid = try await Self.shareTrip(world)
            _ = try await world.resolve(.bob, guid, accept: true)
            let bytes = AssetTests.bytes(10_000)
            let url = try await AssetTests.uploadURL(world[.alice], recordType: "Item", zone: "Trip")
            let (status, receipt) = try await AssetTests.post(bytes, to: url)
            #expect(status == 200, "\(receipt)")
            let value = try (receipt["singleFile"] ?? .null).serializedString()
            #expect(Self.code(try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#, #"{"operationType":"forceReplace","record":{"recordName":"pic","recordType":"Item","fields":{"image":{"value":\#(value)}}}}"#))) == nil)
            let looked = try await world.shared(.bob, "records/lookup", #"{"zoneID":\#(world.zone("Trip")),"records":[{"recordName":"pic"}]}"#)
            let link = try #require(Self.result(looked)["fields"]?["image"]?["value"]?["downloadURL"]?.stringValue, "\(looked.json)").replacingOccurrences(of: "${f}", with: "pic.bin")
            #expect(try await AssetTests.get(link).data == bytes)
            // Alice removes Bob: the URL he was given stops at once.
            #expect(Self.code(try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#,
                #"{"operationType":"forceUpdate","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"participants":[]}}"#))) == nil)
            #expect(try await AssetTests.get(link).status == 401)
            // Alice's own URL keeps working.
            let hers = try await world[.alice].post("records/lookup", #"{"zoneID":{"zoneName":"Trip"},"records":[{"recordName":"pic"}]}"#)
            let own = try #require(Self.result(hers)["fields"]?["image"]?["value"]?["downloadURL"]?.stringValue).replacingOccurrences(of: "${f}", with: "pic.bin")
            #expect(try await AssetTests.get(own).data == bytes)
        }
    }

    /// A download URL answered to a record share's participant works while the record is in the
    /// share's hierarchy, and stops when it leaves it (the zone still shared).
    @Test func aRecordLeavingARecordShareTakesItsDownloadURLsAlong() async throws {
        try await Self.withWorld { world in
            let bytes = AssetTests.bytes(10_000)
            let url = try await AssetTests.uploadURL(world[.alice], recordType: "Item", zone: "Other")
            let (status, receipt) = try await AssetTests.post(bytes, to: url)
            #expect(status == 200, "\(receipt)")
            let value = try (receipt["singleFile"] ?? .null).serializedString()
            let bob = #"[{"userIdentity":{"lookupInfo":{"userRecordName":"\#(world[.bob].userRecordName)"}},"permission":"READ_ONLY"}]"#
            let made = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Other"}"#, Self.save("album"),
                #"{"operationType":"forceReplace","record":{"recordName":"pic","recordType":"Item","fields":{"image":{"value":\#(value)}},"parent":{"recordName":"album"}}}"#,
                #"{"operationType":"create","record":{"recordName":"albumshare","recordType":"cloudkit.share","fields":{},"forRecord":{"recordName":"album"},"participants":\#(bob)}}"#))
            let guid = try #require(Self.result(made, 2)["shortGUID"]?.stringValue, "\(made.json)")
            #expect(try await world.resolve(.bob, guid, accept: true).json["results"]?[0]?["participantStatus"]?.stringValue == "ACCEPTED")
            let looked = try await world.shared(.bob, "records/lookup", #"{"zoneID":\#(world.zone("Other")),"records":[{"recordName":"pic"}]}"#)
            let link = try #require(Self.result(looked)["fields"]?["image"]?["value"]?["downloadURL"]?.stringValue, "\(looked.json)").replacingOccurrences(of: "${f}", with: "pic.bin")
            #expect(try await AssetTests.get(link).data == bytes)
            // Alice takes the picture out of the album: Bob's URL stops; hers works.
            #expect(Self.code(try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Other"}"#,
                #"{"operationType":"forceUpdate","record":{"recordName":"pic","recordType":"Item","fields":{},"parent":null}}"#))) == nil)
            #expect(try await AssetTests.get(link).status == 401)
            let hers = try await world[.alice].post("records/lookup", #"{"zoneID":{"zoneName":"Other"},"records":[{"recordName":"pic"}]}"#)
            let own = try #require(Self.result(hers)["fields"]?["image"]?["value"]?["downloadURL"]?.stringValue).replacingOccurrences(of: "${f}", with: "pic.bin")
            #expect(try await AssetTests.get(own).data == bytes)
            // Back in the album, Bob's URL works again (it never outlives its expiry).
            #expect(Self.code(try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Other"}"#,
                #"{"operationType":"forceUpdate","record":{"recordName":"pic","recordType":"Item","fields":{},"parent":{"recordName":"album"}}}"#))) == nil)
            #expect(try await AssetTests.get(link).data == bytes)
        }
    }

    /// A participant's zone tokens are the zone's: followed across a removal and a new
    /// invitation, they give every change once (none skipped, none repeated).
    @Test func aParticipantsFeedNeitherSkipsNorRepeatsAcrossARemovalAndAReturn() async throws {
        try await Self.withWorld { world in
            let guid = try await Self.shareTrip(world)
            let trip = world.zone("Trip")
            _ = try await world.resolve(.bob, guid, accept: true)
            func changes(after token: String?) async throws -> (names: [String], token: String) {
                let body = token.map { #"{"zoneID":\#(trip),"syncToken":"\#($0)","resultsLimit":2}"# } ?? #"{"zoneID":\#(trip),"resultsLimit":2}"#
                var names: [String] = [], next = token ?? "", more = true, request = body
                while more {
                    let page = try await world.shared(.bob, "records/changes", request).json
                    names += (page["records"]?.arrayValue ?? []).compactMap { $0["recordName"]?.stringValue }
                    next = page["syncToken"]?.stringValue ?? ""
                    more = page["moreComing"] == .bool(true)
                    request = #"{"zoneID":\#(trip),"syncToken":"\#(next)","resultsLimit":2}"#
                }
                return (names, next)
            }
            let first = try await changes(after: nil)
            #expect(Set(first.names) == ["r1", "r2", "cloudkit.zoneshare"] && first.names.count == 3, "\(first.names)")
            // Removed, Bob reads nothing; Alice goes on writing.
            #expect(Self.code(try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#,
                #"{"operationType":"forceUpdate","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"participants":[]}}"#))) == nil)
            #expect(try await world.shared(.bob, "records/changes", #"{"zoneID":\#(trip),"syncToken":"\#(first.token)"}"#).code == "ZONE_NOT_FOUND")
            #expect(Self.code(try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#, Self.save("r3"), Self.save("r1", note: "again"),
                #"{"operationType":"forceDelete","record":{"recordName":"r2"}}"#))) == nil)
            // Invited again and accepted, his old token gives exactly what changed meanwhile.
            #expect(Self.code(try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#,
                #"{"operationType":"forceUpdate","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"participants":[{"userIdentity":{"lookupInfo":{"userRecordName":"\#(world[.bob].userRecordName)"}}}]}}"#))) == nil)
            _ = try await world.resolve(.bob, guid, accept: true)
            let meanwhile = try await changes(after: first.token)
            #expect(meanwhile.names.sorted() == ["cloudkit.zoneshare", "r1", "r2", "r3"], "\(meanwhile.names)")
            let after = try await changes(after: meanwhile.token)
            #expect(after.names.isEmpty, "\(after.names)")
        }
    }

    /// A record share's participant follows its feed page by page while records join and leave
    /// the hierarchy (moved, cut off, deleted) and while it is removed and invited again: its
    /// cache, built from the feed alone, always holds exactly what it reaches, and no change
    /// comes twice.
    @Test func aRecordSharesFeedFollowsRecordsJoiningAndLeaving() async throws {
        try await Self.withWorld { world in
            let other = world.zone("Other")
            let mine = #"{"zoneName":"Other"}"#
            func child(_ name: String, of parent: String?) -> String {
                Self.save(name, extra: parent.map { #","parent":{"recordName":"\#($0)"}"# } ?? #","parent":null"#)
            }
            func alice(_ operations: String...) async throws {
                let reply = try await world[.alice].post("records/modify", #"{"zoneID":\#(mine),"operations":[\#(operations.joined(separator: ","))]}"#)
                #expect((0..<operations.count).allSatisfy { Self.code(reply, $0) == nil }, "\(reply.json)")
            }
            try await alice(Self.save("list"), child("a", of: "list"), child("b", of: "a"), Self.save("x"), child("y", of: "x"))
            let participants = #"[{"userIdentity":{"lookupInfo":{"userRecordName":"\#(world[.bob].userRecordName)"}},"permission":"READ_WRITE"}]"#
            let shared = try await world[.alice].post("records/modify", Self.modify(mine,
                #"{"operationType":"create","record":{"recordName":"listshare","recordType":"cloudkit.share","fields":{},"forRecord":{"recordName":"list"},"participants":\#(participants)}}"#))
            let guid = try #require(Self.result(shared)["shortGUID"]?.stringValue, "\(shared.json)")
            _ = try await world.resolve(.bob, guid, accept: true)

            var cache: Set<String> = []
            var token: String?
            /// Reads Bob's feed from `token` two records a page, applying it to `cache`; returns
            /// the changes read.
            func follow() async throws -> [String] {
                var seen: [String] = [], more = true
                while more {
                    let body = token.map { #"{"zoneID":\#(other),"syncToken":"\#($0)","resultsLimit":2}"# } ?? #"{"zoneID":\#(other),"resultsLimit":2}"#
                    let page = try await world.shared(.bob, "records/changes", body).json
                    for record in page["records"]?.arrayValue ?? [] {
                        let name = record["recordName"]?.stringValue ?? ""
                        if record["deleted"] == .bool(true) { cache.remove(name); seen.append("-" + name) } else { cache.insert(name); seen.append("+" + name) }
                    }
                    token = page["syncToken"]?.stringValue
                    more = page["moreComing"] == .bool(true)
                }
                return seen
            }
            #expect(try await follow().count == 4)
            #expect(cache == ["list", "a", "b", "listshare"], "\(cache)")
            // `a` moves out, taking `b`; `x` moves in, bringing `y` (which was not written).
            try await alice(child("a", of: nil), child("x", of: "list"))
            #expect(try await follow().sorted() == ["+x", "+y", "-a", "-b"], "\(cache)")
            #expect(cache == ["list", "x", "y", "listshare"], "\(cache)")
            // Cut off: deleting `x` takes `y` out of reach (it stays, its parent gone).
            try await alice(#"{"operationType":"forceDelete","record":{"recordName":"x"}}"#)
            #expect(try await follow().sorted() == ["-x", "-y"], "\(cache)")
            // Back: `a` returns with `b`; Bob's own record joins; nothing else was read twice.
            try await alice(child("a", of: "list"))
            #expect(Self.code(try await world.shared(.bob, "records/modify", Self.modify(other, child("c", of: "b")))) == nil)
            #expect(try await follow().sorted() == ["+a", "+b", "+c"], "\(cache)")
            #expect(try await follow().isEmpty)
            // Removed, Bob reads nothing; meanwhile `b` (with `c`) leaves. Invited again, his old
            // token gives exactly what changed.
            try await alice(#"{"operationType":"forceUpdate","record":{"recordName":"listshare","recordType":"cloudkit.share","fields":{},"participants":[]}}"#)
            #expect(try await world.shared(.bob, "records/changes", #"{"zoneID":\#(other)}"#).code == "ZONE_NOT_FOUND")
            try await alice(child("b", of: nil))
            try await alice(#"{"operationType":"forceUpdate","record":{"recordName":"listshare","recordType":"cloudkit.share","fields":{},"participants":\#(participants)}}"#)
            _ = try await world.resolve(.bob, guid, accept: true)
            #expect(try await follow().sorted() == ["+listshare", "-b", "-c"], "\(cache)")
            #expect(cache == ["list", "a", "listshare"], "\(cache)")
            // The owner's own feed says nothing of departures: `b` and `c` are still Alice's.
            let owners = try await world[.alice].post("records/lookup", #"{"zoneID":\#(mine),"records":[{"recordName":"b"},{"recordName":"c"}]}"#)
            #expect(Self.code(owners) == nil && Self.code(owners, 1) == nil, "\(owners.json)")
            // A second share of the zone joined: Bob's token, read with one share, has expired;
            // read again, his feed holds both hierarchies.
            try await alice(Self.save("z"), child("zz", of: "z"))
            let second = try await world[.alice].post("records/modify", Self.modify(mine,
                #"{"operationType":"create","record":{"recordName":"zshare","recordType":"cloudkit.share","fields":{},"forRecord":{"recordName":"z"},"participants":\#(participants)}}"#))
            _ = try await world.resolve(.bob, try #require(Self.result(second)["shortGUID"]?.stringValue), accept: true)
            let expired = try await world.shared(.bob, "records/changes", #"{"zoneID":\#(other),"syncToken":"\#(token ?? "")"}"#)
            #expect((expired.json["serverErrorCode"]?.stringValue == "BAD_REQUEST" || expired.code == "BAD_REQUEST") && "\(expired.json)".contains("CHANGE_TOKEN_EXPIRED"), "\(expired.json)")
            token = nil
            cache = []
            _ = try await follow()
            #expect(cache == ["list", "a", "listshare", "z", "zz", "zshare"], "\(cache)")
            // A record moved from one of his shares to the other is not gone for him.
            try await alice(child("a", of: "z"))
            #expect(try await follow() == ["+a"], "\(cache)")
        }
    }

    /// A participant's records count in the owner's usage and against the owner's quota.
    @Test func participantsWritesCountAgainstTheOwnersQuota() async throws {
        try await Self.withWorld(quota: Quota(records: 4, bytes: 1_000_000)) { world in
            let guid = try await Self.shareTrip(world)  // r1, r2 and the share: 3 of Alice's 4
            let trip = world.zone("Trip")
            _ = try await world.resolve(.bob, guid, accept: true)
            #expect(Self.code(try await world.shared(.bob, "records/modify", Self.modify(trip, Self.save("b1")))) == nil)
            let over = try await world.shared(.bob, "records/modify", Self.modify(trip, Self.save("b2")))
            #expect(over.code == "QUOTA_EXCEEDED" || Self.code(over) == "QUOTA_EXCEEDED", "\(over.json)")
            #expect("\(over.json)".contains("alice"), "\(over.json)")
            let alice = try await world.server.store.engine.read { try $0.usage(ofUser: world[.alice].userRecordName) }
            let bob = try await world.server.store.engine.read { try $0.usage(ofUser: world[.bob].userRecordName) }
            #expect(alice.records == 4 && bob.records == 0, "\(alice) \(bob)")
            #expect(try await QuotaTests.recount(world.server, world[.alice].userRecordName) == alice)
            // Bob's own database is his own: the quota there is his.
            try await world[.bob].createZones("Mine")
            let own = try await world[.bob].post("records/modify", Self.modify(#"{"zoneName":"Mine"}"#, Self.save("m1")))
            #expect(Self.code(own) == nil, "\(own.json)")
        }
    }

    /// A record share: `list` and what its `parent`s lead to are shared; `secret` (and `loose`,
    /// moved out) are not, on every path a participant reads or writes through.
    @Test func aRecordShareReachesItsHierarchyAndNothingElse() async throws {
        try await Self.withWorld { world in
            let other = world.zone("Other")
            func child(_ name: String, of parent: String, extra: String = "") -> String {
                Self.save(name, extra: #","parent":{"recordName":"\#(parent)"}"# + extra)
            }
            let linked = #"{"operationType":"forceReplace","record":{"recordName":"a","recordType":"Item","fields":{"note":{"value":"x"},"link":{"value":{"recordName":"secret","action":"NONE"}}},"parent":{"recordName":"list"}}}"#
            let made = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Other"}"#, Self.save("secret", note: "hidden"), Self.save("list"),
                linked, child("b", of: "a"), child("loose", of: "b")))
            #expect((0..<5).allSatisfy { Self.code(made, $0) == nil }, "\(made.json)")
            #expect(Self.result(made, 3)["parent"]?["recordName"]?.stringValue == "a", "\(made.json)")
            // A parent must exist and make no cycle.
            let orphan = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Other"}"#, child("o", of: "nowhere")))
            #expect(Self.code(orphan) == "VALIDATING_REFERENCE_ERROR", "\(orphan.json)")
            let cycle = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Other"}"#, child("list", of: "b")))
            #expect(Self.code(cycle) == "BAD_REQUEST", "\(cycle.json)")

            let participants = #"[{"userIdentity":{"lookupInfo":{"userRecordName":"\#(world[.bob].userRecordName)"}},"permission":"READ_WRITE"},{"userIdentity":{"lookupInfo":{"emailAddress":"carol@example.com"}},"permission":"READ_ONLY"}]"#
            let shared = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Other"}"#,
                #"{"operationType":"create","record":{"recordName":"listshare","recordType":"cloudkit.share","fields":{},"forRecord":{"recordName":"list"},"participants":\#(participants)}}"#))
            let guid = try #require(Self.result(shared)["shortGUID"]?.stringValue, "\(shared.json)")
            // The root answers with its share; a second share of the hierarchy is refused, naming the first.
            let root = try await world[.alice].post("records/lookup", #"{"zoneID":{"zoneName":"Other"},"records":[{"recordName":"list"}]}"#)
            #expect(Self.result(root)["share"]?["recordName"]?.stringValue == "listshare", "\(root.json)")
            for forRecord in ["b", "list"] {
                let twice = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Other"}"#,
                    #"{"operationType":"create","record":{"recordName":"s2","recordType":"cloudkit.share","fields":{},"forRecord":{"recordName":"\#(forRecord)"}}}"#))
                #expect(Self.code(twice) == "BAD_REQUEST" && (Self.result(twice)["reason"]?.stringValue ?? "").contains("listshare"), "\(twice.json)")
            }
            let zoneWide = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Other"}"#,
                #"{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{}}}"#))
            #expect(Self.code(zoneWide) == "BAD_REQUEST", "\(zoneWide.json)")
            for member in [Member.bob, .carol] {
                #expect(try await world.resolve(member, guid, accept: true).json["results"]?[0]?["participantStatus"]?.stringValue == "ACCEPTED")
            }
            // Resolving with shouldFetchRootRecord answers the root (its desired keys alone); a zone share has none.
            let withRoot = try await world[.carol].post("records/resolve", #"{"shortGUIDs":[{"value":"\#(guid)","shouldFetchRootRecord":true,"rootRecordDesiredKeys":["title"]}]}"#, database: "public")
            let rootRecord = withRoot.json["results"]?[0]?["rootRecord"] ?? .null
            #expect(rootRecord["recordName"]?.stringValue == "list" && rootRecord["share"]?["recordName"]?.stringValue == "listshare" && rootRecord["fields"]?["note"] == nil, "\(withRoot.json)")
            #expect(try await world.resolve(.carol, guid).json["results"]?[0]?["rootRecord"] == nil)

            for member in [Member.bob, .carol] {
                let looked = try await world.shared(member, "records/lookup", #"{"zoneID":\#(other),"records":[{"recordName":"list"},{"recordName":"b"},{"recordName":"secret"}],"include":["link"]}"#)
                #expect(Self.code(looked) == nil && Self.code(looked, 1) == nil && Self.code(looked, 2) == "NOT_FOUND", "\(looked.json)")
                #expect(Self.result(looked)["share"]?["recordName"]?.stringValue == "listshare", "\(looked.json)")
                let viaInclude = try await world.shared(member, "records/lookup", #"{"zoneID":\#(other),"records":[{"recordName":"a"}],"include":["link"]}"#)
                #expect(!"\(viaInclude.json)".contains("hidden"), "\(viaInclude.json)")
                let query = try await world.shared(member, "records/query", #"{"zoneID":\#(other),"query":{"recordType":"Item"}}"#)
                let queried = Set((query.json["records"]?.arrayValue ?? []).compactMap { $0["recordName"]?.stringValue })
                #expect(queried == ["list", "a", "b", "loose"], "\(query.json)")
                let filtered = try await world.shared(member, "records/query", #"{"zoneID":\#(other),"query":{"recordType":"Item","filterBy":[{"fieldName":"note","comparator":"EQUALS","fieldValue":{"value":"hidden"}}]}}"#)
                #expect(filtered.json["records"]?.arrayValue == [], "\(filtered.json)")
                let keyPath = try await world.shared(member, "records/query", #"{"zoneID":\#(other),"query":{"recordType":"Item","filterBy":[{"fieldName":"link.note","comparator":"EQUALS","fieldValue":{"value":"hidden"}}]}}"#)
                #expect(keyPath.json["records"]?.arrayValue == [], "\(keyPath.json)")
                let changes = try await world.shared(member, "records/changes", #"{"zoneID":\#(other)}"#)
                let changed = Set((changes.json["records"]?.arrayValue ?? []).compactMap { $0["recordName"]?.stringValue })
                #expect(changed == ["list", "a", "b", "loose", "listshare"], "\(changes.json)")
                let backlinks = try await world.shared(member, "records/backlinks", #"{"zoneID":\#(other),"recordName":"secret"}"#)
                #expect(backlinks.json["records"]?.arrayValue?.isEmpty != false, "\(backlinks.json)")
            }
            // The owner still sees the records with a key path through the hidden one.
            let owners = try await world[.alice].post("records/query", #"{"zoneID":{"zoneName":"Other"},"query":{"recordType":"Item","filterBy":[{"fieldName":"link.note","comparator":"EQUALS","fieldValue":{"value":"hidden"}}]}}"#)
            #expect(owners.json["records"]?.arrayValue?.count == 1, "\(owners.json)")
            // A query of every zone answers the root with its share, as a query of its zone does.
            for body in [#"{"zoneID":{"zoneName":"Other"},"query":{"recordType":"Item"}}"#, #"{"zoneWide":true,"query":{"recordType":"Item"}}"#] {
                let all = try await world[.alice].post("records/query", body)
                let list = (all.json["records"]?.arrayValue ?? []).first { $0["recordName"]?.stringValue == "list" }
                #expect(list?["share"]?["recordName"]?.stringValue == "listshare", "\(all.json)")
            }

            // Bob creates below the share, never outside it, never over a hidden name, and never
            // points a VALIDATE reference at a hidden record.
            let joined = try await world.shared(.bob, "records/modify", Self.modify(other, child("c", of: "b")))
            #expect(Self.code(joined) == nil && Self.result(joined)["parent"]?["recordName"]?.stringValue == "b", "\(joined.json)")
            for body in [Self.modify(other, Self.save("free")), Self.modify(other, child("out", of: "secret")), Self.modify(other, child("out", of: "nowhere"))] {
                let refused = try await world.shared(.bob, "records/modify", body)
                #expect(Self.code(refused) == "ACCESS_DENIED", "\(refused.json)")
            }
            // A share record is no record's parent; a name orphans still point at is not Bob's to take.
            let underShare = try await world.shared(.bob, "records/modify", Self.modify(other, child("u", of: "listshare")))
            #expect(Self.code(underShare) == "ACCESS_DENIED" || Self.code(underShare) == "BAD_REQUEST", "\(underShare.json)")
            let kid = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Other"}"#, Self.save("gone"), child("kid", of: "gone")))
            let orphaned = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Other"}"#, #"{"operationType":"forceDelete","record":{"recordName":"gone"}}"#))
            #expect(Self.code(kid, 1) == nil && Self.code(orphaned) == nil, "\(kid.json) \(orphaned.json)")
            let takeover = try await world.shared(.bob, "records/modify", Self.modify(other, child("gone", of: "b")))
            #expect(Self.code(takeover) == "ACCESS_DENIED", "\(takeover.json)")
            #expect(Self.code(try await world.shared(.bob, "records/lookup", #"{"zoneID":\#(other),"records":[{"recordName":"kid"}]}"#)) == "NOT_FOUND")
            let hiddenName = try await world.shared(.bob, "records/modify", Self.modify(other, #"{"operationType":"create","record":{"recordName":"secret","recordType":"Item","fields":{},"parent":{"recordName":"b"}}}"#))
            #expect(Self.code(hiddenName) == "EXISTS" && Self.result(hiddenName)["serverRecord"] == nil && !"\(hiddenName.json)".contains("hidden"), "\(hiddenName.json)")
            let validate = try await world.shared(.bob, "records/modify", Self.modify(other, #"{"operationType":"create","record":{"recordName":"v","recordType":"Item","fields":{"pin":{"value":{"recordName":"secret","action":"VALIDATE"}}},"parent":{"recordName":"b"}}}"#))
            #expect(Self.code(validate) == "VALIDATING_REFERENCE_ERROR", "\(validate.json)")
            // Bob edits a shared record, not a hidden one, and moves nothing out; only Alice deletes the root.
            #expect(Self.code(try await world.shared(.bob, "records/modify", Self.modify(other, child("a", of: "list")))) == nil)
            for body in [Self.modify(other, Self.save("secret", note: "bob's")), Self.modify(other, Self.save("b")),
                         Self.modify(other, #"{"operationType":"forceDelete","record":{"recordName":"list"}}"#),
                         Self.modify(other, #"{"operationType":"forceDelete","record":{"recordName":"secret"}}"#)] {
                let refused = try await world.shared(.bob, "records/modify", body)
                #expect(Self.code(refused) == "ACCESS_DENIED", "\(refused.json)")
            }
            // Carol (READ_ONLY) creates nothing, even below the root.
            #expect(Self.code(try await world.shared(.carol, "records/modify", Self.modify(other, child("d", of: "list")))) == "ACCESS_DENIED")
            // Word search and NEAR leave hidden records out; the owner finds them.
            let placed = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Other"}"#,
                #"{"operationType":"forceReplace","record":{"recordName":"secret","recordType":"Item","fields":{"note":{"value":"hidden treasure"},"place":{"value":{"latitude":48.0,"longitude":2.0},"type":"LOCATION"}}}}"#,
                #"{"operationType":"forceReplace","record":{"recordName":"spot","recordType":"Item","fields":{"note":{"value":"visible treasure"},"place":{"value":{"latitude":48.0001,"longitude":2.0},"type":"LOCATION"}},"parent":{"recordName":"list"}}}"#))
            #expect(Self.code(placed) == nil && Self.code(placed, 1) == nil, "\(placed.json)")
            let searches = [#"{"comparator":"CONTAINS_ALL_TOKENS","fieldValue":{"value":"treasure"}}"#,
                            #"{"comparator":"NEAR","fieldName":"place","fieldValue":{"value":{"latitude":48.0,"longitude":2.0},"type":"LOCATION"},"distance":1000}"#]
            for filter in searches {
                let theirs = try await world.shared(.carol, "records/query", #"{"zoneID":\#(other),"query":{"recordType":"Item","filterBy":[\#(filter)]}}"#)
                #expect((theirs.json["records"]?.arrayValue ?? []).compactMap { $0["recordName"]?.stringValue } == ["spot"], "\(theirs.json)")
                let hers = try await world[.alice].post("records/query", #"{"zoneID":{"zoneName":"Other"},"query":{"recordType":"Item","filterBy":[\#(filter)]}}"#)
                #expect(Set((hers.json["records"]?.arrayValue ?? []).compactMap { $0["recordName"]?.stringValue }) == ["spot", "secret"], "\(hers.json)")
            }
            // Bob's deletes cascade to (DELETE_SELF) and clear (NULLIFY) hidden records' references
            // without naming them, in his answer or his feed.
            let before = try #require(try await world.shared(.bob, "records/changes", #"{"zoneID":\#(other)}"#).json["syncToken"]?.stringValue)
            #expect(Self.code(try await world.shared(.bob, "records/modify", Self.modify(other, child("c2", of: "b"), child("c3", of: "b")))) == nil)
            let holders = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Other"}"#,
                #"{"operationType":"forceReplace","record":{"recordName":"dep","recordType":"Item","fields":{"owner":{"value":{"recordName":"c2","action":"DELETE_SELF"}}}}}"#,
                #"{"operationType":"forceReplace","record":{"recordName":"nul","recordType":"Item","fields":{"pin":{"value":{"recordName":"c3","action":"NULLIFY"}}}}}"#))
            #expect(Self.code(holders) == nil && Self.code(holders, 1) == nil, "\(holders.json)")
            let removed = try await world.shared(.bob, "records/modify", Self.modify(other, #"{"operationType":"forceDelete","record":{"recordName":"c2"}}"#,
                #"{"operationType":"forceDelete","record":{"recordName":"c3"}}"#))
            #expect(Self.code(removed) == nil && Self.code(removed, 1) == nil, "\(removed.json)")
            #expect(!"\(removed.json)".contains("dep") && !"\(removed.json)".contains("nul"), "\(removed.json)")
            let after = try await world.shared(.bob, "records/changes", #"{"zoneID":\#(other),"syncToken":"\#(before)"}"#)
            #expect(!"\(after.json)".contains(#""dep""#) && !"\(after.json)".contains(#""nul""#), "\(after.json)")
            let aftermath = try await world[.alice].post("records/lookup", #"{"zoneID":{"zoneName":"Other"},"records":[{"recordName":"dep"},{"recordName":"nul"}]}"#)
            #expect(Self.code(aftermath) == "NOT_FOUND" && Self.result(aftermath, 1)["fields"]?["pin"] == nil
                    && Self.result(aftermath, 1)["modified"]?["userRecordName"]?.stringValue == world[.bob].userRecordName, "\(aftermath.json)")
            // The owner sees Bob's record in its hierarchy.
            let seen = try await world[.alice].post("records/lookup", #"{"zoneID":{"zoneName":"Other"},"records":[{"recordName":"c"}]}"#)
            #expect(Self.result(seen)["parent"]?["recordName"]?.stringValue == "b" && Self.result(seen)["created"]?["userRecordName"]?.stringValue == world[.bob].userRecordName)

            // Alice moves `loose` out of the hierarchy: participants no longer reach it.
            #expect(Self.code(try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Other"}"#, Self.save("loose", extra: #","parent":null"#)))) == nil)
            let gone = try await world.shared(.carol, "records/lookup", #"{"zoneID":\#(other),"records":[{"recordName":"loose"}]}"#)
            #expect(Self.code(gone) == "NOT_FOUND", "\(gone.json)")
            // Deleting the root deletes its share: the zone leaves the participants' shared databases.
            let deleted = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Other"}"#, #"{"operationType":"forceDelete","record":{"recordName":"list"}}"#))
            #expect(Self.code(deleted) == nil && (Self.result(deleted)["cascadedRecordNames"]?.arrayValue ?? []).contains(.string("listshare")), "\(deleted.json)")
            #expect(try await world.shared(.bob, "records/lookup", #"{"zoneID":\#(other),"records":[{"recordName":"a"}]}"#).code == "ZONE_NOT_FOUND")
            #expect(try await world.shared(.bob, "zones/list", "{}").json["zones"] == .array([]))
        }
    }

    @Test func sharesAreRefusedWhereCloudKitRefusesThem() async throws {
        try await Self.withWorld { world in
            let share = #"{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{}}}"#
            for (database, zone, expected) in [("private", #"{"zoneName":"_defaultZone"}"#, "BAD_REQUEST"), ("public", #"{"zoneName":"_defaultZone"}"#, "BAD_REQUEST")] {
                let reply = try await world[.alice].post("records/modify", Self.modify(zone, share), database: database)
                #expect(Self.code(reply) == expected, "\(database): \(reply.json)")
            }
            let named = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#, #"{"operationType":"create","record":{"recordName":"myshare","recordType":"cloudkit.share","fields":{}}}"#))
            #expect(Self.code(named) == "BAD_REQUEST" && (Self.result(named)["reason"]?.stringValue ?? "").contains("cloudkit.zoneshare"), "\(named.json)")
            let recordShare = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#, #"{"operationType":"create","record":{"recordName":"s","recordType":"cloudkit.share","fields":{},"forRecord":{"recordName":"r1"}}}"#))
            #expect(Self.code(recordShare) == "BAD_REQUEST" && (Self.result(recordShare)["reason"]?.stringValue ?? "").contains("forRecord"), "\(recordShare.json)")
            let zoneShareOfRecord = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#, #"{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"forRecord":{"recordName":"r1"}}}"#))
            #expect(Self.code(zoneShareOfRecord) == "BAD_REQUEST", "\(zoneShareOfRecord.json)")
            let stray = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#, Self.save("x", extra: #","publicPermission":"READ_ONLY""#)))
            #expect(Self.code(stray) == "BAD_REQUEST", "\(stray.json)")
            let unknown = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#, #"{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"participants":[{"userIdentity":{"lookupInfo":{"userRecordName":"_nobody"}}}]}}"#))
            #expect(Self.code(unknown) == "BAD_REQUEST", "\(unknown.json)")
            // A link share takes no invitations.
            let both = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#, #"{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"publicPermission":"READ_ONLY","participants":[{"userIdentity":{"lookupInfo":{"userRecordName":"\#(world[.bob].userRecordName)"}}}]}}"#))
            #expect(Self.code(both) == "BAD_REQUEST", "\(both.json)")
            // Refused in a batch that is not atomic, a share leaves nothing behind either.
            let partial = try await world[.alice].post("records/modify", #"{"zoneID":{"zoneName":"Trip"},"atomic":false,"operations":[{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"publicPermission":"READ_ONLY","participants":[{"userIdentity":{"lookupInfo":{"emailAddress":"x@example.com"}}}]}},\#(Self.save("kept"))]}"#)
            #expect(Self.code(partial) == "BAD_REQUEST" && Self.code(partial, 1) == nil, "\(partial.json)")
            let next = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#, Self.save("after")))
            #expect(Self.result(next)["recordChangeTag"] != Self.result(partial, 1)["recordChangeTag"], "\(next.json) \(partial.json)")
            // The owner is not a participant, by user or by address; a share has at most 100.
            for invitee in [#"{"userRecordName":"\#(world[.alice].userRecordName)"}"#, #"{"emailAddress":"ALICE@example.com"}"#] {
                let own = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#, #"{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"participants":[{"userIdentity":{"lookupInfo":\#(invitee)}}]}}"#))
                #expect(Self.code(own) == "BAD_REQUEST" && (Self.result(own)["reason"]?.stringValue ?? "").contains("owner"), "\(own.json)")
            }
            let many = (0...100).map { #"{"userIdentity":{"lookupInfo":{"emailAddress":"p\#($0)@example.com"}}}"# }.joined(separator: ",")
            let crowd = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#, #"{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"participants":[\#(many)]}}"#))
            #expect(Self.code(crowd) == "LIMIT_EXCEEDED" || Self.result(crowd)["recordSyncErrorCode"]?.stringValue == "LIMIT_EXCEEDED", "\(crowd.json)")
            // A share holds no reference, and none points at it.
            let holding = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#, #"{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{"cloudkit.type":{"value":{"recordName":"r1","action":"DELETE_SELF"}}}}}"#))
            #expect(Self.code(holding) == "BAD_REQUEST", "\(holding.json)")
            let pointing = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#, Self.save("p", extra: "").replacingOccurrences(of: #""note":{"value":"x"}"#, with: #""owner":{"value":{"recordName":"cloudkit.zoneshare","action":"VALIDATE"}}"#)))
            #expect(Self.code(pointing) == "BAD_REQUEST", "\(pointing.json)")
            // Nothing of the refused saves was stored.
            let none = try await world[.alice].post("records/lookup", #"{"zoneID":{"zoneName":"Trip"},"records":[{"recordName":"cloudkit.zoneshare"},{"recordName":"x"}]}"#)
            #expect(Self.code(none) == "NOT_FOUND" && Self.code(none, 1) == "NOT_FOUND", "\(none.json)")
            // A second share of a shared zone is refused, naming the first.
            _ = try await Self.shareTrip(world)
            let again = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#, share))
            #expect(Self.code(again) == "EXISTS", "\(again.json)")
        }
    }

    @Test func aPublicLinkAdmitsAnyoneUntilItIsClosed() async throws {
        try await Self.withWorld { world in
            let open = world.zone("Open")
            let made = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Open"}"#, Self.save("o1"),
                #"{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"publicPermission":"READ_ONLY"}}"#))
            let guid = try #require(Self.result(made, 1)["shortGUID"]?.stringValue, "\(made.json)")
            let resolved = try await world.resolve(.dave, guid).json["results"]?[0] ?? .null
            #expect(resolved["participantType"]?.stringValue == "PUBLIC_USER" && resolved["participantPermission"]?.stringValue == "READ_ONLY", "\(resolved)")
            let token = try await world.shared(.dave, "changes/database", "{}").json["syncToken"]?.stringValue
            #expect(try await world.resolve(.dave, guid, accept: true).json["results"]?[0]?["participantStatus"]?.stringValue == "ACCEPTED")
            let afterAccept = try await world.shared(.dave, "changes/database", #"{"syncToken":"\#(token ?? "")"}"#).json
            #expect(afterAccept["zones"]?[0]?["zoneID"]?["zoneName"]?.stringValue == "Open", "\(afterAccept)")
            let read = try await world.shared(.dave, "records/lookup", #"{"zoneID":\#(open),"records":[{"recordName":"o1"}]}"#)
            #expect(Self.code(read) == nil, "\(read.json)")
            #expect(Self.code(try await world.shared(.dave, "records/modify", Self.modify(open, Self.save("d1")))) == "ACCESS_DENIED")
            // The owner sees Dave in the share.
            let share = try await world[.alice].post("records/lookup", #"{"zoneID":{"zoneName":"Open"},"records":[{"recordName":"cloudkit.zoneshare"}]}"#)
            let tag = try #require(Self.result(share)["recordChangeTag"]?.stringValue)
            #expect(Self.result(share)["participants"]?[0]?["type"]?.stringValue == "PUBLIC_USER", "\(share.json)")
            // Closing the link removes everyone who came through it.
            let closed = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Open"}"#,
                #"{"operationType":"update","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","recordChangeTag":"\#(tag)","fields":{},"publicPermission":"NONE"}}"#))
            #expect(Self.result(closed)["participants"] == .array([]), "\(closed.json)")
            #expect(try await world.shared(.dave, "records/lookup", #"{"zoneID":\#(open),"records":[{"recordName":"o1"}]}"#).code == "ZONE_NOT_FOUND")
            let left = try await world.shared(.dave, "changes/database", #"{"syncToken":"\#(afterAccept["syncToken"]?.stringValue ?? "")"}"#).json
            #expect(left["zones"]?[0]?["deleted"] == .bool(true) && left["zones"]?[0]?["zoneID"]?["zoneName"]?.stringValue == "Open", "\(left)")
            #expect(try await world.resolve(.dave, guid).json["results"]?[0]?["serverErrorCode"]?.stringValue == "NOT_FOUND")
        }
    }

    @Test func participantsLeaveAreRemovedAndTheShareGoesWithItsZoneAndOwner() async throws {
        try await Self.withWorld { world in
            let guid = try await Self.shareTrip(world)
            let trip = world.zone("Trip")
            for member in [Member.bob, .carol] { _ = try await world.resolve(member, guid, accept: true) }
            let carolsToken = try await world.shared(.carol, "changes/database", "{}").json["syncToken"]?.stringValue ?? ""
            // Alice removes Carol: the save's list lacks her.
            let share = try await world[.alice].post("records/lookup", #"{"zoneID":{"zoneName":"Trip"},"records":[{"recordName":"cloudkit.zoneshare"}]}"#)
            let bob = (Self.result(share)["participants"]?.arrayValue ?? []).filter { $0["userIdentity"]?["userRecordName"]?.stringValue == world[.bob].userRecordName }
            #expect(bob.count == 1, "\(share.json)")
            let removed = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#,
                #"{"operationType":"forceUpdate","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"participants":\#(String(decoding: try JSONEncoder().encode(JSONValue.array(bob)), as: UTF8.self))}}"#))
            #expect((Self.result(removed)["participants"]?.arrayValue ?? []).count == 1, "\(removed.json)")
            #expect(try await world.shared(.carol, "records/lookup", #"{"zoneID":\#(trip),"records":[{"recordName":"r1"}]}"#).code == "ZONE_NOT_FOUND")
            let gone = try await world.shared(.carol, "changes/database", #"{"syncToken":"\#(carolsToken)"}"#).json
            #expect(gone["zones"]?[0]?["deleted"] == .bool(true), "\(gone)")
            // Bob leaves by deleting the share in his shared database; the share stays Alice's.
            let leave = try await world.shared(.bob, "records/modify", Self.modify(trip, #"{"operationType":"forceDelete","record":{"recordName":"cloudkit.zoneshare"}}"#))
            #expect(Self.code(leave) == nil, "\(leave.json)")
            #expect(try await world.shared(.bob, "zones/list", "{}").json["zones"] == .array([]))
            let kept = try await world[.alice].post("records/lookup", #"{"zoneID":{"zoneName":"Trip"},"records":[{"recordName":"cloudkit.zoneshare"}]}"#)
            #expect(Self.result(kept)["shortGUID"]?.stringValue == guid && Self.result(kept)["participants"] == .array([]), "\(kept.json)")
            // Invited again, Bob comes back.
            let again = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Trip"}"#,
                #"{"operationType":"forceUpdate","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"participants":[{"userIdentity":{"lookupInfo":{"userRecordName":"\#(world[.bob].userRecordName)"}},"permission":"READ_ONLY"}]}}"#))
            #expect(Self.code(again) == nil, "\(again.json)")
            #expect(try await world.resolve(.bob, guid, accept: true).json["results"]?[0]?["participantPermission"]?.stringValue == "READ_ONLY")
            #expect(Self.code(try await world.shared(.bob, "records/lookup", #"{"zoneID":\#(trip),"records":[{"recordName":"r1"}]}"#)) == nil)
            // Deleting the zone takes the share with it.
            #expect(try await world[.alice].post("zones/modify", #"{"operations":[{"operationType":"delete","zone":{"zoneID":{"zoneName":"Trip"}}}]}"#).status == 200)
            #expect(try await world.shared(.bob, "zones/list", "{}").json["zones"] == .array([]))
            #expect(try await world.resolve(.bob, guid).json["results"]?[0]?["serverErrorCode"]?.stringValue == "NOT_FOUND")
            // A deleted owner takes their shares; a deleted participant leaves them.
            let open = try await world[.alice].post("records/modify", Self.modify(#"{"zoneName":"Open"}"#,
                #"{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"publicPermission":"READ_WRITE"}}"#))
            let openGUID = try #require(Self.result(open)["shortGUID"]?.stringValue)
            _ = try await world.resolve(.dave, openGUID, accept: true)
            _ = try await world.server.store.deleteUser(named: "dave")
            let participants = try await world.server.store.engine.read { transaction in
                try transaction.share(shortGUID: openGUID).map { try transaction.participants(ofShare: $0.share.key) } ?? []
            }
            #expect(participants.isEmpty)
            _ = try await world.server.store.deleteUser(named: "alice")
            #expect(try await world.server.store.engine.read { try $0.share(shortGUID: openGUID) } == nil)
        }
    }
}
