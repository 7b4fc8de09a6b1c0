import Foundation
import RecordClient
import RecordServer

/// One measured figure: a scenario's result against its floor, measured in the same run.
struct Measurement: Codable, Sendable {
    var scenario: String
    /// What the figure is, e.g. "rows/s".
    var unit: String
    /// The median of the repetitions.
    var figure: Double
    /// The floor's median (same unit), or nil for scenarios judged on an absolute target.
    var floor: Double?
    /// figure / floor (or the scenario's own ratio).
    var ratio: Double
    /// The target, in words.
    var target: String
    var met: Bool
}

/// Runs `body` against a fresh in-process server on a loopback port, with a signed-in
/// container.
func withBenchServer<T: Sendable>(_ body: @escaping @Sendable (Container, String) async throws -> T) async throws -> T {
    let directory = (NSTemporaryDirectory() as NSString).appendingPathComponent("recordbench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var configuration = ServerConfiguration()
    configuration.port = 0
    configuration.dataDirectory = directory
    configuration.logger.logLevel = .critical
    let store = try SQLiteRecordStore(path: configuration.databasePath, limits: configuration.limits)
    let token = Credentials.newToken()
    _ = try await store.createUser(named: "bench", tokenHash: Credentials.hash(token))
    let (ports, announce) = AsyncStream.makeStream(of: Int.self)
    let app = buildApplication(configuration: configuration, store: store) { port in announce.yield(port) }
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            try await app.run()
            return nil
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), let url = URL(string: "http://127.0.0.1:\(port)") else { throw CancellationError() }
        let container = Container(serverURL: url, identifier: "iCloud.bench", credentials: .bearerToken(token))
        let result = try await body(container, directory)
        group.cancelAll()
        return result
    }
}

/// Seconds taken by `body`.
func seconds(_ body: () async throws -> Void) async rethrows -> Double {
    let start = ContinuousClock.now
    try await body()
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// The median of some values.
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// Percentile `p` (0…100) of some values.
func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1 < 0 ? 0 : Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1)]
}
