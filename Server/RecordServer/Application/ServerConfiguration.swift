import Foundation
import Logging
import RecordModel

/// Everything that configures a RecordSync server, with the defaults `recordserver` uses.
///
/// The executable maps its flags onto this struct in one place; tests build one directly.
public struct ServerConfiguration: Sendable {
    /// The address to listen on.
    public var host: String = "127.0.0.1"
    /// The port to listen on; `0` picks a free one.
    public var port: Int = 8080
    /// The folder holding the SQLite database (`records.sqlite`), created if missing.
    public var dataDirectory: String = ".recordserver"
    /// The store's limits.
    public var limits = StoreLimits()
    /// The largest request body accepted, in bytes (larger: `LIMIT_EXCEEDED`).
    public var maximumBodyBytes: Int = 16 * 1024 * 1024
    /// How often the notification stream sends a keep-alive comment.
    public var keepAliveInterval: Duration = .seconds(15)
    /// The logger for the server's own messages.
    public var logger = Logger(label: "recordserver")

    /// Creates a configuration with the defaults.
    public init() {}

    /// The SQLite database file inside ``dataDirectory``.
    public var databasePath: String { (dataDirectory as NSString).appendingPathComponent("records.sqlite") }
}

/// Limits the store enforces on every request.
public struct StoreLimits: Sendable {
    /// Operations per `records/modify` (and records per `records/lookup`, zones per
    /// `zones/modify`/`zones/lookup`); more is `LIMIT_EXCEEDED`.
    public var maximumOperationsPerRequest: Int = 400
    /// Records per response when the request gives no `resultsLimit`.
    public var defaultResultsLimit: Int = 200
    /// The largest `resultsLimit` honoured; larger values are capped to it.
    public var maximumResultsLimit: Int = 400
    /// The most field data one record may hold, in bytes of its JSON form.
    public var maximumRecordBytes: Int = 1024 * 1024
    /// How deep `records/lookup` `include` may follow references.
    public var maximumIncludeDepth: Int = 8

    /// Creates limits with the defaults.
    public init() {}

    /// `requested` capped to ``maximumResultsLimit``, or the default; `BAD_REQUEST` if not positive.
    func resultsLimit(_ requested: Int?) throws -> Int {
        guard let requested else { return defaultResultsLimit }
        guard requested > 0 else {
            throw RecordSyncError(.badRequest, "resultsLimit must be a positive integer, not \(requested)")
        }
        return min(requested, maximumResultsLimit)
    }

    /// `LIMIT_EXCEEDED` when a request carries more than ``maximumOperationsPerRequest`` items.
    func checkCount(_ count: Int, of what: String) throws {
        if count > maximumOperationsPerRequest {
            throw RecordSyncError(.limitExceeded, "the request has \(count) \(what); the limit is \(maximumOperationsPerRequest) per request")
        }
    }
}
