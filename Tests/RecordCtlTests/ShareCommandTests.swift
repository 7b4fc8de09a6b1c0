import Foundation
import RecordClient
@testable import recordctl
import Testing

/// `recordctl share …`, in-process against a live server: Alice shares a record and a zone,
/// Bob accepts and works in his shared database, Alice removes him, and Bob leaves the other.
@Suite struct ShareCommandTests {
    /// The user record name behind connection `flags`.
    static func userRecordName(_ flags: [String], server: URL) async throws -> String {
        let token = try #require(flags.firstIndex(of: "--token").map { flags[$0 + 1] })
        return try await Container(serverURL: server, identifier: "iCloud.test.ctl", credentials: .bearerToken(token)).userRecordID().recordName
    }

    @Test func sharesAreCreatedAcceptedShownAndRevoked() async throws {
        try await withServer { server in
            let alice = try await server.flags(forNewUser: "alice")
            let bob = try await server.flags(forNewUser: "bob")
            let aliceName = try await Self.userRecordName(alice, server: server.url)
            let bobName = try await Self.userRecordName(bob, server: server.url)
            #expect(await recordctl(["zones", "create", "Lists", "Trip"] + alice).status == 0)
            let batch = FileManager.default.temporaryDirectory.appendingPathComponent("share-\(UUID().uuidString).ndjson")
            defer { try? FileManager.default.removeItem(at: batch) }
            try Data("""
                {"recordName": "groceries", "recordType": "List", "fields": {"title": "Groceries"}}
                {"recordName": "milk", "recordType": "Item", "fields": {"title": "Milk"}, "parent": "groceries"}
                {"recordName": "secret", "recordType": "Item", "fields": {"title": "Not shared"}}
                """.utf8).write(to: batch)
            let saved = await recordctl(["records", "modify", "--zone", "Lists", "--file", batch.path] + alice)
            #expect(saved.status == 0, "\(saved.errors)")

            // A record share inviting Bob; its URL (the short GUID without a base) is printed.
            let created = await recordctl(["share", "create", "--zone", "Lists", "--record", "groceries", "--name", "groceries-share",
                                           "--title", "Our groceries", "--invite", "\(bobName):read-write"] + alice)
            #expect(created.status == 0 && created.lines.count == 1, "\(created.errors)")
            let guid = try #require(created.lines.first)
            let badInvite = await recordctl(["share", "create", "--zone", "Trip", "--invite", "nobody"] + alice)
            #expect(badInvite.status == 64 && badInvite.errors.contains("--invite"), "\(badInvite.errors)")
            let zoneShare = await recordctl(["share", "create", "--zone", "Trip", "--public", "read-only", "--json"] + alice)
            #expect(zoneShare.status == 0 && zoneShare.output.contains(#""publicPermission":"READ_ONLY""#), "\(zoneShare.output) \(zoneShare.errors)")
            guard case .string(let tripGUID)? = try JSONValue.parse(Data(zoneShare.output.utf8))["shortGUID"] else {
                Issue.record("no shortGUID in \(zoneShare.output)")
                return
            }

            let list = await recordctl(["share", "list"] + alice)
            #expect(list.status == 0 && list.output.contains("groceries-share") && list.output.contains("cloudkit.zoneshare"), "\(list.output) \(list.errors)")
            let shown = await recordctl(["share", "show", "groceries-share", "--zone", "Lists"] + alice)
            #expect(shown.output.contains("title: Our groceries") && shown.output.contains(bobName) && shown.output.contains("INVITED"), "\(shown.output)")

            // Bob accepts both (the zone's through its public link) and reads in his shared database.
            let accepted = await recordctl(["share", "accept", guid, "https://example.com/share/\(tripGUID)", "nonexistent"] + bob)
            #expect(accepted.status == 2 && accepted.lines.count == 2 && accepted.errors.contains("nonexistent: NOT_FOUND"), "\(accepted.output) \(accepted.errors)")
            #expect(accepted.lines.first == "accepted Lists of \(aliceName) (record groceries), READ_WRITE", "\(accepted.output)")
            let shared = bob + ["--database", "shared"]
            let zones = await recordctl(["zones", "list"] + shared)
            #expect(zones.lines == ["Lists\t\(aliceName)", "Trip\t\(aliceName)"], "\(zones.output) \(zones.errors)")
            let read = await recordctl(["records", "get", "milk", "secret", "--zone", "Lists", "--owner", aliceName, "--json"] + shared)
            #expect(read.output.contains(#""recordName":"milk""#) && !read.output.contains("Not shared"), "\(read.output) \(read.errors)")
            // recordctl sync keeps a cache of the shared database, queried offline by owner and zone.
            let cache = FileManager.default.temporaryDirectory.appendingPathComponent("shared-\(UUID().uuidString).sqlite").path
            defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: cache + suffix) } }
            let synced = await recordctl(["sync", "--cache", cache] + shared)
            #expect(synced.status == 0 && synced.output.contains("in 2 zones"), "\(synced.output) \(synced.errors)")
            let offline = await recordctl(["query", "Item", "--cache", cache, "--zone", "Lists", "--owner", aliceName, "--json"] + shared)
            #expect(offline.lines.count == 1 && offline.output.contains(#""recordName":"milk""#), "\(offline.output) \(offline.errors)")
            let bobsList = await recordctl(["share", "list", "--json"] + shared)
            #expect(bobsList.lines.count == 2, "\(bobsList.output) \(bobsList.errors)")
            #expect(await recordctl(["subscriptions", "create", "all", "--database-subscription"] + shared).status == 0)
            #expect(await recordctl(["subscriptions", "list"] + shared).output.contains("all\tdatabase\tevery zone"))

            // Alice removes Bob from the record share; Bob leaves the zone share himself.
            let removed = await recordctl(["share", "remove-participant", "groceries-share", bobName, "--zone", "Lists"] + alice)
            #expect(removed.lines == ["removed 1 participant; 0 left"], "\(removed.output) \(removed.errors)")
            let left = await recordctl(["share", "delete", "cloudkit.zoneshare", "--zone", "Trip", "--owner", aliceName] + shared)
            #expect(left.lines == ["left cloudkit.zoneshare"], "\(left.output) \(left.errors)")
            #expect(await recordctl(["zones", "list"] + shared).lines.isEmpty)
            let resynced = await recordctl(["sync", "--cache", cache] + shared)
            #expect(resynced.lines.contains("zone Lists of \(aliceName) is gone (deleted, or no longer shared with you)"), "\(resynced.output) \(resynced.errors)")
            // share delete deletes shares alone, never the record it is given by mistake.
            let mistaken = await recordctl(["share", "delete", "groceries", "--zone", "Lists"] + alice)
            #expect(mistaken.status == 1 && mistaken.errors.contains("not a share"), "\(mistaken.errors)")
            #expect(await recordctl(["records", "get", "groceries", "--zone", "Lists"] + alice).status == 0)
            // The owner deletes a share.
            #expect(await recordctl(["share", "delete", "groceries-share", "--zone", "Lists"] + alice).lines == ["deleted groceries-share"])
            #expect(await recordctl(["share", "show", "groceries-share", "--zone", "Lists"] + alice).status == 1)
        }
    }
}
