import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RecordClient
import TestSupport
import Testing

/// The CloudKit-shaped database API against a live server.
@Suite struct DatabaseTests {
    @Test func anArtistWithArtworksListedSourcesFirstIsSavedInOneBatch() async throws {
        try await withServer { server in
            let database = try await server.container(forNewUser: "alice").privateCloudDatabase
            try await database.save(RecordZone(zoneID: Gallery.zone))
            let works = (1...3).map { Gallery.artwork("work\($0)", by: "monet", action: .validate) }
            let (saves, deletes) = try await database.modifyRecords(saving: works + [Gallery.artist("monet")], deleting: [])
            #expect(deletes.isEmpty)
            #expect(saves.count == 4)
            #expect(saves.values.allSatisfy { (try? $0.get()) != nil })
            let saved = try saves[works[0].recordID]?.get()
            #expect(saved?.recordChangeTag != nil)
            #expect(saved?.created?.userRecordName == (try await database.container.userRecordID().recordName))
        }
    }

    @Test func aThousandRecordBatchIsSplitIntoRequestsWithReferencesIntact() async throws {
        try await withServer(configure: { $0.limits.maximumOperationsPerRequest = 100 }) { server in
            var database = try await server.container(forNewUser: "alice").privateCloudDatabase
            database.maximumOperationsPerRequest = 100
            try await database.save(RecordZone(zoneID: Gallery.zone))
            // Sources listed first: 990 artworks, then their 10 artists.
            let artworks = (0..<990).map { Gallery.artwork("w\($0)", by: "a\($0 % 10)", action: .validate) }
            let artists = (0..<10).map { Gallery.artist("a\($0)") }
            let (saves, _) = try await database.modifyRecords(saving: artworks + artists, deleting: [])
            #expect(saves.count == 1000)
            let failures = saves.values.compactMap { result -> RecordSyncError? in if case .failure(let error) = result { error } else { nil } }
            #expect(failures.isEmpty, "\(failures.prefix(3))")
            // The answers carry system fields only; each saved record comes back with the
            // fields it was sent with (filled in by the client), in every request.
            let sent = Dictionary(uniqueKeysWithValues: (artworks + artists).map { ($0.recordID, $0.fields) })
            let wrong = saves.keys.filter { (try? saves[$0]?.get())?.fields != sent[$0] }.map(\.recordName)
            #expect(wrong.count == 0, "fields differ for \(wrong.prefix(3))")
            let query = RecordQuery(recordType: "Artwork", predicate: try RecordPredicate(format: "artist == %@", Record.ID(recordName: "a3", zoneID: Gallery.zone)))
            #expect(try await database.allRecords(matching: query, inZoneWith: Gallery.zone).count == 99)
        }
    }

