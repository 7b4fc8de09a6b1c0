/// The records of record shares' hierarchies (docs/protocol.md, "Sharing"): each root, and
/// every record whose `parent` leads to it, found from the `records_by_parent` index. Written
/// once for the queries a participant's reads compile and for the store's own reads.
public enum ShareHierarchy {
    /// A `SELECT` of the names of the records below (and including) `rootCount` roots of zone
    /// `zone` (`?` placeholders: the zone, the roots, then the zone again; ``arguments(zone:roots:)``).
    /// `UNION` (not `UNION ALL`) visits a name once, so a stored cycle of parents ends.
    public static func belowSQL(rootCount: Int) -> String {
        let roots = Array(repeating: "?", count: max(rootCount, 1)).joined(separator: ", ")
        return """
            WITH RECURSIVE shared_records(name) AS (
                SELECT name FROM records WHERE zone_id = ? AND name IN (\(roots))
                UNION SELECT c.name FROM records c JOIN shared_records m ON c.parent = m.name WHERE c.zone_id = ?)
            SELECT name FROM shared_records
            """
    }

    /// The arguments of ``belowSQL(rootCount:)``.
    public static func arguments(zone: Int64, roots: [String]) -> [SQLValue] {
        [.integer(zone)] + (roots.isEmpty ? [.null] : roots.map { .text($0) }) + [.integer(zone)]
    }

    /// A `SELECT` of record `?` of zone `?` and its ancestors, nearest first, each with its
    /// depth (0: the record): stops after `limit` steps (a stored cycle of parents repeats).
    public static func aboveSQL(limit: Int) -> String {
        """
        WITH RECURSIVE ancestors(name, parent, depth) AS (
            SELECT name, parent, 0 FROM records WHERE zone_id = ? AND name = ?
            UNION ALL SELECT r.name, r.parent, a.depth + 1 FROM records r JOIN ancestors a ON r.name = a.parent
            WHERE r.zone_id = ? AND a.depth < \(limit))
        SELECT name FROM ancestors ORDER BY depth
        """
    }
}
