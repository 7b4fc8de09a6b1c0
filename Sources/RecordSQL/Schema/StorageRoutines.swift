/// A function or trigger one engine keeps beside its tables, as the statement that makes it.
public struct RoutineDefinition: Sendable {
    public enum Kind: Sendable { case function, trigger }

    public var name: String
    public var kind: Kind
    public var dialect: SQLDialect
    /// The `CREATE` statement.
    public var sql: String

    /// The statement in `dialect`, or `nil` if another engine keeps the routine.
    public func statement(in dialect: SQLDialect) -> String? {
        dialect == self.dialect ? sql : nil
    }
}

extension StorageSchema {
    /// The functions and triggers of each engine, in the order they are made.
    ///
    /// `user_usage` is kept by triggers on `records`: SQLite's run for each row; PostgreSQL's
    /// once per statement, over its transition table, so a cascade of many records is one
    /// update a user. PostgreSQL's `recordsync_change_page` reads a page of a zone's change
    /// feed: records and tombstones after a place, each read in sequence order from its
    /// `(zone_id, seq)` index and limited, then merged; its own settings make that the plan
    /// whatever the tables' statistics (left to itself before autovacuum has analysed a table
    /// just filled, PostgreSQL read every change after the token and sorted them).
    public static let routines: [RoutineDefinition] = [
        RoutineDefinition(name: "records_usage_insert", kind: .trigger, dialect: .sqlite, sql: usageInsertTrigger),
        RoutineDefinition(name: "records_usage_update", kind: .trigger, dialect: .sqlite, sql: usageUpdateTrigger),
        RoutineDefinition(name: "records_usage_delete", kind: .trigger, dialect: .sqlite, sql: usageDeleteTrigger),
        RoutineDefinition(name: "recordsync_change_page", kind: .function, dialect: .postgres, sql: changePageFunction),
        RoutineDefinition(name: "recordsync_usage_inserted", kind: .function, dialect: .postgres, sql: usageInsertedFunction),
        RoutineDefinition(name: "recordsync_usage_updated", kind: .function, dialect: .postgres, sql: usageUpdatedFunction),
        RoutineDefinition(name: "recordsync_usage_deleted", kind: .function, dialect: .postgres, sql: usageDeletedFunction),
        RoutineDefinition(name: "records_usage_inserted", kind: .trigger, dialect: .postgres, sql: """
            CREATE TRIGGER records_usage_inserted AFTER INSERT ON records REFERENCING NEW TABLE AS new_rows
                FOR EACH STATEMENT EXECUTE FUNCTION recordsync_usage_inserted()
            """),
        RoutineDefinition(name: "records_usage_updated", kind: .trigger, dialect: .postgres, sql: """
            CREATE TRIGGER records_usage_updated AFTER UPDATE ON records REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
                FOR EACH STATEMENT EXECUTE FUNCTION recordsync_usage_updated()
            """),
        RoutineDefinition(name: "records_usage_deleted", kind: .trigger, dialect: .postgres, sql: """
            CREATE TRIGGER records_usage_deleted AFTER DELETE ON records REFERENCING OLD TABLE AS old_rows
                FOR EACH STATEMENT EXECUTE FUNCTION recordsync_usage_deleted()
            """),
    ]

    // What a record counts in: the usage of `charged_to` (a participant's record in a shared
    // zone: the zone's owner), else of its creator (migration `record-shares`).

    static let usageInsertTrigger = """
        CREATE TRIGGER records_usage_insert AFTER INSERT ON records BEGIN
            INSERT INTO user_usage(user_record, records, bytes) VALUES (COALESCE(NEW.charged_to, NEW.created_by), 1, length(CAST(NEW.fields AS BLOB)) + NEW.asset_bytes)
            ON CONFLICT(user_record) DO UPDATE SET records = records + 1, bytes = bytes + excluded.bytes;
        END
        """

    static let usageUpdateTrigger = """
        CREATE TRIGGER records_usage_update AFTER UPDATE OF fields, asset_bytes ON records BEGIN
            UPDATE user_usage SET bytes = bytes + length(CAST(NEW.fields AS BLOB)) + NEW.asset_bytes
                - length(CAST(OLD.fields AS BLOB)) - OLD.asset_bytes
            WHERE user_record = COALESCE(NEW.charged_to, NEW.created_by);
        END
        """

