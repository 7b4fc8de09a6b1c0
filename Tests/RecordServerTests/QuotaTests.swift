import Foundation
import GRDB
import Logging
import PostgresNIO
import RecordModel
import RecordPostgresEngine
import RecordRules
import RecordServer
import Synchronization
import TestSupport
import Testing

/// Per-user quotas on records and bytes (`QUOTA_EXCEEDED`, 413), and the usage they are checked
/// against: kept by each engine through every write path, counted for data stored before.
@Suite(.serialized) struct QuotaTests {
    static func ref(_ name: String, _ action: Reference.Action) -> FieldValue { .reference(Reference(recordName: name, action: action)) }

    /// A user's usage counted from the rows themselves, independently of what the engine keeps:
    /// their records (those they created, or participants created in their shared zones) and the
    /// UTF-8 bytes of their fields, plus the bytes of every blob their live records' asset refs hold.
    static func recount(_ server: TestServer, _ userRecordName: String) async throws -> Usage {
        if server.backend.description == "SQLite" {
            var configuration = Configuration()
            configuration.readonly = true
            let queue = try DatabaseQueue(path: (server.directory as NSString).appendingPathComponent("records.sqlite"), configuration: configuration)
            return try await queue.read { db in
                let row = try Row.fetchOne(db, sql: "SELECT COUNT(*), IFNULL(SUM(length(CAST(fields AS BLOB))), 0) FROM records WHERE COALESCE(charged_to, created_by) = ?",
                                           arguments: [userRecordName])!
                let assets = try Int64.fetchOne(db, sql: """
                    SELECT IFNULL(SUM(b.size), 0) FROM records r JOIN asset_refs a ON a.record_name = r.name AND a.zone_id = r.zone_id
                    JOIN asset_blobs b ON b.checksum = a.checksum WHERE COALESCE(r.charged_to, r.created_by) = ?
                    """, arguments: [userRecordName]) ?? 0
                return Usage(records: row[0], bytes: row[1] + assets)
            }
        }
        let location = try PostgresLocation(url: try await TestPostgres.databaseURL(for: server.directory))
        return try await PostgresEngine.withConnection(to: location, logger: Logger(label: "test")) { connection in
            let rows = try await connection.query("""
                SELECT (SELECT COUNT(*) FROM records WHERE COALESCE(charged_to, created_by) = \(userRecordName)),
                       (SELECT COALESCE(SUM(octet_length(fields)), 0)::bigint FROM records WHERE COALESCE(charged_to, created_by) = \(userRecordName)),
                       (SELECT COALESCE(SUM(b.size), 0)::bigint FROM records r JOIN asset_refs a ON a.record_name = r.name AND a.zone_id = r.zone_id
                        JOIN asset_blobs b ON b.checksum = a.checksum WHERE COALESCE(r.charged_to, r.created_by) = \(userRecordName))
                """, logger: Logger(label: "test")).collect()
            let (records, fields, assets) = try rows[0].decode((Int64, Int64, Int64).self)
            return Usage(records: records, bytes: fields + assets)
        }
    }

