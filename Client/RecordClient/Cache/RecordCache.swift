import Foundation
import GRDB
import RecordModel
import RecordSQL

/// The client's local SQLite cache of one database: the records it has seen (with their system
/// fields), the zone and database change tokens, and an outbox of local saves and deletes not
/// yet sent.
///
/// Every local edit writes the record and its outbox entry in one transaction; every fetched
/// page is written with its token in one transaction. So a crash at any point loses no local
/// edit and never skips a server change.
///
/// Queries on the cache run the same SQL the server runs (``RecordSQL/QueryCompiler``) over rows
/// of the same shape, so they return the records the server would.
public final class RecordCache: Sendable {
    let writer: any DatabaseWriter
    /// Runs the file's WAL checkpoints off the commit path (`nil` in memory).
    private let checkpointer: WALCheckpointer?
    /// The cache's asset files, beside its database file (`PATH-assets/`): `pending/` holds
    /// copies of the files of assets waiting to be uploaded (kept until the server acknowledged
    /// their record), `downloads/` fetched assets (trimmed to a size, never touching `pending/`).
    public let assetDirectory: URL

    /// Whether the cache holds a shared database (``Database/Scope/shared``): its zones are
    /// other users', each named with its owner. A cache of one's own databases ignores zone
    /// owners (a zone ID from the server names its owner; one an app makes may not).
    public let sharedDatabase: Bool

