import Foundation
import HTTPTypes
import Hummingbird
import RecordModel
import RecordRules
@testable import RecordServer
import Testing

/// Security roles in the public database (docs/protocol.md, "Security roles"), through HTTP on
/// both engines: every grantee (`_world`, `_icloud`, `_creator`, a role) with every permission
/// allows one request and refuses another; a record the caller may not read is hidden on every
/// path of the one check (docs/architecture.md, "The one check"); and every endpoint has a row
/// in ``endpointRows``, so a new endpoint cannot skip the check unnoticed.
@Suite(.serialized) struct SecurityRoleTests {
    static let container = "iCloud.test.Gallery"
    static let marker = "SECRET-MARKER"

    /// One type per grantee and permission (`CreateWorld`, `ReadRole`, …), granting that
    /// permission to that grantee alone (and, for `READ` and `WRITE`, `CREATE` to `_icloud`, so
    /// that Alice can make the record the rows read and write); `Hidden`, which only its
    /// creator reads and writes; `Open`, with CloudKit's default grants.
    static let schema: String = {
        var types = ""
        for (grantee, suffix) in grantees {
            for permission in ["CREATE", "READ", "WRITE"] {
                let grants = permission == "CREATE" ? "GRANT CREATE TO \(grantee)" : "GRANT \(permission) TO \(grantee),\n        GRANT CREATE TO \"_icloud\""
                types += "    RECORD TYPE \(typeName(permission, suffix)) (\n        note STRING QUERYABLE,\n        \(grants)\n    );\n"
            }
        }
        return """
            DEFINE SCHEMA
                CREATE ROLE editors;
            \(types)
                RECORD TYPE Hidden (
                    note STRING QUERYABLE,
                    GRANT WRITE TO "_creator",
                    GRANT CREATE TO "_icloud"
                );
                RECORD TYPE Open (
                    note STRING QUERYABLE,
                    GRANT WRITE TO "_creator",
                    GRANT CREATE TO "_icloud",
                    GRANT READ TO "_world"
                );
                RECORD TYPE Plain (
                    note STRING QUERYABLE
                );
            """
    }()

    static let grantees: [(grantee: String, suffix: String)] = [("\"_world\"", "World"), ("\"_icloud\"", "Icloud"), ("\"_creator\"", "Creator"), ("editors", "Role")]

    static func typeName(_ permission: String, _ suffix: String) -> String { permission.prefix(1) + permission.dropFirst().lowercased() + suffix }

    /// Who sends a request: Alice (who creates the records), Bob (signed in, no role), Erin
    /// (holding `editors`) or a signed-out visitor (an API token alone).
    enum Caller: String, CaseIterable, Sendable { case alice, bob, erin, visitor }

    /// A server with the schema imported, the three users, Erin given `editors` through the
    /// operators' API, and a visitor's API token.
    struct World: Sendable {
        let server: TestServer
        let sessions: [Caller: Session]
        let apiToken: String
        let operatorSecret: String

        func send(_ caller: Caller, _ endpoint: String, _ body: String) async throws -> Reply {
            if caller == .visitor {
                return try await server.send(.post, "/database/1/\(SecurityRoleTests.container)/development/public/\(endpoint)?ckAPIToken=\(apiToken)",
                                             headers: [.contentType: "application/json"], body: body)
            }
            return try await sessions[caller]!.post(endpoint, body, database: "public")
        }

        func role(_ change: String, _ user: String) async throws -> Reply {
            try await server.send(.post, "/admin/1/\(SecurityRoleTests.container)/development/roles/\(change)",
                                  headers: [.authorization: "Bearer \(operatorSecret)"], body: #"{"name":"\#(user)","role":"editors"}"#)
        }
    }

    static func withWorld(_ body: @escaping @Sendable (World) async throws -> Void) async throws {
        try await withServer(configure: { $0.webcourierWait = .milliseconds(600) }) { server in
            var sessions: [Caller: Session] = [:]
            for caller in [Caller.alice, .bob, .erin] { sessions[caller] = try await server.user(caller.rawValue) }
            let secret = try await OperatorTests.makeOperator(server, "roles", [.schema, .users])
            try await SchemaLifecycleTests.importSchema(server, secret, schema)
            let apiToken = Credentials.newAPIToken()
            try await server.store.createAPIToken(named: "web", container: container, environment: "development", origins: [], tokenHash: Credentials.hash(apiToken))
            let world = World(server: server, sessions: sessions, apiToken: apiToken, operatorSecret: secret)
            let given = try await world.role("give", "erin")
            #expect(given.status == 200 && given.json["changed"] == .bool(true), "\(given.json)")
            try await body(world)
        }
    }

