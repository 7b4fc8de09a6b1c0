import Foundation
import GRDB

/// The floors: the same rows written or read by plain SQLite with prepared statements, one
/// table with a primary key and the minimum indexes the question needs.
enum Floor {
    /// Opens a fresh floor database (WAL, synchronous FULL, like the server).
    static func database(in directory: String, name: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        let queue = try DatabaseQueue(path: (directory as NSString).appendingPathComponent(name), configuration: configuration)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
        return queue
    }

    /// Inserts `count` rows (name, parent, five fields) in transactions of `batch` rows.
    /// - Returns: rows per second.
    static func insert(count: Int, batch: Int, into queue: DatabaseQueue) throws -> Double {
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS rows(name TEXT PRIMARY KEY, parent TEXT, a TEXT, b INTEGER, c REAL, d TEXT, e INTEGER) WITHOUT ROWID")
            try db.execute(sql: "CREATE INDEX IF NOT EXISTS rows_by_parent ON rows(parent)")
        }
        let start = Date()
        for first in stride(from: 0, to: count, by: batch) {
            try queue.write { db in
                let statement = try db.cachedStatement(sql: "INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?, ?)")
                for i in first..<min(first + batch, count) {
                    try statement.execute(arguments: ["r\(i)", "p\(i % 1000)", "title \(i)", i, Double(i) / 3, "x", i % 7])
                }
            }
        }
        return Double(count) / Date().timeIntervalSince(start)
    }
}
