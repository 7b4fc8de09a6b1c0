import Foundation
import GRDB

/// The floors: the same rows written or read by plain SQLite with prepared statements, one
/// table with a primary key and the minimum indexes the question needs, in the same WAL and
/// `synchronous = FULL` settings as the server and the client cache.
enum Floor {
    /// A floor measured just before and just after its figure, so that the machine's speed
    /// drifting while the figure is measured (this VM's moves by a third from minute to
    /// minute) weighs on the floor as it does on the figure: the mean of the two times.
    static func bracketed(seconds before: Double, _ after: Double) -> Double {
        (before + after) / 2
    }

    /// ``bracketed(seconds:_:)`` for rates: the rate of the mean time.
    static func bracketed(rate before: Double, _ after: Double) -> Double {
        2 / (1 / before + 1 / after)
    }

    /// The insert floor of the server's engine: SQLite's, or PostgreSQL's in the server's schema.
    static func serverInsert(count: Int, batch: Int, _ server: BenchServer) async throws -> Double {
        if let url = server.storage.databaseURL { return try await PostgresFloor.insert(count: count, batch: batch, url: url) }
        return try insert(count: count, batch: batch, in: server.directory)
    }

    /// The cascade floor of the server's engine (PostgreSQL has the recursive delete only: its
    /// level walk is measured as the recursive one).
    static func serverCascadeDelete(children: Int, perChild: Int, levelByLevel: Bool = false, _ server: BenchServer) async throws -> (seconds: Double, deleted: Int) {
        if let url = server.storage.databaseURL { return try await PostgresFloor.cascadeDelete(children: children, perChild: perChild, url: url) }
        return try cascadeDelete(children: children, perChild: perChild, levelByLevel: levelByLevel, in: server.directory)
    }

    /// The `NULLIFY` floor of the server's engine.
    static func serverNullify(count: Int, _ server: BenchServer) async throws -> Double {
        if let url = server.storage.databaseURL { return try await PostgresFloor.nullify(count: count, url: url) }
        return try nullify(count: count, in: server.directory)
    }

