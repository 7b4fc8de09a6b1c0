import Foundation
import Logging
import RecordModel

/// Keeps a ``RecordCache`` in sync with one database (CloudKit's `CKSyncEngine`).
///
/// Local edits go through ``save(_:)`` and ``delete(_:)`` (or straight to the cache): each is
/// written with its outbox entry in one transaction. ``sendChanges()`` drains the outbox in
/// server-sized batches, targets before sources, and settles conflicts; ``fetchChanges()``
/// walks database then zone changes into the cache, page by page, each page with its token.
/// ``run()`` does both continuously, woken by the server's push channel, by local edits, and
/// by a poll when the push channel is down.
public final class SyncEngine: Sendable {
    /// Tuning knobs, with defaults.
    public struct Configuration: Sendable {
        /// Records per fetched page; `nil` (the default) asks for none, and the server sends
        /// its largest page (RecordSync's: 1,000 records or 4 MiB of fields, whichever comes
        /// first), as CloudKit JS does.
        public var pageSize: Int? = nil
        /// How often ``SyncEngine/run()`` polls while the push channel is down.
        public var pollInterval: Duration = .seconds(2)
        /// How often it polls while the push channel is up (a safety net).
        public var connectedPollInterval: Duration = .seconds(60)
        /// How long it waits before reconnecting the push channel.
        public var reconnectDelay: Duration = .milliseconds(500)
        /// Attempts for a request that fails transiently (network, `THROTTLED`, `TRY_AGAIN_LATER`).
        public var maximumAttempts: Int = 6
        /// The first retry delay when the server gives no `retryAfter`; it doubles each attempt.
        public var initialBackoff: Duration = .milliseconds(100)
        /// Rounds of sending per ``SyncEngine/sendChanges()`` (a conflict takes one more round).
        public var maximumSendRounds: Int = 5
        /// The most bytes of fetched assets the cache keeps (``SyncEngine/fetchAsset(_:)``); the
        /// least recently used go first, never an asset waiting to be uploaded.
        public var maximumAssetBytes: Int64 = 1 << 30
        /// Where the engine logs (nothing by default).
        public var logger = Logger(label: "RecordClient.SyncEngine", factory: { _ in SwiftLogNoOpLogHandler() })

        /// Creates a configuration with the defaults.
        public init() {}
    }

    /// A conflict: the server's record changed since the version a local edit started from.
    public struct Conflict: Sendable {
        /// The record as the server has it now.
        public var serverRecord: Record
        /// The record as the client has it locally.
        public var clientRecord: Record
        /// The server version the local edit started from, when known.
        public var ancestorRecord: Record?
        /// The fields the local edits changed (`nil`: the whole record).
        public var changedKeys: Set<String>?
    }

    /// Settles a conflict: returns the record to save (its fields win; the server's tag is
    /// applied), or `nil` to keep the server's version and drop the local edit.
    public typealias ConflictResolver = @Sendable (Conflict) async throws -> Record?

    /// The database synced.
    public let database: Database
    /// The local cache.
    public let cache: RecordCache
    /// The configuration.
    public let configuration: Configuration
    let resolver: ConflictResolver
    /// Serialises fetches and sends.
    let passLock = SyncLock()

    /// Creates an engine.
    ///
    /// - Parameter conflictResolver: how conflicts are settled; by default the locally changed
    ///   fields are re-applied onto the server's record (``SyncEngine/reapplyLocalChanges(_:)``).
    public init(database: Database, cache: RecordCache, configuration: Configuration = Configuration(),
                conflictResolver: ConflictResolver? = nil) {
        self.database = database
        self.cache = cache
        self.configuration = configuration
        self.resolver = conflictResolver ?? { Self.reapplyLocalChanges($0) }
    }

    /// The default resolution: the server's record with the locally changed fields set to
    /// their local values (or removed, where the local edit removed them).
    public static func reapplyLocalChanges(_ conflict: Conflict) -> Record {
        guard let keys = conflict.changedKeys else { return conflict.clientRecord }
        var merged = conflict.serverRecord
        for key in keys { merged.fields[key] = conflict.clientRecord.fields[key] }
        return merged
    }

    /// Refuses a shared database's engine over a cache of one's own databases, and the reverse:
    /// the two keep zones differently (``RecordCache/sharedDatabase``).
    func checkCacheScope() throws {
        guard cache.sharedDatabase != (database.scope == .shared) else { return }
        throw RecordSyncError(.badRequest, cache.sharedDatabase
            ? "this cache holds a shared database; sync it with container.sharedCloudDatabase"
            : "the shared database needs a cache opened with RecordCache(path:sharedDatabase: true)")
    }

    /// Saves a record locally and queues it for sending (see ``RecordCache/save(_:)``).
    @discardableResult
    public func save(_ record: Record) async throws -> Record { try await cache.save(record) }

    /// Deletes a record locally and queues the delete (see ``RecordCache/delete(_:)``).
    public func delete(_ id: Record.ID) async throws { try await cache.delete(id) }

    /// Runs `operation`, retrying transient failures with exponential backoff that honours the
    /// server's `retryAfter`.
    func retrying<T: Sendable>(_ what: String, _ operation: () async throws -> T) async throws -> T {
        var delay = configuration.initialBackoff
        for attempt in 1... {
            do {
                return try await operation()
            } catch let error as RecordSyncError where error.code.isTransient && attempt < configuration.maximumAttempts {
                let wait = error.retryAfter.map { Duration.milliseconds(Int64($0 * 1000)) } ?? delay
                configuration.logger.debug("retrying", metadata: ["sync.operation": "\(what)", "sync.error": "\(error.code)"])
                try await Task.sleep(for: min(wait, .seconds(30)))
                delay *= 2
            }
        }
        throw RecordSyncError(.internalError, "unreachable")
    }
}
