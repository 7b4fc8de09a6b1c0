import Foundation
import RecordModel
import RecordSQL
import RecordStorage

extension SQLStorageTransaction {
    public func database(at address: DatabaseAddress) throws -> StoredDatabase? {
        try fetch("""
            SELECT d.id, d.container_id, d.uid, d.seq FROM databases d JOIN containers c ON c.id = d.container_id
            WHERE c.name = \(address.container) AND c.environment = \(address.environment) AND d.kind = \(address.kind.rawValue) AND d.owner_id = \(address.ownerKey)
            """).first.map { StoredDatabase(key: try $0.int64(0), containerKey: try $0.int64(1), uid: try $0.uuid(2), sequence: try $0.int64(3)) }
    }

    public func insertDatabase(at address: DatabaseAddress, uid: UUID) throws -> StoredDatabase {
        let container = try ensureContainer(named: address.container, environment: address.environment)
        let key = try fetch("""
            INSERT INTO databases(container_id, kind, owner_id, uid, seq) VALUES (\(container), \(address.kind.rawValue), \(address.ownerKey), \(uid), 0) RETURNING id
            """)[0].int64(0)
        return StoredDatabase(key: key, containerKey: container, uid: uid, sequence: 0)
    }

    public func databaseKeys() throws -> [Int64] {
        try fetch("SELECT id FROM databases ORDER BY id").map { try $0.int64(0) }
    }

    public func advanceDatabaseSequence(_ database: Int64, by step: Int64) throws -> Int64 {
        try fetch("UPDATE databases SET seq = seq + \(step) WHERE id = \(database) RETURNING seq").first?.int64(0) ?? 0
    }

    public func zoneChanges(in database: Int64, after sequence: Int64, deletionFloor: Int64, limit: Int) throws -> [ZoneChangeRow] {
        try fetch("""
            SELECT name, deleted, db_seq FROM zones
            WHERE database_id = \(database) AND db_seq > \(sequence) AND (NOT deleted OR db_seq > \(deletionFloor))
            ORDER BY db_seq LIMIT \(limit)
            """).map { ZoneChangeRow(name: try $0.string(0), deleted: try $0.bool(1), sequence: try $0.int64(2)) }
    }
}
