import Foundation
import GRDB
import RecordModel
import RecordSQL
import RecordStorageSQL

/// The SQLite engine's session: the primitives written once run their statements here, each
/// compiled once per connection (GRDB's statement cache) unless its text follows the request
/// (``SQLStatement/reused``: the cache never evicts).
extension SQLiteTransaction: SQLStorageTransaction {
    var dialect: SQLDialect { .sqlite }

    @discardableResult
    func run(_ statement: SQLStatement) throws -> Int {
        try prepared(statement).execute()
        return db.changesCount
    }

    func fetch(_ statement: SQLStatement) throws -> [SQLRow] {
        try Row.fetchAll(prepared(statement)).map { SQLRow($0.databaseValues.map(SQLValue.init)) }
    }

    /// The statement compiled (or taken from the cache), its values bound.
    func prepared(_ statement: SQLStatement) throws -> Statement {
        let (sql, values) = statement.rendered(in: .sqlite)
        let prepared = statement.reused ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
        try prepared.setArguments(Self.arguments(values))
        return prepared
    }

    /// Values as this engine stores them: a `UUID` as its 16 bytes, a `Bool` as 0 or 1.
    static func arguments(_ values: [SQLBind]) -> StatementArguments {
        StatementArguments(values.map { value -> DatabaseValue in
            switch value {
            case .integer(let number): number.databaseValue
            case .real(let number): number.databaseValue
            case .text(let text): text.databaseValue
            case .blob(let data): data.databaseValue
            case .uuid(let uuid): withUnsafeBytes(of: uuid.uuid) { Data($0) }.databaseValue
            case .bool(let flag): (flag ? 1 : 0).databaseValue
            // A JSON array (read by `json_each`), written by RecordModel's writer: Foundation's
            // encoder was 2.7% of a 400-record save's CPU.
            case .texts(let texts): ((try? JSONValue.array(texts.map(JSONValue.string)).serializedString()) ?? "[]").databaseValue
            case .integers(let numbers): "[\(numbers.map(String.init).joined(separator: ","))]".databaseValue
            case .null: .null
            }
        })
    }
}
