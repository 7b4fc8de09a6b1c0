import Foundation
import RecordModel
import RecordSQL
import RecordStorage

extension SQLStorageTransaction {
    public func zone(named name: String, in database: Int64) throws -> StoredZone? {
        guard let row = try fetch("SELECT id, uid, seq, deleted FROM zones WHERE database_id = \(database) AND name = \(name)").first else { return nil }
        let zone = StoredZone(key: try row.int64(0), name: name, uid: try row.uuid(1), sequence: try row.int64(2), deleted: try row.bool(3))
        noteZoneRead(zone.key, uid: zone.uid, deleted: zone.deleted)
        return zone
    }

    /// One statement (on an engine where each is a round trip, that matters).
    public func database(at address: DatabaseAddress, withZoneNamed name: String) throws -> (database: StoredDatabase, zone: StoredZone?)? {
        guard let found = try fetch(SQLStatement.databaseWithZone(at: address, named: name)).first.map({ try SQLStatement.databaseWithZone(from: $0, named: name) }) else {
            return nil
        }
        if let zone = found.zone { noteZoneRead(zone.key, uid: zone.uid, deleted: zone.deleted) }
        return found
    }

    public func liveZones(in database: Int64) throws -> [StoredZone] {
        try fetch("SELECT id, name, uid, seq FROM zones WHERE database_id = \(database) AND NOT deleted ORDER BY name")
            .map { StoredZone(key: try $0.int64(0), name: try $0.string(1), uid: try $0.uuid(2), sequence: try $0.int64(3), deleted: false) }
    }

    public func insertZone(named name: String, in database: Int64, uid: UUID, databaseSequence: Int64) throws -> Int64 {
        let key = try fetch("""
            INSERT INTO zones(database_id, name, uid, seq, db_seq, deleted) VALUES (\(database), \(name), \(uid), 0, \(databaseSequence), \(false)) RETURNING id
            """)[0].int64(0)
        noteZoneRead(key, uid: uid, deleted: false)
        return key
    }

    public func reviveZone(_ zone: Int64, uid: UUID, databaseSequence: Int64) throws {
        try run("UPDATE zones SET deleted = \(false), uid = \(uid), db_seq = \(databaseSequence) WHERE id = \(zone)")
        noteZoneRead(zone, uid: uid, deleted: false)
    }

    public func markZoneDeleted(_ zone: Int64, databaseSequence: Int64) throws {
        guard let uid = try fetch("UPDATE zones SET deleted = \(true), db_seq = \(databaseSequence) WHERE id = \(zone) RETURNING uid").first?.uuid(0) else { return }
        noteZoneRead(zone, uid: uid, deleted: true)
    }

    /// The references go first, found through their sources' names (a record's references live
    /// and die with its row; SQLite's `refs` key leads with the source, PostgreSQL's with the
    /// zone, and both find them so); then the search rows, the rows and the tombstones through
    /// their zone's indexes. None of them walks another zone.
    public func deleteZoneContents(_ zone: Int64) throws {
        for statement in SQLStatement.deletingContents(ofZone: zone) { try run(statement) }
    }

    public func privateDatabases(ofUser key: Int64) throws -> [Int64] {
        try fetch("SELECT id FROM databases WHERE kind = \(DatabaseKind.private.rawValue) AND owner_id = \(key) ORDER BY id").map { try $0.int64(0) }
    }

    public func zones(in database: Int64) throws -> [StoredZone] {
        try fetch("SELECT id, name, uid, seq, deleted FROM zones WHERE database_id = \(database) ORDER BY name")
            .map { StoredZone(key: try $0.int64(0), name: try $0.string(1), uid: try $0.uuid(2), sequence: try $0.int64(3), deleted: try $0.bool(4)) }
    }

    public func deleteDatabase(_ database: Int64) throws {
        try run("DELETE FROM zone_incarnations WHERE zone_id IN (SELECT id FROM zones WHERE database_id = \(database))")
        try run("DELETE FROM zones WHERE database_id = \(database)")
        try run("DELETE FROM databases WHERE id = \(database)")
    }

