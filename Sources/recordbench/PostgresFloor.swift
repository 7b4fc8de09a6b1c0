import Foundation
import PostgresNIO

/// The floors on PostgreSQL: the same rows written or deleted by postgres-nio directly, with
/// prepared statements, in the same transaction sizes, into one table with the minimum indexes,
/// in the bench server's own schema (so the same server, settings and disk).
enum PostgresFloor {
    /// One row of the insert floor.
    struct InsertRow: PostgresPreparedStatement {
        static let sql = "INSERT INTO floor_rows VALUES ($1, $2, $3, $4, $5, $6, $7)"
        typealias Row = Int
        var name: String, parent: String, a: String, b: Int64, c: Double, d: String, e: Int64

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 7)
            bindings.append(name)
            bindings.append(parent)
            bindings.append(a)
            bindings.append(b)
            bindings.append(c)
            bindings.append(d)
            bindings.append(e)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Int { 0 }
    }

    /// ``Floor/insert(count:batch:in:)`` on PostgreSQL: rows per second.
    static func insert(count: Int, batch: Int, url: String) async throws -> Double {
        try await BenchStorage.withAdminConnection(url) { connection in
            let logger = BenchStorage.logger
            try await connection.query("DROP TABLE IF EXISTS floor_rows", logger: logger)
            try await connection.query("""
                CREATE TABLE floor_rows(name TEXT COLLATE "C" PRIMARY KEY, parent TEXT COLLATE "C", a TEXT, b BIGINT, c DOUBLE PRECISION, d TEXT, e BIGINT)
                """, logger: logger)
            try await connection.query("CREATE INDEX floor_rows_by_parent ON floor_rows(parent)", logger: logger)
            let start = ContinuousClock.now
            for first in stride(from: 0, to: count, by: batch) {
                try await connection.query("BEGIN", logger: logger)
                for i in first..<min(first + batch, count) {
                    _ = try await connection.execute(InsertRow(name: "w\(i)", parent: "a\(i % 1000)", a: "title \(i)", b: Int64(1800 + i % 200),
                                                               c: Double(i) / 3, d: "oil", e: Int64(i % 7)), logger: logger)
                }
                try await connection.query("COMMIT", logger: logger)
            }
            let elapsed = (ContinuousClock.now - start).seconds
            try await connection.query("DROP TABLE floor_rows", logger: logger)
            return Double(count) / elapsed
        }
    }

    /// ``Floor/nullify(count:in:)`` on PostgreSQL: the rows in a table with a primary key and an
    /// index on the parent, updated by one statement (the JSON edited as `jsonb`).
    static func nullify(count: Int, url: String) async throws -> Double {
        try await BenchStorage.withAdminConnection(url) { connection in
            let logger = BenchStorage.logger
            try await connection.query("DROP TABLE IF EXISTS floor_nullify", logger: logger)
            try await connection.query("CREATE TABLE floor_nullify(name TEXT COLLATE \"C\" PRIMARY KEY, parent TEXT COLLATE \"C\", fields TEXT NOT NULL, seq BIGINT NOT NULL)", logger: logger)
            try await connection.query("CREATE INDEX floor_nullify_by_parent ON floor_nullify(parent)", logger: logger)
            for first in stride(from: 0, to: count, by: 1000) {
                let range = first..<min(first + 1000, count)
                let names = range.map { "w\($0)" }, fields = range.map(Floor.storedFields), numbers = range.map { Int64($0) }
                try await connection.query("INSERT INTO floor_nullify SELECT n, 'a0', f, s FROM unnest(\(names), \(fields), \(numbers)) AS u(n, f, s)", logger: logger)
            }
            try await connection.query("VACUUM ANALYZE floor_nullify", logger: logger)
            let start = ContinuousClock.now
            try await connection.query("UPDATE floor_nullify SET fields = (fields::jsonb - 'artist')::text, parent = NULL, seq = seq + \(Int64(count)) WHERE parent = 'a0'", logger: logger)
            let elapsed = (ContinuousClock.now - start).seconds
            try await connection.query("DROP TABLE floor_nullify", logger: logger)
            return elapsed
        }
    }

    /// ``Floor/cascadeDelete(children:perChild:levelByLevel:in:)`` on PostgreSQL: the tree in a
    /// table with a primary key and an index on the parent, deleted with one recursive statement.
    static func cascadeDelete(children: Int, perChild: Int, url: String) async throws -> (seconds: Double, deleted: Int) {
        try await BenchStorage.withAdminConnection(url) { connection in
            let logger = BenchStorage.logger
            try await connection.query("DROP TABLE IF EXISTS floor_nodes", logger: logger)
            try await connection.query("CREATE TABLE floor_nodes(name TEXT COLLATE \"C\" PRIMARY KEY, parent TEXT COLLATE \"C\")", logger: logger)
            try await connection.query("CREATE INDEX floor_nodes_by_parent ON floor_nodes(parent)", logger: logger)
            try await connection.query("""
                INSERT INTO floor_nodes SELECT 'root', NULL
                UNION ALL SELECT 'c' || c, 'root' FROM generate_series(0, \(children - 1)) c
                UNION ALL SELECT 'g' || c || '_' || g, 'c' || c FROM generate_series(0, \(children - 1)) c, generate_series(0, \(perChild - 1)) g
                """, logger: logger)
            try await connection.query("VACUUM ANALYZE floor_nodes", logger: logger)
            let start = ContinuousClock.now
            let result = try await connection.query("""
                WITH RECURSIVE doomed(name) AS (
                    SELECT 'root'::text COLLATE "C" UNION SELECT n.name FROM floor_nodes n JOIN doomed ON n.parent = doomed.name)
                DELETE FROM floor_nodes WHERE name IN (SELECT name FROM doomed)
                """, logger: logger)
            _ = try await result.collect()
            let elapsed = (ContinuousClock.now - start).seconds
            let remaining = try await connection.query("SELECT count(*) FROM floor_nodes", logger: logger).collect().first?.decode(Int64.self) ?? -1
            try await connection.query("DROP TABLE floor_nodes", logger: logger)
            return (elapsed, 1 + children * (1 + perChild) - Int(remaining))
        }
    }
}
