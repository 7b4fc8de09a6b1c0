import Foundation
import RecordClient
import Testing

/// The client library's sharing API against a live server: Alice shares a record (with its
/// hierarchy) and a zone, Bob accepts them and works in his shared database, a database
/// subscription tells him of changes, and Alice removes him.
@Suite struct SharingClientTests {
    @Test func aRecordShareIsSavedResolvedAcceptedUsedAndRevoked() async throws {
        try await withServer { server in
            let alice = try await server.container(forNewUser: "alice")
            let bob = try await server.container(forNewUser: "bob")
            let bobID = try await bob.userRecordID().recordName
            let aliceID = try await alice.userRecordID().recordName
            let lists = ZoneID(zoneName: "Lists")
            _ = try await alice.privateCloudDatabase.modifyRecordZones(saving: [RecordZone(zoneName: "Lists")], deleting: [])
            var root = Record(recordType: "List", recordID: Record.ID(recordName: "groceries", zoneID: lists))
            root["title"] = .string("Groceries")
            var milk = Record(recordType: "Item", recordID: Record.ID(recordName: "milk", zoneID: lists))
            milk["title"] = .string("Milk")
            milk.parent = "groceries"
            var secret = Record(recordType: "Item", recordID: Record.ID(recordName: "secret", zoneID: lists))
            secret["title"] = .string("Not shared")
            _ = try await alice.privateCloudDatabase.modifyRecords(saving: [milk, root, secret], deleting: [])

            var share = Share(rootRecord: root)
            share.title = "Our groceries"
            share.participants = [.user(bobID, permission: .readWrite)]
            let saved = try await alice.privateCloudDatabase.save(share)
            let guid = try #require(saved.shortGUID)
            #expect(saved.owner?.type == .owner && saved.currentUserPermission == .readWrite)
            #expect(saved.participants.count == 1 && saved.participants.first?.acceptanceStatus == .invited)
            #expect(saved.title == "Our groceries" && saved.rootRecordName == "groceries" && !saved.isZoneShare)
            // The root names its share; the share is read back from it.
            let fetchedRoot = try await alice.privateCloudDatabase.record(for: root.recordID)
            #expect(fetchedRoot.share == saved.recordID.recordName)
            #expect(try await alice.privateCloudDatabase.share(of: fetchedRoot)?.shortGUID == guid)
            #expect(try await alice.privateCloudDatabase.zoneShare(of: lists) == nil)

            // Bob resolves the URL (or the short GUID), then accepts.
            let resolved = try #require(try await bob.shareMetadata(for: ["https://example.com/share/\(guid)"], fetchingRootRecords: true).first).get()
            #expect(resolved.participantStatus == .invited && resolved.participantPermission == .readWrite && resolved.rootRecordName == "groceries")
            #expect(resolved.rootRecord?.recordName == "groceries" && resolved.zoneID.ownerRecordName == aliceID)
            let accepted = try await bob.accept(resolved)
            #expect(accepted.participantStatus == .accepted)
            // Eve, not invited, gets what a missing share gets.
            let eve = try await server.container(forNewUser: "eve")
            let refused = try #require(try await eve.acceptShares([guid]).first)
            #expect(throws: RecordSyncError.self) { try refused.get() }

            // Bob's shared database holds Alice's zone; he reads the hierarchy, not the rest.
            let shared = bob.sharedCloudDatabase
            let zones = try await shared.allRecordZones()
            #expect(zones.map(\.zoneID) == [ZoneID(zoneName: "Lists", ownerRecordName: aliceID)])
            let theirs = ZoneID(zoneName: "Lists", ownerRecordName: aliceID)
            let fetched = try await shared.records(for: [Record.ID(recordName: "milk", zoneID: theirs), Record.ID(recordName: "secret", zoneID: theirs)])
            #expect(try fetched[Record.ID(recordName: "milk", zoneID: theirs)]?.get()["title"] == .string("Milk"))
            #expect(fetched.errors[Record.ID(recordName: "secret", zoneID: theirs)]?.code == .notFound)
            // He adds an item under the list; his database subscription hears of Alice's edit.
            var eggs = Record(recordType: "Item", recordID: Record.ID(recordName: "eggs", zoneID: theirs))
            eggs["title"] = .string("Eggs")
            eggs.parent = "groceries"
            let savedEggs = try await shared.save(eggs)
            #expect(savedEggs.parent == "groceries" && savedEggs.created?.userRecordName == bobID)
            try await shared.save(Subscription.database("everything"))
            #expect(try await shared.subscriptions().map(\.subscriptionType) == ["database"])
            let notifications = try await shared.remoteNotifications()
            var edited = try await alice.privateCloudDatabase.record(for: milk.recordID)
            edited["title"] = .string("Oat milk")
            try await alice.privateCloudDatabase.save(edited)
            var iterator = notifications.makeAsyncIterator()
            let heard = try #require(try await iterator.next())
            #expect(heard.kind == .database && heard.databaseScope == .shared && heard.zoneID == nil && heard.subscriptionID == "everything")

            // Alice removes Bob: the zone leaves his shared database.
            var current = try #require(try await alice.privateCloudDatabase.share(of: fetchedRoot))
            #expect(current.participants.first?.acceptanceStatus == .accepted)
            current.participants = []
            let emptied = try await alice.privateCloudDatabase.save(current)
            #expect(emptied.participants.isEmpty)
            #expect(try await shared.allRecordZones().isEmpty)
            await #expect(throws: RecordSyncError.self) { _ = try await shared.record(for: Record.ID(recordName: "milk", zoneID: theirs)) }
        }
    }

