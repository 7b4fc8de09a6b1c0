import Foundation
import GRDB
import RecordModel

/// Cascading deletes, set-based: the records a delete removes are found by one recursive query
/// over the `refs_by_target` index and removed by a handful of set statements, never by
/// loading the zone.
enum Cascade {
    /// Fills the temporary table `doomed` with `root` and every record that holds a
    /// `DELETE_SELF` reference to a doomed record, transitively, numbered (`pos`, from 1) in the
    /// order the recursion reached them: `root` first, then breadth first. The recursion walks
    /// `refs_by_target` alone (a covering search); the later statements reach each doomed row
    /// by its key, (name, zone). `UNION` (not `UNION ALL`) makes the recursion stop on cycles.
    ///
    /// - Returns: how many records are doomed, `root` included.
    static func collect(root: String, zoneKey: Int64, in db: Database) throws -> Int {
        try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS doomed(pos INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")
        try db.execute(sql: "DELETE FROM temp.doomed")
        try db.execute(sql: collectSQL, arguments: [root, zoneKey])
        return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM temp.doomed") ?? 0
    }

    /// The recursion of ``collect(root:zoneKey:in:)``: the root's name, then the zone.
    static let collectSQL = """
        INSERT INTO temp.doomed(name)
        WITH RECURSIVE cascade(name) AS (
            SELECT ?
            UNION
            SELECT refs.source FROM refs JOIN cascade
            ON refs.zone_id = ?2 AND refs.target = cascade.name AND refs.action = 1
        )
        SELECT name FROM cascade
        """

    /// Whether any record of the zone (argument) holds a `VALIDATE` reference: one probe of the
    /// partial index `refs_validating`.
    static let anyValidatingSQL = "SELECT EXISTS (SELECT 1 FROM refs WHERE zone_id = ? AND action = 2)"

    /// Notes in `temp.batch_deleted`, for the operation (first argument), the doomed records
    /// that something in the zone (second argument) holds a `VALIDATE` reference to.
    static let noteValidatedSQL = """
        INSERT OR REPLACE INTO temp.batch_deleted(name, operation)
        SELECT d.name, ? FROM temp.doomed d
        WHERE EXISTS (SELECT 1 FROM refs WHERE refs.zone_id = ? AND refs.target = d.name AND refs.action = 2)
        """

    /// The tombstones of the doomed records (first sequence, zone). CROSS JOIN keeps `doomed`
    /// the outer loop, each row one search of the records' key; left to itself, SQLite walked
    /// the zone's `records_by_type` index and probed `doomed` for every record of the zone.
    static let tombstonesSQL = """
        INSERT OR REPLACE INTO tombstones(zone_id, name, type, seq)
        SELECT r.zone_id, r.name, r.type, ? + d.pos - 1
        FROM temp.doomed d CROSS JOIN records r ON r.zone_id = ?2 AND r.name = d.name
        """

    /// The doomed rows of the zone (argument), each one search of the records' key.
    static let deleteRowsSQL = "DELETE FROM records WHERE zone_id = ? AND name IN (SELECT name FROM temp.doomed)"

    /// Deletes every doomed record: tombstones numbered `firstSequence`, `firstSequence + 1`, …
    /// in `doomed` order (root first), their references, then the rows.
    ///
    /// The numbering comes straight from `doomed.pos`: numbering by name instead (a window
    /// function) sorted the whole cascade and took twice as long as inserting the tombstones.
    ///
    /// - Returns: the names deleted besides `root`, sorted.
    static func deleteDoomed(root: String, zoneKey: Int64, firstSequence: Int64, in db: Database) throws -> [String] {
        try db.execute(sql: tombstonesSQL, arguments: [firstSequence, zoneKey])
        try db.execute(sql: "DELETE FROM refs WHERE zone_id = ? AND source IN (SELECT name FROM temp.doomed)", arguments: [zoneKey])
        try db.execute(sql: deleteRowsSQL, arguments: [zoneKey])
        return try String.fetchAll(db, sql: "SELECT name FROM temp.doomed WHERE name <> ? ORDER BY name", arguments: [root])
    }
}
