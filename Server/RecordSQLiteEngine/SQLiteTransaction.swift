import Foundation
import GRDB
import RecordModel
import RecordStorage
import RecordSQL

/// One transaction of the SQLite engine: the storage primitives as statements on one GRDB
/// connection (tables: ``SQLiteEngine/migrator``).
final class SQLiteTransaction: StorageTransaction {
    let db: Database
    /// The keys of reference field names read or added in this transaction (``fieldKey(_:)``);
    /// a savepoint that is undone forgets those it added.
    var fieldKeys: [String: Int64] = [:]

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
}
