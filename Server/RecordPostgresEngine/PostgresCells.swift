import NIOCore
import PostgresNIO
import RecordModel

/// A row's cells read in order, each as the type its statement gives it. A text, `BIGINT` or
/// `BOOLEAN` cell in binary format is read straight from its bytes; anything else (and every
/// error) goes through the driver's own decoding. `PostgresRow.decode` of a tuple looks up
/// generic metadata at run time for every row: about a third of the engine's CPU for a change
/// page of 400 rows.
struct PostgresCells {
    private var iterator: PostgresRow.Iterator

    init(_ row: PostgresRow) {
        iterator = row.makeIterator()
    }

    private mutating func next() throws -> PostgresCell {
        guard let cell = iterator.next() else { throw RecordSyncError(.internalError, "storage error: a row has fewer columns than its statement gives") }
        return cell
    }

    mutating func string() throws -> String {
        let cell = try next()
        if let bytes = cell.bytes, cell.format == .binary, cell.dataType == .text { return String(buffer: bytes) }
        return try cell.decode(String.self)
    }

    mutating func optionalString() throws -> String? {
        let cell = try next()
        guard let bytes = cell.bytes else { return nil }
        if cell.format == .binary, cell.dataType == .text { return String(buffer: bytes) }
        return try cell.decode(String.self)
    }

    mutating func int64() throws -> Int64 {
        let cell = try next()
        if let bytes = cell.bytes, cell.format == .binary, cell.dataType == .int8, bytes.readableBytes == 8,
           let value = bytes.getInteger(at: bytes.readerIndex, as: Int64.self) {
            return value
        }
        return try cell.decode(Int64.self)
    }

    mutating func optionalInt64() throws -> Int64? {
        let cell = try next()
        guard cell.bytes != nil else { return nil }
        if let bytes = cell.bytes, cell.format == .binary, cell.dataType == .int8, bytes.readableBytes == 8,
           let value = bytes.getInteger(at: bytes.readerIndex, as: Int64.self) {
            return value
        }
        return try cell.decode(Int64.self)
    }

    mutating func bool() throws -> Bool {
        let cell = try next()
        if let bytes = cell.bytes, cell.format == .binary, cell.dataType == .bool, bytes.readableBytes == 1,
           let value = bytes.getInteger(at: bytes.readerIndex, as: UInt8.self) {
            return value != 0
        }
        return try cell.decode(Bool.self)
    }
}
