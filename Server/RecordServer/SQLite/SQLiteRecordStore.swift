import Foundation
import GRDB
import RecordModel
import RecordSQL

/// The SQLite backend: one database file in WAL mode, written through GRDB.
///
/// Writes are serialised by SQLite, and every change gets its sequence number inside the
/// write transaction that commits it, so a change feed read by sequence never skips a change.
/// Commits are synchronous (`synchronous = FULL`): an acknowledged write survives a crash of
/// the process or the machine.
public final class SQLiteRecordStore: RecordStore {
    let pool: DatabasePool
    let limits: StoreLimits
    /// Runs the file's WAL checkpoints off the commit path.
    private let checkpointer: WALCheckpointer

    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    ///
    /// - Throws: GRDB's `DatabaseError` when the file cannot be opened or migrated.
    public init(path: String, limits: StoreLimits = StoreLimits()) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        let checkpointer = WALCheckpointer(path: path)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            checkpointer.install(in: db)
        }
        self.checkpointer = checkpointer
        // Not DatabasePool(path:configuration:): its writer would commit with synchronous = NORMAL.
        pool = try DatabasePool.durable(path: path, configuration: configuration)
        self.limits = limits
        try Self.migrator.migrate(pool)
    }

    /// The zone a request addresses, as stored.
    struct ZoneRow: Sendable {
        var id: Int64
        var databaseID: Int64
        var name: String
        var uid: UUID
        var sequence: Int64
        var zoneID: ZoneID
    }

    /// The database row of `scope`, created with its `_defaultZone` on first use.
    ///
    /// - Returns: the database's key and the container's key (for the schema).
    func database(_ scope: DatabaseScope, in db: Database, create: Bool = true) throws -> (id: Int64, containerID: Int64) {
        let ownerID: Int64 = scope.kind == .private ? scope.user.id : 0
        if let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT d.id, d.container_id FROM databases d JOIN containers c ON c.id = d.container_id
            WHERE c.name = ? AND c.environment = ? AND d.kind = ? AND d.owner_id = ?
            """), arguments: [scope.container, scope.environment, scope.kind.rawValue, ownerID]) {
            return (row[0], row[1])
        }
        guard create else { throw MissingDatabase() }
        try db.execute(sql: "INSERT OR IGNORE INTO containers(name, environment) VALUES (?, ?)",
                       arguments: [scope.container, scope.environment])
        let containerID = try Int64.fetchOne(db, sql: "SELECT id FROM containers WHERE name = ? AND environment = ?",
                                             arguments: [scope.container, scope.environment]) ?? 0
        try db.execute(sql: "INSERT INTO databases(container_id, kind, owner_id, uid, seq) VALUES (?, ?, ?, ?, 0)",
                       arguments: [containerID, scope.kind.rawValue, ownerID, UUID().data])
        let databaseID = db.lastInsertedRowID
        _ = try createOrReviveZone(named: ZoneID.defaultZoneName, databaseID: databaseID, in: db)
        return (databaseID, containerID)
    }

    /// Thrown inside a read transaction when the database does not exist yet; the caller
    /// retries in a write transaction, which creates it.
    struct MissingDatabase: Error {}

    /// Runs `body` in a read transaction, or in a write transaction when the database must
    /// first be created.
    func read<T: Sendable>(_ scope: DatabaseScope, _ body: @escaping @Sendable (Database, _ databaseID: Int64, _ containerID: Int64) throws -> T) async throws -> T {
        do {
            return try await pool.read { db in
                let (databaseID, containerID) = try self.database(scope, in: db, create: false)
                return try body(db, databaseID, containerID)
            }
        } catch is MissingDatabase {
            return try await pool.write { db in
                let (databaseID, containerID) = try self.database(scope, in: db)
                return try body(db, databaseID, containerID)
            }
        } catch let error as DatabaseError {
            throw RecordSyncError(.internalError, "storage error: \(error.resultCode)")
        }
    }

    /// The live zone `zoneID` of a database, or `ZONE_NOT_FOUND`.
    func zone(_ zoneID: ZoneID?, databaseID: Int64, scope: DatabaseScope, in db: Database) throws -> ZoneRow {
        let zoneID = zoneID ?? .defaultZone
        if let problem = NameRules.problem(withName: zoneID.zoneName, kind: "zoneName") {
            throw RecordSyncError(.badRequest, problem, zoneID: zoneID)
        }
        if let owner = zoneID.ownerRecordName, scope.kind == .private,
           owner != scope.user.userRecordName, owner != "__defaultOwner__" {
            throw RecordSyncError(.zoneNotFound, "zone \(NameRules.quoted(zoneID.zoneName)) of owner \(NameRules.quoted(owner)) is not in your private database", zoneID: zoneID)
        }
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT id, uid, seq FROM zones WHERE database_id = ? AND name = ? AND deleted = 0"),
                                         arguments: [databaseID, zoneID.zoneName]) else {
            throw RecordSyncError(.zoneNotFound, "zone \(NameRules.quoted(zoneID.zoneName)) does not exist", zoneID: zoneID)
        }
        return ZoneRow(id: row[0], databaseID: databaseID, name: zoneID.zoneName, uid: UUID(data: row[1]), sequence: row[2],
                       zoneID: ZoneID(zoneName: zoneID.zoneName, ownerRecordName: scope.ownerRecordName))
    }

    /// Creates a zone, or brings a deleted one back as a new incarnation (new UID, so tokens
    /// of the old one expire). Returns `nil` when the zone already exists.
    func createOrReviveZone(named name: String, databaseID: Int64, in db: Database) throws -> Int64? {
        let uid = UUID()
        if let existing = try Row.fetchOne(db, sql: "SELECT id, deleted FROM zones WHERE database_id = ? AND name = ?",
                                           arguments: [databaseID, name]) {
            let zoneKey: Int64 = existing[0]
            guard (existing[1] as Int64) != 0 else { return nil }
            let databaseSequence = try Self.nextDatabaseSequence(databaseID, in: db)
            try db.execute(sql: "UPDATE zones SET deleted = 0, uid = ?, db_seq = ? WHERE id = ?",
                           arguments: [uid.data, databaseSequence, zoneKey])
            try db.execute(sql: "INSERT INTO zone_incarnations(uid, zone_id) VALUES (?, ?)", arguments: [uid.data, zoneKey])
            return zoneKey
        }
        let databaseSequence = try Self.nextDatabaseSequence(databaseID, in: db)
        try db.execute(sql: "INSERT INTO zones(database_id, name, uid, seq, db_seq, deleted) VALUES (?, ?, ?, 0, ?, 0)",
                       arguments: [databaseID, name, uid.data, databaseSequence])
        let zoneKey = db.lastInsertedRowID
        try db.execute(sql: "INSERT INTO zone_incarnations(uid, zone_id) VALUES (?, ?)", arguments: [uid.data, zoneKey])
        return zoneKey
    }

    /// Takes the next sequence number of a database's zone-change feed.
    static func nextDatabaseSequence(_ databaseID: Int64, in db: Database) throws -> Int64 {
        try db.cachedStatement(sql: "UPDATE databases SET seq = seq + 1 WHERE id = ?").execute(arguments: [databaseID])
        return try Int64.fetchOne(db.cachedStatement(sql: "SELECT seq FROM databases WHERE id = ?"), arguments: [databaseID]) ?? 0
    }
}

extension UUID {
    /// The 16 bytes of the UUID.
    var data: Data { withUnsafeBytes(of: uuid) { Data($0) } }

    /// The UUID of 16 bytes (all zero if `data` is not 16 bytes long).
    init(data: Data) {
        var bytes = [UInt8](repeating: 0, count: 16)
        if data.count == 16 { bytes = [UInt8](data) }
        self.init(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                         bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }
}
