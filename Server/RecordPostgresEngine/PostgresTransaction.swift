import Foundation
import Logging
import NIOCore
import PostgresNIO
import RecordModel
import RecordRules
import RecordSQL

/// One transaction of the PostgreSQL engine: the storage primitives as statements on one leased
/// connection (tables: ``PostgresEngine/migrations``), each waited for on the engine's thread.
final class PostgresTransaction: StorageTransaction {
    let connection: PostgresConnection
    let engine: PostgresEngine
    /// The keys of reference field names read or added in this transaction; a savepoint that is
    /// undone forgets those it added.
    private var fieldKeys: [String: Int64] = [:]
    /// What this transaction read of each zone before locking it (incarnation, deleted): a zone
    /// another writer changed in between makes the transaction stale.
    var zonesSeen: [Int64: (uid: UUID, deleted: Bool)] = [:]
    /// How many savepoints are open.
    private var savepoints = 0
    /// Writes held back until the next statement (``PendingWrites``).
    var pending = PendingWrites()
    /// Statements sent without waiting for their answer (``fire(_:)``).
    private var fired: [EventLoopFuture<PostgresQueryResult>] = []

    init(connection: PostgresConnection, engine: PostgresEngine) {
        self.connection = connection
        self.engine = engine
    }

    // MARK: Statements

    /// Runs a statement, after the pending writes, and returns its rows.
    @discardableResult
    func rows(_ query: PostgresQuery) throws -> [PostgresRow] {
        try flush()
        let result = try connection.answering(query, logger: engine.logger).wait()
        try settleFired()
        return result.rows
    }

    /// Runs a statement, after the pending writes, and returns how many rows it changed.
    @discardableResult
    func execute(_ query: PostgresQuery) throws -> Int {
        try flush()
        return try send(query)
    }

    /// Runs a statement as it is (``flush()``'s own).
    @discardableResult
    func send(_ query: PostgresQuery) throws -> Int {
        let result = try connection.answering(query, logger: engine.logger).wait()
        try settleFired()
        return result.metadata.rows ?? 0
    }

    /// Sends a statement whose answer nothing waits for: the connection runs statements in the
    /// order sent, so the next one waited for follows it, and this thread is woken once for
    /// both. Its error, if any, is thrown by the next statement waited for. Each wake-up of the
    /// waiting thread costs about as much as a small statement on the server.
    func fire(_ query: PostgresQuery) {
        fired.append(connection.answering(query, logger: engine.logger))
    }

    /// Throws the error of a statement ``fire(_:)`` sent, if any (waiting for their answers).
    func settleFired() throws {
        guard !fired.isEmpty else { return }
        let answers = fired
        fired.removeAll()
        for answer in answers { _ = try answer.wait() }
    }

    /// Ends the transaction without its pending writes.
    func rollback() throws {
        pending = PendingWrites()
        try send("ROLLBACK")
    }

    /// A statement of `sql` (placeholders `$1`, …) with `values` bound.
    static func statement(_ sql: String, _ values: [SQLValue]) throws -> PostgresQuery {
        var binds = PostgresBindings(capacity: values.count)
        for value in values { try binds.append(value) }
        return PostgresQuery(unsafeSQL: sql, binds: binds)
    }

    func savepoint(_ body: () throws -> Bool) throws {
        let keys = fieldKeys
        let zones = zonesSeen
        savepoints += 1
        let name = "s\(savepoints)"
        defer { savepoints -= 1 }
        try execute(PostgresQuery(unsafeSQL: "SAVEPOINT \(name)"))
        let kept: Bool
        do {
            kept = try body()
        } catch {
            fieldKeys = keys
            zonesSeen = zones
            pending = PendingWrites()
            try execute(PostgresQuery(unsafeSQL: "ROLLBACK TO SAVEPOINT \(name)"))
            try execute(PostgresQuery(unsafeSQL: "RELEASE SAVEPOINT \(name)"))
            throw error
        }
        if !kept {
            fieldKeys = keys
            zonesSeen = zones
            pending = PendingWrites()
            try execute(PostgresQuery(unsafeSQL: "ROLLBACK TO SAVEPOINT \(name)"))
        }
        try execute(PostgresQuery(unsafeSQL: "RELEASE SAVEPOINT \(name)"))
    }

