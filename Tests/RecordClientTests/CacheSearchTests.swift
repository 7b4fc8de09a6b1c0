import Foundation
import class GRDB.DatabaseQueue
import RecordClient
import TestSupport
import Testing

/// Word searches and places in the cache, and a cache written before the search tables existed.
@Suite struct CacheSearchTests {
    static func records() -> [Record] {
        var lilies = Record(recordType: "Artwork", recordID: Record.ID(recordName: "lilies", zoneID: Gallery.zone))
        lilies["title"] = .string("Water Lilies")
        lilies["spot"] = .location(Location(latitude: 49.0756, longitude: 1.5337))
        var mona = Record(recordType: "Artwork", recordID: Record.ID(recordName: "mona", zoneID: Gallery.zone))
        mona["title"] = .string("Mona Lisa")
        mona["spot"] = .location(Location(latitude: 48.8606, longitude: 2.3376))
        return [lilies, mona]
    }

    static let searches = [
        RecordQuery(recordType: "Artwork", predicate: try! RecordPredicate(format: "self CONTAINS 'WATER'")),
        RecordQuery(recordType: "Artwork", predicate: try! RecordPredicate(format: "distanceToLocation:fromLocation:(spot, %@) < 1",
                                                                          Location(latitude: 48.86, longitude: 2.34))),
        RecordQuery(recordType: "Artwork", sortDescriptors: [RecordSortDescriptor(key: "spot", relativeLocation: Location(latitude: 48.86, longitude: 2.34))]),
    ]

    @Test func aCacheOfAnEarlierReleaseIndexesItsRecordsWhenOpened() async throws {
        try await withServer { server in
            let container = try await server.container(forNewUser: "alice")
            let database = container.privateCloudDatabase
            try await database.save(RecordZone(zoneID: Gallery.zone))
            _ = try await database.modifyRecords(saving: Self.records(), deleting: [])
            try await withTemporaryDirectory { directory in
                let path = directory + "/cache.sqlite"
                var answers: [[String]] = []
                do {
                    let engine = SyncEngine(database: database, cache: try RecordCache(path: path))
                    try await engine.fetchChanges()
                    for query in Self.searches {
                        let remote = try await database.allRecords(matching: query, inZoneWith: Gallery.zone).map(\.recordName)
                        answers.append(try await engine.cache.records(matching: query, inZoneWith: Gallery.zone).map(\.recordName))
                        #expect(answers.last == remote, "\(query.wire)")
                    }
                    #expect(answers == [["lilies"], ["mona"], ["mona", "lilies"]])
                    // The type is searchable now: a record fetched later (a page read for the cache
                    // alone, its words read from the fields' text) is found by its words.
                    var sunrise = Record(recordType: "Artwork", recordID: Record.ID(recordName: "sunrise", zoneID: Gallery.zone))
                    sunrise["title"] = .string("Sunrise on the water")
                    _ = try await database.modifyRecords(saving: [sunrise], deleting: [])
                    try await engine.fetchChanges()
                    let found = try await engine.cache.records(matching: Self.searches[0], inZoneWith: Gallery.zone).map(\.recordName)
                    #expect(Set(found) == ["lilies", "sunrise"])
                    answers = []
                    for query in Self.searches { answers.append(try await database.allRecords(matching: query, inZoneWith: Gallery.zone).map(\.recordName)) }
                }
                // The cache as the release before the search tables left it: migration v1 only.
                let queue = try DatabaseQueue(path: path)
                try await queue.write { db in
                    try db.execute(sql: """
                        DROP TABLE search_tokens; DROP TABLE search_locations; DROP TABLE search_types; ALTER TABLE records DROP COLUMN parent;
                        DROP TABLE share_permissions;
                        CREATE TABLE zones_v1(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, token TEXT);
                        INSERT INTO zones_v1 SELECT id, name, token FROM zones; DROP TABLE zones; ALTER TABLE zones_v1 RENAME TO zones;
                        DELETE FROM grdb_migrations WHERE identifier <> 'v1'
                        """)
                }
                try await queue.close()
                let reopened = try RecordCache(path: path)
                for (query, answer) in zip(Self.searches, answers) {
                    #expect(try await reopened.records(matching: query, inZoneWith: Gallery.zone).map(\.recordName) == answer, "\(query.wire)")
                }
            }
        }
    }
}