    static let usageDeleteTrigger = """
        CREATE TRIGGER records_usage_delete AFTER DELETE ON records BEGIN
            UPDATE user_usage SET records = records - 1, bytes = bytes - length(CAST(OLD.fields AS BLOB)) - OLD.asset_bytes
            WHERE user_record = COALESCE(OLD.charged_to, OLD.created_by);
        END
        """

    static let usageInsertedFunction = """
        CREATE OR REPLACE FUNCTION recordsync_usage_inserted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
            INSERT INTO user_usage(user_record, records, bytes)
                SELECT COALESCE(charged_to, created_by), COUNT(*), SUM(octet_length(fields) + asset_bytes) FROM new_rows GROUP BY 1 ORDER BY 1
            ON CONFLICT (user_record) DO UPDATE SET records = user_usage.records + excluded.records, bytes = user_usage.bytes + excluded.bytes;
            RETURN NULL;
        END $$
        """

    static let usageUpdatedFunction = """
        CREATE OR REPLACE FUNCTION recordsync_usage_updated() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
            UPDATE user_usage u SET bytes = u.bytes + d.bytes FROM (
                SELECT COALESCE(n.charged_to, n.created_by) AS user_record, SUM(octet_length(n.fields) + n.asset_bytes - octet_length(o.fields) - o.asset_bytes) AS bytes
                FROM new_rows n JOIN old_rows o ON o.zone_id = n.zone_id AND o.name = n.name GROUP BY 1) d
            WHERE u.user_record = d.user_record AND d.bytes <> 0;
            RETURN NULL;
        END $$
        """

    static let usageDeletedFunction = """
        CREATE OR REPLACE FUNCTION recordsync_usage_deleted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
            UPDATE user_usage u SET records = u.records - d.records, bytes = u.bytes - d.bytes FROM (
                SELECT COALESCE(charged_to, created_by) AS user_record, COUNT(*) AS records, SUM(octet_length(fields) + asset_bytes) AS bytes FROM old_rows GROUP BY 1) d
            WHERE u.user_record = d.user_record;
            RETURN NULL;
        END $$
        """

    /// PostgreSQL's `recordsync_change_page` (migration `record-shares` made it return `parent`).
    static let changePageFunction = """
        CREATE FUNCTION recordsync_change_page(page_zone BIGINT, page_after BIGINT, page_tombstones_after BIGINT,
                                               page_types TEXT[], page_limit INT)
        RETURNS TABLE(change_seq BIGINT, change_deleted BOOLEAN, change_name TEXT, change_type TEXT, change_tag TEXT,
                      change_fields TEXT, change_created_at BIGINT, change_created_by TEXT, change_created_device TEXT,
                      change_modified_at BIGINT, change_modified_by TEXT, change_modified_device TEXT, change_parent TEXT)
        LANGUAGE plpgsql STABLE
        SET enable_bitmapscan = off SET enable_seqscan = off
        AS $$
        BEGIN
            RETURN QUERY
                (SELECT r.seq, FALSE, r.name, r.type, r.tag, r.fields, r.created_at, r.created_by, r.created_device,
                        r.modified_at, r.modified_by, r.modified_device, r.parent
                 FROM records r
                 WHERE r.zone_id = page_zone AND r.seq > page_after AND (page_types IS NULL OR r.type = ANY(page_types))
                 ORDER BY r.seq LIMIT page_limit)
                UNION ALL
                (SELECT t.seq, TRUE, t.name, t.type, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
                 FROM tombstones t
                 WHERE t.zone_id = page_zone AND t.seq > page_tombstones_after AND (page_types IS NULL OR t.type = ANY(page_types))
                 ORDER BY t.seq LIMIT page_limit)
                ORDER BY 1 LIMIT page_limit;
        END
        $$
        """

    /// Counts every user's usage afresh from the records stored (`user_usage` empty before).
    public static func countUsageSQL(in dialect: SQLDialect) -> String {
        let bytes = dialect == .sqlite ? "length(CAST(fields AS BLOB))" : "octet_length(fields)"
        return """
            INSERT INTO user_usage(user_record, records, bytes)
                SELECT COALESCE(charged_to, created_by), COUNT(*), SUM(\(bytes) + asset_bytes) FROM records GROUP BY 1
            """
    }
}
