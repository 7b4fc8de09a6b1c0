import Foundation
import Metrics
import Prometheus
import RecordRules

/// The server's metrics, kept in a registry of its own (not the process's `MetricsSystem`, so
/// that several servers in one process, as in tests, each report their own) and written in
/// Prometheus's text format at `GET /metrics`.
///
/// Every label has few values: endpoints are route patterns (`/database/1/{container}/…`, never
/// a container's or a record's name), methods and statuses are HTTP's.
///
/// - `recordsync_requests_total{endpoint, method, status}`: requests answered;
/// - `recordsync_request_duration_seconds{endpoint, method}`: time until the answer's head;
/// - `recordsync_change_pages_total{feed}`: pages of the change feeds served (`zone`: a
///   `records/changes` or a zone of `changes/zone`; `database`: `changes/database`,
///   `zones/changes`);
/// - `recordsync_push_published_total`, `recordsync_push_events_total`,
///   `recordsync_push_listeners`: changes published to push listeners (this server's and those
///   relayed from others), the events they made (the fan-out), and the streams open now;
/// - `recordsync_store_connections{state}` (`in_use`, `waiting`, `capacity`): the storage
///   engine's connections.
public final class ServerMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    let factory: PrometheusMetricsFactory

    private struct RequestKey: Hashable { var endpoint: String, method: String, status: Int }
    private struct TimerKey: Hashable { var endpoint: String, method: String }
    private let requests = LockedBox<[RequestKey: Metrics.Counter]>([:])
    private let timers = LockedBox<[TimerKey: Metrics.Timer]>([:])
    private let changePages: [String: Metrics.Counter]
    private let pushPublished: Metrics.Counter
    private let pushEvents: Metrics.Counter
    private let pushListeners: Metrics.Meter
    private let connections: [String: Metrics.Meter]
    /// The notifier's counts when last read, to add what came since.
    private let pushSeen = LockedBox<(published: Int, delivered: Int)>((0, 0))

    public init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [.milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
                                                   .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
                                                   .seconds(1), .seconds(2), .seconds(5), .seconds(10)]
        self.factory = factory
        changePages = Dictionary(uniqueKeysWithValues: ["zone", "database"].map {
            ($0, Metrics.Counter(label: "recordsync_change_pages_total", dimensions: [("feed", $0)], factory: factory))
        })
        pushPublished = Metrics.Counter(label: "recordsync_push_published_total", factory: factory)
        pushEvents = Metrics.Counter(label: "recordsync_push_events_total", factory: factory)
        pushListeners = Metrics.Meter(label: "recordsync_push_listeners", factory: factory)
        connections = Dictionary(uniqueKeysWithValues: ["in_use", "waiting", "capacity"].map {
            ($0, Metrics.Meter(label: "recordsync_store_connections", dimensions: [("state", $0)], factory: factory))
        })
    }

    /// Counts an answered request and the time until its head.
    func request(endpoint: String, method: String, status: Int, duration: Duration) {
        let counter = requests.withLock { counters in
            let key = RequestKey(endpoint: endpoint, method: method, status: status)
            if let counter = counters[key] { return counter }
            let counter = Metrics.Counter(label: "recordsync_requests_total",
                                  dimensions: [("endpoint", endpoint), ("method", method), ("status", String(status))], factory: factory)
            counters[key] = counter
            return counter
        }
        counter.increment()
        let timer = timers.withLock { timers in
            let key = TimerKey(endpoint: endpoint, method: method)
            if let timer = timers[key] { return timer }
            let timer = Metrics.Timer(label: "recordsync_request_duration_seconds", dimensions: [("endpoint", endpoint), ("method", method)], factory: factory)
            timers[key] = timer
            return timer
        }
        timer.recordNanoseconds(Int64(duration.components.seconds) * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    /// Counts a page of a change feed served.
    func changePage(feed: String, count: Int = 1) {
        changePages[feed]?.increment(by: count)
    }

    /// The metrics in Prometheus's text format, with the store's and notifier's counts read now.
    func exposition(of store: RecordStore) async -> String {
        let (published, delivered, listeners) = await (store.notifier.published, store.notifier.delivered, store.notifier.listenerCount)
        let (newPublished, newDelivered) = pushSeen.withLock { seen in
            defer { seen = (max(seen.published, published), max(seen.delivered, delivered)) }
            return (max(0, published - seen.published), max(0, delivered - seen.delivered))
        }
        if newPublished > 0 { pushPublished.increment(by: newPublished) }
        if newDelivered > 0 { pushEvents.increment(by: newDelivered) }
        pushListeners.set(listeners)
        if let use = store.engine.poolUse {
            connections["in_use"]?.set(use.inUse)
            connections["waiting"]?.set(use.waiting)
            connections["capacity"]?.set(use.capacity)
        }
        return registry.emitToString()
    }
}

/// A value behind a lock.
final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try lock.withLock { try body(&value) }
    }
}