    public func insertIncarnation(_ uid: UUID, of zone: Int64) throws {
        try run("INSERT INTO zone_incarnations(uid, zone_id) VALUES (\(uid), \(zone))")
    }

    public func zone(ofIncarnation uid: UUID) throws -> Int64? {
        try fetch("SELECT zone_id FROM zone_incarnations WHERE uid = \(uid)").first?.int64(0)
    }

    /// Reads the number with the zone's row locked until the transaction ends (other writers of
    /// the zone wait here; readers never do); a zone another writer deleted or replaced after
    /// this transaction read it makes the write stale.
    public func lockZoneForWriting(_ zone: Int64) throws -> Int64 {
        guard let row = try fetch("SELECT seq, uid, deleted FROM zones WHERE id = \(zone)\(raw: dialect.rowLock)").first else {
            throw StaleWrite("zone \(zone) vanished")
        }
        try checkLockedZone(zone, uid: try row.uuid(1), deleted: try row.bool(2))
        return try row.int64(0)
    }

    public func setZoneSequence(_ zone: Int64, to sequence: Int64, databaseSequence: Int64) throws {
        try run("UPDATE zones SET seq = \(sequence), db_seq = \(databaseSequence) WHERE id = \(zone)")
    }
}

extension SQLStatement {
    /// The statements of ``SQLStorageTransaction/deleteZoneContents(_:)``: references,
    /// records, words, locations, tombstones, shares. The records go before their words: on PostgreSQL a
    /// search index build's step that holds some of them (`FOR SHARE`) has committed its words by
    /// the time their delete goes on, so the words' delete, after it, sees them.
    public static func deletingContents(ofZone zone: Int64) -> [SQLStatement] {
        [
            "DELETE FROM refs WHERE zone_id = \(zone) AND source IN (SELECT name FROM records WHERE zone_id = \(zone))",
            "DELETE FROM records WHERE zone_id = \(zone)",
            "DELETE FROM search_tokens WHERE zone_id = \(zone)",
            "DELETE FROM search_members WHERE zone_id = \(zone)",
            "DELETE FROM search_postings WHERE zone_id = \(zone)",
            "DELETE FROM search_blocks WHERE zone_id = \(zone)",
            "DELETE FROM search_locations WHERE zone_id = \(zone)",
            "DELETE FROM tombstones WHERE zone_id = \(zone)",
            "DELETE FROM share_participants WHERE share_id IN (SELECT id FROM shares WHERE zone_id = \(zone))",
            "DELETE FROM share_departures WHERE share_id IN (SELECT id FROM shares WHERE zone_id = \(zone))",
            "DELETE FROM shares WHERE zone_id = \(zone)",
        ]
    }
}

extension SQLStatement {
    /// The statement of ``SQLStorageTransaction/database(at:withZoneNamed:)``.
    public static func databaseWithZone(at address: DatabaseAddress, named name: String) -> SQLStatement {
        """
        SELECT d.id, d.container_id, d.uid, d.seq, z.id, z.uid, z.seq, z.deleted
        FROM databases d JOIN containers c ON c.id = d.container_id
        LEFT JOIN zones z ON z.database_id = d.id AND z.name = \(name)
        WHERE c.name = \(address.container) AND c.environment = \(address.environment) AND d.kind = \(address.kind.rawValue) AND d.owner_id = \(address.ownerKey)
        """
    }

    /// The database and zone in a row of ``databaseWithZone(at:named:)``.
    public static func databaseWithZone(from row: SQLRow, named name: String) throws -> (database: StoredDatabase, zone: StoredZone?) {
        let database = StoredDatabase(key: try row.int64(0), containerKey: try row.int64(1), uid: try row.uuid(2), sequence: try row.int64(3))
        guard let zoneKey = try row.optionalInt64(4) else { return (database, nil) }
        return (database, StoredZone(key: zoneKey, name: name, uid: try row.uuid(5), sequence: try row.int64(6), deleted: try row.bool(7)))
    }
}
