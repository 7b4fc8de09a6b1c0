import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import PostgresNIO
import RecordModel
import RecordStorage
import RecordSQL
import RecordStorageSQL

/// The PostgreSQL engine: the storage primitives as SQL on one PostgreSQL database, which any
/// number of `recordserver` processes may share.
///
/// Each transaction leases a connection from a pool and runs on a thread of the engine's own
/// pool (never an event loop, never Swift's cooperative threads), waiting there for each
/// statement. Reads run in one `REPEATABLE READ READ ONLY` snapshot. Writes run in
/// `READ COMMITTED`: a write locks its zone's row (``StorageTransaction/lockZoneForWriting(_:)``)
/// before it reads or writes anything of the zone, so every statement after the lock sees what
/// the zone's previous writer committed, and the zone's feed numbers commit in order. A write
/// that a concurrent commit has made stale (a deadlock, a unique key taken in the meantime, a zone
/// deleted between being read and being locked) is run again from the start, in a new
/// transaction, a few times before it fails; its body is a pure function of what it reads, so
/// running it again is safe.
public final class PostgresEngine: StorageEngine {
    /// The database.
    public let location: PostgresLocation
    /// The pool of connections.
    let client: PostgresClient
    /// Runs the pool (`PostgresClient.run()`) until ``shutdown()`` cancels it (`recordserver`
    /// calls it after graceful shutdown; tests and `recordbench` when they close an engine).
    private let clientTask: Task<Void, Never>
    /// The threads transactions run on: one pool for the process, started on first use, of
    /// ``threadCount`` threads (a transaction holds one while it runs; more wait their turn).
    /// Shared rather than one per engine: an engine's pool could not be shut down reliably
    /// (NIOThreadPool's graceful shutdown hung joining an idle thread), and a process normally
    /// has one engine.
    static let threads: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: threadCount)
        pool.start()
        return pool
    }()
    /// How many transactions of the process's engines run at once.
    public static let threadCount = 64
    /// The log of the driver.
    let logger: Logger
    /// Transactions asking for and holding the pool's connections.
    let counter: PoolCounter
    public var poolUse: PoolUse? { counter.use }
    /// The connections (by id) that have created the temporary tables cascades use.
    let preparedConnections = NIOLockedValueBox<Set<Int>>([])
    /// How often a write made stale by a concurrent commit is run again before it fails.
    static let attempts = 8
    /// Tells the other servers over this database of changes, and this one of theirs.
    let relay: PostgresChangeRelay
    public var changeRelay: (any ChangeRelay)? { relay }
    /// Asset bytes: rows of this database, so every server serves every asset.
    public var assetBytes: any AssetByteStore { PostgresAssetChunks(engine: self) }
    /// Connects to the database `location` names, brings its schema up to date (under a lock,
    /// so that servers starting together do not race) and opens a pool of at most
    /// `maximumConnections` connections.
    ///
    /// - Throws: ``PostgresEngineError`` when the database cannot be reached or migrated.
    public init(location: PostgresLocation, maximumConnections: Int = 16, logger: Logger = Logger(label: "recordsync.postgres")) async throws {
        self.logger = logger
        self.location = location
        try await Self.migrate(location, logger: logger)
        var configuration = try location.clientConfiguration
        configuration.options.maximumConnections = max(1, maximumConnections)
        counter = PoolCounter(capacity: max(1, maximumConnections))
        configuration.options.minimumConnections = 0
        // The pool's own log, errors only: it warns of a lease made before `run()` has begun,
        // which the first transaction of a short-lived process can be (it waits, and works).
        var poolLogger = logger
        poolLogger.logLevel = max(logger.logLevel, .error)
        let client = PostgresClient(configuration: configuration, backgroundLogger: poolLogger)
        self.client = client
        clientTask = Task { await client.run() }
        relay = PostgresChangeRelay(location: location, client: client, logger: logger)
    }

    /// The connection of ``database(at:withZoneNamed:)``, opened on first use and again after it
    /// closed; `nil` once shut down.
    private let readsConnection = NIOLockedValueBox<Task<PostgresConnection, any Error>?>(nil)
    private let shutDown = NIOLockedValueBox(false)

    /// The connection for single statements: no lease from the pool, and statements from
    /// several tasks are sent one after another on it.
    private func connectionForReads() async throws -> PostgresConnection {
        for _ in 0..<2 {
            let opening = readsConnection.withLockedValue { opening -> Task<PostgresConnection, any Error>? in
                if let opening { return opening }
                guard !shutDown.withLockedValue({ $0 }) else { return nil }
                let location = location, logger = logger
                opening = Task { try await Self.connect(location, logger: logger, applicationName: "recordsync-reads") }
                return opening
            }
            guard let opening else { throw RecordSyncError(.internalError, "storage error: the engine was shut down") }
            if let connection = try? await opening.value, !connection.isClosed { return connection }
            readsConnection.withLockedValue { if $0 == opening { $0 = nil } }  // closed, or never opened: open another
        }
        throw RecordSyncError(.tryAgainLater, "storage error: cannot connect to the database at \(location); nothing was done", retryAfter: 5)
    }

    /// Closes the pool of connections. Transactions started afterwards fail.
    public func shutdown() async {
        let reads = readsConnection.withLockedValue { opening in
            shutDown.withLockedValue { $0 = true }
            defer { opening = nil }
            return opening
        }
        if let connection = try? await reads?.value { try? await connection.close() }
        await relay.close()
        clientTask.cancel()
        _ = await clientTask.value
    }

    /// Runs `body` in a read-only snapshot. Nothing waits for its `COMMIT`, which cannot fail
    /// for a read: the connection runs it before the next transaction's first statement.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) async throws -> T {
        try await readTransaction(body)
    }

    /// ``read(_:)`` with the engine's own transaction (its asset store's statements).
    func readTransaction<T: Sendable>(_ body: @escaping @Sendable (PostgresTransaction) throws -> T) async throws -> T {
        try await transaction { transaction in
            transaction.fire("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            let value = try body(transaction)
            try transaction.settleFired()
            transaction.fire("COMMIT")
            return value
        }
    }

    /// One statement, sent from here on a connection kept for such reads: no transaction, no
    /// lease from the pool, no hop to the engine's threads. A connection found closed (the
    /// server restarted, say) is opened again, once.
    public func database(at address: DatabaseAddress, withZoneNamed name: String) async throws -> (database: StoredDatabase, zone: StoredZone?)? {
        var attempt = 1
        while true {
            let connection = try await connectionForReads()
            do {
                return try await Self.translatingErrors {
                    let answer = try await connection.answering(try PostgresTransaction.query(.databaseWithZone(at: address, named: name)), logger: logger).get()
                    return try answer.rows.first.map { try SQLStatement.databaseWithZone(from: PostgresTransaction.row($0), named: name) }
                }
            } catch where attempt == 1 && connection.isClosed {
                attempt += 1
            }
        }
    }
    /// Runs `body` in a write transaction, again from the start when a concurrent commit made it
    /// stale.
    public func write<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> WriteOutcome<T>) async throws -> T {
        try await writeTransaction(body)
    }

    /// ``write(_:)`` with the engine's own transaction (its asset store's statements).
    func writeTransaction<T: Sendable>(_ body: @escaping @Sendable (PostgresTransaction) throws -> WriteOutcome<T>) async throws -> T {
        var attempt = 1
        while true {
            do {
                return try await transaction { transaction in
                    try transaction.prepareTemporaryTables()
                    try transaction.execute("BEGIN")
                    switch try body(transaction) {
                    case .commit(let value):
                        CommitDelay.pause()
                        try transaction.execute("COMMIT")
                        return value
                    case .rollback(let value):
                        try transaction.rollback()
                        return value
                    }
                }
            } catch let error as PostgresRetry where attempt < Self.attempts {
                logger.debug("write run again: \(error.reason)")
                attempt += 1
                // Writers that deadlocked would meet again at once: wait a little, at random.
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...(2 << min(attempt, 6)))))
            } catch let error as PostgresRetry {
                throw RecordSyncError(.internalError, "storage error: \(error.reason), \(Self.attempts) times")
            }
        }
    }

    /// Leases a connection and runs `body` on the engine's threads; if `body` throws, rolls back
    /// whatever it began. The driver's errors become `INTERNAL_ERROR` (a concurrent commit's,
    /// ``PostgresRetry``).
    private func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresTransaction) throws -> T) async throws -> T {
        try await Self.translatingErrors {
            try await counter.asking {
                try await leasing { connection in
                    try await Self.threads.runIfActive { [self] in
                        try counter.holding {
                            let transaction = PostgresTransaction(connection: connection, engine: self)
                            do {
                                return try body(transaction)
                            } catch {
                                if !connection.isClosed { try? transaction.rollback() }
                                throw error
                            }
                        }
                    }
                }
            }
        }
    }

    /// Builds each missing index concurrently (writes go on) on a leased connection, outside
    /// any transaction, holding an advisory lock of the schema's so that one server at a time
    /// does it; an index whose concurrent build failed (left invalid) is dropped and built again.
    /// Each index comes with statistics of its expression (`SQLDialect.fieldStatistics`),
    /// filled by an `ANALYZE records` after a build.
    public func settleFieldIndexes(_ wanted: Set<FieldIndexKey>) async throws -> (built: [String], dropped: [String]) {
        let indexed = wanted.filter { SQLDialect.indexedScalars.contains($0.scalar) }
        let specs = Dictionary(indexed.map { SQLDialect.postgres.fieldIndex($0.field, $0.scalar) }) { first, _ in first }
        let statistics = Dictionary(indexed.compactMap { SQLDialect.postgres.fieldStatistics($0.field, $0.scalar) }) { first, _ in first }
        let logger = logger
        return try await leasing { connection in
            var locked = false
            for try await taken in try await connection.query("SELECT pg_try_advisory_lock(hashtext(current_schema() || '/field-indexes'))", logger: logger).decode(Bool.self) {
                locked = taken
            }
            guard locked else { return ([], []) }
            do {
                var valid: Set<String> = [], invalid: Set<String> = []
                for try await (name, isValid) in try await connection.query("""
                    SELECT c.relname::text, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                    WHERE i.indrelid = 'records'::regclass AND substr(c.relname, 1, 10) = 'records_q_'
                    """, logger: logger).decode((String, Bool).self) {
                    if isValid { valid.insert(name) } else { invalid.insert(name) }
                }
                let extra = valid.union(invalid).subtracting(specs.keys).sorted()
                let missing = specs.keys.filter { !valid.contains($0) }.sorted()
                for name in invalid.union(extra).sorted() {
                    try await connection.query(PostgresQuery(unsafeSQL: "DROP INDEX CONCURRENTLY IF EXISTS \(name)"), logger: logger)
                }
                for name in extra {
                    try await connection.query(PostgresQuery(unsafeSQL: "DROP STATISTICS IF EXISTS records_s_\(name.dropFirst("records_q_".count))"), logger: logger)
                }
                for name in missing { try await connection.query(PostgresQuery(unsafeSQL: specs[name]!), logger: logger) }
                for name in missing {
                    if let sql = statistics["records_s_" + name.dropFirst("records_q_".count)] { try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger) }
                }
                // The new statistics are filled now rather than at autovacuum's next analysis.
                if !missing.isEmpty { try await connection.query("ANALYZE records", logger: logger) }
                try await connection.query("SELECT pg_advisory_unlock(hashtext(current_schema() || '/field-indexes'))", logger: logger)
                return (missing, extra)
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(hashtext(current_schema() || '/field-indexes'))", logger: logger)
                throw error
            }
        }
    }

    /// How long a transaction waits for a connection of the pool before it is refused: the
    /// database unreachable (stopped, restarting, the network down) must fail requests with an
    /// answer, not hold them until it is back.
    static let connectionWait: Duration = .seconds(5)

    enum LeaseState { case waiting, leased, gaveUp }

    /// Runs `body` on a leased connection; `TRY_AGAIN_LATER` when none is leased within
    /// ``connectionWait`` (the wait is given up; a transaction already running is never cut).
    private func leasing<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        // Waiting, then either leased or given up, whichever comes first: a lease that arrives
        // after the wait was given up runs nothing.
        let lease = NIOLockedValueBox(LeaseState.waiting)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { [client] in
                try await client.withConnection { connection -> T? in
                    let proceed = lease.withLockedValue { state in
                        guard state == .waiting else { return false }
                        state = .leased
                        return true
                    }
                    // Given up already: the timer's answer is the one the caller gets.
                    guard proceed else { return nil }
                    return try await body(connection)
                }
            }
            group.addTask {
                // Cancelled (the request was, or the transaction finished): never an answer of its own.
                guard (try? await Task.sleep(for: Self.connectionWait)) != nil else { return nil }
                let gaveUp = lease.withLockedValue { state in
                    guard state == .waiting else { return false }
                    state = .gaveUp
                    return true
                }
                if gaveUp {
                    throw RecordSyncError(.tryAgainLater, "storage error: no connection to the database within \(Self.connectionWait) (it is unreachable, or every connection is busy); nothing was done", retryAfter: 5)
                }
                return nil
            }
            while let result = try await group.next() {
                if let value = result {
                    group.cancelAll()
                    return value
                }
            }
            throw RecordSyncError(.internalError, "storage error: the transaction gave no answer")
        }
    }

    /// Runs `body`, its driver errors turned into `INTERNAL_ERROR` (a concurrent commit's,
    /// ``PostgresRetry``).
    static func translatingErrors<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as PSQLError {
            if let retry = PostgresRetry(error) { throw retry }
            if isConnectionLost(error) { throw connectionLost(PostgresEngineError.describe(error)) }
            throw RecordSyncError(.internalError, "storage error: \(PostgresEngineError.describe(error))")
        } catch let error as StaleWrite {
            throw PostgresRetry(error.reason)
        } catch let error as PostgresConnectionLost {
            throw connectionLost(error.description)
        } catch let error as PostgresDecodingError {
            throw RecordSyncError(.internalError, "storage error: cannot decode column \(error.columnName)")
        }
    }
}

