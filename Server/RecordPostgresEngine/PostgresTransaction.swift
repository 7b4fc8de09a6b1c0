import Foundation
import Logging
import NIOCore
import PostgresNIO
import RecordModel
import RecordStorage
import RecordSQL

/// One transaction of the PostgreSQL engine: the storage primitives as statements on one leased
/// connection (tables: ``PostgresEngine/migrations``), each waited for on the engine's thread.
final class PostgresTransaction: StorageTransaction {
    let connection: PostgresConnection
    let engine: PostgresEngine
    /// The keys of reference field names read or added in this transaction; a savepoint that is
    /// undone forgets those it added.
    var fieldKeys: [String: Int64] = [:]
    /// What this transaction read of each zone before locking it (incarnation, deleted): a zone
    /// another writer changed in between makes the transaction stale.
    var zonesSeen: [Int64: (uid: UUID, deleted: Bool)] = [:]
    /// How many savepoints are open.
    private var savepoints = 0
    /// Writes held back until the next statement (``PendingWrites``).
    var pending = PendingWrites()
    /// Statements sent without waiting for their answer (``fire(_:)``).
    private var fired: [EventLoopFuture<PostgresQueryResult>] = []

    init(connection: PostgresConnection, engine: PostgresEngine) {
        self.connection = connection
        self.engine = engine
    }

    // MARK: Statements

    /// Runs a statement, after the pending writes, and returns its rows.
    @discardableResult
    func rows(_ query: PostgresQuery) throws -> [PostgresRow] {
        try flush()
        let result = try connection.answering(query, logger: engine.logger).wait()
        try settleFired()
        return result.rows
    }

    /// Runs a statement, after the pending writes, and returns how many rows it changed.
    @discardableResult
    func execute(_ query: PostgresQuery) throws -> Int {
        try flush()
        return try send(query)
    }

    /// Runs a statement as it is (``flush()``'s own).
    @discardableResult
    func send(_ query: PostgresQuery) throws -> Int {
        let result = try connection.answering(query, logger: engine.logger).wait()
        try settleFired()
        return result.metadata.rows ?? 0
    }

    /// Sends a statement whose answer nothing waits for: the connection runs statements in the
    /// order sent, so the next one waited for follows it, and this thread is woken once for
    /// both. Its error, if any, is thrown by the next statement waited for. Each wake-up of the
    /// waiting thread costs about as much as a small statement on the server.
    func fire(_ query: PostgresQuery) {
        fired.append(connection.answering(query, logger: engine.logger))
    }

    /// Throws the error of a statement ``fire(_:)`` sent, if any (waiting for their answers).
    func settleFired() throws {
        guard !fired.isEmpty else { return }
        let answers = fired
        fired.removeAll()
        for answer in answers { _ = try answer.wait() }
    }

    /// Ends the transaction without its pending writes.
    func rollback() throws {
        pending = PendingWrites()
        try send("ROLLBACK")
    }

    /// A statement of `sql` (placeholders `$1`, …) with `values` bound.
    static func statement(_ sql: String, _ values: [SQLValue]) throws -> PostgresQuery {
        var binds = PostgresBindings(capacity: values.count)
        for value in values { try binds.append(value) }
        return PostgresQuery(unsafeSQL: sql, binds: binds)
    }

    func savepoint(_ body: () throws -> Bool) throws {
        let keys = fieldKeys
        let zones = zonesSeen
        savepoints += 1
        let name = "s\(savepoints)"
        defer { savepoints -= 1 }
        try execute(PostgresQuery(unsafeSQL: "SAVEPOINT \(name)"))
        let kept: Bool
        do {
            kept = try body()
        } catch {
            fieldKeys = keys
            zonesSeen = zones
            pending = PendingWrites()
            try execute(PostgresQuery(unsafeSQL: "ROLLBACK TO SAVEPOINT \(name)"))
            try execute(PostgresQuery(unsafeSQL: "RELEASE SAVEPOINT \(name)"))
            throw error
        }
        if !kept {
            fieldKeys = keys
            zonesSeen = zones
            pending = PendingWrites()
            try execute(PostgresQuery(unsafeSQL: "ROLLBACK TO SAVEPOINT \(name)"))
        }
        try execute(PostgresQuery(unsafeSQL: "RELEASE SAVEPOINT \(name)"))
    }
}

extension PostgresBindings {
    /// Binds a value as its own type (`BIGINT`, `DOUBLE PRECISION`, `TEXT`, `BYTEA`, or null).
    mutating func append(_ value: SQLValue) throws {
        switch value {
        case .integer(let number): append(number)
        case .real(let number): append(number)
        case .text(let string): append(string)
        case .blob(let data): try append(data)
        case .null: appendNull()
        }
    }
}

extension PostgresConnection {
    /// `query(_:logger:)`, sure to be answered. PostgresNIO never answers a statement written to
    /// a connection that has already closed (the database stopped between two statements of a
    /// transaction): its handler is gone and the write fails unseen, so a thread waiting for the
    /// answer would wait for good. The statement is written from the connection's event loop,
    /// where the channel's state cannot change under it: a closed connection fails it at once,
    /// and an open one hands it to the driver, which answers it or fails it when it closes.
    func answering(_ query: PostgresQuery, logger: Logger) -> EventLoopFuture<PostgresQueryResult> {
        eventLoop.flatSubmit {
            guard !self.isClosed else { return self.eventLoop.makeFailedFuture(PostgresConnectionLost()) }
            return self.query(query, logger: logger)
        }
    }
}

/// The connection to the database was closed when a statement was to be sent on it.
struct PostgresConnectionLost: Error, CustomStringConvertible {
    var description: String { "the connection to the database is closed" }
}
