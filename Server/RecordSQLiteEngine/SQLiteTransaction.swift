import Foundation
import GRDB
import RecordModel
import RecordStorage
import RecordSQL

/// One transaction of the SQLite engine: the storage primitives as statements on one GRDB
/// connection (tables: ``SQLiteEngine/migrator``).
final class SQLiteTransaction: StorageTransaction {
    let db: Database
    /// The keys of reference field names in `ref_fields` (what `refs.field` holds) read or added
    /// in this transaction; a savepoint that is undone forgets those it added.
    private var fieldKeys: [String: Int64] = [:]

    init(_ db: Database) {
        self.db = db
    }

    func savepoint(_ body: () throws -> Bool) throws {
        let keys = fieldKeys
        var kept = false
        defer { if !kept { fieldKeys = keys } }
        try db.inSavepoint {
            kept = try body()
            return kept ? .commit : .rollback
        }
    }

    /// The key of the reference field `name` in `ref_fields`, added if the store has none yet.
    /// A field name's key never changes and is never removed; keys are shared by every zone.
    func fieldKey(_ name: String) throws -> Int64 {
        if let key = fieldKeys[name] { return key }
        let key: Int64
        if let stored = try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM ref_fields WHERE name = ?"), arguments: [name]) {
            key = stored
        } else {
            try db.cachedStatement(sql: "INSERT INTO ref_fields(name) VALUES (?)").execute(arguments: [name])
            key = db.lastInsertedRowID
        }
        fieldKeys[name] = key
        return key
    }
}
