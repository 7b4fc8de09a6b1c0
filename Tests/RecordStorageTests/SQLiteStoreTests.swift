import Foundation
import GRDB
import RecordModel
@testable import RecordRules
import RecordServer
@testable import RecordSQLiteEngine
import RecordSQL
import RecordStorageSQL
import TestSupport
import Synchronization
import Testing

/// Properties of the SQLite backend that the protocol cannot show: query plans and scale.
@Suite struct SQLiteStoreTests {
    /// A store over a new SQLite file in `directory`, and alice's private database in it.
    static func store(in directory: String) async throws -> (engine: SQLiteEngine, store: RecordStore, scope: DatabaseScope) {
        let engine = try SQLiteEngine(path: directory + "/records.sqlite")
        let store = RecordStore(engine: engine)
        let user = try await store.createUser(named: "alice", tokenHash: Credentials.hash(Credentials.newToken()))
        return (engine, store, DatabaseScope(container: "iCloud.test", environment: "development", kind: .private, user: user))
    }

    static func plan(_ query: Query, in engine: SQLiteEngine) async throws -> [String] {
        try await engine.pool.read { db in
            let statement = try QueryCompiler(zoneKeys: [1], schema: ["artist": FieldType(.reference), "tags": FieldType(.reference, isList: true)],
                                          keyedReferenceFields: true, wordBlocks: true)
                .compile(query, after: nil, limit: 10)
            return try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + statement.sql, arguments: statement.arguments).map { $0["detail"] as String }
        }
    }

    /// An acknowledged write survives a crash of the machine: the writer syncs the log at every
    /// commit. (GRDB's DatabasePool sets its writer to `synchronous = NORMAL` when it turns WAL
    /// on, after `prepareDatabase`; in WAL mode NORMAL syncs the log only at checkpoints.)
    @Test func theWriterSyncsTheLogAtEveryCommit() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/records.sqlite"
            let engine = try SQLiteEngine(path: path)
            let level = try await engine.pool.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
            #expect(level == 2, "synchronous is \(String(describing: level)), not FULL (2)")
            let journal = try await engine.pool.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
            #expect(journal == "wal")
        }
        // The same for any pool opened this way, reopened included.
        try await withTemporaryDirectory { directory in
            let path = directory + "/plain.sqlite"
            _ = try DatabasePool.durable(path: path, configuration: Configuration())
            let reopened = try DatabasePool.durable(path: path, configuration: Configuration())
            #expect(try await reopened.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } == 2)
            // What it works around: a plain pool's writer commits with NORMAL (1).
            let plain = try DatabasePool(path: path, configuration: Configuration())
            #expect(try await plain.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } == 1)
        }
    }

    @Test func childrenByReferenceAreFoundThroughTheIndexNotAScan() async throws {
        try await withTemporaryDirectory { directory in
            let engine = try SQLiteEngine(path: directory + "/records.sqlite")
            let reference = RawFieldValue(value: .object(["recordName": .string("monet")]))
            for query in [
                Query(recordType: "Artwork", filterBy: [QueryFilter("artist", .equals, reference)]),
                Query(recordType: "Artwork", filterBy: [QueryFilter("tags", .listContains, reference)]),
            ] {
                let plan = try await Self.plan(query, in: engine)
                #expect(plan.contains { $0.contains("refs_by_target") }, "\(plan)")
                #expect(!plan.contains { $0.hasPrefix("SCAN") }, "\(plan)")
                // Each child is looked up by name: not every Artwork of the zone walked and probed.
                #expect(plan.contains { $0.hasPrefix("SEARCH r ") && $0.contains("name=?") }, "\(plan)")
            }
        }
    }

    /// `artist.name == X` narrows the artists first (by type, through the records index), then
    /// finds their works through `refs_by_target`: the Artworks are never walked.
    @Test func aKeyPathNarrowsTheReferencedSideFirst() async throws {
        try await withTemporaryDirectory { directory in
            let engine = try SQLiteEngine(path: directory + "/records.sqlite")
            let schema = QuerySchema(recordType: "Artwork", types: [
                "Artwork": ["artist": FieldType(.reference), "title": FieldType(.string)],
                "Artist": ["name": FieldType(.string), "label": FieldType(.reference)],
                "Label": ["city": FieldType(.string)],
            ])
            for path in ["artist.name", "artist.label.city"] {
                let plan = try await engine.pool.read { db in
                    let statement = try QueryCompiler(zoneKeys: [1], schema: schema, keyedReferenceFields: true, wordBlocks: true)
                        .compile(Query(recordType: "Artwork", filterBy: [QueryFilter(path, .equals, RawFieldValue(value: .string("x")))]), after: nil, limit: 10)
                    return try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + statement.sql, arguments: statement.arguments).map { $0["detail"] as String }
                }
                #expect(!plan.contains { $0.hasPrefix("SCAN") }, "\(path): \(plan)")
                #expect(plan.contains { $0.hasPrefix("SEARCH t1 ") && $0.contains("type=?") }, "\(path): \(plan)")
                #expect(plan.contains { $0.contains("refs_by_target") }, "\(path): \(plan)")
                #expect(plan.contains { $0.hasPrefix("SEARCH r ") && $0.contains("name=?") }, "\(path): \(plan)")
            }
        }
    }

    /// A word search reads one range of the words index a word and one key of each word
    /// block, and `NEAR` the cell index alone: neither walks the zone's records.
    @Test func wordSearchesAndNearReadTheSearchIndexes() async throws {
        try await withTemporaryDirectory { directory in
            let engine = try SQLiteEngine(path: directory + "/records.sqlite")
            let schema: QuerySchema = ["title": FieldType(.string), "place": FieldType(.location)]
            let queries: [(QueryFilter, String)] = [
                (QueryFilter("allTokens", .containsAllTokens, RawFieldValue(value: .string("water lilies"))), "search_tokens_by_token"),
                (QueryFilter("title", .containsAnyTokens, RawFieldValue(value: .string("water lilies"))), "search_tokens_by_token"),
                (QueryFilter("place", near: Location(latitude: 48.86, longitude: 2.34), within: 1_000), "search_locations_by_cell"),
            ]
            for (filter, index) in queries {
                let plan = try await engine.pool.read { db in
                    let statement = try QueryCompiler(zoneKeys: [1], schema: schema, keyedReferenceFields: true, wordBlocks: true)
                        .compile(Query(recordType: "Artwork", filterBy: [filter]), after: nil, limit: 10)
                    return try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + statement.sql, arguments: statement.arguments).map { $0["detail"] as String }
                }
                // The one scan is of a posting's names (`json_each`).
                #expect(!plan.contains { $0.hasPrefix("SCAN") && !$0.hasPrefix("SCAN j VIRTUAL TABLE") }, "\(filter): \(plan)")
                #expect(plan.contains { $0.contains(index) }, "\(filter): \(plan)")
                if index == "search_tokens_by_token" {
                    #expect(plan.contains { $0.hasPrefix("SEARCH p USING PRIMARY KEY (zone_id=? AND block=? AND token=?") }, "\(filter): \(plan)")
                }
                #expect(plan.contains { $0.hasPrefix("SEARCH r ") && $0.contains("name=?") }, "\(filter): \(plan)")
            }
        }
    }

    @Test func theChangeFeedIsReadThroughTheSequenceIndexes() async throws {
        try await withTemporaryDirectory { directory in
            let engine = try SQLiteEngine(path: directory + "/records.sqlite")
            for types in [nil, ["T", "U"]] as [[String]?] {
                let plan = try await engine.pool.read { db in
                    let (sql, values) = SQLStatement.changePage(inZone: 1, after: 5, tombstonesAfter: 5, recordTypes: types, limit: 10, in: .sqlite).rendered(in: .sqlite)
                    return try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: SQLiteTransaction.arguments(values)).map { $0["detail"] as String }
                }
                #expect(plan.contains { $0.contains("records_by_seq") }, "\(plan)")
                #expect(plan.contains { $0.contains("tombstones_by_seq") }, "\(plan)")
                // A page costs what the page holds: the halves are merged, never sorted whole.
                #expect(plan.contains { $0.contains("MERGE") } && !plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
            }
        }
    }

    @Test func aBatchReadsItsStoredRowsByNameNotByWalkingTheZone() async throws {
        try await withTemporaryDirectory { directory in
            let engine = try SQLiteEngine(path: directory + "/records.sqlite")
            let plan = try await engine.pool.read { db in
                let (sql, values) = SQLStatement.storedRecords(named: ["a", "b"], inZone: 1, in: .sqlite).rendered(in: .sqlite)
                return try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: SQLiteTransaction.arguments(values)).map { $0["detail"] as String }
            }
            #expect(plan.contains { $0.hasPrefix("SEARCH records USING PRIMARY KEY (name=? AND zone_id=?)") }, "\(plan)")
            #expect(!plan.contains { $0.hasPrefix("SCAN records") }, "\(plan)")
        }
    }

    /// The C-API binder stores what GRDB's arguments would: text (empty, non-ASCII, with a NUL)
    /// and integers; a failing statement is a `DatabaseError`.
    @Test func theBinderStoresWhatItIsGiven() async throws {
        try await withTemporaryDirectory { directory in
            let engine = try SQLiteEngine(path: directory + "/records.sqlite")
            let rows = try engine.pool.write { db in
                try db.execute(sql: "CREATE TABLE t(a TEXT, b TEXT, c TEXT, n INTEGER, UNIQUE(a))")
                let insert = try db.cachedStatement(sql: "INSERT INTO t VALUES (?, ?, ?, ?)")
                try insert.run(in: db) { $0.bind(""); $0.bind("Water lilies é 🌸"); $0.bind("a\u{0}b"); $0.bind(Int64.max) }
                try insert.run(in: db) { $0.bind("second"); $0.bind("x"); $0.bind("y"); $0.bind(-1) }
                #expect(throws: DatabaseError.self) { try insert.run(in: db) { $0.bind(""); $0.bind("dup"); $0.bind("dup"); $0.bind(0) } }
                return try Row.fetchAll(db, sql: "SELECT a, b, hex(c), n, typeof(a) FROM t ORDER BY rowid")
            }
            #expect(rows.count == 2)
            #expect(rows[0][0] as String == "" && rows[0][4] as String == "text")
            #expect(rows[0][1] as String == "Water lilies é 🌸" && rows[0][2] as String == "610062" && rows[0][3] as Int64 == .max)
            #expect(rows[1][0] as String == "second" && rows[1][3] as Int64 == -1)
        }
    }

    @Test func aCascadeLooksForValidateReferencesInTheirOwnIndex() async throws {
        try await withTemporaryDirectory { directory in
            let engine = try SQLiteEngine(path: directory + "/records.sqlite")
            let (probe, note) = try await engine.pool.write { db in
                try db.execute(sql: "CREATE TEMP TABLE doomed(pos INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, rid INTEGER)")
                try db.execute(sql: "CREATE TEMP TABLE batch_deleted(name TEXT PRIMARY KEY, operation INTEGER NOT NULL) WITHOUT ROWID")
                func plan(_ sql: String, _ arguments: StatementArguments) throws -> [String] {
                    try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map { $0["detail"] as String }
                }
                func plan(_ statement: SQLStatement) throws -> [String] {
                    let (sql, values) = statement.rendered(in: .sqlite)
                    return try plan(sql, SQLiteTransaction.arguments(values))
                }
                return (try plan(.anyValidatingReference(inZone: 1)), try plan(.notingValidated(operation: 0, inZone: 1, in: .sqlite)))
            }
            // One probe of the small partial index, never a walk of the zone's references.
            #expect(probe.contains { $0.contains("SEARCH refs USING COVERING INDEX refs_validating") }, "\(probe)")
            #expect(note.contains { $0.hasPrefix("SEARCH refs") } && !note.contains { $0.hasPrefix("SCAN refs") }, "\(note)")
        }
    }

    /// `records` is keyed by (name, zone) without a rowid, `refs` by source and `tombstones` by
    /// name, and every statement that reaches a row by name (a save's read of the stored rows,
    /// a cascade's tombstones and deletes) searches that key; the cascade's walk reads
    /// `refs_by_target` alone, and deleting a zone walks no other zone.
    @Test func recordsAreKeyedByNameAndZone() async throws {
        try await withTemporaryDirectory { directory in
            let (engine, store, scope) = try await Self.store(in: directory)
            _ = try await store.modifyRecords(ModifyRecordsRequest(operations: [Record.artist("monet"), Record.artist("manet"),
                                                                                Record.artwork("lilies", by: "monet"), Record.artwork("haystacks", by: "monet")]
                                                                                .map { RecordOperation(.create, RecordPayload($0)) }), in: scope)
            _ = try await store.modifyRecords(ModifyRecordsRequest(operations: [RecordOperation(.forceReplace, RecordPayload(Record.artwork("lilies", by: "manet")))]), in: scope)
            let (tables, indexes, refs, plans) = try engine.pool.write { db in
                let tables = try String.fetchAll(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name IN ('records', 'refs', 'tombstones') ORDER BY name")
                let indexes = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'records' ORDER BY name")
                let refs = try Row.fetchAll(db, sql: "SELECT source, target FROM refs ORDER BY source")
                for table in TemporaryTable.allCases { try db.execute(sql: table.createStatement(in: .sqlite)) }
                let zoneDeletes = SQLStatement.deletingContents(ofZone: 1).map { $0.rendered(in: .sqlite) }
                let doomedDeletes = SQLStatement.deletingDoomed(inZone: 1, firstSequence: 1, in: .sqlite).map { $0.rendered(in: .sqlite) }
                let zoneTombstones = try #require(zoneDeletes.first { $0.sql.hasPrefix("DELETE FROM tombstones") })
                let doomedRecords = try #require(doomedDeletes.first { $0.sql.hasPrefix("DELETE FROM records") })
                func plan(_ sql: String, _ arguments: StatementArguments) throws -> [String] {
                    try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map { $0["detail"] as String }
                }
                func plan(_ statement: SQLStatement) throws -> [String] {
                    let (sql, values) = statement.rendered(in: .sqlite)
                    return try plan(sql, SQLiteTransaction.arguments(values))
                }
                return (tables, indexes, refs, [
                    "blockers": try plan(.validatingBlockers(inZone: 1, in: .sqlite)),
                    "generic collect": try plan(.cascadeLevel(inZone: 1, after: 0, through: 1, in: .sqlite)),
                    "zone refs": try plan(zoneDeletes[0].sql, SQLiteTransaction.arguments(zoneDeletes[0].values)),
                    "zone records": try plan(zoneDeletes[1].sql, SQLiteTransaction.arguments(zoneDeletes[1].values)),
                    "zone tombstones": try plan(zoneTombstones.sql, SQLiteTransaction.arguments(zoneTombstones.values)),
                    "collect": try plan(Cascade.levelSQL, [1, 0, 1]),
                    "stored rows": try plan(.storedRecords(named: ["lilies"], inZone: 1, in: .sqlite)),
                    "tombstones": try plan(doomedDeletes[0].sql, SQLiteTransaction.arguments(doomedDeletes[0].values)),
                    "rows": try plan(doomedRecords.sql, SQLiteTransaction.arguments(doomedRecords.values)),
                ])
            }
            #expect(tables.count == 3 && tables[0].contains("PRIMARY KEY(name, zone_id)) WITHOUT ROWID")
                    && tables[1].contains("PRIMARY KEY(source, zone_id, field, target, action)) WITHOUT ROWID")
                    && tables[2].contains("PRIMARY KEY(name, zone_id)) WITHOUT ROWID"), "\(tables)")
            // No unique index beside the key: one B-tree fewer per save and per delete (the
            // parents' index holds only records that have one).
            #expect(indexes == ["records_by_modified", "records_by_parent", "records_by_seq", "records_by_type"], "\(indexes)")
            // haystacks' reference was written on insert, lilies' replaced on update.
            #expect(refs.map { $0[0] as String } == ["haystacks", "lilies"] && refs.map { $0[1] as String } == ["monet", "manet"], "\(refs)")
            // The level before leads (a range of its rowids); each name is one covering search.
            for walk in ["collect", "generic collect"] {
                #expect(plans[walk]!.first { !$0.hasPrefix("CO-ROUTINE") }?.contains("SEARCH d USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)") == true
                        && plans[walk]!.contains { $0.contains("SEARCH refs USING COVERING INDEX refs_by_target (target=? AND zone_id=? AND action=?)") }, "\(walk): \(plans[walk]!)")
            }
            for statement in ["stored rows", "tombstones", "rows"] {
                #expect(plans[statement]!.contains { $0.contains("USING PRIMARY KEY (name=? AND zone_id=?)") }, "\(statement): \(plans[statement]!)")
                #expect(!plans[statement]!.contains { $0.hasPrefix("SCAN r") || $0.contains("INDEX records_by") }, "\(statement): \(plans[statement]!)")
            }
            // The names a batch deleted lead; each is one search for VALIDATE references to it
            // (the first of each operation's is then picked from those rows alone).
            let blockers = plans["blockers"]!.filter { !$0.hasPrefix("CO-ROUTINE") }
            #expect(blockers.first?.hasPrefix("SCAN b") == true && blockers.dropFirst().first?.hasPrefix("SEARCH refs") == true
                    && blockers[1].contains("target=?") && !blockers.contains { $0.hasPrefix("SCAN refs") }, "\(plans["blockers"]!)")
            #expect(plans["zone refs"]!.contains { $0.contains("SEARCH refs USING PRIMARY KEY (source=? AND zone_id=?)") }, "\(plans["zone refs"]!)")
            for statement in ["zone refs", "zone records", "zone tombstones"] {
                #expect(!plans[statement]!.contains { $0.hasPrefix("SCAN") }, "\(statement): \(plans[statement]!)")
            }
        }
    }

    /// A batch introducing a record type's fields writes each field's schema row once, not once
    /// per record holding it (a statement and a read of the stored type each, which on
    /// PostgreSQL are round trips): the writer connection's statements, traced.
    @Test func aBatchWritesEachNewFieldsSchemaRowOnce() async throws {
        try await withTemporaryDirectory { directory in
            let (engine, store, scope) = try await Self.store(in: directory)
            let statements = Mutex<[String]>([])
            try await engine.pool.write { db in
                db.trace(options: .statement) { event in
                    let sql = "\(event)"
                    if sql.contains("schema_fields") { statements.withLock { $0.append(sql) } }
                }
            }
            let records = [Record.artist("monet")] + (0..<50).map { Record.artwork("work\($0)", by: "monet") }
            _ = try await store.modifyRecords(ModifyRecordsRequest(operations: records.map { RecordOperation(.create, RecordPayload($0)) }), in: scope)
            try await engine.pool.write { db in db.trace(options: .statement, nil) }
            let seen = statements.withLock { $0 }
            // Artist's name; Artwork's title, year and artist.
            let added = seen.filter { $0.hasPrefix("INSERT INTO schema_fields(container_id, record_type, field, type) VALUES") }
            #expect(added.count == 4, "\(seen.joined(separator: "\n"))")
            #expect(!seen.contains { $0.hasPrefix("SELECT type FROM schema_fields") }, "\(seen.joined(separator: "\n"))")
            // The fields were typed as the records gave them.
            let types = try await engine.pool.read { db in
                try Row.fetchAll(db, sql: "SELECT record_type, field, type FROM schema_fields WHERE substr(field, 1, 3) <> '___' ORDER BY record_type, field")
                    .map { "\($0[0] as String).\($0[1] as String) \($0[2] as String)" }
            }
            #expect(types == ["Artist.name STRING", "Artwork.artist REFERENCE", "Artwork.title STRING", "Artwork.year INT64"])
        }
    }

    /// Deleting a zone removes its records, references and tombstones (the references found
    /// through its records' names, since their key leads with the source) and nothing of a
    /// zone holding the same names.
    @Test func deletingAZoneRemovesItsReferencesAndLeavesAnotherZonesAlone() async throws {
        try await withTemporaryDirectory { directory in
            let (engine, store, scope) = try await Self.store(in: directory)
            let zones = [ZoneID(zoneName: "A"), ZoneID(zoneName: "B")]
            _ = try await store.modifyZones(ModifyZonesRequest(operations: zones.map { .init(.create, $0) }), in: scope)
            for zone in zones {
                _ = try await store.modifyRecords(ModifyRecordsRequest(operations: [Record.artist("monet"), Record.artwork("lilies", by: "monet"),
                                                                                    Record.artwork("haystacks", by: "monet"), Record.artist("gone")]
                                                                                    .map { RecordOperation(.create, RecordPayload($0)) }, zoneID: zone), in: scope)
                _ = try await store.modifyRecords(ModifyRecordsRequest(operations: [RecordOperation(.forceDelete, RecordPayload(recordName: "gone"))], zoneID: zone), in: scope)
            }
            func counts() throws -> [String] {
                try engine.pool.read { db in
                    try ["records", "refs", "tombstones"].map { table in
                        let perZone = try Row.fetchAll(db, sql: "SELECT z.name, COUNT(*) FROM \(table) t JOIN zones z ON z.id = t.zone_id GROUP BY z.name ORDER BY z.name")
                        return "\(table): " + perZone.map { "\($0[0] as String)=\($0[1] as Int)" }.joined(separator: " ")
                    }
                }
            }
            #expect(try counts() == ["records: A=3 B=3", "refs: A=2 B=2", "tombstones: A=1 B=1"])
            _ = try await store.modifyZones(ModifyZonesRequest(operations: [.init(.delete, zones[0])]), in: scope)
            #expect(try counts() == ["records: B=3", "refs: B=2", "tombstones: B=1"])
        }
    }

    /// A store written before the name-led keys keeps every record, reference and tombstone,
    /// column for column, when it is opened (migration `v4-name-led-keys`), and its references
    /// lose the rowid column (`source_id`) that only the old layout needed, and any reference
    /// whose source has no row (a zone's deletion finds references through its records).
    @Test func openingAnOlderStoreKeysItsRowsByName() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/records.sqlite"
            let queue = try DatabaseQueue(path: path)
            try SQLiteEngine.migrator.migrate(queue, upTo: "v3-refs-source-id")
            let dump = "SELECT zone_id, name, type, tag, fields, created_at, created_by, created_device, modified_at, modified_by, modified_device, seq FROM records ORDER BY zone_id, name"
            let tombstoneDump = "SELECT zone_id, name, type, seq FROM tombstones ORDER BY zone_id, name"
            let (before, tombstonesBefore) = try queue.write { db in
                for (zone, name, device) in [(2, "b", "phone"), (1, "b", nil), (1, "a", nil), (2, "a", "laptop")] {
                    try db.execute(sql: "INSERT INTO records(zone_id, name, type, tag, fields, created_at, created_by, created_device, modified_at, modified_by, modified_device, seq) VALUES (?, ?, 'T', ?, '{}', 1, 'u', ?, 2, 'v', ?, ?)",
                                   arguments: [zone, name, "t-\(name)", device, device, zone * 10])
                }
                // The last reference's source has no row (none is written so): the migration drops it.
                for (zone, source, target) in [(1, "a", "b"), (1, "b", "a"), (2, "a", "x"), (2, "gone", "a")] {
                    try db.execute(sql: "INSERT INTO refs(zone_id, source, field, target, action, source_id) VALUES (?, ?, 'f', ?, 1, 7)", arguments: [zone, source, target])
                }
                for (zone, name, seq) in [(1, "z", 5), (2, "y", 6)] {
                    try db.execute(sql: "INSERT INTO tombstones(zone_id, name, type, seq) VALUES (?, ?, 'T', ?)", arguments: [zone, name, seq])
                }
                return (try Row.fetchAll(db, sql: dump), try Row.fetchAll(db, sql: tombstoneDump))
            }
            try queue.close()
            let engine = try SQLiteEngine(path: path)
            let (after, tombstonesAfter, table, refColumns, refs, indexes) = try engine.pool.read { db in
                (try Row.fetchAll(db, sql: dump), try Row.fetchAll(db, sql: tombstoneDump),
                 try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'records'") ?? "",
                 try Row.fetchAll(db, sql: "PRAGMA table_info(refs)").map { $0["name"] as String },
                 try Row.fetchAll(db, sql: "SELECT zone_id, source, target FROM refs ORDER BY zone_id, source").map { "\($0[0] as Int64)/\($0[1] as String)->\($0[2] as String)" },
                 try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex%' AND tbl_name IN ('records', 'refs', 'tombstones') ORDER BY name"))
            }
            #expect(before.count == 4)
            #expect(after == before)
            #expect(tombstonesBefore.count == 2 && tombstonesAfter == tombstonesBefore)
            #expect(table.contains("WITHOUT ROWID"), "\(table)")
            #expect(!refColumns.contains("source_id"), "\(refColumns)")
            #expect(refs == ["1/a->b", "1/b->a", "2/a->x"])
            #expect(indexes == ["records_by_modified", "records_by_parent", "records_by_seq", "records_by_type", "refs_by_target", "refs_validating", "tombstones_by_seq"])
        }
    }

    /// A store written before reference fields had keys keeps every reference, each field name
    /// now a key of `ref_fields` (migration `v5-reference-field-keys`), and a query by
    /// reference finds the same children through the keys. Saves after it add keys for new
    /// field names and reuse the stored ones.
    @Test func openingAnOlderStoreKeysItsReferenceFields() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/records.sqlite"
            let queue = try DatabaseQueue(path: path)
            try SQLiteEngine.migrator.migrate(queue, upTo: "v4-name-led-keys")
            let references: [(zone: Int64, source: String, field: String, target: String, action: Int)] = [
                (1, "lilies", "artist", "monet", 1), (1, "lilies", "tags", "water", 0), (1, "haystacks", "artist", "monet", 1),
                (1, "olympia", "painter", "monet", 2), (2, "lilies", "artist", "monet", 1),
            ]
            let dump = "SELECT r.zone_id, r.source, f.name AS field, r.target, r.action FROM refs r JOIN ref_fields f ON f.id = r.field ORDER BY r.zone_id, r.source, f.name"
            let before = try queue.write { db in
                for (zone, source) in Set(references.map { "\($0.zone)/\($0.source)" }).sorted().map({ ($0.split(separator: "/")[0], String($0.split(separator: "/")[1])) }) {
                    try db.execute(sql: "INSERT INTO records(zone_id, name, type, tag, fields, created_at, created_by, modified_at, modified_by, seq) VALUES (?, ?, 'Artwork', 't', '{}', 1, 'u', 1, 'u', 1)",
                                   arguments: [Int64(zone)!, source])
                }
                for reference in references {
                    try db.execute(sql: "INSERT INTO refs(zone_id, source, field, target, action) VALUES (?, ?, ?, ?, ?)",
                                   arguments: [reference.zone, reference.source, reference.field, reference.target, reference.action])
                }
                return try Row.fetchAll(db, sql: "SELECT zone_id, source, field, target, action FROM refs ORDER BY zone_id, source, field")
            }
            try queue.close()
            let engine = try SQLiteEngine(path: path)
            let store = RecordStore(engine: engine)
            let (after, keys, fieldTypes, children) = try await engine.pool.read { db in
                let statement = try QueryCompiler(zoneKeys: [1], schema: ["artist": FieldType(.reference)], keyedReferenceFields: true, wordBlocks: true)
                    .compile(Query(recordType: "Artwork", filterBy: [QueryFilter("artist", .equals, RawFieldValue(value: .object(["recordName": .string("monet")])))]),
                             after: nil, limit: 10)
                return (try Row.fetchAll(db, sql: dump),
                        try String.fetchAll(db, sql: "SELECT name FROM ref_fields ORDER BY id"),
                        try String.fetchAll(db, sql: "SELECT DISTINCT typeof(field) FROM refs"),
                        try Row.fetchAll(db, sql: statement.sql, arguments: statement.arguments).map { $0["name"] as String }.sorted())
            }
            #expect(before.count == 5)
            #expect(after == before, "\(after)")
            #expect(keys == ["artist", "painter", "tags"])
            #expect(fieldTypes == ["integer"])
            // `olympia` references monet through another field.
            #expect(children == ["haystacks", "lilies"])

            // A save reuses the stored key of `artist` and adds one for `subject`.
            let user = try await store.createUser(named: "alice", tokenHash: Credentials.hash(Credentials.newToken()))
            let scope = DatabaseScope(container: "iCloud.test", environment: "development", kind: .private, user: user)
            let sketch = Record(recordName: "sketch", recordType: "Artwork", fields: [
                "artist": .reference(Reference(recordName: "monet", action: .none)),
                "subject": .reference(Reference(recordName: "monet", action: .none)),
            ])
            _ = try await store.modifyRecords(ModifyRecordsRequest(operations: [RecordOperation(.create, RecordPayload(Record.artist("monet"))),
                                                                                RecordOperation(.create, RecordPayload(sketch))]), in: scope)
            let (keysAfterSave, sketchFields) = try await engine.pool.read { db in
                (try String.fetchAll(db, sql: "SELECT name FROM ref_fields ORDER BY id"),
                 try String.fetchAll(db, sql: "SELECT f.name FROM refs r JOIN ref_fields f ON f.id = r.field WHERE r.source = 'sketch' ORDER BY f.name"))
            }
            #expect(keysAfterSave == ["artist", "painter", "tags", "subject"])
            #expect(sketchFields == ["artist", "subject"])
        }
    }

    /// 10,000 children, each with 9 grandchildren, all owned (DELETE_SELF) by one root. The
    /// tree is written straight into the tables to keep the test quick; the delete goes
    /// through the store like any request.
    @Test func aCascadeOverAHundredThousandRecordsCompletes() async throws {
        try await withTemporaryDirectory { directory in
            let (engine, store, scope) = try await Self.store(in: directory)
            _ = try await store.modifyRecords(ModifyRecordsRequest(operations: [RecordOperation(.create, RecordPayload(Record.artist("root")))]), in: scope)
            let fields = try RecordRow.encodeFields(["n": .int64(1)])
            try await engine.pool.write { db in
                let zone = try Int64.fetchOne(db, sql: "SELECT zone_id FROM records WHERE name = 'root'")!
                var sequence = try Int64.fetchOne(db, sql: "SELECT seq FROM zones WHERE id = ?", arguments: [zone])!
                let insert = try db.makeStatement(sql: "INSERT INTO records(zone_id, name, type, tag, fields, created_at, created_by, modified_at, modified_by, seq) VALUES (?, ?, 'Node', ?, ?, 0, 'u', 0, 'u', ?)")
                try db.execute(sql: "INSERT INTO ref_fields(name) VALUES ('owner')")
                let reference = try db.makeStatement(sql: "INSERT INTO refs(zone_id, source, field, target, action) VALUES (?, ?, ?, ?, 1)")
                let owner = db.lastInsertedRowID
                for child in 0..<10_000 {
                    let childName = "c\(child)"
                    sequence += 1
                    try insert.execute(arguments: [zone, childName, "t", fields, sequence])
                    try reference.execute(arguments: [zone, childName, owner, "root"])
                    for grandchild in 0..<9 {
                        sequence += 1
                        try insert.execute(arguments: [zone, "\(childName)-\(grandchild)", "t", fields, sequence])
                        try reference.execute(arguments: [zone, "\(childName)-\(grandchild)", owner, childName])
                    }
                }
                try db.execute(sql: "UPDATE zones SET seq = ? WHERE id = ?", arguments: [sequence, zone])
            }
            let before = try await store.recordChanges(RecordChangesRequest(), in: scope)
            let response = try await store.modifyRecords(ModifyRecordsRequest(operations: [RecordOperation(.forceDelete, RecordPayload(recordName: "root"))]), in: scope)
            guard case .success(_, let cascaded)? = response.records.first else { Issue.record("delete failed: \(response)"); return }
            #expect(cascaded?.count == 100_000)
            let (records, tombstones) = try await engine.pool.read { db in
                (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM records")!, try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tombstones")!)
            }
            #expect(records == 0)
            #expect(tombstones == 100_001)
            // The tombstones are in the feed after the earlier token, each once.
            var token = before.syncToken
            var seen = Set<String>()
            var more = true
            while more {
                let page = try await store.recordChanges(RecordChangesRequest(syncToken: token, resultsLimit: 400), in: scope)
                for record in page.records { #expect(record.deleted); seen.insert(record.recordName) }
                token = page.syncToken
                more = page.moreComing
            }
            #expect(seen.count == 100_001)
        }
    }
}
