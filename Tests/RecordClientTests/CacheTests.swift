import Foundation
import RecordClient
import TestSupport
import Testing

/// The local cache: queries answered like the server, observation, Codable records end to end.
@Suite struct CacheTests {
    static func seed(_ database: Database) async throws {
        try await database.save(RecordZone(zoneID: Gallery.zone))
        var records: [Record] = []
        for i in 0..<3 { records.append(Gallery.artist("artist\(i)")) }
        for i in 0..<30 {
            var work = Gallery.artwork("w\(i)", by: "artist\(i % 3)")
            work["year"] = .int64(Int64(1880 + i % 7))
            work["price"] = .double(Double(i) * 2.5)
            work["tags"] = .list(.string, (i % 2 == 0 ? ["oil"] : ["ink", "paper"]).map { .string($0) })
            if i % 4 != 0 { work["framed"] = .boolean(i % 3 == 0) }
            records.append(work)
        }
        _ = try await database.modifyRecords(saving: records, deleting: [])
    }

    @Test func aSyncedCacheAnswersQueriesExactlyAsTheServerDoes() async throws {
        try await withServer { server in
            let container = try await server.container(forNewUser: "alice")
            try await Self.seed(container.privateCloudDatabase)
            let engine = SyncEngine(database: container.privateCloudDatabase, cache: try RecordCache(path: ":memory:"))
            try await engine.fetchChanges()
            let artist = Record.ID(recordName: "artist1", zoneID: Gallery.zone)
            let queries: [RecordQuery] = [
                RecordQuery(recordType: "Artwork"),
                RecordQuery(recordType: "Artwork", predicate: try RecordPredicate(format: "artist == %@", artist)),
                RecordQuery(recordType: "Artwork", predicate: try RecordPredicate(format: "year >= %@ AND price < 50", 1883),
                            sortDescriptors: [RecordSortDescriptor(key: "year", ascending: false), RecordSortDescriptor(key: "price")]),
                RecordQuery(recordType: "Artwork", predicate: try RecordPredicate(format: "tags CONTAINS 'ink' AND NOT title BEGINSWITH 'w1'"),
                            sortDescriptors: [RecordSortDescriptor(key: "framed"), RecordSortDescriptor(key: "recordName", ascending: false)]),
                RecordQuery(recordType: "Artwork", predicate: try RecordPredicate(format: "year IN %@", [1880, 1881])),
                RecordQuery(recordType: "Artist", sortDescriptors: [RecordSortDescriptor(key: "name", ascending: false)]),
                // System fields by the schema's names (`___recordID` compares references).
                RecordQuery(recordType: "Artwork", predicate: try RecordPredicate(format: "___recordID == %@ OR ___recordID IN %@", Record.ID(recordName: "w3", zoneID: Gallery.zone),
                                                                                  [Record.ID(recordName: "w5", zoneID: Gallery.zone), Record.ID(recordName: "w7", zoneID: Gallery.zone)]),
                            sortDescriptors: [RecordSortDescriptor(key: "___recordID", ascending: false)]),
                RecordQuery(recordType: "Artwork", predicate: try RecordPredicate(format: "___modTime > %@ AND year == 1881", Date(timeIntervalSince1970: 0)),
                            sortDescriptors: [RecordSortDescriptor(key: "___createTime", ascending: false), RecordSortDescriptor(key: "recordName")]),
            ]
            for query in queries {
                let remote = try await container.privateCloudDatabase.allRecords(matching: query, inZoneWith: Gallery.zone)
                let local = try await engine.cache.records(matching: query, inZoneWith: Gallery.zone)
                #expect(!remote.isEmpty, "\(query)")
                #expect(local.map(\.recordName) == remote.map(\.recordName), "\(query.wire)")
                #expect(local.map(\.fields) == remote.map(\.fields))
                #expect(local.map(\.recordChangeTag) == remote.map(\.recordChangeTag))
            }
        }
    }

    @Test func observingAQueryYieldsNewResultsWhenTheCacheChanges() async throws {
        let cache = try RecordCache(path: ":memory:")
        let query = RecordQuery(recordType: "Note", sortDescriptors: [RecordSortDescriptor(key: "recordName")])
        var iterator = cache.observe(query).makeAsyncIterator()
        #expect(try await iterator.next()?.isEmpty == true)
        try await cache.save(Record(recordType: "Note", recordID: Record.ID(recordName: "a")))
        #expect(try await iterator.next()?.map(\.recordName) == ["a"])
        try await cache.save(Record(recordType: "Note", recordID: Record.ID(recordName: "b")))
        #expect(try await iterator.next()?.map(\.recordName) == ["a", "b"])
        try await cache.delete(Record.ID(recordName: "a"))
        #expect(try await iterator.next()?.map(\.recordName) == ["b"])
        #expect(try await cache.pendingChangeCount() == 3)
    }

    @Test func aLocalEditAndItsOutboxEntryAreOneTransaction() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/cache.sqlite"
            do {
                let cache = try RecordCache(path: path)
                var note = Record(recordType: "Note", recordID: Record.ID(recordName: "n"))
                note["text"] = .string("hello")
                try await cache.save(note)
            }
            // A new process opening the same file sees the record and its queued save.
            let reopened = try RecordCache(path: path)
            #expect(try await reopened.record(for: Record.ID(recordName: "n"))?["text"] == .string("hello"))
            #expect(try await reopened.pendingChangeCount() == 1)
        }
    }

    struct Artwork: Codable, Equatable {
        enum Medium: String, Codable { case oil, ink }
        var title: String
        var year: Int
        var price: Double?
        var medium: Medium
        var framed: Bool
        var acquired: Date
        var artist: Record.Reference
        var tags: [String]
    }

    @Test func codableStructsTravelThroughTheServerAndTheCache() async throws {
        try await withServer { server in
            let container = try await server.container(forNewUser: "alice")
            let database = container.privateCloudDatabase
            let artwork = Artwork(title: "Water Lilies", year: 1906, price: nil, medium: .oil, framed: true,
                                  acquired: Date(timeIntervalSince1970: 1_700_000_000.123), artist: Record.Reference(recordID: Record.ID(recordName: "monet"), action: .deleteSelf),
                                  tags: ["pond", "flowers"])
            let record = try Record(encoding: artwork, recordType: "Artwork", recordID: Record.ID(recordName: "lilies"))
            try await database.save(record)
            let fetched = try await database.record(for: Record.ID(recordName: "lilies"))
            #expect(try fetched.decode(Artwork.self) == artwork)
            let engine = SyncEngine(database: database, cache: try RecordCache(path: ":memory:"))
            try await engine.fetchChanges()
            let cached = try #require(try await engine.cache.record(for: Record.ID(recordName: "lilies")))
            #expect(try cached.decode(Artwork.self) == artwork)
        }
    }
}
