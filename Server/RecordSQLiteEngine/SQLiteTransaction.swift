import Foundation
import GRDB
import RecordModel
import RecordRules
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

    // MARK: Users

    func user(named name: String) throws -> User? {
        try Row.fetchOne(db, sql: "SELECT id, record_name FROM users WHERE name = ?", arguments: [name])
            .map { User(id: $0[0], name: name, userRecordName: $0[1]) }
    }

    func users() throws -> [(user: User, createdAt: Int64, tokens: Int)] {
        try Row.fetchAll(db, sql: """
            SELECT u.id, u.name, u.record_name, u.created_at, (SELECT COUNT(*) FROM tokens t WHERE t.user_id = u.id)
            FROM users u ORDER BY u.name
            """).map { (User(id: $0[0], name: $0[1], userRecordName: $0[2]), $0[3], $0[4]) }
    }

    func insertUser(named name: String, recordName: String, createdAt: Int64) throws -> User {
        try db.execute(sql: "INSERT INTO users(name, record_name, created_at) VALUES (?, ?, ?)", arguments: [name, recordName, createdAt])
        return User(id: db.lastInsertedRowID, name: name, userRecordName: recordName)
    }

    func insertToken(hash: Data, userKey: Int64, name: String, createdAt: Int64, expiresAt: Int64?) throws {
        try db.execute(sql: "INSERT INTO tokens(hash, user_id, name, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
                       arguments: [hash, userKey, name, createdAt, expiresAt])
    }

    func token(forHash hash: Data) throws -> (user: User, expiresAt: Int64?)? {
        try Row.fetchOne(db.cachedStatement(sql: """
            SELECT u.id, u.name, u.record_name, t.expires_at FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = ?
            """), arguments: [hash]).map { (User(id: $0[0], name: $0[1], userRecordName: $0[2]), $0[3]) }
    }

    func tokens(ofUser key: Int64) throws -> [StoredToken] {
        try Row.fetchAll(db, sql: "SELECT name, created_at, expires_at FROM tokens WHERE user_id = ? ORDER BY name", arguments: [key])
            .map { StoredToken(name: $0[0], createdAt: $0[1], expiresAt: $0[2]) }
    }

    func deleteToken(named name: String, ofUser key: Int64) throws -> Bool {
        try db.execute(sql: "DELETE FROM tokens WHERE user_id = ? AND name = ?", arguments: [key, name])
        return db.changesCount > 0
    }

    func revocationSequence() throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT seq FROM token_revocations WHERE id = 1")) ?? 0
    }

    func advanceRevocationSequence() throws {
        try db.execute(sql: "UPDATE token_revocations SET seq = seq + 1 WHERE id = 1")
    }

    func usage(ofUser userRecordName: String) throws -> Usage {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT records, bytes FROM user_usage WHERE user_record = ?"), arguments: [userRecordName])
            .map { Usage(records: $0[0], bytes: $0[1]) } ?? .zero
    }

    func deleteUser(_ key: Int64) throws {
        for sql in ["DELETE FROM user_usage WHERE user_record = (SELECT record_name FROM users WHERE id = ?)","DELETE FROM tokens WHERE user_id = ?", "DELETE FROM server_keys WHERE user_id = ?", "DELETE FROM subscriptions WHERE user_id = ?",
                    "DELETE FROM push_deliveries WHERE token IN (SELECT token FROM push_tokens WHERE user_id = ?)",
                    "DELETE FROM push_tokens WHERE user_id = ?", "DELETE FROM notifications WHERE user_id = ?",
                    "DELETE FROM asset_receipts WHERE user_id = ?", "DELETE FROM users WHERE id = ?"] {
            try db.execute(sql: sql, arguments: [key])
        }
    }

    func insertServerKey(_ key: StoredServerKey, userKey: Int64) throws {
        try db.execute(sql: "INSERT INTO server_keys(id, user_id, name, public_key, created_at) VALUES (?, ?, ?, ?, ?)",
                       arguments: [key.id, userKey, key.name, key.publicKey, key.createdAt])
    }

    func serverKey(id: String) throws -> (key: StoredServerKey, user: User)? {
        try Row.fetchOne(db, sql: """
            SELECT k.name, k.public_key, k.created_at, u.id, u.name, u.record_name FROM server_keys k JOIN users u ON u.id = k.user_id WHERE k.id = ?
            """, arguments: [id]).map {
            (StoredServerKey(id: id, name: $0[0], publicKey: $0[1], createdAt: $0[2]), User(id: $0[3], name: $0[4], userRecordName: $0[5]))
        }
    }

    func serverKeys(ofUser key: Int64) throws -> [StoredServerKey] {
        try Row.fetchAll(db, sql: "SELECT id, name, public_key, created_at FROM server_keys WHERE user_id = ? ORDER BY name", arguments: [key])
            .map { StoredServerKey(id: $0[0], name: $0[1], publicKey: $0[2], createdAt: $0[3]) }
    }

    func deleteServerKey(named name: String, ofUser key: Int64) throws -> Bool {
        try db.execute(sql: "DELETE FROM server_keys WHERE user_id = ? AND name = ?", arguments: [key, name])
        return db.changesCount > 0
    }

    func insertAPIToken(_ token: StoredAPIToken) throws {
        try db.execute(sql: "INSERT INTO api_tokens(hash, container, environment, name, origins, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                       arguments: [token.hash, token.container, token.environment, token.name, token.originsText, token.createdAt])
    }

    func apiToken(forHash hash: Data) throws -> StoredAPIToken? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT hash, name, container, environment, origins, created_at FROM api_tokens WHERE hash = ?"), arguments: [hash])
            .map(Self.apiToken)
    }

    func apiTokens() throws -> [StoredAPIToken] {
        try Row.fetchAll(db, sql: "SELECT hash, name, container, environment, origins, created_at FROM api_tokens ORDER BY container, environment, name")
            .map(Self.apiToken)
    }

    private static func apiToken(_ row: Row) -> StoredAPIToken {
        StoredAPIToken(hash: row[0], name: row[1], container: row[2], environment: row[3], origins: StoredAPIToken.origins(fromText: row[4]), createdAt: row[5])
    }

    func deleteAPIToken(named name: String, container: String, environment: String) throws -> Bool {
        try db.execute(sql: "DELETE FROM api_tokens WHERE container = ? AND environment = ? AND name = ?", arguments: [container, environment, name])
        return db.changesCount > 0
    }

    func noteSignature(_ hash: Data, now: Int64, forgetBefore: Int64) throws -> Bool {
        try db.execute(sql: "DELETE FROM signatures_seen WHERE seen_at < ?", arguments: [forgetBefore])
        try db.execute(sql: "INSERT INTO signatures_seen(hash, seen_at) VALUES (?, ?) ON CONFLICT DO NOTHING", arguments: [hash, now])
        return db.changesCount > 0
    }

    func profile(ofUser key: Int64) throws -> UserProfile {
        try Row.fetchOne(db, sql: "SELECT email, given_name, family_name, discoverable FROM users WHERE id = ?", arguments: [key])
            .map { UserProfile(email: $0[0], givenName: $0[1], familyName: $0[2], discoverable: $0[3]) } ?? UserProfile()
    }

    func setProfile(_ profile: UserProfile, ofUser key: Int64) throws {
        try db.execute(sql: "UPDATE users SET email = ?, given_name = ?, family_name = ?, discoverable = ? WHERE id = ?",
                       arguments: [profile.email, profile.givenName, profile.familyName, profile.discoverable, key])
    }

    func users(withEmails emails: [String]) throws -> [(user: User, profile: UserProfile)] {
        try users(where: "email", in: emails)
    }

    func users(withRecordNames names: [String]) throws -> [(user: User, profile: UserProfile)] {
        try users(where: "record_name", in: names)
    }

    private func users(where column: String, in values: [String]) throws -> [(user: User, profile: UserProfile)] {
        guard !values.isEmpty else { return [] }
        return try Row.fetchAll(db, sql: """
            SELECT id, name, record_name, email, given_name, family_name, discoverable FROM users
            WHERE \(column) IN (SELECT value FROM json_each(?))
            """, arguments: [String(decoding: try JSONEncoder().encode(values), as: UTF8.self)]).map {
            (User(id: $0[0], name: $0[1], userRecordName: $0[2]), UserProfile(email: $0[3], givenName: $0[4], familyName: $0[5], discoverable: $0[6]))
        }
    }

    // MARK: Databases

    func database(at address: DatabaseAddress) throws -> StoredDatabase? {
        try Row.fetchOne(db.cachedStatement(sql: """
            SELECT d.id, d.container_id, d.uid, d.seq FROM databases d JOIN containers c ON c.id = d.container_id
            WHERE c.name = ? AND c.environment = ? AND d.kind = ? AND d.owner_id = ?
            """), arguments: [address.container, address.environment, address.kind.rawValue, address.ownerKey])
            .map { StoredDatabase(key: $0[0], containerKey: $0[1], uid: UUID(data: $0[2]), sequence: $0[3]) }
    }

    func insertDatabase(at address: DatabaseAddress, uid: UUID) throws -> StoredDatabase {
        try db.execute(sql: "INSERT OR IGNORE INTO containers(name, environment) VALUES (?, ?)", arguments: [address.container, address.environment])
        let container = try Int64.fetchOne(db, sql: "SELECT id FROM containers WHERE name = ? AND environment = ?",
                                           arguments: [address.container, address.environment]) ?? 0
        try db.execute(sql: "INSERT INTO databases(container_id, kind, owner_id, uid, seq) VALUES (?, ?, ?, ?, 0)",
                       arguments: [container, address.kind.rawValue, address.ownerKey, uid.data])
        return StoredDatabase(key: db.lastInsertedRowID, containerKey: container, uid: uid, sequence: 0)
    }

    func databaseKeys() throws -> [Int64] {
        try Int64.fetchAll(db, sql: "SELECT id FROM databases ORDER BY id")
    }

    func advanceDatabaseSequence(_ database: Int64, by step: Int64) throws -> Int64 {
        try db.cachedStatement(sql: "UPDATE databases SET seq = seq + ? WHERE id = ?").execute(arguments: [step, database])
        return try Int64.fetchOne(db.cachedStatement(sql: "SELECT seq FROM databases WHERE id = ?"), arguments: [database]) ?? 0
    }

    func zoneChanges(in database: Int64, after sequence: Int64, deletionFloor: Int64, limit: Int) throws -> [ZoneChangeRow] {
        try Row.fetchAll(db, sql: """
            SELECT name, deleted, db_seq FROM zones
            WHERE database_id = ? AND db_seq > ? AND (deleted = 0 OR db_seq > ?)
            ORDER BY db_seq LIMIT ?
            """, arguments: [database, sequence, deletionFloor, limit]).map { ZoneChangeRow(name: $0[0], deleted: ($0[1] as Int64) != 0, sequence: $0[2]) }
    }

    // MARK: Schema

    func schema(of recordType: String, inContainer container: Int64) throws -> [String: FieldType] {
        var types: [String: FieldType] = [:]
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT field, type FROM schema_fields WHERE container_id = ? AND record_type = ?"),
                                    arguments: [container, recordType]) {
            if let type = FieldType(rawValue: row[1]) { types[row[0]] = type }
        }
        return types
    }

    func schemas(inContainer container: Int64) throws -> [String: [String: FieldType]] {
        var types: [String: [String: FieldType]] = [:]
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT record_type, field, type FROM schema_fields WHERE container_id = ?"), arguments: [container]) {
            if let type = FieldType(rawValue: row[2]) { types[row[0], default: [:]][row[1]] = type }
        }
        return types
    }

    func addSchemaField(_ field: String, type: FieldType, of recordType: String, inContainer container: Int64) throws {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO schema_fields(container_id, record_type, field, type) VALUES (?, ?, ?, ?)")
            .execute(arguments: [container, recordType, field, type.rawValue])
    }
}
