import Foundation
import RecordClient

/// The sizes a run uses.
struct Scale: Sendable {
    var saveRecords: Int
    var bigZone: Int
    var smallZone: Int
    var propagationRounds: Int

    static let small = Scale(saveRecords: 4_000, bigZone: 20_000, smallZone: 1_000, propagationRounds: 50)
    static let full = Scale(saveRecords: 100_000, bigZone: 1_000_000, smallZone: 10_000, propagationRounds: 200)
}

/// Artworks owned (DELETE_SELF) by one of `artists` artists, with five other fields.
func artworkOperations(_ range: Range<Int>, artists: Int, prefix: String = "w") -> [RecordOperation] {
    range.map { i in
        RecordOperation(.forceReplace, RecordPayload(recordName: "\(prefix)\(i)", recordType: "Artwork", fields: [
            "artist": RawFieldValue(FieldValue.reference(Reference(recordName: "a\(i % artists)", action: .deleteSelf))),
            "title": RawFieldValue(FieldValue.string("title \(i)")), "year": RawFieldValue(FieldValue.int64(Int64(1800 + i % 200))),
            "price": RawFieldValue(FieldValue.double(Double(i) / 3)), "medium": RawFieldValue(FieldValue.string("oil")),
            "rank": RawFieldValue(FieldValue.int64(Int64(i % 7))),
        ]))
    }
}

func artistOperations(_ count: Int) -> [RecordOperation] {
    (0..<count).map { RecordOperation(.forceReplace, RecordPayload(recordName: "a\($0)", recordType: "Artist", fields: ["name": RawFieldValue(FieldValue.string("artist \($0)"))])) }
}

/// Saves `operations` in 400-operation requests, two in flight.
func saveInParallel(_ database: Database, _ operations: [RecordOperation], zone: ZoneID) async throws {
    let chunks = stride(from: 0, to: operations.count, by: 400).map { Array(operations[$0..<min($0 + 400, operations.count)]) }
    var next = 0
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<2 where next < chunks.count {
            let chunk = chunks[next]
            next += 1
            group.addTask { _ = try await database.modify(chunk, inZoneWith: zone, atomically: false) }
        }
        while try await group.next() != nil {
            if next < chunks.count {
                let chunk = chunks[next]
                next += 1
                group.addTask { _ = try await database.modify(chunk, inZoneWith: zone, atomically: false) }
            }
        }
    }
}

enum Scenarios {
    /// `save`: records/s through the server against the floor's rows/s.
    static func save(_ scale: Scale, repetitions: Int) async throws -> Measurement {
        var figures: [Double] = []
        var floors: [Double] = []
        for _ in 0..<repetitions {
            let (figure, floor) = try await withBenchServer { container, directory in
                let database = container.privateCloudDatabase
                let artists = max(1, scale.saveRecords / 100)
                _ = try await database.modify(artistOperations(artists))
                let works = artworkOperations(0..<(scale.saveRecords - artists), artists: artists)
                let elapsed = try await seconds { try await saveInParallel(database, works, zone: .defaultZone) }
                let floor = try Floor.insert(count: works.count, batch: 400, into: try Floor.database(in: directory, name: "floor.sqlite"))
                return (Double(works.count) / elapsed, floor)
            }
            figures.append(figure)
            floors.append(floor)
        }
        let ratio = median(figures) / median(floors)
        return Measurement(scenario: "save", unit: "rows/s", figure: median(figures), floor: median(floors), ratio: ratio, target: "≥ 0.25 of floor", met: ratio >= 0.25)
    }

