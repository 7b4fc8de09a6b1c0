import Foundation
import RecordSQL

/// A statement written once for every engine: SQL text with its values interpolated, each
/// spelled as the dialect's placeholder when the statement runs (SQLite `?`, PostgreSQL `$1`,
/// `$2`, …).
///
///     let statement: SQLStatement = "SELECT body FROM subscriptions WHERE id = \(id)"
///
/// Interpolating a value binds it; `\(raw: text)` splices SQL text (never a value from outside);
/// interpolating another statement splices it, values included.
public struct SQLStatement: Sendable, ExpressibleByStringInterpolation {
    enum Piece: Sendable {
        case text(String)
        case value(SQLBind)
        /// A value whose placeholder the text already spells (``init(compiled:values:)``).
        case placed(SQLBind)
    }

    var pieces: [Piece]
    /// Whether an engine may keep the statement compiled for its next run (SQLite's statement
    /// cache, which never evicts): false for text that varies with the request.
    public var reused = true

    public init(stringLiteral value: String) {
        pieces = [.text(value)]
    }

    public init(stringInterpolation: Interpolation) {
        pieces = stringInterpolation.pieces
    }

    /// A statement compiled elsewhere (``QueryCompiler``), whose text already spells its
    /// placeholders in the dialect it runs in; not kept compiled, as its text follows the request.
    public init(compiled sql: String, values: [SQLValue]) {
        pieces = [.text(sql)] + values.map { value -> Piece in
            switch value {
            case .integer(let number): .placed(.integer(number))
            case .real(let number): .placed(.real(number))
            case .text(let text): .placed(.text(text))
            case .blob(let data): .placed(.blob(data))
            case .null: .placed(.null)
            }
        }
        reused = false
    }

    /// `column` is one of `values`: SQLite reads the list as JSON (`json_each`), PostgreSQL as
    /// an array, one value bound either way.
    public static func member(_ column: String, of values: [String], in dialect: SQLDialect) -> SQLStatement {
        member(column, .texts(values), in: dialect)
    }

    /// `column` is one of `values` (integers).
    public static func member(_ column: String, of values: [Int64], in dialect: SQLDialect) -> SQLStatement {
        member(column, .integers(values), in: dialect)
    }

    /// `column` is one of the values `rows` selects (one column): SQLite `IN`, PostgreSQL an
    /// array (`= ANY(ARRAY(…))`), which its planner reads as a list of values, so that the outer
    /// table's key drives the plan rather than a join with the subquery.
    public static func member(_ column: String, ofRows rows: SQLStatement, in dialect: SQLDialect) -> SQLStatement {
        dialect == .sqlite ? "\(raw: column) IN (\(rows))" : "\(raw: column) = ANY(ARRAY(\(rows)))"
    }

    private static func member(_ column: String, _ list: SQLBind, in dialect: SQLDialect) -> SQLStatement {
        dialect == .sqlite ? "\(raw: column) IN (SELECT value FROM json_each(\(list)))" : "\(raw: column) = ANY(\(list))"
    }

    /// The text in `dialect`, and the values its placeholders stand for, in order.
    public func rendered(in dialect: SQLDialect) -> (sql: String, values: [SQLBind]) {
        var sql = ""
        var values: [SQLBind] = []
        for piece in pieces {
            switch piece {
            case .text(let text):
                sql += text
            case .value(let value):
                values.append(value)
                sql += dialect == .sqlite ? "?" : "$\(values.count)"
            case .placed(let value):
                values.append(value)
            }
        }
        return (sql, values)
    }

    public struct Interpolation: StringInterpolationProtocol {
        var pieces: [Piece] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            pieces.reserveCapacity(interpolationCount * 2 + 1)
        }

        public mutating func appendLiteral(_ literal: String) {
            if !literal.isEmpty { pieces.append(.text(literal)) }
        }

        public mutating func appendInterpolation(raw text: String) { pieces.append(.text(text)) }
        public mutating func appendInterpolation(_ statement: SQLStatement) { pieces += statement.pieces }
        public mutating func appendInterpolation(_ value: SQLBind) { pieces.append(.value(value)) }
        public mutating func appendInterpolation(_ value: Int64) { pieces.append(.value(.integer(value))) }
        public mutating func appendInterpolation(_ value: Int) { pieces.append(.value(.integer(Int64(value)))) }
        public mutating func appendInterpolation(_ value: Double) { pieces.append(.value(.real(value))) }
        public mutating func appendInterpolation(_ value: String) { pieces.append(.value(.text(value))) }
        public mutating func appendInterpolation(_ value: Data) { pieces.append(.value(.blob(value))) }
        public mutating func appendInterpolation(_ value: UUID) { pieces.append(.value(.uuid(value))) }
        public mutating func appendInterpolation(_ value: Bool) { pieces.append(.value(.bool(value))) }
        public mutating func appendInterpolation(_ value: Int64?) { pieces.append(.value(value.map(SQLBind.integer) ?? .null)) }
        public mutating func appendInterpolation(_ value: String?) { pieces.append(.value(value.map(SQLBind.text) ?? .null)) }
        public mutating func appendInterpolation(_ value: Data?) { pieces.append(.value(value.map(SQLBind.blob) ?? .null)) }
    }
}

/// A value bound to a statement, as its column's type (``ColumnType``): each engine binds it
/// as it stores that type (SQLite: a `UUID` as its 16 bytes, a `Bool` as 0 or 1).
public enum SQLBind: Sendable, Hashable {
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
    case uuid(UUID)
    case bool(Bool)
    /// A list of text, for ``SQLStatement/member(_:of:in:)`` (SQLite: JSON text; PostgreSQL: `TEXT[]`).
    case texts([String])
    /// A list of integers, for ``SQLStatement/member(_:of:in:)`` (SQLite: JSON text; PostgreSQL: `BIGINT[]`).
    case integers([Int64])
    case null
}
