import Foundation
import NIOCore
import PostgresNIO
import RecordSQL
import RecordStorageSQL

/// The PostgreSQL engine's session: the primitives written once run their statements here,
/// after the pending writes (``PendingWrites``), as every statement of the engine does.
extension PostgresTransaction: SQLStorageTransaction {
    var dialect: SQLDialect { .postgres }

    @discardableResult
    func run(_ statement: SQLStatement) throws -> Int {
        try execute(Self.query(statement))
    }

    func fetch(_ statement: SQLStatement) throws -> [SQLRow] {
        try rows(Self.query(statement)).map(Self.row)
    }

    /// The statement with its values bound as their columns' types.
    static func query(_ statement: SQLStatement) throws -> PostgresQuery {
        let (sql, values) = statement.rendered(in: .postgres)
        var binds = PostgresBindings(capacity: values.count)
        for value in values {
            switch value {
            case .integer(let number): binds.append(number)
            case .real(let number): binds.append(number)
            case .text(let text): binds.append(text)
            case .blob(let data): try binds.append(data)
            case .uuid(let uuid): binds.append(uuid)
            case .bool(let flag): binds.append(flag)
            case .texts(let texts): binds.append(texts)
            case .integers(let numbers): binds.append(numbers)
            case .null: binds.appendNull()
            }
        }
        return PostgresQuery(unsafeSQL: sql, binds: binds)
    }

    /// A row's cells as the storage keeps them: integers and booleans as integers, a `UUID` as
    /// its 16 bytes.
    static func row(_ row: PostgresRow) throws -> SQLRow {
        try SQLRow(row.map { cell -> SQLValue in
            guard let bytes = cell.bytes else { return .null }
            // Text and BIGINT straight from their binary form (``PostgresCells``).
            if cell.format == .binary {
                if cell.dataType == .text { return .text(String(buffer: bytes)) }
                if cell.dataType == .int8, bytes.readableBytes == 8, let value = bytes.getInteger(at: bytes.readerIndex, as: Int64.self) {
                    return .integer(value)
                }
            }
            switch cell.dataType {
            case .int2, .int4, .int8: return .integer(try cell.decode(Int64.self))
            case .bool: return .integer(try cell.decode(Bool.self) ? 1 : 0)
            case .float4, .float8: return .real(try cell.decode(Double.self))
            case .bytea: return .blob(try cell.decode(Data.self))
            case .uuid: return .blob(withUnsafeBytes(of: try cell.decode(UUID.self).uuid) { Data($0) })
            default: return .text(try cell.decode(String.self))
            }
        })
    }
}