    /// The key of the reference field `name` in `ref_fields`, added if the store has none yet.
    func fieldKey(_ name: String) throws -> Int64 {
        if let key = fieldKeys[name] { return key }
        var key = try rows("INSERT INTO ref_fields(name) VALUES (\(name)) ON CONFLICT (name) DO NOTHING RETURNING id").first?.decode(Int64.self)
        if key == nil {
            key = try rows("SELECT id FROM ref_fields WHERE name = \(name)").first?.decode(Int64.self)
        }
        guard let key else { throw PostgresRetry("reference field \(name) vanished") }
        fieldKeys[name] = key
        return key
    }

    // MARK: Users

    func user(named name: String) throws -> User? {
        try rows("SELECT id, record_name FROM users WHERE name = \(name)").first
            .map { let (id, recordName) = try $0.decode((Int64, String).self); return User(id: id, name: name, userRecordName: recordName) }
    }

    func users() throws -> [(user: User, createdAt: Int64, tokens: Int)] {
        try rows("""
            SELECT u.id, u.name, u.record_name, u.created_at, (SELECT COUNT(*) FROM tokens t WHERE t.user_id = u.id)
            FROM users u ORDER BY u.name
            """).map {
            let (id, name, recordName, createdAt, tokens) = try $0.decode((Int64, String, String, Int64, Int64).self)
            return (User(id: id, name: name, userRecordName: recordName), createdAt, Int(tokens))
        }
    }

    func insertUser(named name: String, recordName: String, createdAt: Int64) throws -> User {
        let id = try rows("INSERT INTO users(name, record_name, created_at) VALUES (\(name), \(recordName), \(createdAt)) RETURNING id")[0].decode(Int64.self)
        return User(id: id, name: name, userRecordName: recordName)
    }

    func insertToken(hash: Data, userKey: Int64, name: String, createdAt: Int64, expiresAt: Int64?) throws {
        try execute(try "INSERT INTO tokens(hash, user_id, name, created_at, expires_at) VALUES (\(hash), \(userKey), \(name), \(createdAt), \(expiresAt))")
    }

    func token(forHash hash: Data) throws -> (user: User, expiresAt: Int64?)? {
        try rows(try "SELECT u.id, u.name, u.record_name, t.expires_at FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = \(hash)").first
            .map {
                let (id, name, recordName, expiresAt) = try $0.decode((Int64, String, String, Int64?).self)
                return (User(id: id, name: name, userRecordName: recordName), expiresAt)
            }
    }

    func tokens(ofUser key: Int64) throws -> [StoredToken] {
        try rows("SELECT name, created_at, expires_at FROM tokens WHERE user_id = \(key) ORDER BY name").map {
            let (name, createdAt, expiresAt) = try $0.decode((String, Int64, Int64?).self)
            return StoredToken(name: name, createdAt: createdAt, expiresAt: expiresAt)
        }
    }

    func deleteToken(named name: String, ofUser key: Int64) throws -> Bool {
        try execute("DELETE FROM tokens WHERE user_id = \(key) AND name = \(name)") > 0
    }

    func revocationSequence() throws -> Int64 {
        try rows("SELECT seq FROM token_revocations WHERE id = 1").first?.decode(Int64.self) ?? 0
    }

    func advanceRevocationSequence() throws {
        try execute("UPDATE token_revocations SET seq = seq + 1 WHERE id = 1")
    }

