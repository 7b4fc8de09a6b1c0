import Foundation
import Hummingbird
import Logging
import RecordModel
import RecordRules
import ServiceLifecycle

/// What the routes learn of a request that its entry in the request log says: who sent it and
/// what went wrong. The request log middleware makes one per request and the routes below it
/// reach it as ``current`` (a task-local value).
final class RequestNotes: @unchecked Sendable {
    struct State {
        var userRecordName = ""
        var userName = ""
        var operatorName = ""
        var errorCode = ""
    }

    private let box = LockedBox(State())

    @TaskLocal static var current: RequestNotes?

    var state: State { box.withLock { $0 } }

    /// The request was sent as `user` (by `operatorName`, acting as them).
    static func sender(_ user: User, operator operatorName: String? = nil) {
        current?.box.withLock {
            if user != .visitor {
                $0.userRecordName = user.userRecordName
                $0.userName = user.name
            }
            if let operatorName { $0.operatorName = operatorName }
        }
    }

    /// The request was sent by the operator `name` (on the operators' API).
    static func sender(operator name: String) {
        current?.box.withLock { $0.operatorName = name }
    }

    /// The answer carries `code` (a request's error, or the errors of a batch's records).
    static func failed(_ code: String) {
        current?.box.withLock { $0.errorCode = code }
    }
}

/// The request log's writer on this node (docs/console.md, "The request log", "Health"):
/// requests are kept in memory as they are answered and written to the store in one
/// transaction a second (so a request waits for nothing), and counted by minute and route for
/// the charts (each finished minute written once); every fifteen seconds the node notes itself
/// running, every minute it samples what the users' records hold and prunes the log and the
/// figures to their retention. At shutdown what is kept is written.
final class RequestJournal: Service, @unchecked Sendable {
    let store: RecordStore
    let node: String
    let retention: Duration
    let maximum: Int64
    let logger: Logger
    /// When this node started, in milliseconds since 1970.
    let startedAt = Int64((Date().timeIntervalSince1970 * 1000).rounded())
    /// How long the charts' figures are kept.
    static let metricsRetention: Duration = .seconds(24 * 60 * 60)

    private struct Aggregate {
        var requests: Int64 = 0
        var errors: [String: Int64] = [:]
        var latency = [Int64](repeating: 0, count: LatencyBuckets.bounds.count + 1)
    }

    private struct MinuteKey: Hashable {
        var minute: Int64
        var endpoint: String
    }

    private struct State {
        var requests: [StoredRequest] = []
        var dropped = 0
        var minutes: [MinuteKey: Aggregate] = [:]
        /// When the node was last noted running, and storage last sampled.
        var noted: Int64 = 0
        var sampled: Int64 = 0
    }

    private let state = LockedBox(State())
    /// Past this many requests waiting (a second of a very busy node, or a store that does not
    /// answer), newer ones are dropped from the log (still counted in the charts) and the drop
    /// is logged.
    static let maximumPending = 50_000

    init(store: RecordStore, node: String, retention: Duration, maximum: Int64, logger: Logger) {
        self.store = store
        self.node = node
        self.retention = retention
        self.maximum = maximum
        self.logger = logger
    }

    /// A node's name in the log: its host's name and its process's id.
    static func nodeName() -> String {
        "\(ProcessInfo.processInfo.hostName)/\(ProcessInfo.processInfo.processIdentifier)"
    }

    func record(_ request: StoredRequest) {
        state.withLock { state in
            if state.requests.count < Self.maximumPending { state.requests.append(request) } else { state.dropped += 1 }
            let key = MinuteKey(minute: request.at / 60_000, endpoint: "\(request.method) \(request.endpoint)")
            var aggregate = state.minutes[key] ?? Aggregate()
            aggregate.requests += 1
            if !request.errorCode.isEmpty {
                for code in request.errorCode.split(separator: " ") { aggregate.errors[String(code), default: 0] += 1 }
            }
            aggregate.latency[LatencyBuckets.bucket(request.micros)] += 1
            state.minutes[key] = aggregate
        }
    }

    private func stored(_ key: MinuteKey, _ aggregate: Aggregate) -> StoredMetricMinute {
        StoredMetricMinute(node: node, minute: key.minute, endpoint: key.endpoint, requests: aggregate.requests, errors: aggregate.errors, latency: aggregate.latency)
    }

    /// This node's figures not written yet (the minute being counted).
    func currentMinutes() -> [StoredMetricMinute] {
        state.withLock { state in state.minutes.map { stored($0.key, $0.value) } }
    }

    /// Writes what waits: the requests, and the finished minutes (every minute, `all`); notes
    /// the node every fifteen seconds and samples storage every minute.
    func flush(all: Bool = false) async {
        let now = Int64((Date().timeIntervalSince1970 * 1000).rounded())
        let (batch, lost, minutes, note, sample) = state.withLock { state -> ([StoredRequest], Int, [StoredMetricMinute], Bool, Bool) in
            let batch = state.requests, lost = state.dropped
            state.requests.removeAll(keepingCapacity: true)
            state.dropped = 0
            let finished = state.minutes.filter { all || $0.key.minute < now / 60_000 }
            for key in finished.keys { state.minutes[key] = nil }
            let sample = now - state.sampled >= 60_000
            let note = !finished.isEmpty || sample || now - state.noted >= 15_000
            if note { state.noted = now }
            if sample { state.sampled = now }
            return (batch, lost, finished.map { stored($0.key, $0.value) }, note, sample)
        }
        if lost > 0 { logger.warning("the request log dropped \(lost) requests (more than \(Self.maximumPending) waited)") }
        do {
            try await store.logRequests(batch)
        } catch {
            logger.warning("could not write \(batch.count) requests to the request log: \(error)")
        }
        guard note else { return }
        do {
            try await store.recordMetrics(minutes, node: node, startedAt: startedAt, sample: sample)
        } catch {
            logger.warning("could not write the charts' figures: \(error)")
        }
    }

    func run() async throws {
        var sincePruning = 0
        await flush()
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
            } catch {
                break
            }
            await flush()
            sincePruning += 1
            if sincePruning >= 60 {
                sincePruning = 0
                do {
                    try await store.pruneRequestLog(retention: retention, maximum: maximum)
                    try await store.pruneMetrics(retention: Self.metricsRetention)
                } catch {
                    logger.warning("could not prune the request log: \(error)")
                }
            }
        }
        await flush(all: true)
    }
}