    /// Makes the store forget its usage as a release before quotas did: the usage table, its
    /// triggers and each record's asset bytes gone, and the migration that adds them unapplied,
    /// so the next open runs it over the data as it is.
    static func forgetUsage(_ directory: String) async throws {
        let queue = try DatabaseQueue(path: (directory as NSString).appendingPathComponent("records.sqlite"))
        try await queue.write { db in
            try db.execute(sql: """
                DROP TRIGGER records_usage_insert; DROP TRIGGER records_usage_update; DROP TRIGGER records_usage_delete;
                DROP TABLE user_usage; ALTER TABLE records DROP COLUMN asset_bytes;
                DELETE FROM grdb_migrations WHERE identifier = 'v13-user-usage';
                """)
        }
        try queue.close()
        guard TestPostgres.url != nil else { return }
        let location = try PostgresLocation(url: try await TestPostgres.databaseURL(for: directory))
        try await PostgresEngine.withConnection(to: location, logger: Logger(label: "test")) { connection in
            for statement in ["DROP TABLE user_usage", "DROP TRIGGER records_usage_inserted ON records", "DROP TRIGGER records_usage_updated ON records",
                              "DROP TRIGGER records_usage_deleted ON records", "DROP FUNCTION recordsync_usage_inserted", "DROP FUNCTION recordsync_usage_updated",
                              "DROP FUNCTION recordsync_usage_deleted", "ALTER TABLE records DROP COLUMN asset_bytes",
                              "DELETE FROM recordsync_migrations WHERE name = 'v9'"] {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: Logger(label: "test"))
            }
        }
    }

    /// Every write path moves the usage the engine keeps exactly as a count of the rows does:
    /// creates, updates (larger and smaller), assets bound and replaced, cascades in a private
    /// zone and across users in the public database, NULLIFY rewrites, a zone deleted. A store
    /// of the release before, reopened, counts the same usage in its migration.
    @Test func usageFollowsEveryWritePathAndIsCountedAtUpgrade() async throws {
        try await withTemporaryDirectory { directory in
            let kept = Mutex<[String: [String: Usage]]>([:])
            try await withServer(directory: directory) { server in
                let alice = try await server.user("alice")
                let bob = try await server.user("bob")
                func check(_ step: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
                    for (name, session) in [("alice", alice), ("bob", bob)] {
                        let kept = try await server.store.usage(ofUserNamed: name)
                        let counted = try await Self.recount(server, session.userRecordName)
                        #expect(kept == counted, "\(server.backend) \(step): kept \(kept), counted \(counted)", sourceLocation: sourceLocation)
                    }
                }
                try await check("empty")
                #expect(try await server.store.usage(ofUserNamed: "alice") == .zero)
                try await alice.createZones("Gallery")
                try await alice.save([
                    Record(recordName: "monet", recordType: "Artist", fields: ["name": .string("Claude Monet")]),
                    Record(recordName: "w1", recordType: "Artwork", fields: ["title": .string("Lilies"), "artist": Self.ref("monet", .deleteSelf)]),
                    Record(recordName: "w2", recordType: "Artwork", fields: ["title": .string("Rouen"), "by": Self.ref("monet", .nullify)]),
                    Record(recordName: "w3", recordType: "Artwork", fields: ["artist": Self.ref("w1", .deleteSelf), "notes": .string(String(repeating: "é", count: 500))]),
                ], zone: "Gallery")
                try await check("created")
                #expect(try await server.store.usage(ofUserNamed: "alice").records == 4)
                try await alice.save([Record(recordName: "w2", recordType: "Artwork", fields: ["title": .string(String(repeating: "x", count: 2000)), "by": Self.ref("monet", .nullify)])], zone: "Gallery")
                try await check("grown")
                try await alice.save([Record(recordName: "w2", recordType: "Artwork", fields: ["title": .string("R"), "by": Self.ref("monet", .nullify)])], zone: "Gallery")
                try await check("shrunk")

                // Assets: bound, the same blob in two fields, then replaced by a smaller one.
                let big = try await AssetTests.upload(AssetTests.bytes(30_000), alice)
                let saved = try await AssetTests.save(alice, "painting", fields: #""image":{"value":\#(try big.serializedString())}"#)
                #expect(saved["serverErrorCode"] == nil, "\(saved)")
                try await check("asset")
                let before = try await server.store.usage(ofUserNamed: "alice")
                let small = try await AssetTests.upload(AssetTests.bytes(1_000), alice)
                let replaced = try await AssetTests.save(alice, "painting", fields: #""image":{"value":\#(try small.serializedString())}"#)
                #expect(replaced["serverErrorCode"] == nil, "\(replaced)")
                try await check("asset replaced")
                #expect(try await server.store.usage(ofUserNamed: "alice").bytes < before.bytes - 28_000)

                // A cascade (monet → w1 → w3) with a NULLIFY rewrite of w2.
                #expect(try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "monet"))], zone: "Gallery").first?.error == nil)
                try await check("cascade")
                #expect(try await server.store.usage(ofUserNamed: "alice").records == 2)

                // Public records count against their creator; a cascade frees the creator's room.
                try await alice.save([Record(recordName: "topic", recordType: "Topic", fields: ["name": .string("Impressionism")])], database: "public")
                try await bob.save([
                    Record(recordName: "post1", recordType: "Post", fields: ["topic": Self.ref("topic", .deleteSelf), "text": .string("hello")]),
                    Record(recordName: "post2", recordType: "Post", fields: ["topic": Self.ref("topic", .deleteSelf), "text": .string("again")]),
                ], database: "public")
                try await check("public")
                #expect(try await server.store.usage(ofUserNamed: "bob").records == 2)
                #expect(try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "topic"))], database: "public").first?.error == nil)
                try await check("public cascade")
                #expect(try await server.store.usage(ofUserNamed: "bob") == .zero)

                // A zone deleted with its records.
                try await alice.createZones("Scratch")
                try await alice.save([Record(recordName: "s1", recordType: "Note", fields: ["text": .string("gone soon")])], zone: "Scratch")
                try await check("scratch")
                let deleted = try await alice.post("zones/modify", ModifyZonesRequest(operations: [.init(.delete, ZoneID(zoneName: "Scratch"))]))
                #expect(deleted.status == 200)
                try await check("zone deleted")
                let usage = try await server.store.usage(ofUserNamed: "alice")
                #expect(usage.records == 2 && usage.bytes > 1_000)
                kept.withLock { $0[server.backend.description] = ["alice": usage] }
            }
            try await Self.forgetUsage(directory)
            try await withServer(directory: directory) { server in
                let expected = kept.withLock { $0[server.backend.description] }
                let counted = try await server.store.usage(ofUserNamed: "alice")
                #expect(counted == expected?["alice"], "\(server.backend) counted at upgrade")
                let alice = try #require(try await server.store.users().first { $0.user.name == "alice" }).user
                let recounted = try await Self.recount(server, alice.userRecordName)
                #expect(recounted == counted)
            }
        }
    }

    static func note(_ name: String, _ text: String = "n") -> String {
        #"{"operationType":"forceReplace","record":{"recordName":"\#(name)","recordType":"Note","fields":{"text":{"value":"\#(text)"}}}}"#
    }

    static func modify(_ session: Session, _ operations: [String], atomic: Bool = true, database: String = "private") async throws -> Reply {
        try await session.post("records/modify", #"{"atomic":\#(atomic),"operations":[\#(operations.joined(separator: ","))]}"#, database: database)
    }

    /// Records: the fourth is refused (atomic batch or not) and nothing of the request is
    /// written; replacing, and a delete with a create, fit; a delete makes room; each user has
    /// room of their own. Bytes: an asset that would pass the quota is refused when saved.
    /// Under a lowered quota the user gets no upload URL and cannot grow, but can shrink and delete.
    @Test func aUserPastTheirQuotaIsRefusedAndNothingChanges() async throws {
        try await withTemporaryDirectory { directory in
            try await withServer(directory: directory, configure: { $0.limits.quota = Quota(records: 3, bytes: 20_000) }) { server in
                let alice = try await server.user("alice")
                let bob = try await server.user("bob")
                #expect(try await Self.modify(alice, [Self.note("n1"), Self.note("n2"), Self.note("n3")]).status == 200)
                for atomic in [true, false] {
                    let refused = try await Self.modify(alice, [Self.note("n1", "changed"), Self.note("n4")], atomic: atomic)
                    #expect(refused.status == 413 && refused.code == "QUOTA_EXCEEDED", "\(server.backend) \(refused.json)")
                    #expect(refused.reason.contains("alice") && refused.reason.contains("4 records") && refused.reason.contains("quota is 3"), "\(refused.reason)")
                }
                let found = try await alice.post("records/lookup", #"{"records":[{"recordName":"n1"},{"recordName":"n4"}]}"#)
                #expect(found.json["records"]?[0]?["fields"]?["text"]?["value"] == .string("n"), "the refused batch changed nothing")
                #expect(found.json["records"]?[1]?["serverErrorCode"] == .string("NOT_FOUND"))
                #expect(try await server.store.usage(ofUserNamed: "alice").records == 3)
                // The public database counts too.
                #expect(try await Self.modify(alice, [Self.note("p1")], database: "public").status == 413)
                // Replacing a record, and a delete with a create, leave three.
                #expect(try await Self.modify(alice, [Self.note("n1", "changed")]).status == 200)
                let swap = try await Self.modify(alice, [#"{"operationType":"forceDelete","record":{"recordName":"n3"}}"#, Self.note("n4")])
                #expect(swap.status == 200 && swap.json["records"]?[1]?["serverErrorCode"] == nil, "\(swap.json)")
                #expect(try await Self.modify(bob, [Self.note("b1"), Self.note("b2"), Self.note("b3")]).status == 200)
                #expect(try await Self.modify(alice, [#"{"operationType":"forceDelete","record":{"recordName":"n4"}}"#]).status == 200)

                // Bytes, assets included: 15,000 fit; another 15,000 do not.
                let first = try await AssetTests.upload(AssetTests.bytes(15_000), alice)
                #expect(try await AssetTests.save(alice, "a1", fields: #""image":{"value":\#(try first.serializedString())}"#)["serverErrorCode"] == nil)
                let second = try await AssetTests.upload(AssetTests.bytes(15_000), alice, field: "detail")
                let refused = try await alice.post("records/modify", #"{"operations":[{"operationType":"forceReplace","record":{"recordName":"a1","recordType":"Artwork","fields":{"image":{"value":\#(try first.serializedString())},"detail":{"value":\#(try second.serializedString())}}}}]}"#)
                #expect(refused.status == 413 && refused.code == "QUOTA_EXCEEDED" && refused.reason.contains("bytes"), "\(refused.json)")
            }
            // The same data under a lower quota: alice (over 10,000 bytes) gets no upload URL and
            // cannot grow, but can shrink a record and delete.
            try await withServer(directory: directory, configure: { $0.limits.quota = Quota(records: 3, bytes: 10_000) }) { server in
                let token = Credentials.newToken()
                try await _ = server.store.addToken(forUserNamed: "alice", tokenHash: Credentials.hash(token), tokenName: "again")
                let alice = Session(client: server.client, token: token, container: "iCloud.test.Gallery",
                                    userRecordName: try #require(try await server.store.users().first { $0.user.name == "alice" }).user.userRecordName)
                let upload = try await alice.post("assets/upload", AssetUploadRequest(zoneID: nil, tokens: [.init(recordType: "Artwork", fieldName: "image")]))
                #expect(upload.status == 413 && upload.code == "QUOTA_EXCEEDED", "\(server.backend) \(upload.json)")
                #expect(try await Self.modify(alice, [Self.note("n2", String(repeating: "x", count: 100))]).status == 413)
                #expect(try await Self.modify(alice, [Self.note("n2", "")]).status == 200)
                #expect(try await Self.modify(alice, [#"{"operationType":"forceDelete","record":{"recordName":"a1"}}"#]).status == 200)
                #expect(try await alice.post("assets/upload", AssetUploadRequest(zoneID: nil, tokens: [.init(recordType: "Artwork", fieldName: "image")])).status == 200)
            }
        }
    }

    /// `--quota-records` and `--quota-bytes` on the real executable, and `user usage`.
    @Test func theFlagsSetTheQuotaAndUserUsagePrintsIt() async throws {
        try await withTemporaryDirectory { directory in
            let data = (directory as NSString).appendingPathComponent("data")
            let added = try await ChildProcess.run("recordserver", ["user", "add", "alice", "--data", data])
            let token = added.output.trimmingCharacters(in: .whitespacesAndNewlines)
            let server = try await ServerProcess(data: data, arguments: ["--quota-records", "2", "--quota-bytes", "1000000"])
            defer { Task { _ = await server.stop(signal: SIGKILL) } }
            let body = { (name: String) in #"{"operations":[\#(Self.note(name))]}"# }
            #expect(try await server.post("records/modify", body("one"), token: token).status == 200)
            #expect(try await server.post("records/modify", body("two"), token: token).status == 200)
            let third = try await server.post("records/modify", body("three"), token: token)
            #expect(third.status == 413 && String(decoding: third.data, as: UTF8.self).contains("QUOTA_EXCEEDED"))
            _ = await server.stop(signal: SIGTERM)
            let usage = try await ChildProcess.run("recordserver", ["user", "usage", "alice", "--data", data])
            #expect(usage.status == 0 && usage.output.hasPrefix("2 records\t"), "\(usage.output)")
            let bad = try await ChildProcess.run("recordserver", ["--quota-records", "-1", "--data", data], mergeErrors: true)
            #expect(bad.status == 64 && bad.output.contains("--quota-records"), "\(bad.output)")
        }
    }
}