    /// `changes`: fetching 100 changes from a big zone vs a small one.
    static func changes(_ scale: Scale, repetitions: Int) async throws -> Measurement {
        try await withBenchServer { container, _ in
            let database = container.privateCloudDatabase
            let big = ZoneID(zoneName: "A"), small = ZoneID(zoneName: "B")
            _ = try await database.modifyRecordZones(saving: [RecordZone(zoneID: big), RecordZone(zoneID: small)], deleting: [])
            try await saveInParallel(database, artworkOperations(0..<scale.bigZone, artists: 1000), zone: big)
            try await saveInParallel(database, artworkOperations(0..<scale.smallZone, artists: 1000), zone: small)
            var ratios: [Double] = []
            var bigTimes: [Double] = []
            for round in 0..<repetitions {
                var times: [Double] = []
                for zone in [big, small] {
                    var token: ServerChangeToken?
                    repeat {
                        let page = try await database.recordZoneChanges(inZoneWith: zone, since: token)
                        token = page.changeToken
                        if !page.moreComing { break }
                    } while true
                    let edits = artworkOperations((round * 100)..<(round * 100 + 100), artists: 1000)
                    _ = try await database.modify(edits, inZoneWith: zone, atomically: false)
                    let since = token
                    times.append(try await seconds { _ = try await database.recordZoneChanges(inZoneWith: zone, since: since) })
                }
                bigTimes.append(times[0])
                ratios.append(times[0] / times[1])
            }
            let ratio = median(ratios)
            return Measurement(scenario: "changes", unit: "s for 100 changes", figure: median(bigTimes), floor: nil, ratio: ratio,
                               target: "time(big)/time(small) ≤ 1.5", met: ratio <= 1.5)
        }
    }

    /// `query-by-reference`: one artist's 100 children in a big zone vs a small one.
    static func queryByReference(_ scale: Scale, repetitions: Int) async throws -> Measurement {
        try await withBenchServer { container, _ in
            let database = container.privateCloudDatabase
            let big = ZoneID(zoneName: "A"), small = ZoneID(zoneName: "B")
            _ = try await database.modifyRecordZones(saving: [RecordZone(zoneID: big), RecordZone(zoneID: small)], deleting: [])
            try await saveInParallel(database, artworkOperations(0..<scale.bigZone, artists: scale.bigZone / 100), zone: big)
            try await saveInParallel(database, artworkOperations(0..<scale.smallZone, artists: scale.smallZone / 100), zone: small)
            let query = RecordQuery(recordType: "Artwork", predicate: try RecordPredicate(format: "artist == %@", Reference(recordName: "a7")))
            var ratios: [Double] = []
            var bigTimes: [Double] = []
            for _ in 0..<max(5, repetitions) {
                let bigTime = try await seconds { _ = try await database.allRecords(matching: query, inZoneWith: big) }
                let smallTime = try await seconds { _ = try await database.allRecords(matching: query, inZoneWith: small) }
                bigTimes.append(bigTime)
                ratios.append(bigTime / smallTime)
            }
            let ratio = median(ratios)
            return Measurement(scenario: "query-by-reference", unit: "s for 100 children", figure: median(bigTimes), floor: nil, ratio: ratio,
                               target: "time(big)/time(small) ≤ 1.5", met: ratio <= 1.5)
        }
    }

    /// `propagation`: client A saves, client B (running its SyncEngine) sees it in its cache.
    static func propagation(_ scale: Scale) async throws -> Measurement {
        try await withBenchServer { container, directory in
            let reader = SyncEngine(database: container.privateCloudDatabase, cache: try RecordCache(path: directory + "/reader.sqlite"))
            return try await withThrowingTaskGroup(of: Measurement?.self) { group in
                group.addTask {
                    try await reader.run()
                    return nil
                }
                try await Task.sleep(for: .milliseconds(500))
                var latencies: [Double] = []
                for round in 0..<scale.propagationRounds {
                    let id = Record.ID(recordName: "p\(round)")
                    let start = ContinuousClock.now
                    try await container.privateCloudDatabase.save(Record(recordType: "Note", recordID: id))
                    while try await reader.cache.record(for: id) == nil { try await Task.sleep(for: .microseconds(200)) }
                    let elapsed = ContinuousClock.now - start
                    latencies.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
                }
                group.cancelAll()
                let p50 = percentile(latencies, 50), p99 = percentile(latencies, 99)
                return Measurement(scenario: "propagation", unit: "ms p50 (p99 \(String(format: "%.1f", p99)))", figure: p50, floor: nil, ratio: p99,
                                   target: "p50 ≤ 20 ms, p99 ≤ 100 ms", met: p50 <= 20 && p99 <= 100)
            } ?? Measurement(scenario: "propagation", unit: "ms", figure: 0, floor: nil, ratio: 0, target: "", met: false)
        }
    }
}
