import Foundation
import RecordClient
import Testing

/// The sync engine over the shared database: Alice's engine syncs her private database, Bob's
/// (`READ_WRITE`) and Carol's (`READ_ONLY`) their shared ones, each with a cache of its own.
@Suite struct SharedSyncTests {
    static func titles(_ cache: RecordCache, _ zone: ZoneID) async throws -> [String: String] {
        var titles: [String: String] = [:]
        for record in try await cache.allRecords(inZoneWith: zone) where record.recordType == "Day" {
            if case .string(let title)? = record["title"] { titles[record.recordName] = title }
        }
        return titles
    }

    @Test func ownerAndParticipantsConvergeReadOnlyEditsAreRefusedAndARemovedParticipantLosesTheZone() async throws {
        try await withServer { server in
            let alice = try await server.container(forNewUser: "alice")
            let bob = try await server.container(forNewUser: "bob")
            let carol = try await server.container(forNewUser: "carol")
            let aliceID = try await alice.userRecordID().recordName
            let trip = ZoneID(zoneName: "Trip")
            let theirs = ZoneID(zoneName: "Trip", ownerRecordName: aliceID)
            let alicesEngine = SyncEngine(database: alice.privateCloudDatabase, cache: try RecordCache(path: ":memory:"))
            let bobsEngine = SyncEngine(database: bob.sharedCloudDatabase, cache: try RecordCache(path: ":memory:", sharedDatabase: true))
            let carolsEngine = SyncEngine(database: carol.sharedCloudDatabase, cache: try RecordCache(path: ":memory:", sharedDatabase: true))
            // A cache of one kind does not sync the other kind of database.
            await #expect(throws: RecordSyncError.self) { try await SyncEngine(database: bob.sharedCloudDatabase, cache: try RecordCache(path: ":memory:")).fetchChanges() }

            _ = try await alice.privateCloudDatabase.modifyRecordZones(saving: [RecordZone(zoneName: "Trip")], deleting: [])
            for (name, title) in [("day1", "Arrival"), ("day2", "Museum")] {
                var day = Record(recordType: "Day", recordID: Record.ID(recordName: name, zoneID: trip))
                day["title"] = .string(title)
                try await alicesEngine.save(day)
            }
            try await alicesEngine.sendChanges()
            var share = Share(recordZoneID: trip)
            share.participants = [.user(try await bob.userRecordID().recordName, permission: .readWrite),
                                  .user(try await carol.userRecordID().recordName, permission: .readOnly)]
            let saved = try await alice.privateCloudDatabase.save(share)
            let guid = try #require(saved.shortGUID)
            for container in [bob, carol] { _ = try #require(try await container.acceptShares([guid]).first).get() }

            let fetched = try await bobsEngine.fetchChanges()
            #expect(fetched.fetchedZones == [theirs], "\(fetched)")
            #expect(try await Self.titles(bobsEngine.cache, theirs) == ["day1": "Arrival", "day2": "Museum"])
            #expect(try await bobsEngine.cache.zoneIDs() == [theirs])
            try await carolsEngine.fetchChanges()

            // Offline edits on both sides, then both sync: they converge.
            var bobsDay = try #require(try await bobsEngine.cache.record(for: Record.ID(recordName: "day1", zoneID: theirs)))
            bobsDay["title"] = .string("Arrival (late)")
            try await bobsEngine.save(bobsDay)
            var bobsNew = Record(recordType: "Day", recordID: Record.ID(recordName: "day3", zoneID: theirs))
            bobsNew["title"] = .string("Beach")
            try await bobsEngine.save(bobsNew)
            var alicesDay = try #require(try await alicesEngine.cache.record(for: Record.ID(recordName: "day2", zoneID: trip)))
            alicesDay["title"] = .string("Museum, then lunch")
            try await alicesEngine.save(alicesDay)
            let bobSent = try await bobsEngine.sendChanges()
            #expect(bobSent.failures.isEmpty, "\(bobSent)")
            try await alicesEngine.sendChanges()
            for engine in [alicesEngine, bobsEngine, carolsEngine] { try await engine.fetchChanges() }
            let expected = ["day1": "Arrival (late)", "day2": "Museum, then lunch", "day3": "Beach"]
            #expect(try await Self.titles(alicesEngine.cache, trip) == expected)
            #expect(try await Self.titles(bobsEngine.cache, theirs) == expected)
            #expect(try await Self.titles(carolsEngine.cache, theirs) == expected)

            // Carol's edit is refused before it is queued, with the server's own error.
            var carolsDay = try #require(try await carolsEngine.cache.record(for: Record.ID(recordName: "day1", zoneID: theirs)))
            carolsDay["title"] = .string("Carol was here")
            let local = await #expect(throws: RecordSyncError.self) { try await carolsEngine.save(carolsDay) }
            let remote = await #expect(throws: RecordSyncError.self) { try await carol.sharedCloudDatabase.save(carolsDay) }
            #expect(local?.code == .accessDenied && local?.reason == remote?.reason, "\(String(describing: local)) / \(String(describing: remote))")
            await #expect(throws: RecordSyncError.self) { try await carolsEngine.delete(carolsDay.recordID) }
            #expect(try await carolsEngine.cache.pendingChangeCount() == 0)
            #expect(try await Self.titles(carolsEngine.cache, theirs)["day1"] == "Arrival (late)")

            // Bob queues an edit; Alice removes him: his next fetch purges the zone and reports
            // the edit it drops.
            var lost = try #require(try await bobsEngine.cache.record(for: Record.ID(recordName: "day3", zoneID: theirs)))
            lost["title"] = .string("Never sent")
            try await bobsEngine.save(lost)
            var current = try #require(try await alice.privateCloudDatabase.zoneShare(of: trip))
            current.participants = current.participants.filter { $0.permission == .readOnly }
            #expect(try await alice.privateCloudDatabase.save(current).participants.count == 1)
            let purged = try await bobsEngine.fetchChanges()
            #expect(purged.purgedZones == [theirs] && purged.droppedEdits == [Record.ID(recordName: "day3", zoneID: theirs)], "\(purged)")
            #expect(try await bobsEngine.cache.zoneIDs().isEmpty)
            #expect(try await bobsEngine.cache.pendingChangeCount() == 0)
            // Carol keeps it.
            #expect(try await carolsEngine.fetchChanges().purgedZones.isEmpty)
            #expect(try await Self.titles(carolsEngine.cache, theirs).count == 3)
        }
    }

    /// A participant's running engine learns of its accepting a share, of the owner's changes
    /// and of the zone leaving through the shared database's push channel (it polls only every
    /// 5 minutes).
    @Test func aRunningParticipantEngineFollowsTheOwnerThroughPush() async throws {
        try await withServer { server in
            let alice = try await server.container(forNewUser: "alice")
            let bob = try await server.container(forNewUser: "bob")
            let aliceID = try await alice.userRecordID().recordName
            let trip = ZoneID(zoneName: "Trip")
            let theirs = ZoneID(zoneName: "Trip", ownerRecordName: aliceID)
            _ = try await alice.privateCloudDatabase.modifyRecordZones(saving: [RecordZone(zoneName: "Trip")], deleting: [])
            var share = Share(recordZoneID: trip)
            share.participants = [.user(try await bob.userRecordID().recordName, permission: .readWrite)]
            let guid = try #require(try await alice.privateCloudDatabase.save(share).shortGUID)
            var configuration = SyncEngine.Configuration()
            configuration.pollInterval = .seconds(300)
            configuration.connectedPollInterval = .seconds(300)
            let engine = SyncEngine(database: bob.sharedCloudDatabase, cache: try RecordCache(path: ":memory:", sharedDatabase: true), configuration: configuration)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await engine.run() }
                // Running before Bob accepts: accepting is a change of his shared database, pushed.
                try await Task.sleep(for: .milliseconds(500))
                _ = try #require(try await bob.acceptShares([guid]).first).get()
                #expect(try await eventually(within: 30) { try await engine.cache.zoneIDs() == [theirs] })
                try await Task.sleep(for: .milliseconds(200))
                for round in 0..<3 {
                    var day = Record(recordType: "Day", recordID: Record.ID(recordName: "day\(round)", zoneID: trip))
                    day["title"] = .string("Day \(round)")
                    try await alice.privateCloudDatabase.save(day)
                    #expect(try await eventually(within: 30) { try await engine.cache.record(for: Record.ID(recordName: "day\(round)", zoneID: theirs)) != nil })
                }
                // Alice deletes the share: the zone leaves Bob's cache.
                try await alice.privateCloudDatabase.delete(try #require(try await alice.privateCloudDatabase.zoneShare(of: trip)))
                #expect(try await eventually(within: 30) { try await engine.cache.zoneIDs().isEmpty })
                group.cancelAll()
            }
        }
    }

