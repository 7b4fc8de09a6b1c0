import Foundation
import RecordModel
import RecordSQL

/// What the storage primitives written once (``SQLStorageTransaction``) need of an engine's
/// transaction: run a statement, read its rows, in the engine's dialect. Savepoints and locks
/// are the storage protocol's own (``StorageTransaction/savepoint(_:)``,
/// ``StorageTransaction/lockZoneForWriting(_:)``).
public protocol SQLSession: AnyObject {
    /// How the engine spells SQL.
    var dialect: SQLDialect { get }
    /// Runs a statement and answers how many rows it changed.
    @discardableResult
    func run(_ statement: SQLStatement) throws -> Int
    /// Runs a statement and answers its rows.
    func fetch(_ statement: SQLStatement) throws -> [SQLRow]
}

/// A row a statement answered: its cells in the order selected, read as the types the storage
/// keeps (``ColumnType``).
public struct SQLRow: Sendable {
    /// The cells: SQLite's values as they are; PostgreSQL's integers, booleans (0 or 1), reals,
    /// text and bytes (a `UUID` as its 16 bytes).
    public var cells: [SQLValue]

    public init(_ cells: [SQLValue]) {
        self.cells = cells
    }

    public func int64(_ index: Int) throws -> Int64 {
        guard case .integer(let value) = cells[index] else { throw Self.mismatch(index, "an integer", cells[index]) }
        return value
    }

    public func optionalInt64(_ index: Int) throws -> Int64? {
        if case .null = cells[index] { return nil }
        return try int64(index)
    }

    public func optionalBool(_ index: Int) throws -> Bool? {
        if case .null = cells[index] { return nil }
        return try bool(index)
    }

    public func int(_ index: Int) throws -> Int { Int(try int64(index)) }

    public func bool(_ index: Int) throws -> Bool { try int64(index) != 0 }

    public func double(_ index: Int) throws -> Double {
        switch cells[index] {
        case .real(let value): return value
        case .integer(let value): return Double(value)
        default: throw Self.mismatch(index, "a number", cells[index])
        }
    }

    public func string(_ index: Int) throws -> String {
        guard case .text(let value) = cells[index] else { throw Self.mismatch(index, "text", cells[index]) }
        return value
    }

    public func optionalString(_ index: Int) throws -> String? {
        if case .null = cells[index] { return nil }
        return try string(index)
    }

    public func data(_ index: Int) throws -> Data {
        guard case .blob(let value) = cells[index] else { throw Self.mismatch(index, "bytes", cells[index]) }
        return value
    }

    public func optionalData(_ index: Int) throws -> Data? {
        if case .null = cells[index] { return nil }
        return try data(index)
    }

    public func uuid(_ index: Int) throws -> UUID {
        let bytes = try data(index)
        guard bytes.count == 16 else { throw Self.mismatch(index, "a UUID", cells[index]) }
        return bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
    }

    static func mismatch(_ index: Int, _ wanted: String, _ value: SQLValue) -> RecordSyncError {
        RecordSyncError(.internalError, "storage error: column \(index) of a row is not \(wanted) (\(value))")
    }
}
