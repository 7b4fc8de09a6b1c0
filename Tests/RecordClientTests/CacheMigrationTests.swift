import Foundation
import GRDB
@testable import RecordClient
import TestSupport
import Testing

/// A cache file written by an earlier release opens and serves unchanged.
@Suite struct CacheMigrationTests {
    /// A cache as releases before shared zones wrote it (migrations up to `v3-parent`): its
    /// zones, records, tokens and queued edits are there after `v4-shared`, and zone IDs naming
    /// an owner still find its zones (a cache of one's own databases ignores owners).
    @Test func aCacheBeforeSharedZonesKeepsEverything() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/old.sqlite"
            do {
                let queue = try DatabaseQueue(path: path)
                try RecordCache.migrator.migrate(queue, upTo: "v3-parent")
                try await queue.write { db in
                    try db.execute(sql: "INSERT INTO zones(id, name, token) VALUES (7, 'Gallery', 'TOKEN-7')")
                    try db.execute(sql: """
                        INSERT INTO records(zone_id, name, type, tag, fields, created_at, created_by, modified_at, modified_by, parent)
                        VALUES (7, 'monet', 'Artist', 'tag1', '{"name":{"value":"Claude Monet","type":"STRING"}}', 1, '_a', 2, '_a', NULL)
                        """)
                    try db.execute(sql: "INSERT INTO outbox(zone_id, name, kind, changed_keys) VALUES (7, 'monet', 'save', '[\"name\"]')")
                    try db.execute(sql: "INSERT INTO state(key, value) VALUES ('databaseToken', 'DB-TOKEN')")
                }
            }
            let cache = try RecordCache(path: path)
            #expect(!cache.sharedDatabase)
            let gallery = ZoneID(zoneName: "Gallery")
            #expect(try await cache.zoneIDs() == [gallery])
            #expect(try await cache.changeToken(for: gallery)?.rawValue == "TOKEN-7")
            #expect(try await cache.databaseToken()?.rawValue == "DB-TOKEN")
            #expect(try await cache.pendingChangeCount() == 1)
            #expect(try await cache.record(for: Record.ID(recordName: "monet", zoneID: gallery))?["name"] == .string("Claude Monet"))
            let named = ZoneID(zoneName: "Gallery", ownerRecordName: "_a")
            #expect(try await cache.record(for: Record.ID(recordName: "monet", zoneID: named))?.recordChangeTag == "tag1")
            #expect(try await cache.pendingChanges().map(\.recordID.recordName) == ["monet"])
        }
    }
}
