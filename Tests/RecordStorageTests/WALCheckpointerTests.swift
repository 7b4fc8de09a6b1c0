import Foundation
import GRDB
@testable import RecordSQL
import TestSupport
import Testing

/// `WALCheckpointer`: checkpoints leave the commit path, and the log stays bounded.
@Suite struct WALCheckpointerTests {
    /// A pool whose writer has `checkpointer` installed (4 KiB pages), with an empty table `t`.
    static func pool(at path: String, _ checkpointer: WALCheckpointer) async throws -> DatabasePool {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            checkpointer.install(in: db)
        }
        let pool = try DatabasePool(path: path, configuration: configuration)
        try await pool.write { try $0.execute(sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, payload TEXT)") }
        return pool
    }

    /// Writes `transactions` transactions of 40 rows of 400 bytes (a few pages each).
    static func write(_ transactions: Int, to pool: DatabasePool, from first: Int = 0) async throws {
        for t in first..<first + transactions {
            try await pool.write { db in
                for i in 0..<40 {
                    try db.execute(sql: "INSERT INTO t(id, payload) VALUES (?, ?)", arguments: [t * 40 + i, String(repeating: "x", count: 400)])
                }
            }
        }
    }

    /// Waits (up to 30 s) for `condition`.
    static func eventually(_ condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }

    static func walPages(_ path: String) -> Int {
        let size = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        return size / 4096
    }

    @Test func commitsPastTheThresholdCheckpointInTheBackground() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/db.sqlite"
            let checkpointer = WALCheckpointer(path: path, threshold: 16, limit: 1_000_000)
            let pool = try await Self.pool(at: path, checkpointer)
            try await Self.write(200, to: pool)
            // Below the limit only the background queue checkpoints, and what it copies reaches
            // the database file (a few pages before any checkpoint: the schema).
            #expect(try await Self.eventually { checkpointer.checkpointCounts.background > 0 })
            #expect(checkpointer.checkpointCounts.inline == 0)
            // A checkpoint is asked for once 16 pages were written since the last one: about
            // 1,000 pages make at most about 60, where asking after every commit past the
            // threshold ran one per commit (close to 200).
            #expect(checkpointer.checkpointCounts.background < 100, "\(checkpointer.checkpointCounts.background) checkpoints")
            let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            #expect(size / 4096 > 8, "database file: \(size) bytes")
            let count = try await pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM t") }
            #expect(count == 200 * 40)
        }
    }

    /// A checkpoint is asked for once `threshold` pages were written since the last one, one
    /// at a time, and a log that started over is noticed at the first shorter commit, even if
    /// the next commit takes it past where the last checkpoint stopped.
    @Test func theScheduleCountsPagesSinceTheLastCheckpoint() {
        var schedule = CheckpointSchedule(threshold: 4000, limit: 16000)
        func commit(_ pages: Int32) -> Bool { schedule.committed(pages: pages) }
        #expect(!commit(3999))
        #expect(commit(4200))
        #expect(!commit(4500))  // one at a time
        schedule.checkpointed(logPages: 4500)
        #expect(!commit(8000))  // 3,500 since
        #expect(commit(8600))
        schedule.checkpointed(logPages: 8600)
        // The log starts over; a commit leaves it at 300 pages, the next past 8,600 again.
        #expect(!commit(300))
        #expect(commit(8700))
        schedule.checkpointed(logPages: nil)  // failed: nothing known to be copied
        #expect(commit(8800))
        // At the limit the committing connection checkpoints itself.
        schedule.checkpointed(logPages: 8800)
        #expect(!commit(16000))
        // A checkpoint reports a log that has started over (and had a commit) since it read it:
        // the next commit, shorter than what it reported, counts from the new log's start.
        schedule = CheckpointSchedule(threshold: 4000, limit: 16000)
        #expect(commit(4200))
        #expect(!commit(300))
        schedule.checkpointed(logPages: 4200)
        #expect(!commit(600))
        #expect(commit(4100))
    }

    @Test func theLogStaysBoundedWhenCheckpointsFallBehind() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/db.sqlite"
            // A background checkpoint is never asked for (threshold = limit): every commit that
            // reaches the limit checkpoints itself, as SQLite's own hook does.
            let checkpointer = WALCheckpointer(path: path, threshold: 64, limit: 64)
            let pool = try await Self.pool(at: path, checkpointer)
            try await Self.write(300, to: pool)
            #expect(checkpointer.checkpointCounts.inline > 0)
            #expect(checkpointer.checkpointCounts.background == 0)
            // 300 transactions of several pages each would be well over 1,000 pages unchecked.
            #expect(Self.walPages(path) < 300, "log: \(Self.walPages(path)) pages")
        }
    }

    @Test func everyCommittedRowSurvivesReopening() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/db.sqlite"
            do {
                let checkpointer = WALCheckpointer(path: path, threshold: 8, limit: 32)
                let pool = try await Self.pool(at: path, checkpointer)
                try await Self.write(250, to: pool)
            }
            // The last connection to close (the checkpointer's, perhaps a moment later on its
            // queue) checkpoints the log and removes it, holding the file meanwhile: wait for it,
            // as every connection RecordSync opens does.
            var configuration = Configuration()
            configuration.busyMode = .timeout(30)
            let reopened = try DatabaseQueue(path: path, configuration: configuration)
            let count = try await reopened.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM t") }
            #expect(count == 250 * 40)
            let check = try await reopened.read { try String.fetchOne($0, sql: "PRAGMA integrity_check") }
            #expect(check == "ok")
        }
    }
}
