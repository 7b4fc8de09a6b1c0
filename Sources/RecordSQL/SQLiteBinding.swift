import Foundation
import GRDB
import GRDBSQLite

/// Binds a statement's arguments straight through SQLite's C API.
///
/// GRDB's `StatementArguments` box every value before binding it; for the two inserts every
/// saved record makes (its row and its references) that was about a tenth of the time a save
/// holds the write lock on the server, and a similar share of the client cache's writes.
package struct SQLiteBinder {
    fileprivate let statement: SQLiteStatement
    fileprivate var index: Int32 = 1
    /// The first binding SQLite refused (a text too large, say), reported by ``Statement/run(in:_:)`` and ``Statement/execute(binding:)``.
    fileprivate var failure: Int32 = SQLITE_OK

    private mutating func note(_ code: Int32) {
        if failure == SQLITE_OK && code != SQLITE_OK { failure = code }
        index += 1
    }

    package mutating func bind(_ value: Int64) {
        note(sqlite3_bind_int64(statement, index, value))
    }

    package mutating func bind(_ value: Int) {
        bind(Int64(value))
    }

    package mutating func bind(_ value: Double) {
        note(sqlite3_bind_double(statement, index, value))
    }

    /// Binds NULL.
    package mutating func bindNull() {
        note(sqlite3_bind_null(statement, index))
    }

    package mutating func bind(_ value: Int64?) {
        if let value { bind(value) } else { bindNull() }
    }

    package mutating func bind(_ value: String?) {
        if let value { bind(value) } else { bindNull() }
    }

    package mutating func bind(_ value: String) {
        var value = value
        let statement = statement, index = index
        let code = value.withUTF8 { bytes -> Int32 in
            guard let start = bytes.baseAddress, !bytes.isEmpty else {
                // '' (a null pointer would bind NULL)
                return sqlite3_bind_text(statement, index, "", 0, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
            }
            guard bytes.count <= Int(Int32.max) else { return SQLITE_TOOBIG }
            // SQLITE_TRANSIENT: SQLite copies the text before this returns.
            return sqlite3_bind_text(statement, index, UnsafeRawPointer(start).assumingMemoryBound(to: CChar.self), Int32(bytes.count),
                                     unsafeBitCast(-1, to: sqlite3_destructor_type.self))
        }
        note(code)
    }
}

extension Statement {
    /// Runs this statement, which returns no rows, with the arguments `bind` sets in order,
    /// straight through SQLite: GRDB's transaction observers do not see the change. For tables
    /// no observer watches (the server registers none), or followed by
    /// `Database.notifyChanges(in:)` for the tables written (as the client cache does once per
    /// fetched page), which wakes observers of those tables (`ValueObservation`) but gives no
    /// row-by-row events.
    ///
    /// - Returns: the number of rows the statement inserted, updated or deleted
    ///   (`sqlite3_changes`).
    /// - Throws: `DatabaseError` when SQLite fails.
    @discardableResult
    package func run(in db: Database, _ bind: (inout SQLiteBinder) -> Void) throws -> Int {
        let statement = sqliteStatement
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
        var binder = SQLiteBinder(statement: statement)
        bind(&binder)
        let code = binder.failure == SQLITE_OK ? sqlite3_step(statement) : binder.failure
        sqlite3_reset(statement)
        guard code == SQLITE_DONE else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: sql)
        }
        return Int(sqlite3_changes(db.sqliteConnection))
    }

    /// Executes this statement, which returns no rows, with the arguments `bind` sets in
    /// order: the values are bound through SQLite's C API, and the statement runs through GRDB,
    /// so its transaction observers (`ValueObservation`) see the change.
    ///
    /// - Throws: `DatabaseError` when SQLite fails.
    package func execute(binding bind: (inout SQLiteBinder) -> Void) throws {
        // Resets the statement and clears its bindings; GRDB then takes the bindings made here
        // as this statement's arguments (the error of a failed step removes it from GRDB's
        // statement cache, so a cached statement is never reset with an error pending).
        setUncheckedArguments(StatementArguments())
        var binder = SQLiteBinder(statement: sqliteStatement)
        bind(&binder)
        guard binder.failure == SQLITE_OK else {
            sqlite3_clear_bindings(sqliteStatement)
            throw DatabaseError(resultCode: ResultCode(rawValue: binder.failure), message: "a value could not be bound", sql: sql)
        }
        try execute()
    }
}

/// The rows of a statement, stepped and read through SQLite's C API (GRDB's `Row` reads each
/// column through a generic decoding path).
package struct SQLiteRowReader {
    private let statement: Statement
    private let rows: OpaquePointer
    private let db: Database
    /// The text ``repeatedText(_:)`` read last from each column.
    private var repeated: [Int32: String] = [:]

    /// Sets `statement`'s arguments; the first ``step()`` runs it.
    package init(_ statement: Statement, arguments: StatementArguments, in db: Database) throws {
        try statement.setArguments(arguments)
        self.statement = statement
        self.rows = statement.sqliteStatement
        self.db = db
    }

    /// Moves to the next row: `false` after the last.
    ///
    /// - Throws: `DatabaseError` when SQLite fails.
    package mutating func step() throws -> Bool {
        switch sqlite3_step(rows) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code:
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: statement.sql)
        }
    }

    /// Resets the statement (it keeps no read open).
    package func finish() { sqlite3_reset(rows) }

    package func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(rows, column) }

    /// A text column (`""` for NULL).
    package func text(_ column: Int32) -> String {
        guard let bytes = sqlite3_column_text(rows, column) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(rows, column))), as: UTF8.self)
    }

    package func optionalText(_ column: Int32) -> String? {
        sqlite3_column_type(rows, column) == SQLITE_NULL ? nil : text(column)
    }

    /// A text column that rows often repeat (a user name): the string this call read last from
    /// the column, while its text is the same, so repeats share one string.
    package mutating func repeatedText(_ column: Int32) -> String {
        guard let bytes = sqlite3_column_text(rows, column) else { return "" }
        let count = Int(sqlite3_column_bytes(rows, column))
        guard count > 0 else { return "" }
        if let last = repeated[column], last.utf8.count == count,
           last.utf8.withContiguousStorageIfAvailable({ memcmp($0.baseAddress!, bytes, count) == 0 }) == true {
            return last
        }
        let text = String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
        repeated[column] = text
        return text
    }
}
