import Foundation
import RecordClient
import RecordRules
import RecordServer
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
}

/// Runs `body` against a fresh server in this process on a loopback port, with a fresh SQLite
/// data directory and one user.
func withBenchServer<T: Sendable>(_ body: @escaping @Sendable (BenchServer) async throws -> T) async throws -> T {
    let directory = (NSTemporaryDirectory() as NSString).appendingPathComponent("recordbench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var configuration = ServerConfiguration()
    configuration.port = 0
    configuration.dataDirectory = directory + "/server"
    configuration.logger.logLevel = .critical
    try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
    let store = RecordStore(engine: try SQLiteEngine(path: configuration.databasePath), limits: configuration.limits)
    let token = Credentials.newToken()
    _ = try await store.createUser(named: "bench", tokenHash: Credentials.hash(token))
    return try await withRunningServer(configuration: configuration, store: store) { url in
        let container = Container(serverURL: url, identifier: "iCloud.bench", credentials: .bearerToken(token))
        return try await body(BenchServer(container: container, url: url, token: token, directory: directory))
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
