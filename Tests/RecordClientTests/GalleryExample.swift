import Foundation
import RecordClient

// The complete example of docs/client.md, compiled and run by GuideTests. The text between
// the markers must stay identical to the guide's example (GuideTests checks it).

// BEGIN EXAMPLE
/// An artist, stored as a record of type "Artist"; the portrait is a file (an `ASSETID` field).
struct Artist: Codable {
    var name: String
    var born: Int?
    var portrait: Asset?
}

/// An artwork, owned by its artist: deleting the artist deletes it (DELETE_SELF).
struct Artwork: Codable {
    var title: String
    var year: Int
    var artist: Record.Reference
}

/// Creates a gallery, keeps a local cache in sync, and returns the titles the cache listed,
/// how many artworks are left after the artist's deletion, the portrait's bytes as downloaded,
/// and the artwork a subscription announced.
func runGallery(serverURL: URL, token: String, cachePath: String, portraitFile: URL) async throws
    -> (titles: [String], left: Int, portrait: Data, announced: String?) {
    let container = Container(serverURL: serverURL, identifier: "iCloud.com.example.Gallery",
                              credentials: .bearerToken(token))
    let database = container.privateCloudDatabase
    let zone = RecordZone(zoneName: "Gallery")
    try await database.save(zone)

    // Save an artist and their artworks in one batch. The order does not matter: the
    // server writes targets before the records that reference them.
    let monetID = Record.ID(recordName: "monet", zoneID: zone.zoneID)
    // Saving the artist uploads the portrait file first, then saves the record holding it.
    let monet = try Record(encoding: Artist(name: "Claude Monet", born: 1840, portrait: Asset(fileURL: portraitFile)),
                           recordType: "Artist", recordID: monetID)
    let works = try ["Water Lilies": 1906, "Impression, Sunrise": 1872].map { title, year in
        try Record(encoding: Artwork(title: title, year: year, artist: Record.Reference(recordID: monetID, action: .deleteSelf)),
                   recordType: "Artwork", recordID: Record.ID(recordName: title, zoneID: zone.zoneID))
    }
    let (saved, _) = try await database.modifyRecords(saving: works + [monet], deleting: [])
    for (id, result) in saved {
        if case .failure(let error) = result { print("could not save \(id.recordName): \(error)") }
    }

    // A fetched asset downloads on demand, once, into the container's asset folder.
    let fetched = try await database.record(for: monetID).decode(Artist.self)
    var portrait = Data()
    if let asset = fetched.portrait { portrait = try Data(contentsOf: try await database.fetchAsset(asset)) }

    // Subscribe to new artworks, and hear of one through the notifications stream.
    try await database.save(Subscription.query("new-artworks", Query(recordType: "Artwork"), zoneID: zone.zoneID, firesOn: ["create"]))
    let notifications = try await database.remoteNotifications()
    let listening = Task { () -> String? in
        for try await notification in notifications {
            if case .query(let name, .recordCreated) = notification.kind { return name }
        }
        return nil
    }
    _ = try await database.save(try Record(encoding: Artwork(title: "Haystacks", year: 1890, artist: Record.Reference(recordID: monetID, action: .deleteSelf)),
                                           recordType: "Artwork", recordID: Record.ID(recordName: "Haystacks", zoneID: zone.zoneID)))
    let announced = try await listening.value
    try await database.deleteRecord(withID: Record.ID(recordName: "Haystacks", zoneID: zone.zoneID))

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
        return ([], 0, portrait, announced)
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
    return (titles, left.count, portrait, announced)
}
// END EXAMPLE
