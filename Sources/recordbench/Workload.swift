import Foundation
import RecordClient

/// The records the scenarios write: Artists, and Artworks that hold a `DELETE_SELF`
/// reference to an Artist and five other fields.
enum Workload {
    static func artwork(_ i: Int, artists: Int, prefix: String = "w") -> RecordOperation {
        RecordOperation(.forceReplace, RecordPayload(recordName: "\(prefix)\(i)", recordType: "Artwork", fields: [
            "artist": RawFieldValue(FieldValue.reference(Reference(recordName: "a\(i % artists)", action: .deleteSelf))),
            "title": RawFieldValue(FieldValue.string("title \(i)")),
            "year": RawFieldValue(FieldValue.int64(Int64(1800 + i % 200))),
            "price": RawFieldValue(FieldValue.double(Double(i) / 3)),
            "medium": RawFieldValue(FieldValue.string("oil")),
            "rank": RawFieldValue(FieldValue.int64(Int64(i % 7))),
        ]))
    }

    static func artist(_ i: Int) -> RecordOperation {
        RecordOperation(.forceReplace, RecordPayload(recordName: "a\(i)", recordType: "Artist",
                                                     fields: ["name": RawFieldValue(FieldValue.string("artist \(i)"))]))
    }

    /// The query-language data shape: 1,000 Artists (`artist 0` … `artist 999`), and Artworks
    /// each with a reference to an Artist, a title, a note of 20 words and a location. In any
    /// zone of at least 1,000 Artworks, exactly 100 of them:
    /// - refer to `artist 0`;
    /// - hold both `water` and `lilies` in their note (and 200 more hold one of the two);
    /// - lie within 900 m of the Louvre (``louvre``), and no other within 2 km of it: the rest
    ///   are spread over a box of 8° by 12° round France.
    /// The other words of a note are drawn from 5,000.
    static func galleryArtist(_ i: Int) -> RecordOperation {
        RecordOperation(.forceReplace, RecordPayload(recordName: "a\(i)", recordType: "Artist",
                                                     fields: ["name": RawFieldValue(FieldValue.string("artist \(i)"))]))
    }

    static let noteWords = (0..<5_000).map { "w\(String($0, radix: 36))" }

    /// Where the 100 clustered Artworks of a zone are.
    static let louvre = Location(latitude: 48.8606, longitude: 2.3376)

    static func galleryArtwork(_ i: Int, of count: Int) -> RecordOperation {
        let step = max(count / 100, 1)
        let artist = i % step == 0 ? 0 : 1 + i % 999
        var generator = SplitMix(seed: UInt64(i))
        var words = (0..<20).map { _ in noteWords[Int(generator.next() % UInt64(noteWords.count))] }
        switch i % step {
        case 7 % step: words[3] = "water"; words[11] = "lilies"
        case 3 % step: words[5] = "water"
        case 5 % step: words[8] = "lilies"
        default: break
        }
        let location: Location
        if i % step == 1 % step {
            // Within 900 m of the Louvre, evenly over the disc.
            let angle = Double(generator.next() % 1_000_000) / 1_000_000 * 2 * .pi
            let metres = 900 * (Double(generator.next() % 1_000_000) / 1_000_000).squareRoot()
            location = Location(latitude: louvre.latitude + metres * cos(angle) / 111_195,
                                longitude: louvre.longitude + metres * sin(angle) / (111_195 * cos(louvre.latitude * .pi / 180)))
        } else {
            var place: Location
            repeat {
                place = Location(latitude: 43 + 8 * Double(generator.next() % 1_000_000) / 1_000_000,
                                 longitude: -4 + 12 * Double(generator.next() % 1_000_000) / 1_000_000)
            } while abs(place.latitude - louvre.latitude) < 0.02 && abs(place.longitude - louvre.longitude) < 0.03
            location = place
        }
        return RecordOperation(.forceReplace, RecordPayload(recordName: "w\(i)", recordType: "Artwork", fields: [
            "artist": RawFieldValue(FieldValue.reference(Reference(recordName: "a\(artist)", action: .none))),
            "title": RawFieldValue(FieldValue.string("title \(i)")),
            "note": RawFieldValue(FieldValue.string(words.joined(separator: " "))),
            "location": RawFieldValue(FieldValue.location(location)),
        ]))
    }

    /// A node of the cascade tree, owned (`DELETE_SELF`) by `parent`.
    static func node(_ name: String, parent: String?) -> RecordOperation {
        var fields = ["label": RawFieldValue(FieldValue.string(name))]
        if let parent { fields["parent"] = RawFieldValue(FieldValue.reference(Reference(recordName: parent, action: .deleteSelf))) }
        return RecordOperation(.forceReplace, RecordPayload(recordName: name, recordType: "Node", fields: fields))
    }

    /// Saves `count` operations, made chunk by chunk by `make` (so a million records are never
    /// all in memory), in 400-operation requests with two in flight.
    static func save(_ database: Database, count: Int, zone: ZoneID,
                     _ make: @escaping @Sendable (Range<Int>) -> [RecordOperation]) async throws {
        try await save([database], count: count, zone: zone, inFlight: 2, make)
    }

    /// ``save(_:count:zone:_:)`` over several servers' databases in turn, `inFlight` requests at once.
    static func save(_ databases: [Database], count: Int, zone: ZoneID, inFlight: Int,
                     _ make: @escaping @Sendable (Range<Int>) -> [RecordOperation]) async throws {
        let chunks = stride(from: 0, to: count, by: 400).map { $0..<min($0 + 400, count) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = 0
            func launch() {
                guard next < chunks.count else { return }
                let range = chunks[next]
                let database = databases[next % databases.count]
                next += 1
                group.addTask {
                    let results = try await database.modify(make(range), inZoneWith: zone, atomically: false)
                    if let failure = results.first(where: { if case .failure = $0.result { true } else { false } }) {
                        throw BenchError("saving \(failure.operation.record.recordName ?? "?") failed: \(failure.result)")
                    }
                }
            }
            for _ in 0..<inFlight { launch() }
            while try await group.next() != nil { launch() }
        }
    }

    /// Pages through a zone's changes from `token` to the end; returns the new token and how
    /// many records and tombstones the pages held.
    static func drainChanges(_ database: Database, zone: ZoneID, since token: ServerChangeToken?) async throws
        -> (token: ServerChangeToken?, changed: Int, deleted: Int) {
        var token = token
        var changed = 0, deleted = 0
        while true {
            let page = try await database.recordZoneChanges(inZoneWith: zone, since: token, resultsLimit: 400)
            token = page.changeToken
            changed += page.modifications.count
            deleted += page.deletions.count
            if !page.moreComing { return (token, changed, deleted) }
        }
    }
}

/// SplitMix64: the same numbers for the same seed on every run.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