    static func create(_ name: String, _ type: String, fields: String = #""note":{"value":"x"}"#) -> String {
        #"{"operations":[{"operationType":"create","record":{"recordName":"\#(name)","recordType":"\#(type)","fields":{\#(fields)}}}]}"#
    }

    static func forceUpdate(_ name: String, _ type: String) -> String {
        #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"\#(name)","recordType":"\#(type)","fields":{"note":{"value":"changed"}}}}]}"#
    }

    static func lookup(_ name: String, include: String? = nil) -> String {
        #"{"records":[{"recordName":"\#(name)"}]\#(include.map { #","include":["\#($0)"]"# } ?? "")}"#
    }

    /// The first record result's error code, or `nil` for a record.
    static func recordCode(_ reply: Reply) -> String? {
        #expect(reply.status == 200, "\(reply.json)")
        return reply.json["records"]?[0]?["serverErrorCode"]?.stringValue
    }

    /// A refusal as the grants give it: `ACCESS_DENIED` naming the permission and the type (a
    /// visitor, who may not write at all, is asked to sign in).
    static func expectRefused(_ reply: Reply, _ caller: Caller, _ permission: String, _ type: String, sourceLocation: SourceLocation = #_sourceLocation) {
        if caller == .visitor {
            #expect(reply.status == 421 && reply.code == "AUTHENTICATION_REQUIRED", "\(reply.json)", sourceLocation: sourceLocation)
            return
        }
        #expect(recordCode(reply) == "ACCESS_DENIED", "\(reply.json)", sourceLocation: sourceLocation)
        let reason = reply.json["records"]?[0]?["reason"]?.stringValue ?? ""
        #expect(reason.contains("\(permission) permission on record type \(type)"), "\(reason)", sourceLocation: sourceLocation)
    }

    // MARK: Every grantee and permission

    /// A row: the grantee's permission, a caller it allows (`nil` for `_creator`'s `CREATE`,
    /// which CloudKit gives nobody: a record not made yet has no creator), and a caller refused,
    /// on the type of the row or, for `_world` (which everyone is in), on `_icloud`'s.
    struct Row: Sendable {
        var suffix: String
        var permission: String
        var allowed: Caller?
        var refused: Caller
        var refusedSuffix: String?
    }

    static let rows: [Row] = [
        Row(suffix: "World", permission: "CREATE", allowed: .bob, refused: .visitor),
        Row(suffix: "World", permission: "READ", allowed: .visitor, refused: .visitor, refusedSuffix: "Icloud"),
        Row(suffix: "World", permission: "WRITE", allowed: .bob, refused: .visitor),
        Row(suffix: "Icloud", permission: "CREATE", allowed: .bob, refused: .visitor),
        Row(suffix: "Icloud", permission: "READ", allowed: .bob, refused: .visitor),
        Row(suffix: "Icloud", permission: "WRITE", allowed: .bob, refused: .visitor),
        Row(suffix: "Creator", permission: "CREATE", allowed: nil, refused: .alice),
        Row(suffix: "Creator", permission: "READ", allowed: .alice, refused: .bob),
        Row(suffix: "Creator", permission: "WRITE", allowed: .alice, refused: .bob),
        Row(suffix: "Role", permission: "CREATE", allowed: .erin, refused: .bob),
        Row(suffix: "Role", permission: "READ", allowed: .erin, refused: .bob),
        Row(suffix: "Role", permission: "WRITE", allowed: .erin, refused: .bob),
    ]

