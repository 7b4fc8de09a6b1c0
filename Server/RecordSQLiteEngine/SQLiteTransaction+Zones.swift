import Foundation
import GRDB
import RecordModel
import RecordRules

extension SQLiteTransaction {
    func zone(named name: String, in database: Int64) throws -> StoredZone? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT id, uid, seq, deleted FROM zones WHERE database_id = ? AND name = ?"),
                         arguments: [database, name])
            .map { StoredZone(key: $0[0], name: name, uid: UUID(data: $0[1]), sequence: $0[2], deleted: ($0[3] as Int64) != 0) }
    }

    func liveZones(in database: Int64) throws -> [StoredZone] {
        try Row.fetchAll(db, sql: "SELECT id, name, uid, seq FROM zones WHERE database_id = ? AND deleted = 0 ORDER BY name",
                         arguments: [database])
            .map { StoredZone(key: $0[0], name: $0[1], uid: UUID(data: $0[2]), sequence: $0[3], deleted: false) }
    }

    func insertZone(named name: String, in database: Int64, uid: UUID, databaseSequence: Int64) throws -> Int64 {
        try db.execute(sql: "INSERT INTO zones(database_id, name, uid, seq, db_seq, deleted) VALUES (?, ?, ?, 0, ?, 0)",
                       arguments: [database, name, uid.data, databaseSequence])
        return db.lastInsertedRowID
    }

    func reviveZone(_ zone: Int64, uid: UUID, databaseSequence: Int64) throws {
        try db.execute(sql: "UPDATE zones SET deleted = 0, uid = ?, db_seq = ? WHERE id = ?", arguments: [uid.data, databaseSequence, zone])
    }

    func markZoneDeleted(_ zone: Int64, databaseSequence: Int64) throws {
        try db.execute(sql: "UPDATE zones SET deleted = 1, db_seq = ? WHERE id = ?", arguments: [databaseSequence, zone])
    }

    func deleteZoneContents(_ zone: Int64) throws {
        for sql in Self.deleteZoneContentsSQL {
            try db.execute(sql: sql, arguments: [zone])
        }
    }

    /// The statements that delete a zone's (each one's argument) records, references, search
    /// rows and tombstones. The references go first, found through their sources' names (the `refs` key
    /// leads with the source, and a record's references live and die with its row); the rows
    /// and tombstones through their zone's sequence indexes. None of them walks another zone.
    static let deleteZoneContentsSQL = [
        "DELETE FROM refs WHERE zone_id = ?1 AND source IN (SELECT name FROM records WHERE zone_id = ?1)",
        "DELETE FROM search_tokens WHERE zone_id = ?",
        "DELETE FROM search_locations WHERE zone_id = ?",
        "DELETE FROM records WHERE zone_id = ?",
        "DELETE FROM tombstones WHERE zone_id = ?",
    ]

    func privateDatabases(ofUser key: Int64) throws -> [Int64] {
        try Int64.fetchAll(db, sql: "SELECT id FROM databases WHERE kind = 'private' AND owner_id = ? ORDER BY id", arguments: [key])
    }

    func zones(in database: Int64) throws -> [StoredZone] {
        try Row.fetchAll(db, sql: "SELECT id, name, uid, seq, deleted FROM zones WHERE database_id = ? ORDER BY name", arguments: [database])
            .map { StoredZone(key: $0[0], name: $0[1], uid: UUID(data: $0[2]), sequence: $0[3], deleted: ($0[4] as Int64) != 0) }
    }

    func deleteDatabase(_ database: Int64) throws {
        for sql in ["DELETE FROM zone_incarnations WHERE zone_id IN (SELECT id FROM zones WHERE database_id = ?)",
                    "DELETE FROM zones WHERE database_id = ?", "DELETE FROM databases WHERE id = ?"] {
            try db.execute(sql: sql, arguments: [database])
        }
    }

    func insertIncarnation(_ uid: UUID, of zone: Int64) throws {
        try db.execute(sql: "INSERT INTO zone_incarnations(uid, zone_id) VALUES (?, ?)", arguments: [uid.data, zone])
    }

    func zone(ofIncarnation uid: UUID) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT zone_id FROM zone_incarnations WHERE uid = ?", arguments: [uid.data])
    }

    /// SQLite serialises write transactions, so reading the number is enough.
    func lockZoneForWriting(_ zone: Int64) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT seq FROM zones WHERE id = ?"), arguments: [zone]) ?? 0
    }

    func setZoneSequence(_ zone: Int64, to sequence: Int64, databaseSequence: Int64) throws {
        try db.cachedStatement(sql: "UPDATE zones SET seq = ?, db_seq = ? WHERE id = ?").execute(arguments: [sequence, databaseSequence, zone])
    }
}
