import Foundation
import PostgresNIO
import RecordModel
import RecordRules

extension PostgresTransaction {
    func zone(named name: String, in database: Int64) throws -> StoredZone? {
        guard let row = try rows("SELECT id, uid, seq, deleted FROM zones WHERE database_id = \(database) AND name = \(name)").first else { return nil }
        let (key, uid, sequence, deleted) = try row.decode((Int64, UUID, Int64, Bool).self)
        zonesSeen[key] = (uid, deleted)
        return StoredZone(key: key, name: name, uid: uid, sequence: sequence, deleted: deleted)
    }

    /// One statement: each is a round trip to the database.
    func database(at address: DatabaseAddress, withZoneNamed name: String) throws -> (database: StoredDatabase, zone: StoredZone?)? {
        guard let found = try rows(Self.databaseWithZone(at: address, named: name)).first.map({ try Self.databaseWithZone(from: $0, named: name) }) else {
            return nil
        }
        if let zone = found.zone { zonesSeen[zone.key] = (zone.uid, zone.deleted) }
        return found
    }

    /// The statement of ``database(at:withZoneNamed:)``.
    static func databaseWithZone(at address: DatabaseAddress, named name: String) -> PostgresQuery {
        """
        SELECT d.id, d.container_id, d.uid, d.seq, z.id, z.uid, z.seq, z.deleted
        FROM databases d JOIN containers c ON c.id = d.container_id
        LEFT JOIN zones z ON z.database_id = d.id AND z.name = \(name)
        WHERE c.name = \(address.container) AND c.environment = \(address.environment) AND d.kind = \(address.kind.rawValue) AND d.owner_id = \(address.ownerKey)
        """
    }

    /// The database and zone in a row of ``databaseWithZone(at:named:)``.
    static func databaseWithZone(from row: PostgresRow, named name: String) throws -> (database: StoredDatabase, zone: StoredZone?) {
        let (key, container, databaseUID, databaseSequence, zoneKey, zoneUID, zoneSequence, deleted) =
            try row.decode((Int64, Int64, UUID, Int64, Int64?, UUID?, Int64?, Bool?).self)
        let database = StoredDatabase(key: key, containerKey: container, uid: databaseUID, sequence: databaseSequence)
        guard let zoneKey, let zoneUID, let zoneSequence, let deleted else { return (database, nil) }
        return (database, StoredZone(key: zoneKey, name: name, uid: zoneUID, sequence: zoneSequence, deleted: deleted))
    }

    func liveZones(in database: Int64) throws -> [StoredZone] {
        try rows("SELECT id, name, uid, seq FROM zones WHERE database_id = \(database) AND NOT deleted ORDER BY name").map {
            let (key, name, uid, sequence) = try $0.decode((Int64, String, UUID, Int64).self)
            return StoredZone(key: key, name: name, uid: uid, sequence: sequence, deleted: false)
        }
    }

    func insertZone(named name: String, in database: Int64, uid: UUID, databaseSequence: Int64) throws -> Int64 {
        let key = try rows("""
            INSERT INTO zones(database_id, name, uid, seq, db_seq, deleted) VALUES (\(database), \(name), \(uid), 0, \(databaseSequence), FALSE) RETURNING id
            """)[0].decode(Int64.self)
        zonesSeen[key] = (uid, false)
        return key
    }

    func reviveZone(_ zone: Int64, uid: UUID, databaseSequence: Int64) throws {
        try execute("UPDATE zones SET deleted = FALSE, uid = \(uid), db_seq = \(databaseSequence) WHERE id = \(zone)")
        zonesSeen[zone] = (uid, false)
    }

    func markZoneDeleted(_ zone: Int64, databaseSequence: Int64) throws {
        guard let uid = try rows("UPDATE zones SET deleted = TRUE, db_seq = \(databaseSequence) WHERE id = \(zone) RETURNING uid").first?.decode(UUID.self) else { return }
        zonesSeen[zone] = (uid, true)
    }

    /// The references and search rows go first, found through their zone; then rows and tombstones.
    func deleteZoneContents(_ zone: Int64) throws {
        try execute("DELETE FROM refs WHERE zone_id = \(zone)")
        try execute("DELETE FROM search_tokens WHERE zone_id = \(zone)")
        try execute("DELETE FROM search_locations WHERE zone_id = \(zone)")
        try execute("DELETE FROM records WHERE zone_id = \(zone)")
        try execute("DELETE FROM tombstones WHERE zone_id = \(zone)")
    }

    func privateDatabases(ofUser key: Int64) throws -> [Int64] {
        try rows("SELECT id FROM databases WHERE kind = 'private' AND owner_id = \(key) ORDER BY id").map { try $0.decode(Int64.self) }
    }

    func zones(in database: Int64) throws -> [StoredZone] {
        try rows("SELECT id, name, uid, seq, deleted FROM zones WHERE database_id = \(database) ORDER BY name").map {
            let (key, name, uid, sequence, deleted) = try $0.decode((Int64, String, UUID, Int64, Bool).self)
            return StoredZone(key: key, name: name, uid: uid, sequence: sequence, deleted: deleted)
        }
    }

    func deleteDatabase(_ database: Int64) throws {
        try execute("DELETE FROM zone_incarnations WHERE zone_id IN (SELECT id FROM zones WHERE database_id = \(database))")
        try execute("DELETE FROM zones WHERE database_id = \(database)")
        try execute("DELETE FROM databases WHERE id = \(database)")
    }

    func insertIncarnation(_ uid: UUID, of zone: Int64) throws {
        try execute("INSERT INTO zone_incarnations(uid, zone_id) VALUES (\(uid), \(zone))")
    }

    func zone(ofIncarnation uid: UUID) throws -> Int64? {
        try rows("SELECT zone_id FROM zone_incarnations WHERE uid = \(uid)").first?.decode(Int64.self)
    }

    /// Locks the zone's row until commit (other writers of the zone wait here; readers never
    /// do). If another writer deleted or replaced the zone after this transaction read it, the
    /// transaction is stale and runs again.
    func lockZoneForWriting(_ zone: Int64) throws -> Int64 {
        guard let row = try rows("SELECT seq, uid, deleted FROM zones WHERE id = \(zone) FOR UPDATE").first else {
            throw PostgresRetry("zone \(zone) vanished")
        }
        let (sequence, uid, deleted) = try row.decode((Int64, UUID, Bool).self)
        if let seen = zonesSeen[zone], seen.uid != uid || seen.deleted != deleted {
            throw PostgresRetry("zone \(zone) changed before it was locked")
        }
        return sequence
    }

    func setZoneSequence(_ zone: Int64, to sequence: Int64, databaseSequence: Int64) throws {
        try execute("UPDATE zones SET seq = \(sequence), db_seq = \(databaseSequence) WHERE id = \(zone)")
    }
}