extension PostgresEngine {
    /// Whether the connection under a statement was lost: closed by the server or cut; closed
    /// here because of that (not because the driver met something it could not read); the
    /// database shutting down or not yet accepting connections (SQLSTATE 57P01–57P03); a
    /// connection exception (class 08, but not 08P01, a protocol violation, which is a bug that
    /// retrying would only hide).
    static func isConnectionLost(_ error: PSQLError) -> Bool {
        if [.serverClosedConnection, .connectionError, .uncleanShutdown].contains(error.code) { return true }
        if error.code == .clientClosedConnection {
            switch error.underlying {
            case nil: return true
            case let inner as PSQLError: return isConnectionLost(inner)
            case let other?: return other is IOError || other is ChannelError
            }
        }
        guard let state = error.serverInfo?[.sqlState] else { return false }
        return ["57P01", "57P02", "57P03"].contains(state) || (state.hasPrefix("08") && state != "08P01")
    }

    /// TRY_AGAIN_LATER for a statement whose connection was lost: a transient failure, though
    /// a write whose COMMIT was under way may have been done (sent again, a create then answers
    /// EXISTS holding its values, which the client library recognises as its own).
    static func connectionLost(_ detail: String) -> RecordSyncError {
        RecordSyncError(.tryAgainLater, "storage error: the connection to the database was lost (\(detail)); a write under way may or may not have been done", retryAfter: 5)
    }
}

/// A write that a concurrent commit made stale: it is run again from the start.
struct PostgresRetry: Error {
    var reason: String

    init(_ reason: String) { self.reason = reason }

    /// The retry a server error calls for, or `nil`: a serialization failure, a deadlock, or a
    /// unique key another transaction took after this one looked.
    init?(_ error: PSQLError) {
        guard let state = error.serverInfo?[.sqlState], ["40001", "40P01", "23505"].contains(state) else { return nil }
        reason = "SQLSTATE \(state)"
    }
}

/// Why the engine could not start.
public struct PostgresEngineError: Error, CustomStringConvertible {
    public var description: String

    init(_ description: String) { self.description = description }

    /// One line saying what went wrong, from a driver error.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let server = error.serverInfo {
            let message = server[.message] ?? "error"
            return "\(message) (SQLSTATE \(server[.sqlState] ?? "?"))"
        }
        if let underlying = error.underlying { return "\(error.code): \(underlying)" }
        return "\(error.code)"
    }
}