    /// Opens (creating if needed) the cache file at `path`; `":memory:"` makes an in-memory cache.
    ///
    /// - Parameter sharedDatabase: the cache is for the shared database (kept in the file: a
    ///   cache opened so once stays so).
    /// - Throws: GRDB's `DatabaseError` when the file cannot be opened or migrated.
    public init(path: String, sharedDatabase: Bool = false) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        // Checkpoints every 4,000 log pages (16 MB) rather than 1,000: a large fetch (with the
        // references-by-target index kept, see suspendReferenceIndex()) rewrites the same
        // leaves of that index in commit after commit, and each checkpoint copies a page once
        // however often it was rewritten.
        let checkpointer = path == ":memory:" ? nil : WALCheckpointer(path: path, threshold: 4000)
        configuration.prepareDatabase { db in
            checkpointer?.install(in: db)
        }
        self.checkpointer = checkpointer
        assetDirectory = path == ":memory:"
            ? FileManager.default.temporaryDirectory.appendingPathComponent("recordsync-cache-\(UUID().uuidString)-assets")
            : URL(fileURLWithPath: path + "-assets")
        if path == ":memory:" {
            writer = try DatabaseQueue(configuration: configuration)
        } else {
            // Not DatabasePool(path:configuration:): its writer would commit with
            // synchronous = NORMAL, and a local edit could be lost in a crash of the machine.
            writer = try DatabasePool.durable(path: path, configuration: configuration)
        }
        try Self.migrator.migrate(writer)
        // A fetch that suspended the references-by-target index and never finished (the process
        // ended) left it out.
        self.sharedDatabase = try writer.write { db in
            try db.execute(sql: Self.createReferenceIndexSQL)
            if sharedDatabase { try db.execute(sql: "INSERT OR IGNORE INTO state(key, value) VALUES ('sharedDatabase', '1')") }
            return try Bool.fetchOne(db, sql: "SELECT 1 FROM state WHERE key = 'sharedDatabase'") ?? false
        }
    }

    /// The schema, as named migrations; a shipped migration is never edited.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE zones(
                    id INTEGER PRIMARY KEY,
                    name TEXT NOT NULL UNIQUE,
                    token TEXT);
                CREATE TABLE state(
                    key TEXT PRIMARY KEY,
                    value TEXT NOT NULL);
                -- The same row shape as the server's records table (QueryCompiler runs on both).
                -- tag and server_record are the server's version a local edit starts from
                -- (NULL for a record that never reached the server).
                CREATE TABLE records(
                    id INTEGER PRIMARY KEY,
                    zone_id INTEGER NOT NULL,
                    name TEXT NOT NULL,
                    type TEXT NOT NULL,
                    tag TEXT,
                    fields TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    created_by TEXT NOT NULL,
                    created_device TEXT,
                    modified_at INTEGER NOT NULL,
                    modified_by TEXT NOT NULL,
                    modified_device TEXT,
                    server_record TEXT,
                    UNIQUE(zone_id, name));
                CREATE INDEX records_by_type ON records(zone_id, type, name);
                CREATE TABLE refs(
                    zone_id INTEGER NOT NULL,
                    source TEXT NOT NULL,
                    field TEXT NOT NULL,
                    target TEXT NOT NULL,
                    action INTEGER NOT NULL,
                    PRIMARY KEY(zone_id, source, field, target, action)) WITHOUT ROWID;
                CREATE INDEX refs_by_target ON refs(zone_id, target, action, field, source);
                CREATE TABLE schema_fields(
                    record_type TEXT NOT NULL,
                    field TEXT NOT NULL,
                    type TEXT NOT NULL,
                    PRIMARY KEY(record_type, field)) WITHOUT ROWID;
                -- Local edits not yet acknowledged: kind is 'save' or 'delete'; changed_keys
                -- (a JSON array) names the fields a save changed, NULL for "all of them".
                CREATE TABLE outbox(
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    zone_id INTEGER NOT NULL,
                    name TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    changed_keys TEXT);
                CREATE INDEX outbox_by_record ON outbox(zone_id, name);
                """)
        }
        // Full-text tokens and locations (RecordSQL's SearchRows), for token searches, NEAR
        // and sorting by distance. The cached records' locations are built here; words are
        // indexed per record type from its first word search on (search_types).
        migrator.registerMigration("v2-search") { db in
            try db.execute(sql: """
                CREATE TABLE search_tokens(
                    zone_id INTEGER NOT NULL,
                    name TEXT NOT NULL,
                    field TEXT NOT NULL,
                    token TEXT NOT NULL,
                    PRIMARY KEY(zone_id, name, field, token)) WITHOUT ROWID;
                CREATE INDEX search_tokens_by_token ON search_tokens(zone_id, token, field);
                CREATE TABLE search_locations(
                    zone_id INTEGER NOT NULL,
                    name TEXT NOT NULL,
                    field TEXT NOT NULL,
                    cell INTEGER NOT NULL,
                    x REAL NOT NULL,
                    y REAL NOT NULL,
                    z REAL NOT NULL,
                    PRIMARY KEY(zone_id, name, field)) WITHOUT ROWID;
                CREATE INDEX search_locations_by_cell ON search_locations(zone_id, field, cell, x, y, z);
                CREATE TABLE search_types(record_type TEXT PRIMARY KEY) WITHOUT ROWID;
                """)
            try SearchRows.buildPlaces(in: db)
        }
        // A record's `parent` (CloudKit's system reference), read with RecordRow's columns.
        migrator.registerMigration("v3-parent") { db in
            try db.execute(sql: "ALTER TABLE records ADD COLUMN parent TEXT")
        }
        // Shared zones: a zone is its name and its owner (`''` in a cache of one's own
        // databases; two owners may share zones of one name), keeping each zone's id; and what
        // the cache's user may do in each share it takes part in, from the share records fetched.
        migrator.registerMigration("v4-shared") { db in
            try db.execute(sql: """
                CREATE TABLE zones_owned(
                    id INTEGER PRIMARY KEY,
                    name TEXT NOT NULL,
                    owner TEXT NOT NULL DEFAULT '',
                    token TEXT,
                    UNIQUE(name, owner));
                INSERT INTO zones_owned(id, name, token) SELECT id, name, token FROM zones;
                DROP TABLE zones;
                ALTER TABLE zones_owned RENAME TO zones;
                CREATE TABLE share_permissions(
                    zone_id INTEGER NOT NULL,
                    share TEXT NOT NULL,
                    permission TEXT NOT NULL,
                    PRIMARY KEY(zone_id, share)) WITHOUT ROWID;
                """)
        }
        return migrator
    }

    /// Creates the indexes a large fetch suspends, as migrations `v1` and `v2-search` did, if
    /// they are missing: references by target, and words by word.
    static let createReferenceIndexSQL = """
        CREATE INDEX IF NOT EXISTS refs_by_target ON refs(zone_id, target, action, field, source);
        CREATE INDEX IF NOT EXISTS search_tokens_by_token ON search_tokens(zone_id, token, field);
        """

    /// How many references the cache may hold for ``suspendReferenceIndex()`` to drop the
    /// index: building it again then costs less than keeping it during a large fetch.
    static let referenceIndexSuspensionLimit = 10_000

    /// How many times the references-by-target index was suspended (read by tests).
    var referenceIndexSuspensions: Int { suspensions.value }
    private let suspensions = LockedCount()

    /// Drops the index of references by target and the index of words by word for the rest of
    /// a large fetch from scratch, if the cache holds at most ``referenceIndexSuspensionLimit``
    /// references and three times as many words.
    ///
    /// A fetch writes references and words in feed order, so those indexes, ordered by target
    /// and by word, take them all over their B-trees: commit after commit rewrites most of
    /// their pages (the references' alone are about a third of the pages a first fetch writes;
    /// keeping the words' cut `cache-apply` from 0.48 to 0.30 of its floor). Built once at the
    /// end (``restoreReferenceIndex()``) from the whole tables, they cost a sort. Meanwhile
    /// queries by reference and word searches scan those tables instead. Opening the cache
    /// builds the indexes if a fetch left them out.
    ///
    /// - Returns: whether the indexes were dropped.
    func suspendReferenceIndex() async throws -> Bool {
        let dropped = try await writer.write { db -> Bool in
            let held = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM (SELECT 1 FROM refs LIMIT ?)",
                                        arguments: [Self.referenceIndexSuspensionLimit + 1]) ?? 0
            let words = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM (SELECT 1 FROM search_tokens LIMIT ?)",
                                         arguments: [3 * Self.referenceIndexSuspensionLimit + 1]) ?? 0
            guard held <= Self.referenceIndexSuspensionLimit, words <= 3 * Self.referenceIndexSuspensionLimit else { return false }
            try db.execute(sql: "DROP INDEX IF EXISTS refs_by_target; DROP INDEX IF EXISTS search_tokens_by_token")
            return true
        }
        if dropped { suspensions.increment() }
        return dropped
    }

    /// Builds the index of references by target again after ``suspendReferenceIndex()``,
    /// even when the calling task is cancelled (a cancelled fetch restores it on its way out:
    /// GRDB's async `write` would refuse to start in a cancelled task).
    func restoreReferenceIndex() async throws {
        let writer = writer
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            writer.asyncWrite({ db in try db.execute(sql: Self.createReferenceIndexSQL) },
                              completion: { _, result in continuation.resume(with: result) })
        }
    }

    // MARK: Reading

    /// The cached record, or `nil`.
    public func record(for id: RecordID) async throws -> RecordModel.Record? {
        try await writer.read { db in try Self.fetchRecord(id, in: db)?.record }
    }

    /// The zones the cache knows, with records or a token (a shared zone with its owner).
    public func zoneIDs() async throws -> [ZoneID] {
        try await writer.read { db in
            try Row.fetchAll(db, sql: "SELECT name, owner FROM zones ORDER BY name, owner").map { Self.zoneID(name: $0[0], owner: $0[1]) }
        }
    }

    /// Every cached record of a zone, by name (for comparisons and export).
    public func allRecords(inZoneWith zoneID: ZoneID) async throws -> [RecordModel.Record] {
        try await writer.read { db in
            guard let zone = try Self.zoneKey(zoneID, in: db) else { return [] }
            return try Row.fetchAll(db, sql: "SELECT \(RecordRow.columns) FROM records WHERE zone_id = ? ORDER BY name", arguments: [zone])
                .map { try RecordRow.record(from: $0, zoneID: zoneID) }
        }
    }

    /// Every cached record that refers to the record `id`, whatever its type and field, with
    /// its references and their actions, in name order: what ``Database/records(referencing:desiredKeys:)``
    /// answers once the cache is in sync (local edits included).
    public func records(referencing id: RecordID) async throws -> [ReferencingRecord] {
        try await writer.read { db in
            guard let zone = try Self.zoneKey(id.zoneID, in: db) else { return [] }
            let rows = try Row.fetchAll(db, sql: "SELECT source, field, action FROM refs WHERE zone_id = ? AND target = ? ORDER BY source, field",
                                        arguments: [zone, id.recordName])
            var found: [ReferencingRecord] = []
            for row in rows {
                let backlink = Backlink(recordName: row[0], fieldName: row[1], action: ReferenceActionCode.action(row[2]))
                if found.last?.record.recordName == backlink.recordName {
                    found[found.count - 1].references.append(backlink)
                } else if let record = try Self.fetchRecord(RecordID(recordName: backlink.recordName, zoneID: id.zoneID), in: db)?.record {
                    found.append(ReferencingRecord(record: record, references: [backlink]))
                }
            }
            return found
        }
    }

    /// How many local edits wait to be sent.
    public func pendingChangeCount() async throws -> Int {
        try await writer.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox") ?? 0 }
    }

    /// The saved change token of a zone.
    public func changeToken(for zoneID: ZoneID) async throws -> ServerChangeToken? {
        try await writer.read { db in
            try String.fetchOne(db, sql: "SELECT token FROM zones WHERE name = ? AND owner = ?", arguments: [zoneID.zoneName, try Self.ownerKey(zoneID, in: db)])
                .map(ServerChangeToken.init)
        }
    }

    // MARK: Helpers shared by the extensions

    struct CachedRecord {
        var key: Int64
        var zone: Int64
        var record: RecordModel.Record
        var serverRecord: RecordModel.Record?
    }

    /// A zone is its name and its owner (``ownerKey(_:in:)``).
    static func zoneKey(_ zoneID: ZoneID, in db: SQLDatabase) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM zones WHERE name = ? AND owner = ?"), arguments: [zoneID.zoneName, try ownerKey(zoneID, in: db)])
    }

    static func zoneKeyCreating(_ zoneID: ZoneID, in db: SQLDatabase) throws -> Int64 {
        if let key = try zoneKey(zoneID, in: db) { return key }
        try db.execute(sql: "INSERT INTO zones(name, owner) VALUES (?, ?)", arguments: [zoneID.zoneName, try ownerKey(zoneID, in: db)])
        return db.lastInsertedRowID
    }

    /// The `owner` a zone ID's zone is stored with: its owner in a shared database's cache,
    /// `''` in a cache of one's own databases, whatever the zone ID names.
    static func ownerKey(_ zoneID: ZoneID, in db: SQLDatabase) throws -> String {
        guard let owner = zoneID.ownerRecordName, !owner.isEmpty else { return "" }
        return try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM state WHERE key = 'sharedDatabase'")) == true ? owner : ""
    }

    /// The zone ID of a `zones` row.
    static func zoneID(name: String, owner: String) -> ZoneID {
        ZoneID(zoneName: name, ownerRecordName: owner.isEmpty ? nil : owner)
    }

    static func fetchRecord(_ id: RecordModel.Record.ID, in db: SQLDatabase) throws -> CachedRecord? {
        guard let zone = try zoneKey(id.zoneID, in: db),
              let row = try Row.fetchOne(db, sql: "SELECT id, server_record, \(RecordRow.columns) FROM records WHERE zone_id = ? AND name = ?",
                                         arguments: [zone, id.recordName]) else { return nil }
        let serverJSON: String? = row[1]
        let record = try RecordRow.record(from: row, zoneID: id.zoneID, offset: 2)
        // No server_record but a tag: the row is the server's version as it is (see ``store``).
        let serverRecord = try serverJSON.map { try JSONValueDecoder().decode(RecordModel.Record.self, from: Data($0.utf8)) }
            ?? (record.recordChangeTag == nil ? nil : record)
        return CachedRecord(key: row[0], zone: zone, record: record, serverRecord: serverRecord)
    }

    /// Writes `record` as the cached row (insert or replace), with its references, search rows and schema.
    /// - Parameters:
    ///   - recordingSchema: whether to note the fields' types in `schema_fields` (a caller
    ///     storing many records can note them once instead).
    ///   - fieldsText: the JSON text `record`'s fields arrived in, stored as it is instead of
    ///     encoding the fields again.
    static func store(_ record: RecordModel.Record, zone: Int64, tag: String?, serverRecord: RecordModel.Record?,
                      recordingSchema: Bool = true, fieldsText: String? = nil, in db: SQLDatabase) throws {
        let fields = try fieldsText ?? RecordRow.encodeFields(record.fields)
        // When the row is the server's version unchanged (a fetched record), server_record stays
        // NULL rather than holding a second copy of it.
        let rowIsServerVersion = serverRecord.map { server in
            tag != nil && server.recordChangeTag == tag && server.recordType == record.recordType && server.fields == record.fields
                && server.created == record.created && server.modified == record.modified
        } ?? false
        let serverJSON = rowIsServerVersion ? nil : try serverRecord.map { String(decoding: try JSONValueEncoder().encode($0), as: UTF8.self) }
        try db.cachedStatement(sql: Self.upsertSQL).execute { row in
            Self.bindRow(&row, record, zone: zone, tag: tag, fields: fields, serverJSON: serverJSON)
        }
        try db.cachedStatement(sql: Self.clearReferencesSQL).execute(arguments: [zone, record.recordName])
        try SearchRows.remove(record.recordName, inZone: zone, in: db)
        let search = SearchIndex(fields: record.fields, words: try searchableTypes(in: db).contains(record.recordType))
        if !search.isEmpty { try SearchRows.insert(search, of: record.recordName, inZone: zone, in: db) }
        let references = record.references
        if !references.isEmpty {
            let insert = try db.cachedStatement(sql: Self.insertReferenceSQL)
            for (field, reference) in references {
                try insert.execute { row in Self.bindReference(&row, zone: zone, source: record.recordName, field: field, reference: reference) }
            }
        }
        for (field, value) in record.fields where recordingSchema {
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO schema_fields(record_type, field, type) VALUES (?, ?, ?)")
                .execute(arguments: [record.recordType, field, value.type.rawValue])
        }
    }

    /// Writes fetched records, the server's versions as they are, for one transaction.
    ///
    /// The rows are written straight through SQLite's C API with statements prepared once per
    /// page (``RecordSQL/SQLiteBinder``), skipping GRDB's per-statement work; GRDB's observers
    /// (`ValueObservation`) are told of the change once, by ``notifyObservers()``, which the
    /// transaction must call after the last ``write(_:zone:fieldsText:references:)``.
    struct FetchedRowWriter {
        private let db: SQLDatabase
        private let insertNew: Statement, upsert: Statement, clearReferences: Statement, insertReference: Statement
        /// The record types whose words the cache indexes.
        private let searchable: Set<String>
        private var wrote = false

        init(_ db: SQLDatabase) throws {
            self.db = db
            searchable = try RecordCache.searchableTypes(in: db)
            insertNew = try db.cachedStatement(sql: RecordCache.insertNewSQL)
            upsert = try db.cachedStatement(sql: RecordCache.upsertSQL)
            clearReferences = try db.cachedStatement(sql: RecordCache.clearReferencesSQL)
            insertReference = try db.cachedStatement(sql: RecordCache.insertReferenceSQL)
        }

        /// Writes `record`, a version the server sent (it has a change tag), as the cached row
        /// with `references` (its ``RecordModel/Record/references``); `server_record` stays
        /// NULL, since the row is the server's version. `fieldsText` is as for
        /// ``RecordCache/store(_:zone:tag:serverRecord:recordingSchema:fieldsText:in:)``.
        ///
        /// The row is inserted if no row of its name is cached (the usual case in a first
        /// fetch: one statement); otherwise the cached row is replaced and its references
        /// cleared first.
        /// `searchFields` are the fields that may have search rows: at least its locations
        /// (``RecordModel/FieldsSummary``'s); a searchable type's words are read from the record's
        /// fields, or from `fieldsText` when the page was read for the cache alone.
        mutating func write(_ record: RecordModel.Record, zone: Int64, fieldsText: String?,
                            references: [(field: String, reference: Reference)], searchFields: [(key: String, value: FieldValue)]) throws {
            let fields = try fieldsText ?? RecordRow.encodeFields(record.fields)
            let words = searchable.contains(record.recordType)
            let search = !words ? SearchIndex(fields: searchFields, words: false)
                : record.fields.isEmpty && fieldsText != nil ? SearchIndex(fields: try RecordRow.decodeFields(fields)) : SearchIndex(fields: record.fields)
            wrote = true
            let bind = { (row: inout SQLiteBinder) in
                RecordCache.bindRow(&row, record, zone: zone, tag: record.recordChangeTag, fields: fields, serverJSON: nil)
            }
            // No row inserted: one of this name is cached (or SQLite refused the row, and the
            // upsert reports why).
            if try insertNew.run(in: db, bind) == 0 {
                try upsert.run(in: db, bind)
                try clearReferences.run(in: db) { row in
                    row.bind(zone)
                    row.bind(record.recordName)
                }
                try SearchRows.remove(record.recordName, inZone: zone, in: db)
            }
            if !search.isEmpty { try SearchRows.insert(search, of: record.recordName, inZone: zone, in: db) }
            for (field, reference) in references {
                try insertReference.run(in: db) { row in
                    RecordCache.bindReference(&row, zone: zone, source: record.recordName, field: field, reference: reference)
                }
            }
        }

        /// Tells GRDB's observers that the records, references and search tables changed, if any row
        /// was written.
        func notifyObservers() throws {
            guard wrote else { return }
            try db.notifyChanges(in: Table("records"))
            try db.notifyChanges(in: Table("refs"))
            try db.notifyChanges(in: Table("search_tokens"))
            try db.notifyChanges(in: Table("search_locations"))
        }
    }

    /// Binds the columns of ``insertSQL`` for `record`, in order.
    static func bindRow(_ row: inout SQLiteBinder, _ record: RecordModel.Record, zone: Int64, tag: String?, fields: String, serverJSON: String?) {
        let created = record.created ?? Stamp(timestamp: 0, userRecordName: "")
        let modified = record.modified ?? created
        row.bind(zone)
        row.bind(record.recordName)
        row.bind(record.recordType)
        row.bind(tag)
        row.bind(fields)
        row.bind(created.timestamp)
        row.bind(created.userRecordName)
        row.bind(created.deviceID)
        row.bind(modified.timestamp)
        row.bind(modified.userRecordName)
        row.bind(modified.deviceID)
        row.bind(record.parent)
        row.bind(serverJSON)
    }

    /// Binds the columns of ``insertReferenceSQL``, in order.
    static func bindReference(_ row: inout SQLiteBinder, zone: Int64, source: String, field: String, reference: Reference) {
        row.bind(zone)
        row.bind(source)
        row.bind(field)
        row.bind(reference.recordName)
        row.bind(ReferenceActionCode.code(reference.action))
    }

    private static let clearReferencesSQL = "DELETE FROM refs WHERE zone_id = ? AND source = ?"
    private static let insertReferenceSQL = "INSERT OR IGNORE INTO refs(zone_id, source, field, target, action) VALUES (?, ?, ?, ?, ?)"
    private static let insertSQL = """
        INSERT INTO records(zone_id, name, type, tag, fields, created_at, created_by, created_device, modified_at, modified_by, modified_device, parent, server_record)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """
    /// ``insertSQL`` that inserts nothing when a row of the name is cached.
    private static let insertNewSQL = insertSQL.replacingOccurrences(of: "INSERT INTO", with: "INSERT OR IGNORE INTO")
    private static let upsertSQL = insertSQL + """

        ON CONFLICT(zone_id, name) DO UPDATE SET type = excluded.type, tag = excluded.tag, fields = excluded.fields,
            created_at = excluded.created_at, created_by = excluded.created_by, created_device = excluded.created_device,
            modified_at = excluded.modified_at, modified_by = excluded.modified_by, modified_device = excluded.modified_device,
            parent = excluded.parent, server_record = excluded.server_record
        """

    /// Removes a cached record, its references and its search rows.
    static func remove(_ name: String, zone: Int64, in db: SQLDatabase) throws {
        try db.cachedStatement(sql: "DELETE FROM records WHERE zone_id = ? AND name = ?").execute(arguments: [zone, name])
        try db.cachedStatement(sql: Self.clearReferencesSQL).execute(arguments: [zone, name])
        try SearchRows.remove(name, inZone: zone, in: db)
    }
}

/// A count that any thread may read and add to.
final class LockedCount: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    var value: Int { lock.withLock { count } }
    func increment() { lock.withLock { count += 1 } }
}
