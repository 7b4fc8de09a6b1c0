import Foundation
import GRDB
import RecordModel
import RecordStorage
import RecordSQL

/// The SQLite engine: one database file in WAL mode, written through GRDB.
///
/// Writes are serialised by SQLite (one writer), so a zone's feed numbers taken inside a write
/// transaction become visible in order. Commits are synchronous (`synchronous = FULL`): an
/// acknowledged write survives a crash of the process or the machine.
public final class SQLiteEngine: StorageEngine {
    /// The connections: concurrent readers, one writer.
    package let pool: DatabasePool
    /// Runs the file's WAL checkpoints off the commit path.
    private let checkpointer: WALCheckpointer
    /// Asset bytes: files under `assets/` beside the database file.
    public let assetBytes: any AssetByteStore
    /// Transactions asking for and holding the pool's connections (its readers and writer).
    let counter: PoolCounter
    public var poolUse: PoolUse? { counter.use }
    /// Held by the one read on the asking thread at a time (``database(at:withZoneNamed:)``,
    /// ``boundedRead(_:)``).
    private let hereLock = NSLock()

    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    ///
    /// - Throws: GRDB's `DatabaseError` when the file cannot be opened or migrated.
    public init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        let checkpointer = WALCheckpointer(path: path)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            checkpointer.install(in: db)
        }
        self.checkpointer = checkpointer
        // Not DatabasePool(path:configuration:): its writer would commit with synchronous = NORMAL.
        pool = try DatabasePool.durable(path: path, configuration: configuration)
        try Self.migrator.migrate(pool)
        counter = PoolCounter(capacity: pool.configuration.maximumReaderCount + 1)
        assetBytes = SQLiteAssetFiles(directory: ((path as NSString).deletingLastPathComponent as NSString).appendingPathComponent("assets"), pool: pool)
    }

    /// Runs `body` on one of the pool's readers (a snapshot); GRDB's errors become `INTERNAL_ERROR`.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) async throws -> T {
        do {
            return try await counter.asking { try await pool.read { [counter] db in try counter.holding { try body(SQLiteTransaction(db)) } } }
        } catch let error as DatabaseError {
            throw Self.storageError(error)
        }
    }

    /// The change feed's read-ahead asks this before each page it serves, so it is read on the
    /// asking thread when it can be (``boundedRead(_:)``): two indexed lookups cost far less
    /// than the hop to a reader's queue and back (about 0.4 ms a page under load).
    public func database(at address: DatabaseAddress, withZoneNamed name: String) async throws -> (database: StoredDatabase, zone: StoredZone?)? {
        try await boundedRead { try $0.database(at: address, withZoneNamed: name) }
    }

    /// One such read at a time runs on the asking thread, by the pool's synchronous read (which
    /// runs on the caller's thread once it has a reader); the others meanwhile go through
    /// ``read(_:)``, which hops to a reader's queue and back: two wake-ups of other threads,
    /// a good part of a small request's time. At most one thread of the caller's waits here,
    /// and only while every reader is busy. A read here runs to its end even if its task is
    /// cancelled (GRDB's asynchronous read would stop), and while it runs (a page read takes
    /// milliseconds) the mark checks go through ``read(_:)``.
    public func boundedRead<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) async throws -> T {
        if case .some(let found) = try await counter.asking({ try readHere(body) }) { return found }
        return try await read(body)
    }

    /// `body` read on this thread, or `nil` if another read is under way here.
    private func readHere<T>(_ body: (any StorageTransaction) throws -> T) throws -> T? {
        guard hereLock.try() else { return nil }
        defer { hereLock.unlock() }
        do {
            return .some(try pool.read { [counter] db in try counter.holding { try body(SQLiteTransaction(db)) } })
        } catch let error as DatabaseError {
            throw Self.storageError(error)
        }
    }

    /// Runs `body` in an immediate transaction on the pool's writer; GRDB's errors become
    /// `INTERNAL_ERROR`.
    public func write<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> WriteOutcome<T>) async throws -> T {
        do {
            return try await counter.asking { try await pool.writeWithoutTransaction { [counter] db in try counter.holding {
                var value: T?
                try db.inTransaction(.immediate) {
                    switch try body(SQLiteTransaction(db)) {
                    case .commit(let result):
                        value = result
                        CommitDelay.pause()
                        return .commit
                    case .rollback(let result):
                        value = result
                        return .rollback
                    }
                }
                guard let value else { throw RecordSyncError(.internalError, "the transaction gave no answer") }
                return value
            } } }
        } catch let error as DatabaseError {
            throw Self.storageError(error)
        }
    }
}

