import GRDB
import RecordModel

/// Writing a record's ``SearchIndex`` to the search tables of a SQLite store: the client's cache,
/// and the server's SQLite engine in the migration that adds the tables (the server writes them
/// through `RecordStorageSQL`'s statements otherwise). Both hold the same two tables:
///
/// - `search_tokens(zone_id, name, field, token)`, keyed by record, and indexed by
///   `(zone_id, token, field)` for token searches;
/// - `search_locations(zone_id, name, field, cell, x, y, z)`, keyed by record, and indexed by
///   `(zone_id, field, cell, x, y, z)`, so that a `NEAR` reads only that index.
///
/// `field` holds the field's name.
package enum SearchRows {
    /// Stores the rows of `index` for the record `name`.
    package static func insert(_ index: SearchIndex, of name: String, inZone zone: Int64, in db: Database) throws {
        let tokens = index.tokens
        if !tokens.isEmpty {
            let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO search_tokens(zone_id, name, field, token) VALUES (?, ?, ?, ?)")
            for (field, token) in tokens {
                try insert.run(in: db) { binder in
                    binder.bind(zone); binder.bind(name); binder.bind(field); binder.bind(token)
                }
            }
        }
        let places = index.places
        if !places.isEmpty {
            let insert = try db.cachedStatement(sql: "INSERT OR REPLACE INTO search_locations(zone_id, name, field, cell, x, y, z) VALUES (?, ?, ?, ?, ?, ?, ?)")
            for (field, point) in places {
                try insert.run(in: db) { binder in
                    binder.bind(zone); binder.bind(name); binder.bind(field); binder.bind(point.cell)
                    binder.bind(point.x); binder.bind(point.y); binder.bind(point.z)
                }
            }
        }
    }

    /// Removes the rows of the record `name`.
    package static func remove(_ name: String, inZone zone: Int64, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM search_tokens WHERE zone_id = ? AND name = ?").run(in: db) { binder in
            binder.bind(zone); binder.bind(name)
        }
        try db.cachedStatement(sql: "DELETE FROM search_locations WHERE zone_id = ? AND name = ?").run(in: db) { binder in
            binder.bind(zone); binder.bind(name)
        }
    }

    /// Stores the location rows of every record of the table `records` (`zone_id`, `name`,
    /// `fields`): what a migration that adds the search tables does for the records already
    /// stored (words are indexed per record type from its first word search on).
    ///
    /// - Returns: the number of records read.
    @discardableResult
    package static func buildPlaces(in db: Database) throws -> Int {
        var count = 0
        let cursor = try Row.fetchCursor(db, sql: "SELECT zone_id, name, fields FROM records")
        while let row = try cursor.next() {
            let fields = try RecordRow.decodeFields(row[2])
            count += 1
            guard SearchIndex.indexes(fields.values, words: false) else { continue }
            try insert(SearchIndex(fields: fields, words: false), of: row[1], inZone: row[0], in: db)
        }
        return count
    }
}
