import Foundation
import RecordModel
import Testing

/// Item 7: zone and database change feeds, tokens.
@Suite struct ChangeFeedTests {
    @Test func changesArriveOldestFirstWithTombstonesAndPageTokens() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([.artist("a"), .artist("b"), .artist("c")])
            let start = try await alice.allChanges()
            try await alice.save([.artist("d")])
            _ = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "a"))])
            try await alice.save([.artist("b", "B2")])

            let first = try await alice.post("records/changes", RecordChangesRequest(syncToken: start.token, resultsLimit: 2)).decode(ZoneChanges.self)
            #expect(first.records.map(\.recordName) == ["d", "a"])
            #expect(first.records[1].deleted && first.records[1].recordType == "Artist")
            #expect(first.moreComing)
            let second = try await alice.post("records/changes", RecordChangesRequest(syncToken: first.syncToken, resultsLimit: 2)).decode(ZoneChanges.self)
            #expect(second.records.map(\.recordName) == ["b"])
            #expect(second.records.first?.fields["name"] == .string("B2"))
            #expect(!second.moreComing)
            let idle = try await alice.post("records/changes", RecordChangesRequest(syncToken: second.syncToken)).decode(ZoneChanges.self)
            #expect(idle.records.isEmpty && !idle.moreComing)
            #expect(idle.syncToken == second.syncToken)
        }
    }

    @Test func theFirstFetchDoesNotReplayTombstonesOfGoneRecords() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([.artist("gone"), .artist("kept"), .artist("also-kept")])
            _ = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "gone"))])
            // Page by one so the tombstone would fall after the first page's token.
            let all = try await alice.allChanges(pageSize: 1)
            #expect(all.records.map(\.recordName) == ["kept", "also-kept"])
            // A deletion after the first fetch began is delivered.
            _ = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "kept"))])
            let later = try await alice.allChanges(since: all.token)
            #expect(later.records.map(\.recordName) == ["kept"])
            #expect(later.records.first?.deleted == true)
        }
    }

    /// A record saved again after its deletion replaces its tombstone in the feed.
    @Test func aRecordSavedAgainAfterItsDeletionIsNoLongerATombstone() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([.artist("monet"), .artist("manet")])
            let before = try await alice.allChanges()
            _ = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "monet"))])
            try await alice.save([.artist("monet", "Claude Monet")])
            // Since a token from before the deletion, the name appears once, as the record.
            let since = try await alice.allChanges(since: before.token, pageSize: 1)
            #expect(since.records.map(\.recordName) == ["monet"])
            #expect(since.records.first?.deleted == false)
            #expect(since.records.first?.fields["name"] == .string("Claude Monet"))
        }
    }

    /// A page ends once its records' field text passes the byte limit (after at least one
    /// record, however large); the pages still hold every change once, in order.
    @Test func aPageEndsAtTheByteLimit() async throws {
        try await withServer(configure: { $0.limits.maximumChangePageBytes = 150 }) { server in
            let alice = try await server.user("alice")
            try await alice.createZones("A")
            var records = (0..<20).map { Record.artist("r\($0)", "artist number \($0)") }
            records[7] = .artist("r7", String(repeating: "x", count: 400))
            try await alice.save(records, zone: "A")
            var token: String?
            var pages: [[String]] = []
            while true {
                let page = try await alice.post("records/changes", RecordChangesRequest(zoneID: ZoneID(zoneName: "A"), syncToken: token)).decode(ZoneChanges.self)
                pages.append(page.records.map(\.recordName))
                token = page.syncToken
                if !page.moreComing { break }
            }
            #expect(pages.joined().map { $0 } == records.map(\.recordName))
            #expect(pages.count > 5 && pages.allSatisfy { $0.count <= 4 })
            #expect(pages.contains(["r7"]))
        }
    }

    /// `changes/zone` writes each zone's page from the stored field text; its pages are those
    /// `records/changes` answers, byte for byte, with `numbersAsStrings` and `desiredKeys` too.
    @Test func changesZoneAnswersWhatRecordsChangesAnswers() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("A")
            try await alice.save((0..<30).map { Record(recordName: "p\($0)", recordType: "Painting", fields: [
                "title": .string("t\($0) \u{e9}\"q\""), "year": .int64(Int64(1800 + $0)), "price": .double(Double($0) / 3),
                "artist": .reference(Reference(recordName: "a\($0 % 3)")),
            ]) }, zone: "A")
            _ = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "p4"))], zone: "A")
            for extra in ["", #", "numbersAsStrings": true"#, #", "desiredKeys": ["title"]"#, #", "resultsLimit": 7"#] {
                let single = try await alice.post("records/changes", #"{"zoneID": {"zoneName": "A"}\#(extra)}"#)
                let zones = try await alice.post("changes/zone", #"{"zones": [{"zoneID": {"zoneName": "A"}\#(extra)}]}"#)
                #expect(single.status == 200 && zones.status == 200)
                // `{"zones":[` PAGE `]}`
                #expect(Data(zones.data.dropFirst(10).dropLast(2)) == single.data, "\(extra)")
                #expect(zones.data.starts(with: Data(#"{"zones":["#.utf8)) && zones.data.suffix(2) == Data("]}".utf8))
                // ZoneChangesResponse (the client's reading of it) writes the same bytes again
                // (numbers as strings read back as numbers, so that answer is left out).
                if !extra.contains("numbersAsStrings") {
                    let decoded = try JSONValueDecoder().decode(ZoneChangesResponse.self, from: zones.data)
                    #expect(try JSONValueEncoder().encode(decoded) == zones.data, "\(extra)")
                }
            }
        }
    }

    @Test func changesZoneAnswersPerZoneWithErrorsInPlace() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("A")
            try await alice.save([.artist("x")], zone: "A")
            let reply = try await alice.post("changes/zone", #"""
                {"zones": [{"zoneID": {"zoneName": "A"}, "desiredRecordTypes": ["Artist"]}, {"zoneID": {"zoneName": "Missing"}},
                           {"zoneID": {"zoneName": "A"}, "syncToken": "garbage"}]}
                """#)
            #expect(reply.status == 200)
            let zones = try reply.decode(ZoneChangesResponse.self).zones
            guard case .success(let a) = zones[0], case .failure(let missing) = zones[1], case .failure(let garbage) = zones[2] else {
                Issue.record("unexpected \(zones)")
                return
            }
            #expect(a.records.map(\.recordName) == ["x"])
            #expect(missing.code == .zoneNotFound && missing.zoneID?.zoneName == "Missing")
            #expect(garbage.code == .badRequest)
        }
    }

    @Test func tokensFromOtherZonesRecreatedZonesAndGarbageAreRefused() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("A", "B")
            try await alice.save([.artist("x")], zone: "A")
            let tokenA = try await alice.allChanges(zone: "A").token

            let other = try await alice.post("records/changes", RecordChangesRequest(zoneID: ZoneID(zoneName: "B"), syncToken: tokenA))
            #expect(other.code == "BAD_REQUEST")
            #expect(other.reason.contains("another zone"))

            for hostile in ["", "x", String(repeating: "Z", count: 100_000), "' OR 1=1 --", "\u{0}\u{1}"] {
                let reply = try await alice.post("records/changes", RecordChangesRequest(zoneID: ZoneID(zoneName: "A"), syncToken: hostile))
                #expect(reply.code == "BAD_REQUEST")
            }

            let deleted = try await alice.post("zones/modify", ModifyZonesRequest(operations: [.init(.delete, ZoneID(zoneName: "A"))]))
            #expect(deleted.status == 200)
            let gone = try await alice.post("records/changes", RecordChangesRequest(zoneID: ZoneID(zoneName: "A"), syncToken: tokenA))
            #expect(gone.code == "ZONE_NOT_FOUND")
            try await alice.createZones("A")
            let expired = try await alice.post("records/changes", RecordChangesRequest(zoneID: ZoneID(zoneName: "A"), syncToken: tokenA))
            #expect(expired.code == "CHANGE_TOKEN_EXPIRED")
            // The recreated zone is empty: its records went with the old incarnation.
            #expect(try await alice.allChanges(zone: "A").records.isEmpty)
        }
    }

    @Test func aReaderPagingWhileWritersCommitSeesEveryChangeExactlyOnce() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let writers = 4
            let perWriter = 60
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for i in 0..<perWriter {
                            // Each record is created once and never changed again, so every
                            // change is a distinct record.
                            try await alice.save([.artist("w\(writer)-\(i)")])
                        }
                    }
                }
                group.addTask {
                    var seen: [String] = []
                    var token: String?
                    while seen.count < writers * perWriter {
                        let page = try await alice.post("records/changes", RecordChangesRequest(syncToken: token, resultsLimit: 7)).decode(ZoneChanges.self)
                        seen += page.records.map(\.recordName)
                        token = page.syncToken
                        if !page.moreComing { try await Task.sleep(for: .milliseconds(2)) }
                    }
                    #expect(seen.count == writers * perWriter)
                    #expect(Set(seen).count == seen.count, "a change was delivered twice")
                }
                try await group.waitForAll()
            }
        }
    }

    /// A user's very first request creates the database with its `_defaultZone`; its token
    /// covers that zone, so the next fetch with it is empty.
    @Test func theFirstDatabaseFetchCoversTheDefaultZone() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let first = try await alice.post("changes/database", "{}").decode(DatabaseChanges.self)
            #expect(first.zones.map(\.zoneID.zoneName) == ["_defaultZone"])
            let next = try await alice.post("changes/database", DatabaseChangesRequest(syncToken: first.syncToken)).decode(DatabaseChanges.self)
            #expect(next.zones.isEmpty && next.syncToken == first.syncToken)
        }
    }

    @Test func databaseChangesReportChangedAndDeletedZones() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("A", "B", "Doomed")
            _ = try await alice.post("zones/modify", ModifyZonesRequest(operations: [.init(.delete, ZoneID(zoneName: "Doomed"))]))
            let first = try await alice.post("changes/database", "{}").decode(DatabaseChanges.self)
            // The first fetch lists live zones only.
            #expect(first.zones.map(\.zoneID.zoneName).sorted() == ["A", "B", "_defaultZone"])
            #expect(!first.moreComing)

            try await alice.save([.artist("x")], zone: "B")
            _ = try await alice.post("zones/modify", ModifyZonesRequest(operations: [.init(.delete, ZoneID(zoneName: "A"))]))
            let next = try await alice.post("changes/database", DatabaseChangesRequest(syncToken: first.syncToken)).decode(DatabaseChanges.self)
            #expect(next.zones == [ChangedZone(zoneID: ZoneID(zoneName: "B", ownerRecordName: alice.userRecordName)),
                                   ChangedZone(zoneID: ZoneID(zoneName: "A", ownerRecordName: alice.userRecordName), deleted: true)])

            let paged = try await alice.post("changes/database", DatabaseChangesRequest(syncToken: first.syncToken, resultsLimit: 1)).decode(DatabaseChanges.self)
            #expect(paged.zones.count == 1 && paged.moreComing)
            let zoneToken = try await alice.allChanges(zone: "B").token
            let wrongKind = try await alice.post("changes/database", DatabaseChangesRequest(syncToken: zoneToken))
            #expect(wrongKind.code == "BAD_REQUEST")
        }
    }

    @Test func zonesCanBeListedLookedUpCreatedAndDeleted() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("A")
            try await alice.createZones("A")  // creating an existing zone is harmless
            let list = try await alice.post("zones/list", "").decode(ZonesResponse.self)
            #expect(list.zones.compactMap { $0.zone?.zoneID.zoneName } == ["A", "_defaultZone"])
            let lookup = try await alice.post("zones/lookup", LookupZonesRequest(zones: [ZoneID(zoneName: "A"), ZoneID(zoneName: "nope")])).decode(ZonesResponse.self)
            #expect(lookup.zones[0].zone?.syncToken != nil)
            guard case .failure(let error) = lookup.zones[1] else { Issue.record("expected an error"); return }
            #expect(error.code == .zoneNotFound)
            let defaultDelete = try await alice.post("zones/modify", ModifyZonesRequest(operations: [.init(.delete, .defaultZone)])).decode(ZonesResponse.self)
            guard case .failure(let refused) = defaultDelete.zones[0] else { Issue.record("expected an error"); return }
            #expect(refused.code == .badRequest)
            let records = try await alice.post("records/modify", ModifyRecordsRequest(operations: [RecordOperation(.create, RecordPayload(.artist("x")))], zoneID: ZoneID(zoneName: "nope")))
            #expect(records.code == "ZONE_NOT_FOUND")
        }
    }
}
