import Foundation
import RecordModel

/// The request log (docs/console.md, "The request log"): what every node answered lately,
/// in the store so that any node's console reads the whole cluster's.
extension RecordStore {
    /// Adds requests to the log, in one transaction.
    public func logRequests(_ requests: [StoredRequest]) async throws {
        guard !requests.isEmpty else { return }
        try await engine.write { transaction in
            try transaction.insertRequests(requests)
            return .commit(())
        }
    }

    /// The newest requests `filter` matches, newest first (at most 1,000).
    public func requestLog(matching filter: RequestLogFilter) async throws -> [StoredRequest] {
        var bounded = filter
        bounded.limit = max(1, min(filter.limit, 1000))
        return try await engine.read { [bounded] transaction in try transaction.requests(matching: bounded) }
    }

    /// Removes the requests older than `retention`, and the oldest beyond the newest `maximum`;
    /// how many went.
    @discardableResult
    public func pruneRequestLog(retention: Duration, maximum: Int64) async throws -> Int {
        let before = Self.now() - retention.milliseconds
        return try await engine.write { transaction in
            .commit(try transaction.deleteRequests(before: before, keepingAtMost: maximum))
        }
    }
}

/// The server's own figures over the last minutes, for the console's charts (docs/console.md,
/// "Health"): every node's requests summed by minute, each busy route's latency percentiles,
/// what the users' records hold, and the nodes seen.
public struct MetricsSeries: Sendable, Codable {
    public struct Node: Sendable, Codable {
        public var name: String
        public var startedAt: Int64
        public var seenAt: Int64
    }

    public struct Minute: Sendable, Codable {
        /// Minutes since 1970.
        public var minute: Int64
        public var requests: Int64
        /// How many answers carried each error code.
        public var errors: [String: Int64]
    }

    public struct Endpoint: Sendable, Codable {
        public var endpoint: String
        public var requests: Int64
        /// Per minute of ``MetricsSeries/minutes``, in microseconds (`nil`: no request that
        /// minute): the upper bound of the histogram bucket holding the percentile.
        public var p50: [Int64?]
        public var p99: [Int64?]
    }

    public struct Sample: Sendable, Codable {
        public var minute: Int64
        public var records: Int64
        public var bytes: Int64
    }

    /// When it was read, in milliseconds since 1970.
    public var now: Int64
    public var nodes: [Node]
    /// Every minute of the window, oldest first (the current one, still being counted, last).
    public var minutes: [Minute]
    /// The busiest routes of the window (at most eight), busiest first.
    public var endpoints: [Endpoint]
    public var storage: [Sample]
}

extension RecordStore {
    /// Writes a node's finished minutes of requests, notes the node as running, and (when
    /// `sample`) samples what the users' records hold, in one transaction.
    public func recordMetrics(_ minutes: [StoredMetricMinute], node: String, startedAt: Int64, sample: Bool) async throws {
        let now = Self.now()
        try await engine.write { transaction in
            try transaction.insertMetricMinutes(minutes)
            try transaction.seeNode(node, startedAt: startedAt, now: now)
            if sample {
                let totals = try transaction.storedTotals()
                try transaction.setStorageSample(minute: now / 60_000, records: totals.records, bytes: totals.bytes)
            }
            return .commit(())
        }
    }

    /// Removes figures older than `retention`.
    public func pruneMetrics(retention: Duration) async throws {
        let before = Self.now() - retention.milliseconds
        try await engine.write { transaction in
            try transaction.deleteMetrics(before: before)
            return .commit(())
        }
    }

    /// The last `minutes` minutes' figures; `current` are this node's figures of minutes not
    /// written yet (the one being counted), added in.
    public func metrics(lastMinutes minutes: Int, current: [StoredMetricMinute] = []) async throws -> MetricsSeries {
        let now = Self.now()
        let last = now / 60_000, first = last - Int64(max(1, min(minutes, 24 * 60))) + 1
        let (stored, samples, nodes) = try await engine.read { transaction in
            (try transaction.metricMinutes(since: first), try transaction.storageSamples(since: first), try transaction.nodes(seenSince: now - 5 * 60_000))
        }
        let rows = stored + current.filter { $0.minute >= first }
        var series = (first...last).map { MetricsSeries.Minute(minute: $0, requests: 0, errors: [:]) }
        var histograms: [String: [Int64: [Int64]]] = [:]
        var totals: [String: Int64] = [:]
        for row in rows where row.minute <= last {
            let index = Int(row.minute - first)
            series[index].requests += row.requests
            for (code, count) in row.errors { series[index].errors[code, default: 0] += count }
            var histogram = histograms[row.endpoint, default: [:]][row.minute] ?? []
            if histogram.count < row.latency.count { histogram += Array(repeating: 0, count: row.latency.count - histogram.count) }
            for (bucket, count) in row.latency.enumerated() { histogram[bucket] += count }
            histograms[row.endpoint, default: [:]][row.minute] = histogram
            totals[row.endpoint, default: 0] += row.requests
        }
        let busiest = totals.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }.prefix(8)
        let endpoints = busiest.map { endpoint, requests in
            let byMinute = histograms[endpoint] ?? [:]
            return MetricsSeries.Endpoint(endpoint: endpoint, requests: requests,
                                          p50: (first...last).map { byMinute[$0].flatMap { LatencyBuckets.quantile(0.5, of: $0) } },
                                          p99: (first...last).map { byMinute[$0].flatMap { LatencyBuckets.quantile(0.99, of: $0) } })
        }
        return MetricsSeries(now: now, nodes: nodes.map { MetricsSeries.Node(name: $0.name, startedAt: $0.startedAt, seenAt: $0.seenAt) },
                             minutes: series, endpoints: Array(endpoints),
                             storage: samples.map { MetricsSeries.Sample(minute: $0.minute, records: $0.records, bytes: $0.bytes) })
    }
}
