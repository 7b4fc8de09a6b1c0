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
