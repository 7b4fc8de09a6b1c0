import Foundation
import RecordClient
import RecordRules
import RecordServer
import RecordPostgresEngine
import RecordSQLiteEngine

/// One measured figure: a scenario's result against its floor, measured in the same run.
struct Measurement: Codable, Sendable {
    var scenario: String
    /// What the figure is, e.g. "rows/s".
    var unit: String
    /// The median of the repetitions.
    var figure: Double
    /// The floor's median (same unit), or nil for scenarios judged on an absolute target.
    var floor: Double?
    /// The figure the target judges: the median of each repetition's figure over its own floor
    /// (``pairedRatio(_:over:)``), or the scenario's own ratio.
    var ratio: Double
    /// The target, in words.
    var target: String
    var met: Bool
    /// Other figures worth printing (e.g. p99, the time to fetch tombstones).
    var notes: String = ""
}

/// A server started for one scenario, and a signed-in container on it.
struct BenchServer: Sendable {
    var container: Container
    var url: URL
    var token: String
    /// A scratch directory for the scenario (floors, client caches); removed afterwards.
    var directory: String
    /// Every node's URL (one, unless several servers share a PostgreSQL database).
    var urls: [URL]
    /// Where the data is (the floors of PostgreSQL use the same schema).
    var storage: BenchStorage
    /// The bearer tokens of the other users made with the server (``withBenchServer(nodes:otherUsers:_:)``).
    var otherTokens: [String] = []
    /// The first node's store (to make what no API makes, such as an operator).
    var store: RecordStore

    /// A container signed in on node `index`.
    func container(onNode index: Int) -> Container {
        Container(serverURL: urls[index % urls.count], identifier: "iCloud.bench", credentials: .bearerToken(token))
    }
}

/// Runs `body` against a fresh server in this process on a loopback port, over the run's engine
/// (``benchBackend``: a fresh SQLite data directory, or a fresh PostgreSQL schema), with one
/// user (and `otherUsers` more). With PostgreSQL, `nodes` servers share the schema, each with an
/// engine of its own.
func withBenchServer<T: Sendable>(nodes: Int = 1, otherUsers: Int = 0, configure: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in },
                                  _ body: @escaping @Sendable (BenchServer) async throws -> T) async throws -> T {
    try await BenchStorage.with { storage in
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.dataDirectory = storage.directory + "/server"
        configuration.logger.logLevel = .critical
        configure(&configuration)
        var stores: [RecordStore] = []
        for _ in 0..<(storage.databaseURL == nil ? 1 : nodes) {
            stores.append(RecordStore(engine: try await storage.engine(), limits: configuration.limits))
        }
        let token = Credentials.newToken()
        _ = try await stores[0].createUser(named: "bench", tokenHash: Credentials.hash(token))
        var otherTokens: [String] = []
        for index in 0..<otherUsers {
            otherTokens.append(Credentials.newToken())
            _ = try await stores[0].createUser(named: "other\(index)", tokenHash: Credentials.hash(otherTokens[index]))
        }
        let others = otherTokens
        let configured = configuration
        let allStores = stores
        @Sendable func serve(_ index: Int, _ urls: [URL]) async throws -> T {
            if index == allStores.count {
                let container = Container(serverURL: urls[0], identifier: "iCloud.bench", credentials: .bearerToken(token))
                return try await body(BenchServer(container: container, url: urls[0], token: token, directory: storage.directory, urls: urls, storage: storage,
                                                  otherTokens: others, store: allStores[0]))
            }
            return try await withRunningServer(configuration: configured, store: allStores[index]) { url in
                try await serve(index + 1, urls + [url])
            }
        }
        do {
            let result = try await serve(0, [])
            for store in stores { await (store.engine as? PostgresEngine)?.shutdown() }
            return result
        } catch {
            for store in stores { await (store.engine as? PostgresEngine)?.shutdown() }
            throw error
        }
    }
}

/// Seconds taken by `body`.
func seconds(_ body: () async throws -> Void) async rethrows -> Double {
    let start = ContinuousClock.now
    try await body()
    return (ContinuousClock.now - start).seconds
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// The median of some values.
func median(_ values: [Double]) -> Double {
    percentile(values, 50)
}

/// The median of the ratios of paired figures and floors (`figures[i] / floors[i]`, each floor
/// measured around its figure, ``Floor/bracketed(seconds:_:)``). A pair shares a minute of this
/// machine's drifting speed; a ratio of two medians could set a figure from one repetition
/// against a floor from another.
func pairedRatio(_ figures: [Double], over floors: [Double]) -> Double {
    precondition(figures.count == floors.count, "a floor for every figure")
    return median(zip(figures, floors).map { $0 / $1 })
}

/// Percentile `p` (0…100) of some values, by linear interpolation between the nearest ranks.
func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard let first = sorted.first else { return 0 }
    guard sorted.count > 1 else { return first }
    let position = p / 100 * Double(sorted.count - 1)
    let lower = Int(position.rounded(.down)), upper = Int(position.rounded(.up))
    return sorted[lower] + (sorted[upper] - sorted[lower]) * (position - Double(lower))
}

/// Progress on standard error, so the table on standard output stays clean.
func say(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
