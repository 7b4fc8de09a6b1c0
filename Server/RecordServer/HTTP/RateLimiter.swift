import Foundation

/// How fast one user may send requests to one server: a token bucket per user, refilled at
/// ``rate`` requests a second up to ``burst``.
public struct RateLimit: Sendable, Hashable {
    /// Requests a second, sustained.
    public var rate: Double
    /// Requests at once, after a quiet time.
    public var burst: Double

    public init(rate: Double, burst: Double? = nil) {
        self.rate = rate
        self.burst = max(1, burst ?? rate)
    }
}

/// Token buckets per user, on this server alone (each node of a deployment counts its own).
final class RateLimiter: @unchecked Sendable {
    let limit: RateLimit
    /// Past this many users the buckets of users not seen for a while are dropped (a full
    /// bucket is the same as none).
    let capacity: Int

    private let lock = NSLock()
    private var buckets: [Int64: (tokens: Double, at: ContinuousClock.Instant)] = [:]

    init(_ limit: RateLimit, capacity: Int = 100_000) {
        self.limit = limit
        self.capacity = capacity
    }

    /// Takes one request from `user`'s bucket: `nil` if it may go ahead, else the seconds until
    /// it may.
    func admit(_ user: Int64, now: ContinuousClock.Instant = .now) -> Double? {
        lock.withLock {
            var bucket = buckets[user] ?? (limit.burst, now)
            let elapsed = now - bucket.at
            bucket.tokens = min(limit.burst, bucket.tokens + limit.rate * (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
            bucket.at = now
            defer {
                if buckets.count >= capacity { prune(now) }
                buckets[user] = bucket
            }
            guard bucket.tokens >= 1 else { return (1 - bucket.tokens) / limit.rate }
            bucket.tokens -= 1
            return nil
        }
    }

    /// Drops the buckets that have filled up again.
    private func prune(_ now: ContinuousClock.Instant) {
        let full = Duration.seconds(limit.burst / limit.rate)
        buckets = buckets.filter { now - $0.value.at < full }
    }
}