    func usage(ofUser userRecordName: String) throws -> Usage {
        try rows("SELECT records, bytes FROM user_usage WHERE user_record = \(userRecordName)").first
            .map { row in let (records, bytes) = try row.decode((Int64, Int64).self); return Usage(records: records, bytes: bytes) } ?? .zero
    }

    func deleteUser(_ key: Int64) throws {
        try execute("DELETE FROM user_usage WHERE user_record = (SELECT record_name FROM users WHERE id = \(key))")
        try execute("DELETE FROM tokens WHERE user_id = \(key)")
        try execute("DELETE FROM server_keys WHERE user_id = \(key)")
        try execute("DELETE FROM subscriptions WHERE user_id = \(key)")
        try execute("DELETE FROM push_deliveries WHERE token IN (SELECT token FROM push_tokens WHERE user_id = \(key))")
        try execute("DELETE FROM push_tokens WHERE user_id = \(key)")
        try execute("DELETE FROM notifications WHERE user_id = \(key)")
        try execute("DELETE FROM asset_receipts WHERE user_id = \(key)")
        try execute("DELETE FROM users WHERE id = \(key)")
    }

    func insertServerKey(_ key: StoredServerKey, userKey: Int64) throws {
        try execute(try """
            INSERT INTO server_keys(id, user_id, name, public_key, created_at) VALUES (\(key.id), \(userKey), \(key.name), \(key.publicKey), \(key.createdAt))
            """)
    }

    func serverKey(id: String) throws -> (key: StoredServerKey, user: User)? {
        try rows("""
            SELECT k.name, k.public_key, k.created_at, u.id, u.name, u.record_name FROM server_keys k JOIN users u ON u.id = k.user_id WHERE k.id = \(id)
            """).first.map {
            let (name, publicKey, createdAt, userKey, userName, recordName) = try $0.decode((String, Data, Int64, Int64, String, String).self)
            return (StoredServerKey(id: id, name: name, publicKey: publicKey, createdAt: createdAt), User(id: userKey, name: userName, userRecordName: recordName))
        }
    }

    func serverKeys(ofUser key: Int64) throws -> [StoredServerKey] {
        try rows("SELECT id, name, public_key, created_at FROM server_keys WHERE user_id = \(key) ORDER BY name").map {
            let (id, name, publicKey, createdAt) = try $0.decode((String, String, Data, Int64).self)
            return StoredServerKey(id: id, name: name, publicKey: publicKey, createdAt: createdAt)
        }
    }

    func deleteServerKey(named name: String, ofUser key: Int64) throws -> Bool {
        try execute("DELETE FROM server_keys WHERE user_id = \(key) AND name = \(name)") > 0
    }

    func insertAPIToken(_ token: StoredAPIToken) throws {
        try execute(try """
            INSERT INTO api_tokens(hash, container, environment, name, origins, created_at)
            VALUES (\(token.hash), \(token.container), \(token.environment), \(token.name), \(token.originsText), \(token.createdAt))
            """)
    }

    func apiToken(forHash hash: Data) throws -> StoredAPIToken? {
        try rows(try "SELECT hash, name, container, environment, origins, created_at FROM api_tokens WHERE hash = \(hash)").first.map(Self.apiToken)
    }

    func apiTokens() throws -> [StoredAPIToken] {
        try rows("SELECT hash, name, container, environment, origins, created_at FROM api_tokens ORDER BY container, environment, name").map(Self.apiToken)
    }

    private static func apiToken(_ row: PostgresRow) throws -> StoredAPIToken {
        let (hash, name, container, environment, origins, createdAt) = try row.decode((Data, String, String, String, String, Int64).self)
        return StoredAPIToken(hash: hash, name: name, container: container, environment: environment, origins: StoredAPIToken.origins(fromText: origins), createdAt: createdAt)
    }

    func deleteAPIToken(named name: String, container: String, environment: String) throws -> Bool {
        try execute("DELETE FROM api_tokens WHERE container = \(container) AND environment = \(environment) AND name = \(name)") > 0
    }