    /// A record share in a participant's cache: its hierarchy and nothing else; a record moved
    /// out leaves the cache; a read-only participant's edit is refused locally.
    @Test func aRecordShareInACacheFollowsItsHierarchy() async throws {
        try await withServer { server in
            let alice = try await server.container(forNewUser: "alice")
            let carol = try await server.container(forNewUser: "carol")
            let bob = try await server.container(forNewUser: "bob")
            let aliceID = try await alice.userRecordID().recordName
            let lists = ZoneID(zoneName: "Lists")
            let theirs = ZoneID(zoneName: "Lists", ownerRecordName: aliceID)
            _ = try await alice.privateCloudDatabase.modifyRecordZones(saving: [RecordZone(zoneName: "Lists")], deleting: [])
            let root = Record(recordType: "List", recordID: Record.ID(recordName: "groceries", zoneID: lists))
            var milk = Record(recordType: "Item", recordID: Record.ID(recordName: "milk", zoneID: lists))
            milk.parent = "groceries"
            let secret = Record(recordType: "Item", recordID: Record.ID(recordName: "secret", zoneID: lists))
            _ = try await alice.privateCloudDatabase.modifyRecords(saving: [root, milk, secret], deleting: [])
            var share = Share(rootRecord: root, recordName: "groceries-share")
            share.participants = [.user(try await carol.userRecordID().recordName, permission: .readOnly),
                                  .user(try await bob.userRecordID().recordName, permission: .readWrite)]
            let guid = try #require(try await alice.privateCloudDatabase.save(share).shortGUID)
            _ = try #require(try await carol.acceptShares([guid]).first).get()
            _ = try #require(try await bob.acceptShares([guid]).first).get()
            let bobsEngine = SyncEngine(database: bob.sharedCloudDatabase, cache: try RecordCache(path: ":memory:", sharedDatabase: true))
            try await bobsEngine.fetchChanges()

            let engine = SyncEngine(database: carol.sharedCloudDatabase, cache: try RecordCache(path: ":memory:", sharedDatabase: true))
            try await engine.fetchChanges()
            #expect(try await engine.cache.allRecords(inZoneWith: theirs).map(\.recordName) == ["groceries", "groceries-share", "milk"])
            var edited = try #require(try await engine.cache.record(for: Record.ID(recordName: "milk", zoneID: theirs)))
            edited["note"] = .string("oat")
            let refused = await #expect(throws: RecordSyncError.self) { try await engine.save(edited) }
            #expect(refused?.code == .accessDenied && refused?.reason.contains("share 'groceries-share' read-only") == true, "\(String(describing: refused))")
            // Bob (read-write) edits the milk offline; Alice takes it off the list: it leaves both
            // caches, and Bob's fetch reports the edit it dropped.
            var bobsMilk = try #require(try await bobsEngine.cache.record(for: Record.ID(recordName: "milk", zoneID: theirs)))
            bobsMilk["note"] = .string("oat")
            try await bobsEngine.save(bobsMilk)
            _ = try await alice.privateCloudDatabase.modify([RecordOperation(.forceUpdate, RecordPayload(recordName: "milk", recordType: "Item", fields: [:], parent: .remove))],
                                                            inZoneWith: lists)
            let report = try await engine.fetchChanges()
            #expect(report.deletedRecordCount == 1, "\(report)")
            #expect(try await engine.cache.allRecords(inZoneWith: theirs).map(\.recordName) == ["groceries", "groceries-share"])
            let bobs = try await bobsEngine.fetchChanges()
            #expect(bobs.droppedEdits == [Record.ID(recordName: "milk", zoneID: theirs)], "\(bobs)")
            #expect(try await bobsEngine.cache.allRecords(inZoneWith: theirs).map(\.recordName) == ["groceries", "groceries-share"])
            #expect(try await bobsEngine.cache.pendingChangeCount() == 0)
        }
    }
}