    @Test func everyGranteeWithEveryPermissionAllowsOneRequestAndRefusesAnother() async throws {
        #expect(Set(Self.rows.map { "\($0.suffix) \($0.permission)" }).count == Self.grantees.count * 3)
        try await Self.withWorld { world in
            for (index, row) in Self.rows.enumerated() {
                let type = Self.typeName(row.permission, row.suffix)
                let refusedType = Self.typeName(row.permission, row.refusedSuffix ?? row.suffix)
                let comment = Comment(rawValue: "\(type): \(row.allowed?.rawValue ?? "-") allowed, \(row.refused.rawValue) refused")
                switch row.permission {
                case "CREATE":
                    if let allowed = row.allowed {
                        #expect(Self.recordCode(try await world.send(allowed, "records/modify", Self.create("made-\(index)", type))) == nil, comment)
                    }
                    Self.expectRefused(try await world.send(row.refused, "records/modify", Self.create("refused-\(index)", type)), row.refused, "CREATE", type)
                case "READ":
                    for made in Set([type, refusedType]) {
                        #expect(Self.recordCode(try await world.send(.alice, "records/modify", Self.create("\(made)-\(index)", made))) == nil)
                    }
                    let read = try await world.send(row.allowed!, "records/lookup", Self.lookup("\(type)-\(index)"))
                    #expect(read.json["records"]?[0]?["fields"]?["note"]?["value"]?.stringValue == "x", "\(comment): \(read.json)")
                    // A read refused answers as if the record did not exist.
                    let refused = try await world.send(row.refused, "records/lookup", Self.lookup("\(refusedType)-\(index)"))
                    #expect(Self.recordCode(refused) == "NOT_FOUND", "\(comment): \(refused.json)")
                default:
                    #expect(Self.recordCode(try await world.send(.alice, "records/modify", Self.create("written-\(index)", type))) == nil)
                    #expect(Self.recordCode(try await world.send(row.allowed!, "records/modify", Self.forceUpdate("written-\(index)", type))) == nil, comment)
                    Self.expectRefused(try await world.send(row.refused, "records/modify", Self.forceUpdate("written-\(index)", type)), row.refused, "WRITE", type)
                }
            }
            // A type granting nothing (a schema written without GRANT lines) has CloudKit's defaults.
            #expect(Self.recordCode(try await world.send(.bob, "records/modify", Self.create("plain", "Plain"))) == nil)
            #expect(try await world.send(.visitor, "records/lookup", Self.lookup("plain")).json["records"]?[0]?["recordName"]?.stringValue == "plain")
            Self.expectRefused(try await world.send(.alice, "records/modify", Self.forceUpdate("plain", "Plain")), .alice, "WRITE", "Plain")
            // A role taken is refused from the next request on; `give` and `take` say whether
            // anything changed, and name only roles of the schema and users that exist.
            let taken = try await world.role("take", "erin")
            #expect(taken.json["changed"] == .bool(true), "\(taken.json)")
            #expect(try await world.role("take", "erin").json["changed"] == .bool(false))
            Self.expectRefused(try await world.send(.erin, "records/modify", Self.forceUpdate("written-11", "WriteRole")), .erin, "WRITE", "WriteRole")
            let unknownRole = try await world.server.send(.post, "/admin/1/\(Self.container)/development/roles/give", headers: [.authorization: "Bearer \(world.operatorSecret)"],
                                                          body: #"{"name":"erin","role":"admins"}"#)
            #expect(unknownRole.code == "BAD_REQUEST" && unknownRole.reason.contains("no role 'admins'"), "\(unknownRole.json)")
            #expect(try await world.role("give", "nobody").code == "NOT_FOUND")
            let listed = try await world.server.send(.get, "/admin/1/\(Self.container)/development/roles", headers: [.authorization: "Bearer \(world.operatorSecret)"])
            #expect(listed.json["roles"] == .array([.object(["role": .string("editors"), "users": .array([])])]), "\(listed.json)")
        }
    }

    /// A role leaves with its user, and with the schema's `CREATE ROLE` when an import drops it.
    @Test func aRoleLeavesWithItsUserAndWithItsCreateRole() async throws {
        try await Self.withWorld { world in
            #expect(try await world.role("give", "bob").json["changed"] == .bool(true))
            let deleted = try await world.server.send(.post, "/admin/1/users/delete", headers: [.authorization: "Bearer \(world.operatorSecret)"], body: #"{"name":"bob"}"#)
            #expect(deleted.status == 200, "\(deleted.json)")
            func holders() async throws -> JSONValue? {
                try await world.server.send(.get, "/admin/1/\(Self.container)/development/roles", headers: [.authorization: "Bearer \(world.operatorSecret)"]).json["roles"]
            }
            #expect(try await holders() == .array([.object(["role": .string("editors"), "users": .array([.string("erin")])])]))
            let withoutRole = Self.schema.replacingOccurrences(of: "CREATE ROLE editors;", with: "")
                .replacingOccurrences(of: "GRANT CREATE TO editors", with: "GRANT CREATE TO \"_icloud\"")
                .replacingOccurrences(of: "TO editors", with: "TO \"_icloud\"")
            try await SchemaLifecycleTests.importSchema(world.server, world.operatorSecret, withoutRole)
            #expect(try await holders() == .array([]))
            try await SchemaLifecycleTests.importSchema(world.server, world.operatorSecret, Self.schema)
            #expect(try await holders() == .array([.object(["role": .string("editors"), "users": .array([])])]))
            Self.expectRefused(try await world.send(.erin, "records/modify", Self.create("after", "CreateRole")), .erin, "CREATE", "CreateRole")
        }
    }

    // MARK: Every path of the one check

    /// Alice's `Hidden` records, which Bob may not read, seen from every path Bob could reach
    /// them by; Alice's answers show each path reaches them for a caller who may.
    @Test func aRecordTheCallerMayNotReadIsHiddenOnEveryPath() async throws {
        try await Self.withWorld { world in
            let alice = world.sessions[.alice]!, bob = world.sessions[.bob]!
            let uploadURL = try await AssetTests.uploadURL(alice, recordType: "Hidden", field: "image", database: "public")
            let (uploaded, receipt) = try await AssetTests.post(Data("hidden bytes".utf8), to: uploadURL, multipart: false)
            #expect(uploaded == 200, "\(receipt)")
            let asset = try JSONValueDecoder().decode(AssetUploadReceipt.self, from: try receipt.serialized()).fieldValue
            let bobsWatch = #"{"subscriptionID":"watch","subscriptionType":"query","query":{"recordType":"Hidden"},"firesOn":["create"]}"#
            for session in [alice, bob] {
                let subscribed = try await session.post("subscriptions/modify", #"{"operations":[{"operationType":"create","subscription":\#(bobsWatch)}]}"#, database: "public")
                #expect(subscribed.status == 200, "\(subscribed.json)")
            }
            for name in ["bobs", "bobs2", "bobs3"] {
                #expect(Self.recordCode(try await world.send(.bob, "records/modify", Self.create(name, "Open"))) == nil)
            }
            #expect(Self.recordCode(try await world.send(.alice, "records/modify", Self.create("target", "Open"))) == nil)
            let assetJSON = String(decoding: try asset.serialized(), as: UTF8.self)
            let hidden: [(String, String)] = [
                ("hidden", #""note":{"value":"\#(Self.marker)"},"image":{"value":\#(assetJSON)}"#),
                ("hidden-source", #""note":{"value":"\#(Self.marker)"},"about":{"value":{"recordName":"target","action":"NONE"}}"#),
                ("hidden-child", #""note":{"value":"\#(Self.marker)"},"owner":{"value":{"recordName":"bobs","action":"DELETE_SELF"}}"#),
                ("hidden-pin", #""note":{"value":"\#(Self.marker)"},"pin":{"value":{"recordName":"bobs2","action":"VALIDATE"}}"#),
                ("hidden-link", #""note":{"value":"\#(Self.marker)"},"link":{"value":{"recordName":"bobs3","action":"NULLIFY"}}"#),
            ]
            for (name, fields) in hidden {
                #expect(Self.recordCode(try await world.send(.alice, "records/modify", Self.create(name, "Hidden", fields: fields))) == nil)
            }
            #expect(Self.recordCode(try await world.send(.alice, "records/modify", Self.create("pointer", "Open", fields: #""note":{"value":"p"},"ref":{"value":{"recordName":"hidden","action":"NONE"}}"#))) == nil)
            let aliceLookup = try await world.send(.alice, "records/lookup", Self.lookup("hidden"))
            let downloadURL = try #require(aliceLookup.json["records"]?[0]?["fields"]?["image"]?["value"]?["downloadURL"]?.stringValue, "\(aliceLookup.json)")

            var bobsAnswers: [Reply] = []
            func bobSends(_ endpoint: String, _ body: String) async throws -> Reply {
                let reply = try await world.send(.bob, endpoint, body)
                bobsAnswers.append(reply)
                return reply
            }
            func names(_ reply: Reply, _ key: String = "records") -> [String] {
                (reply.json[key]?.arrayValue ?? []).compactMap { $0["recordName"]?.stringValue }
            }
            // Lookup, and what include reaches.
            #expect(Self.recordCode(try await bobSends("records/lookup", Self.lookup("hidden"))) == "NOT_FOUND")
            #expect(names(try await bobSends("records/lookup", Self.lookup("pointer", include: "ref")), "includedRecords").isEmpty)
            #expect(names(try await world.send(.alice, "records/lookup", Self.lookup("pointer", include: "ref")), "includedRecords") == ["hidden"])
            // Queries: results, a key path through a hidden record, includes.
            let hiddenQuery = #"{"query":{"recordType":"Hidden"}}"#
            #expect(names(try await bobSends("records/query", hiddenQuery)).isEmpty)
            #expect(names(try await world.send(.alice, "records/query", hiddenQuery)).count == hidden.count)
            let keyPath = #"{"query":{"recordType":"Open","filterBy":[{"fieldName":"ref.note","comparator":"EQUALS","fieldValue":{"value":"\#(Self.marker)"}}]}}"#
            #expect(names(try await bobSends("records/query", keyPath)).isEmpty)
            #expect(names(try await world.send(.alice, "records/query", keyPath)) == ["pointer"])
            let including = #"{"query":{"recordType":"Open","filterBy":[{"systemFieldName":"recordName","comparator":"EQUALS","fieldValue":{"value":{"recordName":"pointer"}}}]},"include":["ref"]}"#
            #expect(names(try await bobSends("records/query", including), "includedRecords").isEmpty)
            #expect(names(try await world.send(.alice, "records/query", including), "includedRecords") == ["hidden"])
            // Change feeds.
            let feed = names(try await bobSends("records/changes", "{}"))
            #expect(!feed.isEmpty && !feed.contains { $0.hasPrefix("hidden") }, "\(feed)")
            #expect(names(try await world.send(.alice, "records/changes", "{}")).contains("hidden"))
            let zoneFeed = try await bobSends("changes/zone", #"{"zones":[{}]}"#)
            #expect(!(zoneFeed.json["zones"]?[0]?["records"]?.arrayValue ?? []).contains { $0["recordName"]?.stringValue?.hasPrefix("hidden") == true }, "\(zoneFeed.json)")
            // Backlinks: of a hidden record, and from one.
            #expect(names(try await bobSends("records/backlinks", #"{"recordName":"hidden"}"#)).isEmpty)
            #expect(names(try await world.send(.alice, "records/backlinks", #"{"recordName":"hidden"}"#)) == ["pointer"])
            #expect(names(try await bobSends("records/backlinks", #"{"recordName":"target"}"#)).isEmpty)
            #expect(names(try await world.send(.alice, "records/backlinks", #"{"recordName":"target"}"#)) == ["hidden-source"])
            // EXISTS and CONFLICT carry no record the caller may not read.
            let exists = try await bobSends("records/modify", Self.create("hidden", "Hidden"))
            #expect(Self.recordCode(exists) == "EXISTS" && exists.json["records"]?[0]?["serverRecord"] == nil, "\(exists.json)")
            #expect(try await world.send(.alice, "records/modify", Self.create("hidden", "Hidden")).json["records"]?[0]?["serverRecord"]?["recordName"]?.stringValue == "hidden")
            let stale = try await bobSends("records/modify", #"{"operations":[{"operationType":"update","record":{"recordName":"hidden","recordType":"Hidden","recordChangeTag":"stale","fields":{}}}]}"#)
            #expect(Self.recordCode(stale) == "ACCESS_DENIED" && stale.json["records"]?[0]?["serverRecord"] == nil, "\(stale.json)")
            // A VALIDATE reference to a record the caller may not read: as to a missing one.
            let validate = try await bobSends("records/modify", Self.create("mine", "Open", fields: #""ref":{"value":{"recordName":"hidden","action":"VALIDATE"}}"#))
            #expect(Self.recordCode(validate) == "VALIDATING_REFERENCE_ERROR" && validate.json["records"]?[0]?["reason"]?.stringValue?.contains("does not exist") == true, "\(validate.json)")
            // assets/rereference of a hidden record: as of a missing one.
            let rereference = try await bobSends("assets/rereference", #"{"assets":[{"recordName":"hidden","fieldName":"image"}]}"#)
            #expect(rereference.json["assets"]?[0]?["serverErrorCode"]?.stringValue == "NOT_FOUND", "\(rereference.json)")
            #expect(try await world.send(.alice, "assets/rereference", #"{"assets":[{"recordName":"hidden","fieldName":"image"}]}"#).json["assets"]?[0]?["receipt"] != nil)
            // A subscription announces only records its subscriber may read.
            let aliceURL = try await SubscriptionTests.webcourier(alice, path: "public/tokens/create")
            let bobURL = try await SubscriptionTests.webcourier(bob, path: "public/tokens/create")
            #expect(Self.recordCode(try await world.send(.alice, "records/modify", Self.create("hidden-new", "Hidden"))) == nil)
            #expect(SubscriptionTests.query(try await SubscriptionTests.poll(aliceURL))?.0 == "hidden-new")
            #expect(try await SubscriptionTests.poll(bobURL) == nil)
            // A hidden record's VALIDATE reference blocks the delete without being named.
            let blocked = try await bobSends("records/modify", #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"bobs2"}}]}"#)
            #expect(Self.recordCode(blocked) == "VALIDATING_REFERENCE_ERROR", "\(blocked.json)")
            // Cascades and NULLIFY reach records the caller may not write (their references are
            // their creators' consent) and name none the caller may not read.
            let cascade = try await bobSends("records/modify", #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"bobs"}},{"operationType":"forceDelete","record":{"recordName":"bobs3"}}]}"#)
            #expect(Self.recordCode(cascade) == nil, "\(cascade.json)")
            #expect(cascade.json["records"]?[0]?["cascadedRecordNames"] == .array([]) || cascade.json["records"]?[0]?["cascadedRecordNames"] == nil, "\(cascade.json)")
            #expect(Self.recordCode(try await world.send(.alice, "records/lookup", Self.lookup("hidden-child"))) == "NOT_FOUND")
            let cleared = try await world.send(.alice, "records/lookup", Self.lookup("hidden-link"))
            #expect(cleared.json["records"]?[0]?["fields"]?["note"] != nil && cleared.json["records"]?[0]?["fields"]?["link"] == nil, "\(cleared.json)")

            for answer in bobsAnswers {
                let text = String(decoding: answer.data, as: UTF8.self)
                #expect(!text.contains(Self.marker) && !text.contains(downloadURL) && !text.contains("hidden-"), "\(text)")
            }
        }
    }

    // MARK: Every endpoint

    /// A request of Bob's per endpoint of `DatabaseRoutes.endpoints`, in the public database,
    /// naming Alice's `hidden` record where the endpoint takes a record, and what its answer
    /// must be. Each answer must also hold nothing of the record. An endpoint without a row
    /// fails ``everyEndpointGoesThroughTheCheck()``: a new endpoint is added here with the
    /// answer the one check gives it.
    static let endpointRows: [String: (body: String, expect: @Sendable (Reply) -> Bool)] = [
        "records/modify": (create("hidden", "Hidden"), { recordCode($0) == "EXISTS" && $0.json["records"]?[0]?["serverRecord"] == nil }),
        "records/lookup": (lookup("hidden"), { recordCode($0) == "NOT_FOUND" }),
        "records/query": (#"{"query":{"recordType":"Hidden"}}"#, { $0.json["records"] == .array([]) }),
        "records/backlinks": (#"{"recordName":"hidden"}"#, { $0.json["records"] == .array([]) }),
        // A share is seen by its owner, its participants and (with a public link) anyone signed in.
        "records/resolve": (#"{"shortGUIDs":[{"value":"nosuchshare"}]}"#, { $0.json["results"]?[0]?["serverErrorCode"]?.stringValue == "NOT_FOUND" }),
        "records/accept": (#"{"shortGUIDs":[{"value":"nosuchshare"}]}"#, { $0.json["results"]?[0]?["serverErrorCode"]?.stringValue == "NOT_FOUND" }),
        "records/changes": ("{}", { $0.status == 200 && $0.json["records"]?.arrayValue?.isEmpty == false }),
        "changes/zone": (#"{"zones":[{}]}"#, { $0.status == 200 && $0.json["zones"]?[0]?["records"]?.arrayValue?.isEmpty == false }),
        // Zones carry no grants: the public database has only _defaultZone, which every caller sees.
        "changes/database": ("{}", { $0.status == 200 }),
        "zones/changes": ("{}", { $0.status == 200 }),
        "zones/list": ("{}", { $0.json["zones"]?[0]?["zoneID"]?["zoneName"]?.stringValue == "_defaultZone" }),
        "zones/lookup": (#"{"zones":[{"zoneName":"_defaultZone"}]}"#, { $0.status == 200 }),
        "zones/modify": (#"{"operations":[{"operationType":"delete","zone":{"zoneID":{"zoneName":"_defaultZone"}}}]}"#, { $0.code == "BAD_REQUEST" }),
        // An upload binds to a record only through a save, which the check judges.
        "assets/upload": (#"{"tokens":[{"recordType":"Hidden","fieldName":"image"}]}"#, { $0.status == 200 }),
        "assets/rereference": (#"{"assets":[{"recordName":"hidden","fieldName":"note"}]}"#, { $0.json["assets"]?[0]?["serverErrorCode"]?.stringValue == "NOT_FOUND" }),
        // A subscription fires only for records its subscriber may read; each user lists their own.
        "subscriptions/modify": (#"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"bobs","subscriptionType":"query","query":{"recordType":"Hidden"}}}]}"#, { $0.status == 200 }),
        "subscriptions/list": ("{}", { ($0.json["subscriptions"]?.arrayValue ?? []).allSatisfy { $0["subscriptionID"]?.stringValue != "alices" } }),
        "subscriptions/lookup": (#"{"subscriptions":[{"subscriptionID":"alices"}]}"#, { $0.json["subscriptions"]?[0]?["serverErrorCode"]?.stringValue == "NOT_FOUND" }),
        // Push delivers the notifications of the caller's own subscriptions.
        "tokens/create": ("{}", { $0.status == 200 }),
        "tokens/register": (#"{"apnsEnvironment":"development","apnsToken":"AAAA"}"#, { $0.status == 200 }),
        // Users are not records of the database: no grant applies.
        "users/current": ("{}", { $0.status == 200 }),
        "users/caller": ("{}", { $0.status == 200 }),
        "users/discover": (#"{"lookupInfos":[]}"#, { $0.status == 200 }),
        "users/lookup/email": (#"{"users":[]}"#, { $0.status == 200 }),
        "users/lookup/id": (#"{"users":[]}"#, { $0.status == 200 }),
        "users/discoverability": (#"{"discoverable":false}"#, { $0.status == 200 }),
    ]

    @Test func everyEndpointGoesThroughTheCheck() async throws {
        let missing = DatabaseRoutes.endpoints.map(\.path).filter { Self.endpointRows[$0] == nil }
        #expect(missing.isEmpty, "endpoints without a row in SecurityRoleTests.endpointRows (what the one check answers them): \(missing)")
        try await Self.withWorld { world in
            #expect(Self.recordCode(try await world.send(.alice, "records/modify", Self.create("hidden", "Hidden", fields: #""note":{"value":"\#(Self.marker)"}"#))) == nil)
            #expect(Self.recordCode(try await world.send(.bob, "records/modify", Self.create("bobs", "Open"))) == nil)
            let alices = try await world.sessions[.alice]!.post("subscriptions/modify", #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"alices","subscriptionType":"query","query":{"recordType":"Hidden"}}}]}"#, database: "public")
            #expect(alices.status == 200, "\(alices.json)")
            for endpoint in DatabaseRoutes.endpoints {
                guard let row = Self.endpointRows[endpoint.path] else { continue }
                let reply = try await world.send(.bob, endpoint.path, row.body)
                #expect(row.expect(reply), "\(endpoint.path): \(reply.status) \(reply.json)")
                #expect(!String(decoding: reply.data, as: UTF8.self).contains(Self.marker), "\(endpoint.path) answered \(reply.json)")
            }
        }
    }
}