    func noteSignature(_ hash: Data, now: Int64, forgetBefore: Int64) throws -> Bool {
        try execute("DELETE FROM signatures_seen WHERE seen_at < \(forgetBefore)")
        return try execute(try "INSERT INTO signatures_seen(hash, seen_at) VALUES (\(hash), \(now)) ON CONFLICT DO NOTHING") > 0
    }

    func profile(ofUser key: Int64) throws -> UserProfile {
        try rows("SELECT email, given_name, family_name, discoverable FROM users WHERE id = \(key)").first.map {
            let (email, given, family, discoverable) = try $0.decode((String?, String?, String?, Bool).self)
            return UserProfile(email: email, givenName: given, familyName: family, discoverable: discoverable)
        } ?? UserProfile()
    }

    func setProfile(_ profile: UserProfile, ofUser key: Int64) throws {
        try execute("""
            UPDATE users SET email = \(profile.email), given_name = \(profile.givenName), family_name = \(profile.familyName),
                discoverable = \(profile.discoverable) WHERE id = \(key)
            """)
    }

    func users(withEmails emails: [String]) throws -> [(user: User, profile: UserProfile)] {
        guard !emails.isEmpty else { return [] }
        return try profiles(try rows("SELECT id, name, record_name, email, given_name, family_name, discoverable FROM users WHERE email = ANY(\(emails))"))
    }

    func users(withRecordNames names: [String]) throws -> [(user: User, profile: UserProfile)] {
        guard !names.isEmpty else { return [] }
        return try profiles(try rows("SELECT id, name, record_name, email, given_name, family_name, discoverable FROM users WHERE record_name = ANY(\(names))"))
    }

    private func profiles(_ rows: [PostgresRow]) throws -> [(user: User, profile: UserProfile)] {
        try rows.map {
            let (id, name, recordName, email, given, family, discoverable) = try $0.decode((Int64, String, String, String?, String?, String?, Bool).self)
            return (User(id: id, name: name, userRecordName: recordName), UserProfile(email: email, givenName: given, familyName: family, discoverable: discoverable))
        }
    }

    // MARK: Databases

    func database(at address: DatabaseAddress) throws -> StoredDatabase? {
        try rows("""
            SELECT d.id, d.container_id, d.uid, d.seq FROM databases d JOIN containers c ON c.id = d.container_id
            WHERE c.name = \(address.container) AND c.environment = \(address.environment) AND d.kind = \(address.kind.rawValue) AND d.owner_id = \(address.ownerKey)
            """).first.map {
            let (key, container, uid, sequence) = try $0.decode((Int64, Int64, UUID, Int64).self)
            return StoredDatabase(key: key, containerKey: container, uid: uid, sequence: sequence)
        }
    }

    func insertDatabase(at address: DatabaseAddress, uid: UUID) throws -> StoredDatabase {
        try execute("INSERT INTO containers(name, environment) VALUES (\(address.container), \(address.environment)) ON CONFLICT DO NOTHING")
        guard let container = try rows("SELECT id FROM containers WHERE name = \(address.container) AND environment = \(address.environment)").first?.decode(Int64.self) else {
            throw PostgresRetry("container \(address.container) vanished")
        }
        let key = try rows("""
            INSERT INTO databases(container_id, kind, owner_id, uid, seq) VALUES (\(container), \(address.kind.rawValue), \(address.ownerKey), \(uid), 0) RETURNING id
            """)[0].decode(Int64.self)
        return StoredDatabase(key: key, containerKey: container, uid: uid, sequence: 0)
    }

    /// Locks the database's row until commit: the rules take the database's number last, just
    /// before committing, so writers of different zones hold it only for their commit.
    func databaseKeys() throws -> [Int64] {
        try rows("SELECT id FROM databases ORDER BY id").map { try $0.decode(Int64.self) }
    }