    @Test func aZoneShareThroughAPublicLinkIsLeftByItsParticipant() async throws {
        try await withServer { server in
            let alice = try await server.container(forNewUser: "alice")
            let dave = try await server.container(forNewUser: "dave")
            let aliceID = try await alice.userRecordID().recordName
            let trip = ZoneID(zoneName: "Trip")
            _ = try await alice.privateCloudDatabase.modifyRecordZones(saving: [RecordZone(zoneName: "Trip")], deleting: [])
            var day = Record(recordType: "Day", recordID: Record.ID(recordName: "day1", zoneID: trip))
            day["title"] = .string("Arrival")
            try await alice.privateCloudDatabase.save(day)
            var share = Share(recordZoneID: trip)
            share.publicPermission = .readOnly
            let saved = try await alice.privateCloudDatabase.save(share)
            #expect(saved.isZoneShare && saved.publicPermission == .readOnly)
            #expect(try await alice.privateCloudDatabase.zoneShare(of: trip)?.shortGUID == saved.shortGUID)

            let guid = try #require(saved.shortGUID)
            let accepted = try #require(try await dave.acceptShares([guid]).first).get()
            #expect(accepted.participantType == .publicUser && accepted.participantPermission == .readOnly && accepted.rootRecordName == nil)
            let theirs = ZoneID(zoneName: "Trip", ownerRecordName: aliceID)
            #expect(try await dave.sharedCloudDatabase.record(for: Record.ID(recordName: "day1", zoneID: theirs))["title"] == .string("Arrival"))
            // Read-only: his write is refused by the server.
            var mine = Record(recordType: "Day", recordID: Record.ID(recordName: "day2", zoneID: theirs))
            mine["title"] = .string("Mine")
            await #expect(throws: RecordSyncError.self) { try await dave.sharedCloudDatabase.save(mine) }
            // Dave's view of the share says what he may do; deleting it leaves it.
            let his = try #require(Share(try await dave.sharedCloudDatabase.record(for: Record.ID(recordName: ShareInfo.zoneShareName, zoneID: theirs))))
            #expect(his.currentUserPermission == .readOnly && his.currentUserParticipant?.type == .publicUser)
            try await dave.sharedCloudDatabase.delete(his)
            #expect(try await dave.sharedCloudDatabase.allRecordZones().isEmpty)
            // The share stays, without him.
            let after = try #require(try await alice.privateCloudDatabase.zoneShare(of: trip))
            #expect(after.participants.isEmpty)
        }
    }
}
