import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Hummingbird
import RecordModel
import RecordRules
import RecordServer
import TestSupport
import Testing

/// Named operators (docs/deploying.md, "Operators"): the operators' API and acting as users,
/// each scope enforced, every action in the audit log with the operator's name.
@Suite struct OperatorTests {
    static let container = "iCloud.test.Gallery"

    @Test func aUsersTokenIsRefusedWhereAnOperatorsIsNeeded() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let asUser = try await server.send(.get, "/admin/1/users", headers: [.authorization: "Bearer \(alice.token)"])
            #expect(asUser.status == 403 && asUser.code == "ACCESS_DENIED", "\(asUser.reason)")
            #expect(try await server.send(.get, "/admin/1/users").code == "AUTHENTICATION_REQUIRED")
            let forged = try await server.send(.get, "/admin/1/users", headers: [.authorization: "Bearer rsop_\(String(repeating: "A", count: 43))"])
            #expect(forged.code == "AUTHENTICATION_FAILED")
            // An operator on the database API names the user it acts as.
            let secret = try await Self.makeOperator(server, "ops", [.all])
            let unnamed = try await server.send(.post, "/database/1/\(Self.container)/development/private/zones/list",
                                                headers: [.authorization: "Bearer \(secret)"], body: "{}")
            #expect(unnamed.code == "BAD_REQUEST" && unnamed.reason.contains("X-RecordSync-Act-As"), "\(unnamed.reason)")
            let nobody = try await Self.asUser(server, secret, "nobody", "zones/list", "{}")
            #expect(nobody.code == "NOT_FOUND")
            // Refused, they did nothing: the audit log holds no entry of them.
            #expect(try await server.store.auditLog(limit: 10).isEmpty)
        }
    }

    @Test func eachScopeIsEnforcedAndEveryActionIsAudited() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            _ = try await alice.save([Record(recordName: "mine", recordType: "Note", fields: ["text": .string("hello")])])
            // What each request needs, one scope of the list (empty: any operator). Reading as
            // users lists them, and reads the schema their records follow.
            let requests: [(name: String, needs: [OperatorScope], send: @Sendable (String) async throws -> Reply)] = [
                ("who am I", [], { try await server.send(.get, "/admin/1/operator", headers: [.authorization: "Bearer \($0)"]) }),
                ("list users", [.users, .read], { try await server.send(.get, "/admin/1/users", headers: [.authorization: "Bearer \($0)"]) }),
                ("invite", [.users], { try await server.send(.post, "/admin/1/accounts/invite", headers: [.authorization: "Bearer \($0)"], body: #"{"email": "x@example.com"}"#) }),
                ("audit", [.all], { try await server.send(.get, "/admin/1/audit", headers: [.authorization: "Bearer \($0)"]) }),
                ("schema", [.schema, .read], { try await server.send(.get, "/admin/1/\(Self.container)/development/schema", headers: [.authorization: "Bearer \($0)"]) }),
                ("read as alice", [.read], { try await Self.asUser(server, $0, "alice", "records/lookup", #"{"records": [{"recordName": "mine"}]}"#) }),
                ("write as alice", [.write], {
                    try await Self.asUser(server, $0, "alice", "records/modify",
                                          #"{"operations": [{"operationType": "forceUpdate", "record": {"recordName": "mine", "recordType": "Note", "fields": {"text": {"value": "edited"}}}}]}"#)
                }),
            ]
            for scope in OperatorScope.allCases {
                let name = "ops-\(scope.rawValue)"
                let secret = try await Self.makeOperator(server, name, [scope])
                let holder = Operator(name: name, scopes: [scope])
                for request in requests {
                    let reply = try await request.send(secret)
                    let allowed = request.needs.isEmpty || request.needs.contains(where: holder.allows)
                    if allowed {
                        #expect(reply.status == 200, "\(name): \(request.name): \(reply.reason)")
                    } else {
                        #expect(reply.status == 403 && reply.code == "ACCESS_DENIED", "\(name): \(request.name): HTTP \(reply.status) \(reply.reason)")
                    }
                }
            }
            // The schema as records made it.
            let schema = try await server.send(.get, "/admin/1/\(Self.container)/development/schema",
                                               headers: [.authorization: "Bearer \(try await Self.makeOperator(server, "schema-reader", [.schema]))"])
            #expect(schema.json["recordTypes"]?[0]?["name"]?.stringValue == "Note", "\(schema.json)")
            // A container never written to has no types; a bad environment is refused.
            let reader = try await Self.makeOperator(server, "schema-reader-2", [.schema])
            let empty = try await server.send(.get, "/admin/1/iCloud.test.Nothing%20Here/development/schema", headers: [.authorization: "Bearer \(reader)"])
            #expect(empty.status == 200 && empty.json["recordTypes"] == .array([]), "\(empty.json)")
            #expect(try await server.send(.get, "/admin/1/\(Self.container)/staging/schema", headers: [.authorization: "Bearer \(reader)"]).code == "BAD_REQUEST")
            // A write as alice is alice's; the audit log names the operator.
            let lookup = try await alice.post("records/lookup", #"{"records": [{"recordName": "mine"}]}"#)
            #expect(lookup.json["records"]?[0]?["fields"]?["text"]?["value"]?.stringValue == "edited")
            #expect(lookup.json["records"]?[0]?["modified"]?["userRecordName"]?.stringValue == alice.userRecordName)
            let log = try await server.store.auditLog(limit: 1000)
            #expect(log.contains { $0.operatorName == "ops-write" && $0.action.hasSuffix("/private/records/modify") && $0.target == "as alice" })
            #expect(log.contains { $0.operatorName == "ops-users" && $0.action == "POST /admin/1/accounts/invite" && $0.target == "x@example.com" })
            // Refused requests leave no entry of the action they were refused.
            #expect(!log.contains { $0.operatorName == "ops-read" && $0.action.hasSuffix("/records/modify") })

            // The users scope deletes a user; revoking an operator refuses its secret at once.
            let users = try await Self.makeOperator(server, "ops-admin", [.users])
            let bob = try await server.user("bob")
            let deleted = try await server.send(.post, "/admin/1/users/delete", headers: [.authorization: "Bearer \(users)"], body: #"{"name": "bob"}"#)
            #expect(deleted.status == 200 && deleted.json["deleted"]?.stringValue == bob.userRecordName, "\(deleted.reason)")
            try await server.store.revokeOperator(named: "ops-admin")
            #expect(try await server.send(.get, "/admin/1/users", headers: [.authorization: "Bearer \(users)"]).code == "AUTHENTICATION_FAILED")
        }
    }

    /// Made and revoked with `recordserver operator` on the machine; two nodes over one
    /// PostgreSQL database refuse the revoked secret within a second.
    @Test(.enabled(if: TestPostgres.url != nil, "needs RECORDSYNC_TEST_POSTGRES"))
    func aRevokedOperatorIsRefusedWithinASecondOnEveryNode() async throws {
        try await withTemporaryDirectory { directory in
            let database = try await TestPostgres.databaseURL(for: directory)
            let made = try await ChildProcess.run("recordserver", ["operator", "add", "night-shift", "--scope", "read", "--scope", "users", "--database", database])
            #expect(made.status == 0)
            let secret = made.output.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(secret.hasPrefix("rsop_"))
            let listed = try await ChildProcess.run("recordserver", ["operator", "list", "--database", database])
            #expect(listed.output.hasPrefix("night-shift\tread,users\t"), "\(listed.output)")
            let deployment = try await Deployment(databaseURL: database, nodes: 2)
            defer { deployment.kill() }
            for node in deployment.nodes {
                #expect(try await Self.get(node.url.appendingPathComponent("admin/1/users"), secret: secret) == 200)
            }
            let revoked = try await ChildProcess.run("recordserver", ["operator", "revoke", "night-shift", "--database", database])
            #expect(revoked.status == 0)
            let start = ContinuousClock.now
            for node in deployment.nodes {
                while try await Self.get(node.url.appendingPathComponent("admin/1/users"), secret: secret) != 401 {
                    #expect(ContinuousClock.now - start < .seconds(1), "node \(node.url) still accepts a revoked operator")
                    if ContinuousClock.now - start > .seconds(5) { break }
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            let audit = try await ChildProcess.run("recordserver", ["operator", "audit", "--database", database])
            #expect(audit.output.split(separator: "\n").filter { $0.contains("\tnight-shift\tGET /admin/1/users\t") }.count == 2, "\(audit.output)")
        }
    }

    // MARK: - Helpers

    @Test func theSchemaExportsInCloudKitsLanguage() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await QueryTests.seed(alice)
            // Development marks indexes on first use: a word search makes Artwork's text
            // SEARCHABLE, a filter QUERYABLE, a sort SORTABLE.
            let search = try await alice.post("records/query", #"{"query": {"recordType": "Artwork", "filterBy": [{"comparator": "CONTAINS_ALL_TOKENS", "fieldName": "allTokens", "fieldValue": {"value": "w1"}}]}}"#)
            #expect(search.status == 200, "\(search.reason)")
            let sorted = try await alice.post("records/query", #"{"query": {"recordType": "Artwork", "filterBy": [{"comparator": "EQUALS", "fieldName": "framed", "fieldValue": {"value": true}}], "sortBy": [{"fieldName": "title"}, {"fieldName": "___createTime"}]}}"#)
            #expect(sorted.status == 200, "\(sorted.reason)")
            let reader = try await Self.makeOperator(server, "schema-reader", [.schema])
            let exported = try await server.send(.get, "/admin/1/\(Self.container)/development/schema?format=ckdb", headers: [.authorization: "Bearer \(reader)"])
            #expect(exported.status == 200 && exported.headers[.contentType] == "text/plain; charset=utf-8")
            let text = String(decoding: exported.data, as: UTF8.self)
            let schema = try CloudKitSchema.read(text)
            #expect(schema.written == text)
            #expect(schema.recordTypes.map(\.name) == ["Artist", "Artwork", "Users"])
            let artwork = try #require(schema.recordType("Artwork"))
            #expect(artwork.field("title") == SchemaField(name: "title", type: FieldType(.string), sortable: true, searchable: true))
            #expect(artwork.field("tags") == SchemaField(name: "tags", type: FieldType(.string, isList: true), searchable: true))
            #expect(artwork.field("framed") == SchemaField(name: "framed", type: FieldType(.boolean), queryable: true))
            #expect(artwork.field("artist")?.type == FieldType(.reference) && artwork.field("price")?.type == FieldType(.double))
            #expect(artwork.field("___createTime")?.sortable == true && artwork.field("___recordID")?.queryable == false)
            #expect(schema.recordType("Artist")?.field("name")?.searchable == false)
            #expect(artwork.grants.map(\.grantee) == ["_creator", "_icloud", "_world"])
            #expect(text.contains("        framed          RECORDSYNC.BOOLEAN QUERYABLE,\n"), "\(text)")
            // Production, never written to: only Users.
            let production = try await server.send(.get, "/admin/1/\(Self.container)/production/schema?format=ckdb", headers: [.authorization: "Bearer \(reader)"])
            #expect(try CloudKitSchema.read(String(decoding: production.data, as: UTF8.self)).recordTypes.map(\.name) == ["Users"])
        }
    }

    static func makeOperator(_ server: TestServer, _ name: String, _ scopes: Set<OperatorScope>) async throws -> String {
        let secret = Credentials.newOperatorSecret()
        try await server.store.createOperator(named: name, secretHash: Credentials.hash(secret), scopes: scopes)
        return secret
    }

    static func asUser(_ server: TestServer, _ secret: String, _ user: String, _ endpoint: String, _ body: String) async throws -> Reply {
        try await server.send(.post, "/database/1/\(container)/development/private/\(endpoint)",
                              headers: [.authorization: "Bearer \(secret)", .init("X-RecordSync-Act-As")!: user], body: body)
    }

    static func get(_ url: URL, secret: String) async throws -> Int {
        var request = URLRequest(url: url)
        request.setValue("Bearer \(secret)", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }
}
