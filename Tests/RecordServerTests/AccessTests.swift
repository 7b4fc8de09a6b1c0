import Foundation
import GRDB
import Hummingbird
import RecordRules
import RecordServer
import RecordModel
import Testing

/// Item 8: authentication, private isolation, public-database ownership.
@Suite struct AccessTests {
    static let base = "/database/1/iCloud.test.Gallery/development/private"

    @Test func requestsWithoutCredentialsNeedAuthentication() async throws {
        try await withServer { server in
            let reply = try await server.send(.get, "\(Self.base)/zones/list")
            #expect(reply.status == 421)
            #expect(reply.code == "AUTHENTICATION_REQUIRED")
        }
    }

    @Test func wrongCredentialsFail() async throws {
        try await withServer { server in
            _ = try await server.user("alice")
            for headers: HTTPFields in [[.authorization: "Bearer not-a-token"], [.authorization: "Basic abc"], [.authorization: "Bearer "]] {
                let reply = try await server.send(.get, "\(Self.base)/zones/list", headers: headers)
                #expect(reply.status == 401)
                #expect(reply.code == "AUTHENTICATION_FAILED")
            }
            let query = try await server.send(.get, "\(Self.base)/zones/list?ckWebAuthToken=wrong")
            #expect(query.code == "AUTHENTICATION_FAILED")
        }
    }

    /// Found tokens are remembered for a while; refused ones are not: a token that failed works
    /// as soon as it is issued.
    @Test func aTokenRefusedOnceWorksOnceIssued() async throws {
        try await withServer { server in
            let token = Credentials.newToken()
            let before = try await server.send(.get, "\(Self.base)/users/current", headers: [.authorization: "Bearer \(token)"])
            #expect(before.code == "AUTHENTICATION_FAILED")
            _ = try await server.store.createUser(named: "late", tokenHash: Credentials.hash(token))
            for _ in 0..<2 {
                let after = try await server.send(.get, "\(Self.base)/users/current", headers: [.authorization: "Bearer \(token)"])
                #expect(after.status == 200, "\(after.code ?? "-"): \(after.reason)")
                #expect(try after.decode(UserIdentity.self).userName == "late")
            }
        }
    }

    @Test func cloudKitQueryParametersAuthenticate() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let web = try await server.send(.get, "\(Self.base)/users/current?ckAPIToken=app-key&ckWebAuthToken=\(alice.token)")
            #expect(web.status == 200)
            #expect(try web.decode(UserIdentity.self).userRecordName == alice.userRecordName)
            let api = try await server.send(.post, "\(Self.base)/users/current?ckAPIToken=\(alice.token)")
            #expect(try api.decode(UserIdentity.self).userName == "alice")
        }
    }

    @Test func privateDatabasesAreTheirOwnersAlone() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            try await alice.createZones("Secret")
            try await alice.save([.artist("mine")])
            #expect(try await bob.queryNames(Query(recordType: "Artist")).isEmpty)
            let lookup = try await bob.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "mine")]))
            #expect(try lookup.decode(RecordsResponse.self).records.first?.error?.code == .notFound)
            #expect(try await bob.post("records/changes", RecordChangesRequest(zoneID: ZoneID(zoneName: "Secret"))).code == "ZONE_NOT_FOUND")
            // Naming alice as the zone's owner does not help.
            let named = try await bob.post("records/changes", RecordChangesRequest(zoneID: ZoneID(zoneName: "Secret", ownerRecordName: alice.userRecordName)))
            #expect(named.code == "ZONE_NOT_FOUND")
            #expect(try await bob.allChanges().records.isEmpty)
        }
    }

    @Test func inThePublicDatabaseOnlyTheCreatorChangesARecordButCascadesReachEveryone() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let artist = try await alice.save([.artist("public-artist")], database: "public")[0]
            // Bob reads it and creates his own record pointing at it.
            #expect(try await bob.queryNames(Query(recordType: "Artist"), database: "public") == ["public-artist"])
            try await bob.save([.artwork("bobs-work", by: "public-artist")], database: "public")
            // Bob cannot change or delete Alice's record.
            var edit = artist
            edit["name"] = .string("vandalised")
            #expect(try await bob.modify([RecordOperation(.update, RecordPayload(edit))], database: "public").first?.error?.code == .accessDenied)
            #expect(try await bob.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "public-artist"))], database: "public").first?.error?.code == .accessDenied)
            // Alice deleting her artist cascades to Bob's artwork.
            let results = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "public-artist"))], database: "public")
            guard case .success(_, let cascaded)? = results.first else { Issue.record("delete failed"); return }
            #expect(cascaded == ["bobs-work"])
            // Zones cannot be made in the public database.
            #expect(try await alice.post("zones/modify", ModifyZonesRequest(operations: [.init(.create, ZoneID(zoneName: "Z"))]), database: "public").code == "BAD_REQUEST")
        }
    }

    /// A user no one shared a zone with has an empty shared database (SharingTests has the rest).
    @Test func aSharedDatabaseHoldsOnlyZonesSharedWithItsUser() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("Mine")
            let reply = try await alice.post("zones/list", "", database: "shared")
            #expect(reply.status == 200 && reply.json["zones"] == .array([]), "\(reply.json)")
            let feed = try await alice.post("changes/database", "{}", database: "shared")
            #expect(feed.json["zones"] == .array([]) && feed.json["syncToken"]?.stringValue != nil, "\(feed.json)")
            let own = try await alice.post("records/lookup", #"{"zoneID":{"zoneName":"Mine","ownerRecordName":"\#(alice.userRecordName)"},"records":[{"recordName":"x"}]}"#, database: "shared")
            #expect(own.code == "ZONE_NOT_FOUND", "\(own.json)")
        }
    }

    @Test func tokensAreStoredHashed() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            guard server.backend.description == "SQLite" else { return }
            let queue = try DatabaseQueue(path: (server.directory as NSString).appendingPathComponent("records.sqlite"))
            let stored = try await queue.read { db in try Data.fetchAll(db, sql: "SELECT hash FROM tokens") }
            #expect(stored == [Credentials.hash(alice.token)])
            let file = try Data(contentsOf: URL(fileURLWithPath: (server.directory as NSString).appendingPathComponent("records.sqlite")))
            #expect(file.range(of: Data(alice.token.utf8)) == nil)
        }
    }

    @Test func usersAreUniqueByName() async throws {
        try await withServer { server in
            _ = try await server.user("alice")
            await #expect { try await server.user("alice") } throws: { ($0 as? RecordSyncError)?.code == .exists }
            let token = Credentials.newToken()
            #expect(try await server.store.addToken(forUserNamed: "alice", tokenHash: Credentials.hash(token)) == "token-2")
            #expect(try await server.store.user(forTokenHash: Credentials.hash(token))?.name == "alice")
        }
    }
}
