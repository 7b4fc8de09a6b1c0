import Foundation
import GRDB
@testable import RecordClient
import TestSupport
import Testing

/// The cache file's durability settings, which the client's API cannot show.
@Suite struct CacheDurabilityTests {
    /// A local edit, once `save` returns, survives a crash of the machine: the cache's writer
    /// syncs the log at every commit (not GRDB's default NORMAL for a pool in WAL mode).
    @Test func theCacheSyncsItsLogAtEveryCommit() async throws {
        try await withTemporaryDirectory { directory in
            let cache = try RecordCache(path: directory + "/cache.sqlite")
            let level = try await cache.writer.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
            #expect(level == 2, "synchronous is \(String(describing: level)), not FULL (2)")
        }
    }
}