    /// `count` rows shaped like the server's (name, parent, fields as stored JSON text, feed
    /// number), all pointing at one parent, in a table with a primary key and an index on the
    /// parent; then one set-based UPDATE removes the reference from each row's JSON and moves
    /// its feed number on.
    /// - Returns: the seconds the update took.
    static func nullify(count: Int, in directory: String) throws -> Double {
        let queue = try database(in: directory, name: "floor-nullify-\(UUID().uuidString).sqlite")
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE rows(name TEXT PRIMARY KEY, parent TEXT, fields TEXT NOT NULL, seq INTEGER NOT NULL) WITHOUT ROWID")
            try db.execute(sql: "CREATE INDEX rows_by_parent ON rows(parent)")
            let statement = try db.cachedStatement(sql: "INSERT INTO rows VALUES (?, 'a0', ?, ?)")
            for i in 0..<count {
                try statement.execute(arguments: ["w\(i)", Self.storedFields(i), i])
            }
        }
        let start = ContinuousClock.now
        try queue.write { db in
            try db.execute(sql: "UPDATE rows SET fields = json_remove(fields, '$.artist'), parent = NULL, seq = seq + ? WHERE parent = 'a0'", arguments: [count])
        }
        return (ContinuousClock.now - start).seconds
    }

    /// An Artwork's fields as the server stores them (keys sorted, the `NULLIFY` reference as it travels).
    static func storedFields(_ i: Int) -> String {
        #"{"artist":{"type":"REFERENCE","value":{"action":"NONE","recordName":"a0","recordSyncAction":"NULLIFY"}},"medium":{"type":"STRING","value":"oil"},"#
            + #""price":{"type":"DOUBLE","value":\#(Double(i) / 3)},"rank":{"type":"INT64","value":\#(i % 7)},"title":{"type":"STRING","value":"title \#(i)"},"#
            + #""year":{"type":"INT64","value":\#(1800 + i % 200)}}"#
    }

    /// Opens a fresh floor database.
    static func database(in directory: String, name: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        let queue = try DatabaseQueue(path: (directory as NSString).appendingPathComponent(name), configuration: configuration)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
        return queue
    }

    /// Inserts `count` Artwork-shaped rows (name, parent, five fields) with one prepared
    /// statement in transactions of `batch` rows, into a table with a primary key and an index
    /// on the parent (the reference).
    /// - Returns: rows per second.
    static func insert(count: Int, batch: Int, in directory: String) throws -> Double {
        let queue = try database(in: directory, name: "floor-insert-\(UUID().uuidString).sqlite")
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE rows(name TEXT PRIMARY KEY, parent TEXT, a TEXT, b INTEGER, c REAL, d TEXT, e INTEGER) WITHOUT ROWID")
            try db.execute(sql: "CREATE INDEX rows_by_parent ON rows(parent)")
        }
        let start = ContinuousClock.now
        for first in stride(from: 0, to: count, by: batch) {
            try queue.write { db in
                let statement = try db.cachedStatement(sql: "INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?, ?)")
                for i in first..<min(first + batch, count) {
                    try statement.execute(arguments: ["w\(i)", "a\(i % 1000)", "title \(i)", 1800 + i % 200, Double(i) / 3, "oil", i % 7])
                }
            }
        }
        return Double(count) / (ContinuousClock.now - start).seconds
    }

    /// Builds the cascade tree (a root, `children` children, `perChild` grandchildren each)
    /// in a table with a primary key and an index on the parent, then deletes the root and its
    /// descendants with one set-based statement (a recursive query over the parent index): the
    /// floor the issue names. With `levelByLevel`, the descendants are first collected the way
    /// the server collects a cascade (one statement a level into a temporary table with a
    /// unique name, `Cascade.collect`), then deleted with one statement: a stronger floor,
    /// reported beside the other.
    /// - Returns: the seconds the delete took, and how many rows it removed.
    static func cascadeDelete(children: Int, perChild: Int, levelByLevel: Bool = false, in directory: String) throws -> (seconds: Double, deleted: Int) {
        let queue = try database(in: directory, name: "floor-cascade-\(UUID().uuidString).sqlite")
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE nodes(name TEXT PRIMARY KEY, parent TEXT) WITHOUT ROWID")
            try db.execute(sql: "CREATE INDEX nodes_by_parent ON nodes(parent)")
            let statement = try db.cachedStatement(sql: "INSERT INTO nodes VALUES (?, ?)")
            try statement.execute(arguments: ["root", nil])
            for child in 0..<children {
                try statement.execute(arguments: ["c\(child)", "root"])
                for grandchild in 0..<perChild {
                    try statement.execute(arguments: ["g\(child)_\(grandchild)", "c\(child)"])
                }
            }
        }
        // The server keeps its temporary tables in memory; so does the level walk's.
        if levelByLevel { try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA temp_store = MEMORY") } }
        let start = ContinuousClock.now
        let deleted = try queue.write { db in
            guard levelByLevel else {
                try db.execute(sql: """
                    WITH RECURSIVE doomed(name) AS (
                        SELECT 'root' UNION SELECT nodes.name FROM nodes JOIN doomed ON nodes.parent = doomed.name)
                    DELETE FROM nodes WHERE name IN (SELECT name FROM doomed)
                    """)
                return db.changesCount
            }
            try db.execute(sql: "CREATE TEMP TABLE doomed(pos INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")
            try db.execute(sql: "INSERT INTO temp.doomed(pos, name) VALUES (1, 'root')")
            let level = try db.makeStatement(sql: """
                INSERT OR IGNORE INTO temp.doomed(name)
                SELECT nodes.name FROM temp.doomed d CROSS JOIN nodes ON nodes.parent = d.name WHERE d.pos > ? AND d.pos <= ?
                """)
            var count = 1, levelStart = 0
            while true {
                try level.execute(arguments: [levelStart, count])
                if db.changesCount == 0 { break }
                levelStart = count
                count += db.changesCount
            }
            try db.execute(sql: "DELETE FROM nodes WHERE name IN (SELECT name FROM temp.doomed)")
            let deleted = db.changesCount
            try db.execute(sql: "DROP TABLE temp.doomed")
            return deleted
        }
        return ((ContinuousClock.now - start).seconds, deleted)
    }
}
