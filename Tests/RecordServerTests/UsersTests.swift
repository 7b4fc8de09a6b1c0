import Foundation
import RecordModel
import RecordRules
import RecordServer
import Testing
import TestSupport

/// `users/current`, `users/caller`, `users/discover`, `users/lookup/*` and the discoverability
/// extension, in CloudKit's shapes, on every engine.
@Suite struct UsersTests {
    /// Creates a user with a profile and a session for them.
    static func user(_ server: TestServer, _ name: String, _ profile: UserProfile) async throws -> Session {
        let token = Credentials.newToken()
        let user = try await server.store.createUser(named: name, tokenHash: Credentials.hash(token), profile: profile)
        return Session(client: server.client, token: token, container: "iCloud.test.Gallery", userRecordName: user.userRecordName)
    }

    @Test func discoverableUsersAreFoundByEmailAndRecordNameInCloudKitsShapes() async throws {
        try await withServer { server in
            let alice = try await Self.user(server, "alice", UserProfile(email: " Alice@Example.COM ", givenName: "Alice", familyName: "Liddell", discoverable: true))
            let bob = try await Self.user(server, "bob", UserProfile(email: "bob@example.com", givenName: "Bob", discoverable: false))
            let carol = try await server.user("carol")

            // users/current and users/caller answer alike: the identity at the top level (as
            // CloudKit JS reads it), Apple's User dictionary's names, and users (Apple's archived
            // form of users/caller).
            let identity: JSONValue = .object([
                "userRecordName": .string(alice.userRecordName),
                "lookupInfo": .object(["emailAddress": .string("alice@example.com"), "userRecordName": .string(alice.userRecordName)]),
                "nameComponents": .object(["givenName": .string("Alice"), "familyName": .string("Liddell")]),
            ])
            guard case .object(var expected) = identity else { return }
            expected.merge(["firstName": .string("Alice"), "lastName": .string("Liddell"), "userName": .string("alice"), "users": .array([identity])]) { $1 }
            for endpoint in ["users/current", "users/caller"] {
                #expect(try await alice.post(endpoint, "", database: "public").json == .object(expected), "\(endpoint)")
            }
            let carolCurrent = try await carol.post("users/current", "", database: "public")
            let carolIdentity: JSONValue = .object(["userRecordName": .string(carol.userRecordName), "lookupInfo": .object(["userRecordName": .string(carol.userRecordName)])])
            #expect(carolCurrent.json == .object(["userRecordName": .string(carol.userRecordName), "lookupInfo": .object(["userRecordName": .string(carol.userRecordName)]),
                                                  "firstName": .null, "lastName": .null, "userName": .string("carol"), "users": .array([carolIdentity])]))

            // Carol finds Alice (discoverable) by email in any case and by record name, never Bob.
            let discovered = try await carol.post("users/discover", """
                {"lookupInfos": [{"emailAddress": "ALICE@example.com"}, {"emailAddress": "bob@example.com"}, {"userRecordName": "\(bob.userRecordName)"},
                                 {"phoneNumber": "+15555550100"}, {"emailAddress": "nobody@example.com"}, {"userRecordName": "\(alice.userRecordName)"}]}
                """, database: "public")
            #expect(discovered.status == 200, "\(discovered.json)")
            #expect(discovered.json == .object(["users": .array([.object([
                "userRecordName": .string(alice.userRecordName),
                "lookupInfo": .object(["emailAddress": .string("ALICE@example.com")]),
                "nameComponents": .object(["givenName": .string("Alice"), "familyName": .string("Liddell")]),
            ])])]))
            // GET asks for address-book contacts, which RecordSync has none of.
            let contacts = try await server.send(.get, "/database/1/iCloud.test.Gallery/development/public/users/discover", headers: [.authorization: "Bearer \(carol.token)"])
            #expect(contacts.json == .object(["users": .array([])]))

            let byEmail = try await carol.post("users/lookup/email", #"{"users": [{"emailAddress": "alice@example.com"}, {"emailAddress": "bob@example.com"}]}"#, database: "public")
            #expect(byEmail.json == .object(["users": .array([.object([
                "userRecordName": .string(alice.userRecordName), "firstName": .string("Alice"), "lastName": .string("Liddell"), "emailAddress": .string("alice@example.com"),
            ])])]))
            let byID = try await carol.post("users/lookup/id", #"{"users": [{"userRecordName": "\#(alice.userRecordName)"}, {"userRecordName": "\#(bob.userRecordName)"}]}"#, database: "public")
            #expect(byID.json == .object(["users": .array([.object([
                "userRecordName": .string(alice.userRecordName), "firstName": .string("Alice"), "lastName": .string("Liddell"),
            ])])]))
            #expect(try await carol.post("users/lookup/id", #"{"users": [{"emailAddress": "a@b"}]}"#, database: "public").code == "BAD_REQUEST")

            // Bob opts in; Alice opts out.
            #expect(try await bob.post("users/discoverability", #"{"discoverable": true}"#, database: "public").status == 200)
            #expect(try await alice.post("users/discoverability", #"{"discoverable": false}"#, database: "public").status == 200)
            let after = try await carol.post("users/lookup/email", #"{"users": [{"emailAddress": "alice@example.com"}, {"emailAddress": "bob@example.com"}]}"#, database: "public")
            #expect(after.json["users"]?.arrayValue?.compactMap { $0["userRecordName"]?.stringValue } == [bob.userRecordName])
            // A user always finds themselves.
            let own = try await alice.post("users/lookup/id", #"{"users": [{"userRecordName": "\#(alice.userRecordName)"}]}"#, database: "public")
            #expect(own.json["users"]?.arrayValue?.count == 1)
        }
    }

    @Test func emailsAreUniqueAndChecked() async throws {
        try await withServer { server in
            _ = try await Self.user(server, "alice", UserProfile(email: "alice@example.com", discoverable: true))
            await #expect { try await Self.user(server, "alicia", UserProfile(email: "ALICE@example.com")) } throws: { ($0 as? RecordSyncError)?.code == .exists }
            await #expect { try await Self.user(server, "bob", UserProfile(email: "not an email")) } throws: { ($0 as? RecordSyncError)?.code == .badRequest }
            _ = try await server.user("bob")
            await #expect { try await server.store.setProfile(ofUserNamed: "bob") { $0.email = "alice@example.com" } } throws: { ($0 as? RecordSyncError)?.code == .exists }
            let profile = try await server.store.setProfile(ofUserNamed: "bob") { $0.email = "Bob@Example.com"; $0.discoverable = true }
            #expect(profile == UserProfile(email: "bob@example.com", discoverable: true))
            await #expect { try await server.store.setProfile(ofUserNamed: "nobody") { $0.discoverable = true } } throws: { ($0 as? RecordSyncError)?.code == .notFound }
        }
    }

    /// `recordserver user list`, on SQLite and (when a server is given) PostgreSQL.
    @Test func theOperatorListsUsersWithTheirTokenCounts() async throws {
        try await withTemporaryDirectory { directory in
            var places = [["--data", "\(directory)/data"]]
            if TestPostgres.url != nil { places.append(["--database", try await TestPostgres.databaseURL(for: directory)]) }
            for place in places {
                #expect(try await ChildProcess.run("recordserver", ["user", "list"] + place).output == "", "\(place)")
                for name in ["zoe", "adam"] { #expect(try await ChildProcess.run("recordserver", ["user", "add", name] + place).status == 0) }
                #expect(try await ChildProcess.run("recordserver", ["user", "token", "zoe"] + place).status == 0)
                let listed = try await ChildProcess.run("recordserver", ["user", "list"] + place)
                #expect(listed.status == 0)
                let rows = listed.output.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
                #expect(rows.map { $0.first } == ["adam", "zoe"], "\(listed.output)")
                #expect(rows.map { $0.count > 3 ? $0[3] : "" } == ["1 token", "2 tokens"], "\(listed.output)")
                #expect(rows.allSatisfy { $0.count == 5 && $0[1].hasPrefix("_") && $0[2].hasSuffix("Z") && $0[4] == "operator" }, "\(listed.output)")
            }
        }
    }

    @Test func theOperatorSetsProfilesFromTheCommandLine() async throws {
        try await withTemporaryDirectory { directory in
            let data = "\(directory)/data"
            let added = try await ChildProcess.run("recordserver", ["user", "add", "dave", "--data", data, "--email", "dave@example.com", "--given-name", "Dave"])
            #expect(added.status == 0 && added.output.hasPrefix("rs_"), "\(added.output)")
            let shown = try await ChildProcess.run("recordserver", ["user", "profile", "dave", "--data", data])
            #expect(shown.output == "email: dave@example.com\ngiven name: Dave\nfamily name: -\ndiscoverable: yes\n", "\(shown.output)")
            let changed = try await ChildProcess.run("recordserver", ["user", "profile", "dave", "--data", data, "--discoverable", "no", "--email", "", "--family-name", "Bowman"])
            #expect(changed.output == "email: -\ngiven name: Dave\nfamily name: Bowman\ndiscoverable: no\n", "\(changed.output)")
            let hidden = try await ChildProcess.run("recordserver", ["user", "add", "erin", "--data", data, "--email", "erin@example.com", "--hidden"])
            #expect(hidden.status == 0)
            let erin = try await ChildProcess.run("recordserver", ["user", "profile", "erin", "--data", data])
            #expect(erin.output.hasSuffix("discoverable: no\n"), "\(erin.output)")
            let clash = try await ChildProcess.run("recordserver", ["user", "add", "frank", "--data", data, "--email", "ERIN@example.com"], mergeErrors: true)
            #expect(clash.status != 0 && clash.output.contains("erin@example.com"), "\(clash.output)")
        }
    }
}