extension SQLiteEngine {
    /// What a request that met a storage failure is answered. A full disk is the operator's to
    /// fix and passes: `TRY_AGAIN_LATER` (503) with a minute's `retryAfter`, which clients wait
    /// out and retry (the transaction rolled back; nothing was written). Anything else is
    /// `INTERNAL_ERROR`.
    static func storageError(_ error: DatabaseError) -> RecordSyncError {
        if error.resultCode == .SQLITE_FULL {
            return RecordSyncError(.tryAgainLater, "the server's disk is full: nothing was written; try again once there is room", retryAfter: 60)
        }
        return RecordSyncError(.internalError, "storage error: \(error.resultCode)")
    }
}

extension UUID {
    /// The 16 bytes of the UUID.
    var data: Data { withUnsafeBytes(of: uuid) { Data($0) } }

    /// The UUID of 16 bytes (all zero if `data` is not 16 bytes long).
    init(data: Data) {
        var bytes = [UInt8](repeating: 0, count: 16)
        if data.count == 16 { bytes = [UInt8](data) }
        self.init(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                         bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}

extension SQLiteEngine {
    /// Builds and drops in one write, read first so that nothing waits for the writer when
    /// there is nothing to do. Building blocks writes while it reads the records (seconds for a
    /// million).
    ///
    /// Each field index is also analysed (`ANALYZE`, sampling at most 1,000 rows a step) once
    /// it holds rows: without statistics SQLite's planner takes a filter on a field and a sort
    /// by another for equally good, and may read a type's records in the sort's order, all of
    /// them, rather than the few the filter finds. Indexes no statistics describe keep SQLite's
    /// defaults.
    public func settleFieldIndexes(_ wanted: Set<FieldIndexKey>) async throws -> (built: [String], dropped: [String]) {
        let specs = Dictionary(wanted.filter { SQLDialect.indexedScalars.contains($0.scalar) }.map { SQLDialect.sqlite.fieldIndex($0.field, $0.scalar) }) { first, _ in first }
        let existingSQL = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'records' AND substr(name, 1, 10) = 'records_q_'"
        // The field indexes SQLite holds no statistics of (none until the first ANALYZE made its table).
        @Sendable func unanalysed(_ db: Database) throws -> Set<String> {
            let existing = Set(try String.fetchAll(db, sql: existingSQL))
            guard try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM sqlite_master WHERE name = 'sqlite_stat1'") ?? false else { return existing }
            return existing.subtracting(try String.fetchAll(db, sql: "SELECT idx FROM sqlite_stat1 WHERE tbl = 'records'"))
        }
        do {
            let (existing, unknown) = try await pool.read { db in (Set(try String.fetchAll(db, sql: existingSQL)), try unanalysed(db)) }
            guard existing != Set(specs.keys) || !unknown.isEmpty else { return ([], []) }
            return try await pool.write { db in
                let existing = Set(try String.fetchAll(db, sql: existingSQL))
                let missing = specs.keys.filter { !existing.contains($0) }.sorted(), extra = existing.subtracting(specs.keys).sorted()
                for name in missing { try db.execute(sql: specs[name]!) }
                for name in extra { try db.execute(sql: "DROP INDEX IF EXISTS \(name)") }
                try db.execute(sql: "PRAGMA analysis_limit = 1000")
                for name in try unanalysed(db).sorted() { try db.execute(sql: "ANALYZE \(name)") }
                return (missing, extra)
            }
        } catch let error as DatabaseError {
            throw Self.storageError(error)
        }
    }
}
