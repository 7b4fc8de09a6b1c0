import Foundation
import RecordClient

// The complete example of docs/client.md, compiled and run by GuideTests. The text between
// the markers must stay identical to the guide's example (GuideTests checks it).

// BEGIN EXAMPLE
/// An artist, stored as a record of type "Artist".
struct Artist: Codable {
    var name: String
    var born: Int?
}

/// An artwork, owned by its artist: deleting the artist deletes it (DELETE_SELF).
struct Artwork: Codable {
    var title: String
    var year: Int
    var artist: Record.Reference
}

/// Creates a gallery, keeps a local cache in sync, and returns the titles the cache listed
/// and how many artworks are left after the artist's deletion.
func runGallery(serverURL: URL, token: String, cachePath: String) async throws -> (titles: [String], left: Int) {
    let container = Container(serverURL: serverURL, identifier: "iCloud.com.example.Gallery",
                              credentials: .bearerToken(token))
    let database = container.privateCloudDatabase
    let zone = RecordZone(zoneName: "Gallery")
    try await database.save(zone)

    // Save an artist and their artworks in one batch. The order does not matter: the
    // server writes targets before the records that reference them.
    let monetID = Record.ID(recordName: "monet", zoneID: zone.zoneID)
    let monet = try Record(encoding: Artist(name: "Claude Monet", born: 1840), recordType: "Artist", recordID: monetID)
    let works = try ["Water Lilies": 1906, "Impression, Sunrise": 1872].map { title, year in
        try Record(encoding: Artwork(title: title, year: year, artist: Record.Reference(recordID: monetID, action: .deleteSelf)),
                   recordType: "Artwork", recordID: Record.ID(recordName: title, zoneID: zone.zoneID))
    }
    let (saved, _) = try await database.modifyRecords(saving: works + [monet], deleting: [])
    for (id, result) in saved {
        if case .failure(let error) = result { print("could not save \(id.recordName): \(error)") }
    }

    // Query the artist's works, oldest first, with the predicate language of NSPredicate.
    let byMonet = RecordQuery(recordType: "Artwork",
                              predicate: try RecordPredicate(format: "artist == %@", monetID),
                              sortDescriptors: [RecordSortDescriptor(key: "year")])
    for record in try await database.allRecords(matching: byMonet, inZoneWith: zone.zoneID) {
        let artwork = try record.decode(Artwork.self)
        print("\(artwork.year): \(artwork.title)")
    }

    // Keep a local cache in sync. Edits go to the cache and its outbox first, then to the server.
    let engine = SyncEngine(database: database, cache: try RecordCache(path: cachePath))
    try await engine.fetchChanges()
    guard var sunrise = try await engine.cache.record(for: Record.ID(recordName: "Impression, Sunrise", zoneID: zone.zoneID)) else {
        return ([], 0)
    }
    sunrise["title"] = .string("Impression, soleil levant")
    try await engine.save(sunrise)
    try await engine.sendChanges()

    // The cache answers the same query offline, exactly as the server would.
    let titles = try await engine.cache.records(matching: byMonet, inZoneWith: zone.zoneID)
        .map { try $0.decode(Artwork.self).title }

    // Deleting the artist cascades to the artworks on the server; the next fetch removes them
    // from the cache too.
    try await engine.delete(monetID)
    try await engine.sendChanges()
    try await engine.fetchChanges()
    let left = try await engine.cache.records(matching: byMonet, inZoneWith: zone.zoneID)
    return (titles, left.count)
}
// END EXAMPLE