    /// A large request body travels gzip-compressed: this server takes bodies of 24 KiB, and
    /// the 60 KiB batch gets past that limit only compressed (it is then refused for its
    /// decompressed size, which shows it arrived compressed). A small batch is sent as is.
    @Test func aLargeRequestBodyIsSentCompressed() async throws {
        try await withServer(configure: { $0.maximumBodyBytes = 24 * 1024 }) { server in
            let database = try await server.container(forNewUser: "alice").privateCloudDatabase
            try await database.save(RecordZone(zoneID: Gallery.zone))
            let artists = (0..<100).map { index in
                var artist = Gallery.artist("a\(index)")
                artist["biography"] = .string(String(repeating: "painter of light ", count: 35))
                return artist
            }
            await #expect {
                try await database.modifyRecords(saving: artists, deleting: [])
            } throws: { error in
                guard let error = error as? RecordSyncError else { return false }
                return error.code == .limitExceeded && error.reason.contains("once decompressed")
            }
            let (saves, _) = try await database.modifyRecords(saving: Array(artists.prefix(5)), deleting: [])
            #expect(saves.values.allSatisfy { (try? $0.get()) != nil })
        }
    }

    /// An answer of 16 KiB or more travels gzip-compressed (to URLSession, which asks for it and
    /// decompresses it, and to the client library, which does the same), and the client reads
    /// it whole.
    @Test func aLargeAnswerArrivesCompressedAndReadsWhole() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let database = Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token)).privateCloudDatabase
            try await database.save(RecordZone(zoneID: Gallery.zone))
            let biography = String(repeating: "painter of light ", count: 35)
            let artists = (0..<100).map { index in
                var artist = Gallery.artist("a\(index)")
                artist["biography"] = .string(biography)
                return artist
            }
            _ = try await database.modifyRecords(saving: artists, deleting: [])
            var request = URLRequest(url: server.url.appendingPathComponent("database/1/iCloud.test/development/private/records/changes"))
            request.httpMethod = "POST"
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            request.httpBody = Data(#"{"zoneID": {"zoneName": "\#(Gallery.zone.zoneName)"}}"#.utf8)
            let (data, response) = try await URLSession(configuration: .ephemeral).data(for: request)
            #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Encoding") == "gzip")
            #expect(data.count > 16 * 1024)  // as decompressed by URLSession
            let page = try await database.recordZoneChanges(inZoneWith: Gallery.zone, since: nil)
            #expect(page.modifications.count == 100)
            #expect(page.modifications.allSatisfy { $0["biography"] == .string(biography) })
        }
    }

    /// A saved record comes back with the fields the server stored, every type included, though
    /// the answer carries only its system fields (the client fills in what it sent); an update,
    /// which keeps stored fields it does not name, comes back with them from the server.
    @Test func aSavedRecordComesBackAsTheServerStoredIt() async throws {
        try await withServer { server in
            let database = try await server.container(forNewUser: "alice").privateCloudDatabase
            try await database.save(RecordZone(zoneID: Gallery.zone))
            var record = Gallery.artwork("lilies", by: "monet")
            record["year"] = .int64(1906)
            record["price"] = .double(2.5e6 / 3)
            record["whole"] = .double(2)
            record["shown"] = .timestamp(1_700_000_000_123)
            record["thumbnail"] = .bytes(Data([0, 1, 2, 255]))
            record["framed"] = .boolean(true)
            record["place"] = .location(Location(latitude: 48.85, longitude: 2.35, altitude: -1.5))
            record["tags"] = .list(.string, [.string("oil"), .string("water é")])
            record["sizes"] = .list(.double, [.double(0.1), .double(-0.0)])
            let (saves, _) = try await database.modifyRecords(saving: [record], deleting: [])
            let saved = try #require(try saves[record.recordID]?.get())
            let fetched = try #require(try await database.records(for: [record.recordID]).records.first)
            #expect(saved.fields == fetched.fields)
            #expect(saved.recordChangeTag == fetched.recordChangeTag && saved.modified == fetched.modified && saved.created == fetched.created)

            // An update naming one field: the answer's fields are the server's merge.
            var update = Record(recordType: "Artwork", recordID: record.recordID)
            update.recordChangeTag = saved.recordChangeTag
            update["title"] = .string("Water Lilies")
            let operation = RecordOperation(.update, RecordPayload(update))
            let results = try await database.modify([operation], inZoneWith: Gallery.zone, atomically: true)
            guard case .success(let merged)? = results.first?.result else { Issue.record("update failed: \(results)"); return }
            #expect(merged.fields["year"] == .int64(1906) && merged.fields["title"] == .string("Water Lilies"))
        }
    }

    /// An operation that cannot be encoded (a non-finite number) fails its request only; the
    /// batch's other requests are sent.
    @Test func anUnencodableRecordFailsOnlyItsRequest() async throws {
        try await withServer { server in
            var database = try await server.container(forNewUser: "alice").privateCloudDatabase
            database.maximumOperationsPerRequest = 1
            try await database.save(RecordZone(zoneID: Gallery.zone))
            var broken = Gallery.artist("broken")
            broken["rating"] = .double(.nan)
            let (saves, _) = try await database.modifyRecords(saving: [Gallery.artist("monet"), broken], deleting: [])
            #expect((try? saves[Gallery.artist("monet").recordID]?.get()) != nil)
            guard case .failure(let error)? = saves[broken.recordID] else { Issue.record("the broken record was not refused"); return }
            #expect(error.code == .badRequest && error.reason.contains("could not be encoded"), "\(error.reason)")
        }
    }

    @Test func aCycleLargerThanARequestIsRefusedBeforeSending() async throws {
        try await withServer { server in
            var database = try await server.container(forNewUser: "alice").privateCloudDatabase
            database.maximumOperationsPerRequest = 2
            let ring = (0..<3).map { i in
                var record = Record(recordType: "Node", recordID: Record.ID(recordName: "n\(i)"))
                record["next"] = .reference(Record.Reference(recordID: Record.ID(recordName: "n\((i + 1) % 3)"), action: .none))
                return record
            }
            await #expect { try await database.modifyRecords(saving: ring, deleting: []) } throws: { ($0 as? RecordSyncError)?.code == .limitExceeded }
        }
    }

    @Test func fetchedRecordsComeTargetsFirstWithFailedIDsToRetry() async throws {
        try await withServer { server in
            let database = try await server.container(forNewUser: "alice").privateCloudDatabase
            try await database.save(RecordZone(zoneID: Gallery.zone))
            _ = try await database.modifyRecords(saving: [Gallery.artist("monet"), Gallery.artwork("lilies", by: "monet")], deleting: [])
            let missing = Record.ID(recordName: "missing", zoneID: Gallery.zone)
            let fetched = try await database.records(for: [Record.ID(recordName: "lilies", zoneID: Gallery.zone), missing, Record.ID(recordName: "monet", zoneID: Gallery.zone)])
            #expect(fetched.records.map(\.recordName) == ["monet", "lilies"])
            #expect(fetched.failedIDs == [missing])
            #expect(fetched.errors[missing]?.code == .notFound)
            let included = try await database.records(for: [Record.ID(recordName: "lilies", zoneID: Gallery.zone)], including: ["artist"])
            #expect(included.includedRecords.map(\.recordName) == ["monet"])
        }
    }

    @Test func aStaleSaveThrowsAConflictCarryingBothRecords() async throws {
        try await withServer { server in
            let database = try await server.container(forNewUser: "alice").privateCloudDatabase
            let saved = try await database.save(Gallery.artist("monet", in: .defaultZone))
            var first = saved
            first["name"] = .string("Claude Monet")
            try await database.save(first)
            var stale = saved
            stale["name"] = .string("C. Monet")
            await #expect { try await database.save(stale) } throws: { error in
                guard let error = error as? RecordSyncError else { return false }
                return error.code == .conflict && error.serverRecord?.fields["name"] == .string("Claude Monet") && error.clientRecord?.fields["name"] == .string("C. Monet")
            }
        }
    }

    @Test func queriesPageWithCursors() async throws {
        try await withServer { server in
            let database = try await server.container(forNewUser: "alice").privateCloudDatabase
            var records: [Record] = []
            for i in 0..<25 {
                var record = Record(recordType: "Item", recordID: Record.ID(recordName: String(format: "i%02d", i)))
                record["rank"] = .int64(Int64(i))
                records.append(record)
            }
            _ = try await database.modifyRecords(saving: records, deleting: [])
            let query = RecordQuery(recordType: "Item", predicate: try RecordPredicate(format: "rank >= %@", 5), sortDescriptors: [RecordSortDescriptor(key: "rank", ascending: false)])
            let (first, cursor) = try await database.records(matching: query, resultsLimit: 7)
            #expect(first.map(\.0.recordName) == (18...24).reversed().map { String(format: "i%02d", $0) })
            var all = first.map(\.0.recordName)
            var next = cursor
            while let current = next {
                let page = try await database.records(continuingMatchFrom: current, resultsLimit: 7)
                all += page.matchResults.map(\.0.recordName)
                next = page.queryCursor
            }
            #expect(all == (5...24).reversed().map { String(format: "i%02d", $0) })
        }
    }

    @Test func zonesAreCreatedListedAndDeleted() async throws {
        try await withServer { server in
            let database = try await server.container(forNewUser: "alice").privateCloudDatabase
            try await database.save(RecordZone(zoneName: "A"))
            #expect(try await database.allRecordZones().map(\.zoneID.zoneName) == ["A", "_defaultZone"])
            try await database.deleteRecordZone(withID: ZoneID(zoneName: "A"))
            #expect(try await database.allRecordZones().map(\.zoneID.zoneName) == ["_defaultZone"])
        }
    }
}
