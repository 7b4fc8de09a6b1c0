import GRDB
import RecordSQL

extension SQLiteEngine {
    /// The schema, as named migrations. A migration is never edited after it ships: a new one is
    /// written once for both engines, in ``StorageSchema/migrations``.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE users(
                    id INTEGER PRIMARY KEY,
                    name TEXT NOT NULL UNIQUE,
                    record_name TEXT NOT NULL UNIQUE,
                    created_at INTEGER NOT NULL);
                CREATE TABLE tokens(
                    hash BLOB PRIMARY KEY,
                    user_id INTEGER NOT NULL REFERENCES users(id),
                    created_at INTEGER NOT NULL) WITHOUT ROWID;
                CREATE TABLE containers(
                    id INTEGER PRIMARY KEY,
                    name TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    UNIQUE(name, environment));
                -- owner_id is the user of a private database, 0 for the public one.
                -- seq numbers the database's zone-change feed.
                CREATE TABLE databases(
                    id INTEGER PRIMARY KEY,
                    container_id INTEGER NOT NULL REFERENCES containers(id),
                    kind TEXT NOT NULL,
                    owner_id INTEGER NOT NULL,
                    uid BLOB NOT NULL,
                    seq INTEGER NOT NULL,
                    UNIQUE(container_id, kind, owner_id));
                -- seq numbers the zone's record-change feed (never reset, so change tags
                -- stay unique across incarnations); db_seq places the zone's latest change
                -- in the database's feed; uid names the current incarnation.
                CREATE TABLE zones(
                    id INTEGER PRIMARY KEY,
                    database_id INTEGER NOT NULL REFERENCES databases(id),
                    name TEXT NOT NULL,
                    uid BLOB NOT NULL,
                    seq INTEGER NOT NULL,
                    db_seq INTEGER NOT NULL,
                    deleted INTEGER NOT NULL,
                    UNIQUE(database_id, name));
                CREATE INDEX zones_by_db_seq ON zones(database_id, db_seq);
                CREATE TABLE zone_incarnations(
                    uid BLOB PRIMARY KEY,
                    zone_id INTEGER NOT NULL) WITHOUT ROWID;
                -- The inferred schema: the type of each field of each record type.
                CREATE TABLE schema_fields(
                    container_id INTEGER NOT NULL,
                    record_type TEXT NOT NULL,
                    field TEXT NOT NULL,
                    type TEXT NOT NULL,
                    PRIMARY KEY(container_id, record_type, field)) WITHOUT ROWID;
                -- fields holds the record's typed fields as wire JSON; seq is the record's
                -- place in the zone's change feed.
                CREATE TABLE records(
                    id INTEGER PRIMARY KEY,
                    zone_id INTEGER NOT NULL,
                    name TEXT NOT NULL,
                    type TEXT NOT NULL,
                    tag TEXT NOT NULL,
                    fields TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    created_by TEXT NOT NULL,
                    created_device TEXT,
                    modified_at INTEGER NOT NULL,
                    modified_by TEXT NOT NULL,
                    modified_device TEXT,
                    seq INTEGER NOT NULL,
                    UNIQUE(zone_id, name));
                CREATE INDEX records_by_seq ON records(zone_id, seq);
                CREATE INDEX records_by_type ON records(zone_id, type, name);
                -- One row per reference a record holds (each element of a reference list).
                -- action: 0 NONE, 1 DELETE_SELF, 2 VALIDATE. The same target may appear with
                -- several actions (a list holding it twice).
                CREATE TABLE refs(
                    zone_id INTEGER NOT NULL,
                    source TEXT NOT NULL,
                    field TEXT NOT NULL,
                    target TEXT NOT NULL,
                    action INTEGER NOT NULL,
                    PRIMARY KEY(zone_id, source, field, target, action)) WITHOUT ROWID;
                CREATE INDEX refs_by_target ON refs(zone_id, target, action, field, source);
                -- Deleted records, for change feeds; removed when the name is saved again.
                CREATE TABLE tombstones(
                    zone_id INTEGER NOT NULL,
                    name TEXT NOT NULL,
                    type TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    PRIMARY KEY(zone_id, name)) WITHOUT ROWID;
                CREATE INDEX tombstones_by_seq ON tombstones(zone_id, seq);

                -- Deleting a zone finds its references through its records, so none may
                -- outlive its source's row (none is written so; an older store could hold one).
                DELETE FROM refs WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.name = refs.source AND r.zone_id = refs.zone_id);
                """)
        }
        // The VALIDATE references alone, so that a cascading delete can tell in one probe
        // whether anything in the zone could block it (usually nothing does) before checking
        // each doomed record.
        migrator.registerMigration("v2-validating-refs") { db in
            try db.execute(sql: "CREATE INDEX refs_validating ON refs(zone_id, target) WHERE action = 2")
        }
        // Each reference carries its source's rowid (`source_id`, in `refs_by_target` too), so
        // that a cascade reads the rows it deletes from the index it walks, without looking
        // each doomed name up in `records`. A record's references are written and deleted with
        // its row, so the rowid stays its row's.
        migrator.registerMigration("v3-refs-source-id") { db in
            try db.execute(sql: """
                ALTER TABLE refs ADD COLUMN source_id INTEGER;
                UPDATE refs SET source_id = (SELECT id FROM records WHERE records.zone_id = refs.zone_id AND records.name = refs.source);
                DROP INDEX refs_by_target;
                CREATE INDEX refs_by_target ON refs(zone_id, target, action, field, source, source_id);
                """)
        }
        // `records` keyed by (name, zone) without a rowid: every save and every delete writes
        // one B-tree fewer (the table was a rowid table plus a unique index on (zone, name)),
        // and a lookup by name is one search instead of two. Nothing names a record by rowid
        // any more, so `refs.source_id` (v3) goes too.
        //
        // The keys that are only ever searched by equality (a record's or tombstone's name, a
        // reference's source or target) lead with the name, not the zone: a zone's keys all
        // share their first column, so every comparison in a search of a zone-led key ties on
        // it and takes SQLite's slow general path, where a name-led key is told apart by its
        // first column. With both, a save runs 6% fewer instructions and a cascade 14% fewer
        // (docs/performance.md, "Keys that lead with the name"). What walks a zone uses the
        // zone-led indexes: `records_by_seq`, `records_by_type`, `tombstones_by_seq`,
        // `refs_validating`.
        migrator.registerMigration("v4-name-led-keys") { db in
            try db.execute(sql: """
                CREATE TABLE records_v4(
                    zone_id INTEGER NOT NULL,
                    name TEXT NOT NULL,
                    type TEXT NOT NULL,
                    tag TEXT NOT NULL,
                    fields TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    created_by TEXT NOT NULL,
                    created_device TEXT,
                    modified_at INTEGER NOT NULL,
                    modified_by TEXT NOT NULL,
                    modified_device TEXT,
                    seq INTEGER NOT NULL,
                    PRIMARY KEY(name, zone_id)) WITHOUT ROWID;
                INSERT INTO records_v4(zone_id, name, type, tag, fields, created_at, created_by, created_device, modified_at, modified_by, modified_device, seq)
                    SELECT zone_id, name, type, tag, fields, created_at, created_by, created_device, modified_at, modified_by, modified_device, seq
                    FROM records ORDER BY name, zone_id;
                DROP TABLE records;
                ALTER TABLE records_v4 RENAME TO records;
                CREATE INDEX records_by_seq ON records(zone_id, seq);
                CREATE INDEX records_by_type ON records(zone_id, type, name);

                CREATE TABLE refs_v4(
                    zone_id INTEGER NOT NULL,
                    source TEXT NOT NULL,
                    field TEXT NOT NULL,
                    target TEXT NOT NULL,
                    action INTEGER NOT NULL,
                    PRIMARY KEY(source, zone_id, field, target, action)) WITHOUT ROWID;
                INSERT INTO refs_v4(zone_id, source, field, target, action)
                    SELECT zone_id, source, field, target, action FROM refs ORDER BY source, zone_id, field, target, action;
                DROP TABLE refs;
                ALTER TABLE refs_v4 RENAME TO refs;
                CREATE INDEX refs_by_target ON refs(target, zone_id, action, field, source);
                CREATE INDEX refs_validating ON refs(zone_id, target) WHERE action = 2;

                CREATE TABLE tombstones_v4(
                    zone_id INTEGER NOT NULL,
                    name TEXT NOT NULL,
                    type TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    PRIMARY KEY(name, zone_id)) WITHOUT ROWID;
                INSERT INTO tombstones_v4(zone_id, name, type, seq)
                    SELECT zone_id, name, type, seq FROM tombstones ORDER BY name, zone_id;
                DROP TABLE tombstones;
                ALTER TABLE tombstones_v4 RENAME TO tombstones;
                CREATE INDEX tombstones_by_seq ON tombstones(zone_id, seq);

                -- Deleting a zone finds its references through its records, so none may
                -- outlive its source's row (none is written so; an older store could hold one).
                DELETE FROM refs WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.name = refs.source AND r.zone_id = refs.zone_id);
                """)
        }
        // A reference's field is stored as a small integer, its key in `ref_fields`, not as its
        // name: every entry of `refs` and `refs_by_target` is a fifth smaller. The references of
        // a save land all over `refs_by_target` (one per target), so its leaves are most of
        // what a commit writes; smaller entries mean fewer leaves: a save's commit writes 14%
        // fewer pages (docs/performance.md, "Reference fields as keys"). A field name's key never changes and is
        // never removed; the store's keys are shared by every zone and container.
        migrator.registerMigration("v5-reference-field-keys") { db in
            try db.execute(sql: """
                CREATE TABLE ref_fields(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
                INSERT INTO ref_fields(name) SELECT DISTINCT field FROM refs ORDER BY field;
                CREATE TABLE refs_v5(
                    zone_id INTEGER NOT NULL,
                    source TEXT NOT NULL,
                    field INTEGER NOT NULL,
                    target TEXT NOT NULL,
                    action INTEGER NOT NULL,
                    PRIMARY KEY(source, zone_id, field, target, action)) WITHOUT ROWID;
                INSERT INTO refs_v5(zone_id, source, field, target, action)
                    SELECT r.zone_id, r.source, f.id, r.target, r.action FROM refs r JOIN ref_fields f ON f.name = r.field
                    ORDER BY r.source, r.zone_id, f.id, r.target, r.action;
                DROP TABLE refs;
                ALTER TABLE refs_v5 RENAME TO refs;
                CREATE INDEX refs_by_target ON refs(target, zone_id, action, field, source);
                CREATE INDEX refs_validating ON refs(zone_id, target) WHERE action = 2;
                """)
        }
        // What users let others find them by (users/discover, users/lookup/*).
        migrator.registerMigration("v6-user-profiles") { db in
            try db.execute(sql: """
                ALTER TABLE users ADD COLUMN email TEXT;
                ALTER TABLE users ADD COLUMN given_name TEXT;
                ALTER TABLE users ADD COLUMN family_name TEXT;
                ALTER TABLE users ADD COLUMN discoverable INTEGER NOT NULL DEFAULT 0;
                CREATE UNIQUE INDEX users_by_email ON users(email) WHERE email IS NOT NULL;
                """)
        }
        // Assets: the keys that sign their URLs, blobs (bytes are files under assets/), upload
        // receipts, and which record fields hold which blob.
        migrator.registerMigration("v7-assets") { db in
            try db.execute(sql: """
                CREATE TABLE asset_keys(
                    id TEXT PRIMARY KEY,
                    secret BLOB NOT NULL,
                    created_at INTEGER NOT NULL) WITHOUT ROWID;
                CREATE TABLE asset_blobs(
                    checksum TEXT PRIMARY KEY,
                    size INTEGER NOT NULL,
                    orphaned_at INTEGER) WITHOUT ROWID;
                CREATE INDEX asset_blobs_orphaned ON asset_blobs(orphaned_at) WHERE orphaned_at IS NOT NULL;
                CREATE TABLE asset_receipts(
                    receipt TEXT PRIMARY KEY,
                    checksum TEXT NOT NULL,
                    size INTEGER NOT NULL,
                    user_id INTEGER NOT NULL,
                    container TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    zone_name TEXT NOT NULL,
                    record_type TEXT NOT NULL,
                    field TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    bound_zone INTEGER,
                    bound_record TEXT,
                    bound_field TEXT) WITHOUT ROWID;
                CREATE INDEX asset_receipts_by_checksum ON asset_receipts(checksum);
                CREATE TABLE asset_refs(
                    zone_id INTEGER NOT NULL,
                    record_name TEXT NOT NULL,
                    field TEXT NOT NULL,
                    checksum TEXT NOT NULL,
                    PRIMARY KEY(record_name, zone_id, field, checksum)) WITHOUT ROWID;
                CREATE INDEX asset_refs_by_checksum ON asset_refs(checksum);
                """)
        }
        // Subscriptions, the notifications they make, and the webcourier tokens that deliver them.
        migrator.registerMigration("v8-subscriptions") { db in
            try db.execute(sql: """
                CREATE TABLE subscriptions(
                    container TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    user_id INTEGER NOT NULL,
                    id TEXT NOT NULL,
                    body TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY(container, environment, kind, user_id, id)) WITHOUT ROWID;
                CREATE TABLE notifications(
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    user_id INTEGER NOT NULL,
                    container TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    payload TEXT NOT NULL,
                    created_at INTEGER NOT NULL);
                CREATE INDEX notifications_by_user ON notifications(user_id, container, environment, id);
                CREATE INDEX notifications_by_age ON notifications(created_at);
                CREATE TABLE push_tokens(
                    token TEXT PRIMARY KEY,
                    user_id INTEGER NOT NULL,
                    container TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    floor INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    polled_at INTEGER NOT NULL) WITHOUT ROWID;
                CREATE TABLE push_deliveries(
                    token TEXT NOT NULL,
                    notification INTEGER NOT NULL,
                    PRIMARY KEY(token, notification)) WITHOUT ROWID;
                """)
        }
        // Full-text tokens and locations, for CONTAINS_ALL_TOKENS, CONTAINS_ANY_TOKENS, NEAR
        // and sorting by distance (SearchRows). The locations of the records already stored are
        // built here; words are indexed per record type from its first word search on
        // (search_types).
        migrator.registerMigration("v9-search") { db in
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
                CREATE TABLE search_types(
                    container_id INTEGER NOT NULL,
                    record_type TEXT NOT NULL,
                    PRIMARY KEY(container_id, record_type)) WITHOUT ROWID;
                """)
            try SearchRows.buildPlaces(in: db)
        }
        // Tokens get a name (one per device; the ones issued before are token-1, token-2, … in
        // the order issued) and an optional expiry; revocations are counted, so that servers
        // holding tokens in memory notice one (the counter is the single row of
        // token_revocations).
        migrator.registerMigration("v10-named-tokens") { db in
            try db.execute(sql: """
                ALTER TABLE tokens ADD COLUMN name TEXT NOT NULL DEFAULT '';
                ALTER TABLE tokens ADD COLUMN expires_at INTEGER;
                UPDATE tokens SET name = 'token-' || (SELECT COUNT(*) FROM tokens t WHERE t.user_id = tokens.user_id
                    AND (t.created_at < tokens.created_at OR (t.created_at = tokens.created_at AND t.hash <= tokens.hash)));
                CREATE UNIQUE INDEX tokens_by_user ON tokens(user_id, name);
                CREATE TABLE token_revocations(id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL);
                INSERT INTO token_revocations(id, seq) VALUES (1, 0);
                """)
        }
        // Server-to-server keys (each signs for a user, in public databases) and the signatures
        // seen lately, so that none is accepted twice.
        migrator.registerMigration("v11-server-keys") { db in
            try db.execute(sql: """
                CREATE TABLE server_keys(
                    id TEXT PRIMARY KEY,
                    user_id INTEGER NOT NULL REFERENCES users(id),
                    name TEXT NOT NULL,
                    public_key BLOB NOT NULL,
                    created_at INTEGER NOT NULL) WITHOUT ROWID;
                CREATE UNIQUE INDEX server_keys_by_user ON server_keys(user_id, name);
                CREATE TABLE signatures_seen(
                    hash BLOB PRIMARY KEY,
                    seen_at INTEGER NOT NULL) WITHOUT ROWID;
                CREATE INDEX signatures_seen_by_age ON signatures_seen(seen_at);
                """)
        }
        // A user's key is never given again once the user is deleted (AUTOINCREMENT): what is
        // keyed by it elsewhere (push listeners in a running server, a request authenticated
        // a moment before the delete) must never reach a later user. PostgreSQL's identity
        // never reuses one.
        migrator.registerMigration("v12-user-keys-never-reused") { db in
            try db.execute(sql: """
                CREATE TABLE users_v12(
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    name TEXT NOT NULL UNIQUE,
                    record_name TEXT NOT NULL UNIQUE,
                    created_at INTEGER NOT NULL,
                    email TEXT,
                    given_name TEXT,
                    family_name TEXT,
                    discoverable INTEGER NOT NULL DEFAULT 0);
                INSERT INTO users_v12(id, name, record_name, created_at, email, given_name, family_name, discoverable)
                    SELECT id, name, record_name, created_at, email, given_name, family_name, discoverable FROM users;
                DROP TABLE users;
                ALTER TABLE users_v12 RENAME TO users;
                CREATE UNIQUE INDEX users_by_email ON users(email) WHERE email IS NOT NULL;
                """)
        }
        // What each user's records hold (a record counts against its creator): every record's
        // uploaded-asset bytes (from the refs its fields hold, each blob once per field), then
        // the count of what is stored, kept current by triggers on every insert, rewrite and
        // delete of a record (saves, cascades, zone and user deletes alike).
        migrator.registerMigration("v13-user-usage") { db in
            try db.execute(sql: """
                ALTER TABLE records ADD COLUMN asset_bytes INTEGER NOT NULL DEFAULT 0;
                UPDATE records SET asset_bytes = (
                    SELECT SUM(b.size) FROM asset_refs a JOIN asset_blobs b ON b.checksum = a.checksum
                    WHERE a.record_name = records.name AND a.zone_id = records.zone_id)
                WHERE (name, zone_id) IN (SELECT record_name, zone_id FROM asset_refs);
                CREATE TABLE user_usage(
                    user_record TEXT PRIMARY KEY,
                    records INTEGER NOT NULL,
                    bytes INTEGER NOT NULL) WITHOUT ROWID;
                INSERT INTO user_usage(user_record, records, bytes)
                    SELECT created_by, COUNT(*), SUM(length(CAST(fields AS BLOB)) + asset_bytes) FROM records GROUP BY created_by;
                CREATE TRIGGER records_usage_insert AFTER INSERT ON records BEGIN
                    INSERT INTO user_usage(user_record, records, bytes) VALUES (NEW.created_by, 1, length(CAST(NEW.fields AS BLOB)) + NEW.asset_bytes)
                    ON CONFLICT(user_record) DO UPDATE SET records = records + 1, bytes = bytes + excluded.bytes;
                END;
                CREATE TRIGGER records_usage_update AFTER UPDATE OF fields, asset_bytes ON records BEGIN
                    UPDATE user_usage SET bytes = bytes + length(CAST(NEW.fields AS BLOB)) + NEW.asset_bytes
                        - length(CAST(OLD.fields AS BLOB)) - OLD.asset_bytes
                    WHERE user_record = NEW.created_by;
                END;
                CREATE TRIGGER records_usage_delete AFTER DELETE ON records BEGIN
                    UPDATE user_usage SET records = records - 1, bytes = bytes - length(CAST(OLD.fields AS BLOB)) - OLD.asset_bytes
                    WHERE user_record = OLD.created_by;
                END;
                """)
        }
        // API tokens: each lets a web app's signed-out visitors read one container and
        // environment's public database, from the web origins it lists.
        migrator.registerMigration("v14-api-tokens") { db in
            try db.execute(sql: """
                CREATE TABLE api_tokens(
                    hash BLOB PRIMARY KEY,
                    container TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    name TEXT NOT NULL,
                    origins TEXT NOT NULL,
                    created_at INTEGER NOT NULL) WITHOUT ROWID;
                CREATE UNIQUE INDEX api_tokens_by_name ON api_tokens(container, environment, name);
                """)
        }
        // The migrations written once for both engines, in the description's terms.
        for migration in StorageSchema.migrations {
            migrator.registerMigration(migration.name) { db in
                for statement in migration.statements(in: .sqlite) { try db.execute(sql: statement) }
            }
        }
        return migrator
    }
}
