import Foundation
import RecordClient
import RecordModel
import TestSupport
import Testing

/// The differential test of the query language: seeded random records and filters (every
/// comparator, option and nesting, word searches and `NEAR`; some sorted by distance), each
/// query's results, in order, from the oracle (``QueryOracle``),
/// the server on each engine over HTTP (paging with small pages too), and a client cache synced
/// from that server, which must all be the same.
///
/// `RECORDSYNC_QUERY_ORACLE_FILTERS` sets how many filters run (default 300) and
/// `RECORDSYNC_QUERY_ORACLE_SEED` the seed (default fixed), for long runs:
///
///     RECORDSYNC_QUERY_ORACLE_FILTERS=20000 RECORDSYNC_QUERY_ORACLE_SEED=$RANDOM swift test --filter QueryOracleTests
@Suite struct QueryOracleTests {
    static let environment = ProcessInfo.processInfo.environment
    static let filterCount = environment["RECORDSYNC_QUERY_ORACLE_FILTERS"].flatMap { Int($0) } ?? 300
    static let seed = environment["RECORDSYNC_QUERY_ORACLE_SEED"].flatMap { UInt64($0) } ?? 20_261_125

    @Test func theServerOnEachEngineAndTheCacheAgreeWithTheOracle() async throws {
        try await withServer { server in
            var generator = QueryGenerator(seed: Self.seed)
            let records = generator.records(60, labels: 15)
            let names = records.map(\.recordName)
            let items = records.filter { $0.recordType == "Item" }
            let oracle = QueryOracle(records: records)
            let session = try await server.user("oracle")
            try await session.createZones("Oracle")
            try await session.save(records, zone: "Oracle")

            let container = Container(serverURL: URL(string: "http://127.0.0.1:\(session.client.port!)")!, identifier: session.container,
                                      credentials: .bearerToken(session.token))
            let cache = try RecordCache(path: ":memory:")
            let engine = SyncEngine(database: container.privateCloudDatabase, cache: cache)
            _ = try await engine.fetchChanges()
            let zone = ZoneID(zoneName: "Oracle")

            var failures = 0
            for index in 0..<Self.filterCount where failures < 5 {
                let filters = (0..<generator.int(1...2)).map { _ in generator.filter(depth: 3, names: names) }
                var query = Query(recordType: "Item", filterBy: filters)
                var expected = items.filter { oracle.matches($0, filters) }.map(\.recordName)
                // Whether an answer is in the right order: for a sort by distance, distances that
                // differ by less than a millimetre (the oracle's haversine and the stores' chords
                // round differently) may come in either order.
                var inOrder: ([String]) -> Bool = { $0 == expected }
                if generator.chance(0.2) {
                    // Nearest first (or farthest), by the distance of `place` from a place.
                    let center = generator.place(), ascending = generator.chance(0.7)
                    query.sortBy = [QuerySort("place", distanceFrom: center, ascending: ascending)]
                    expected = QueryOracle.sorted(items.filter { expected.contains($0.recordName) }, byDistanceOf: "place", from: center, ascending: ascending)
                    let distances = Dictionary(uniqueKeysWithValues: items.map { ($0.recordName, QueryOracle.distance(of: $0, "place", from: center)) })
                    inOrder = { [expected] answer in
                        Set(answer) == Set(expected) && answer.count == expected.count && zip(answer, answer.dropFirst()).allSatisfy { a, b in
                            QueryOracle.inDistanceOrder(distances[a] ?? nil, distances[b] ?? nil, ascending: ascending)
                        }
                    }
                }
                let pageSize = generator.pick([nil, 3, 7])
                let served = await Self.names(query, from: session, pageSize: pageSize)
                let cached: [String]
                do { cached = try await cache.records(matching: query, inZoneWith: zone).map(\.recordName) } catch { cached = ["error: \(error)"] }
                if !inOrder(served) || !inOrder(cached) {
                    failures += 1
                    let json = String(decoding: try JSONEncoder().encode(query), as: UTF8.self)
                    Issue.record("""
                        \(server.backend), seed \(Self.seed), filter \(index) (page size \(pageSize.map(String.init) ?? "default")): \(json)
                        oracle: \(expected)
                        server: \(served)
                        cache:  \(cached)
                        """)
                }
            }
        }
    }

    /// The names a query returns, following continuation markers, or the error in their place.
    static func names(_ query: Query, from session: Session, pageSize: Int?) async -> [String] {
        var marker: String?
        var names: [String] = []
        repeat {
            do {
                let reply = try await session.post("records/query", QueryRecordsRequest(query: query, zoneID: ZoneID(zoneName: "Oracle"), resultsLimit: pageSize, continuationMarker: marker))
                guard reply.status == 200 else { return ["error: \(reply.status) \(reply.reason)"] }
                let page = try JSONDecoder().decode(QueryRecordsResponse.self, from: reply.data)
                names += page.records.map(\.recordName)
                marker = page.continuationMarker
            } catch {
                return ["error: \(error)"]
            }
        } while marker != nil
        return names
    }
}
