import Foundation
import GRDB
import RecordModel
import RecordSQL
import RecordStorage
import RecordStorageSQL

extension SQLiteTransaction {
    func collectCascade(from root: String, inZone zone: Int64) throws -> Int {
        try Cascade.collect(root: root, zoneKey: zone, in: db)
    }
}

/// SQLite's own cascade walk (docs/architecture.md, `Server/RecordStorageSQL`: its figure):
/// the generic walk's levels (``SQLStatement/cascadeLevel(inZone:after:through:in:)``) as
/// `INSERT OR IGNORE` into `doomed`, whose rowid numbers each new row on and whose `UNIQUE`
/// name drops a record already doomed, so a level needs neither the generic statement's two
/// window functions nor its anti-join.
enum Cascade {
    /// Fills `doomed` as ``SQLStorageTransaction/collectCascadeLevels(from:inZone:)`` does, in
    /// the same order: a level's rows are inserted in the order of the level before, then
    /// `refs_by_target` order (field key, then name), each numbered at its first insertion.
    ///
    /// - Returns: how many records are doomed, `root` included.
    static func collect(root: String, zoneKey: Int64, in db: Database) throws -> Int {
        try db.execute(sql: TemporaryTable.doomed.createStatement(in: .sqlite))
        try db.execute(sql: "DELETE FROM temp.doomed")
        try db.cachedStatement(sql: "INSERT INTO temp.doomed(pos, name) VALUES (1, ?)").execute(arguments: [root])
        let level = try db.cachedStatement(sql: levelSQL)
        var count: Int64 = 1
        var levelStart: Int64 = 0
        while true {
            try level.execute(arguments: [zoneKey, levelStart, count])
            // Rows are numbered in order (the largest `pos` plus one), so the level just added
            // is (count, count + changes].
            let added = Int64(db.changesCount)
            if added == 0 { return Int(count) }
            levelStart = count
            count += added
        }
    }

    /// One level of ``collect(root:zoneKey:in:)``: the zone, then the range of `pos` holding the
    /// level before (exclusive start, inclusive end). CROSS JOIN keeps that range the outer
    /// loop, each of its names one search of `refs_by_target`.
    static let levelSQL = """
        INSERT OR IGNORE INTO temp.doomed(name)
        SELECT refs.source FROM temp.doomed d CROSS JOIN refs
        ON refs.target = d.name AND refs.zone_id = ?1 AND refs.action = \(ReferenceActionCode.deleteSelf)
        WHERE d.pos > ?2 AND d.pos <= ?3
        """
}