    func advanceDatabaseSequence(_ database: Int64, by step: Int64) throws -> Int64 {
        try rows("UPDATE databases SET seq = seq + \(step) WHERE id = \(database) RETURNING seq").first?.decode(Int64.self) ?? 0
    }

    func zoneChanges(in database: Int64, after sequence: Int64, deletionFloor: Int64, limit: Int) throws -> [ZoneChangeRow] {
        try rows("""
            SELECT name, deleted, db_seq FROM zones
            WHERE database_id = \(database) AND db_seq > \(sequence) AND (NOT deleted OR db_seq > \(deletionFloor))
            ORDER BY db_seq LIMIT \(limit)
            """).map { let (name, deleted, sequence) = try $0.decode((String, Bool, Int64).self); return ZoneChangeRow(name: name, deleted: deleted, sequence: sequence) }
    }

    // MARK: Schema

    func schema(of recordType: String, inContainer container: Int64) throws -> [String: FieldType] {
        var types: [String: FieldType] = [:]
        for row in try rows("SELECT field, type FROM schema_fields WHERE container_id = \(container) AND record_type = \(recordType)") {
            let (field, type) = try row.decode((String, String).self)
            if let type = FieldType(rawValue: type) { types[field] = type }
        }
        return types
    }

    func schemas(inContainer container: Int64) throws -> [String: [String: FieldType]] {
        var types: [String: [String: FieldType]] = [:]
        for row in try rows("SELECT record_type, field, type FROM schema_fields WHERE container_id = \(container)") {
            let (recordType, field, type) = try row.decode((String, String, String).self)
            if let type = FieldType(rawValue: type) { types[recordType, default: [:]][field] = type }
        }
        return types
    }

    /// A field another writer typed differently in the meantime makes this write stale (its
    /// rules judged the save against a schema without the field).
    func addSchemaField(_ field: String, type: FieldType, of recordType: String, inContainer container: Int64) throws {
        let inserted = try execute("""
            INSERT INTO schema_fields(container_id, record_type, field, type) VALUES (\(container), \(recordType), \(field), \(type.rawValue))
            ON CONFLICT DO NOTHING
            """)
        if inserted == 0 {
            let stored = try rows("SELECT type FROM schema_fields WHERE container_id = \(container) AND record_type = \(recordType) AND field = \(field)").first?.decode(String.self)
            if stored != type.rawValue { throw PostgresRetry("field \(field) of \(recordType) typed by another writer") }
        }
    }
}

extension PostgresBindings {
    /// Binds a value as its own type (`BIGINT`, `DOUBLE PRECISION`, `TEXT`, `BYTEA`, or null).
    mutating func append(_ value: SQLValue) throws {
        switch value {
        case .integer(let number): append(number)
        case .real(let number): append(number)
        case .text(let string): append(string)
        case .blob(let data): try append(data)
        case .null: appendNull()
        }
    }
}

extension PostgresConnection {
    /// `query(_:logger:)`, sure to be answered. PostgresNIO never answers a statement written to
    /// a connection that has already closed (the database stopped between two statements of a
    /// transaction): its handler is gone and the write fails unseen, so a thread waiting for the
    /// answer would wait for good. The statement is written from the connection's event loop,
    /// where the channel's state cannot change under it: a closed connection fails it at once,
    /// and an open one hands it to the driver, which answers it or fails it when it closes.
    func answering(_ query: PostgresQuery, logger: Logger) -> EventLoopFuture<PostgresQueryResult> {
        eventLoop.flatSubmit {
            guard !self.isClosed else { return self.eventLoop.makeFailedFuture(PostgresConnectionLost()) }
            return self.query(query, logger: logger)
        }
    }
}

/// The connection to the database was closed when a statement was to be sent on it.
struct PostgresConnectionLost: Error, CustomStringConvertible {
    var description: String { "the connection to the database is closed" }
}
