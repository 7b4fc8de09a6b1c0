import AsyncHTTPClient
import Crypto
import Foundation
import HTTPTypes
import NIOCore
import RecordModel
@testable import RecordRules
@testable import RecordServer
import Testing
import TestSupport

/// What Apple's CloudKit JS 2.6.4 sends and reads, request by request: API tokens and signed-out
/// visitors, CORS, `users/caller`, server-to-server signatures over the path with its query,
/// notification payloads and keep-alives, and finer error codes under `extensionErrorCode`.
@Suite struct CloudKitJSTests {
    static let container = "iCloud.test.Gallery"
    static let base = "/database/1/iCloud.test.Gallery/development"
    /// The parameters CloudKit JS 2.6.4 puts on every request, in its order, before the tokens.
    static let ckjs = "ckjsBuildVersion=2310ProjectDev27&ckjsVersion=2.6.4&clientId=6d9c7c1a-2b8e-4a59-9f3e-0c1d2e3f4a5b"

    /// Issues an API token for the test container's development environment.
    static func apiToken(_ server: TestServer, name: String? = nil, origins: [String] = ["https://gallery.example.com"],
                         container: String = container) async throws -> String {
        let token = Credentials.newAPIToken()
        try await server.store.createAPIToken(named: name, container: container, environment: "development", origins: origins, tokenHash: Credentials.hash(token))
        return token
    }

    @Test func aSignedOutVisitorReadsThePublicDatabaseAndIsAskedToSignInForAnythingElse() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([.artist("monet", "Claude Monet")], database: "public")
            try await alice.save([.artist("secret")])
            let api = try await Self.apiToken(server)
            #expect(api.hasPrefix("rsapi_"))
            let query = #"{"query":{"recordType":"Artist"}}"#

            // A public query with the API token alone: 200, the public record.
            let read = try await server.send(.post, "\(Self.base)/public/records/query?\(Self.ckjs)&ckAPIToken=\(api)", body: query)
            #expect(read.status == 200, "\(read.json)")
            #expect(read.json["records"]?[0]?["recordName"]?.stringValue == "monet", "\(read.json)")
            let lookup = try await server.send(.post, "\(Self.base)/public/records/lookup?ckAPIToken=\(api)", body: #"{"records":[{"recordName":"monet"}]}"#)
            #expect(lookup.json["records"]?[0]?["fields"]?["name"]?["value"]?.stringValue == "Claude Monet", "\(lookup.json)")

            // A private request: 421 AUTHENTICATION_REQUIRED with the sign-in page's URL.
            let denied = try await server.send(.post, "\(Self.base)/private/records/query?\(Self.ckjs)&ckAPIToken=\(api)", body: query)
            #expect(denied.status == 421 && denied.code == "AUTHENTICATION_REQUIRED", "\(denied.json)")
            let redirect = try #require(denied.json["redirectURL"]?.stringValue)
            // The page's URL names the app's API token (its sign-in page: WebSignInTests).
            #expect(redirect.hasSuffix("/signin/1/iCloud.test.Gallery/development?token=api-token-1"), "\(redirect)")
            let page = try await server.send(.get, String(redirect[redirect.range(of: "/signin/")!.lowerBound...]))
            let html = String(decoding: page.data, as: UTF8.self)
            #expect(page.status == 200 && html.contains("to iCloud.test.Gallery (development)") && html.contains("<form"))

            // Every endpoint that needs a user, in either database, and every read of the
            // private database: 421 with redirectURL, and nothing changes.
            for endpoint in DatabaseRoutes.endpoints {
                for database in ["public", "private"] where !(endpoint.visitors && database == "public") {
                    let body = AuthorizationTests.bodies[endpoint.path]?(#"{"zoneName":"_defaultZone"}"#)
                    let answer = try await server.send(endpoint.methods.contains(.post) ? .post : .get,
                                                       "\(Self.base)/\(database)/\(endpoint.path)?ckAPIToken=\(api)", body: body)
                    #expect(answer.status == 421 && answer.json["redirectURL"]?.stringValue == redirect, "\(endpoint.path) in \(database): \(answer.json)")
                }
            }
            for path in ["\(Self.base)/public/notifications", "/device/1/iCloud.test.Gallery/development/tokens/create",
                         "\(Self.base)/shared/records/query"] {
                let answer = try await server.send(path.hasSuffix("notifications") ? .get : .post, "\(path)?ckAPIToken=\(api)")
                #expect(answer.status == 421, "\(path): \(answer.json)")
            }
            #expect(try await alice.queryNames(Query(recordType: "Artist"), database: "public") == ["monet"])
            // Without any credentials: 421 with redirectURL too (naming no app).
            let bare = try await server.send(.post, "\(Self.base)/public/records/query", body: query)
            #expect(bare.status == 421 && bare.json["redirectURL"]?.stringValue == redirect.replacingOccurrences(of: "?token=api-token-1", with: ""), "\(bare.json)")

            // The API token beside a user's token: the user's request, in any database.
            let signedIn = try await server.send(.post, "\(Self.base)/private/records/query?\(Self.ckjs)&ckWebAuthToken=\(alice.token)&ckAPIToken=\(api)", body: query)
            #expect(signedIn.json["records"]?[0]?["recordName"]?.stringValue == "secret", "\(signedIn.json)")
        }
    }

    @Test func anAPITokenNotIssuedRevokedOrForAnotherContainerIsRefused() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let query = #"{"query":{"recordType":"Artist"}}"#
            func read(_ token: String, container: String = CloudKitJSTests.container) async throws -> Reply {
                try await server.send(.post, "/database/1/\(container)/development/public/records/query?ckAPIToken=\(token)", body: query)
            }
            let unknown = try await read(Credentials.newAPIToken())
            #expect(unknown.status == 401 && unknown.code == "AUTHENTICATION_FAILED" && unknown.reason.contains("API token"), "\(unknown.json)")
            // Beside a valid user's token too.
            let beside = try await server.send(.post, "\(Self.base)/public/records/query?ckWebAuthToken=\(alice.token)&ckAPIToken=\(Credentials.newAPIToken())", body: query)
            #expect(beside.status == 401, "\(beside.json)")

            let api = try await Self.apiToken(server, name: "web")
            #expect(try await read(api).status == 200)
            let elsewhere = try await read(api, container: "iCloud.test.Other")
            #expect(elsewhere.status == 401 && elsewhere.reason.contains("is for"), "\(elsewhere.json)")
            try await server.store.revokeAPIToken(named: "web", container: Self.container, environment: "development")
            try await Task.sleep(for: TokenCheck.revocationDelay + .milliseconds(100))
            let revoked = try await read(api)
            #expect(revoked.status == 401 && revoked.code == "AUTHENTICATION_FAILED", "\(revoked.json)")
            await #expect(throws: RecordSyncError.self) {
                try await server.store.revokeAPIToken(named: "web", container: Self.container, environment: "development")
            }

            // A user's token sent as ckAPIToken still works (the documented choice).
            #expect(try await read(alice.token).status == 200)
        }
        // ... unless the operator turns that off.
        try await withServer(configure: { $0.userTokensAsAPIToken = false }) { server in
            let alice = try await server.user("alice")
            let refused = try await server.send(.post, "\(Self.base)/public/records/query?ckAPIToken=\(alice.token)", body: #"{"query":{"recordType":"Artist"}}"#)
            #expect(refused.status == 401 && refused.reason.contains("not an API token"), "\(refused.json)")
            let api = try await Self.apiToken(server)
            let web = try await server.send(.post, "\(Self.base)/private/records/query?ckWebAuthToken=\(alice.token)&ckAPIToken=\(api)", body: #"{"query":{"recordType":"Artist"}}"#)
            #expect(web.status == 200, "\(web.json)")
        }
    }

    @Test func apiTokensAreNamedAndCheckTheirOrigins() async throws {
        try await withServer { server in
            let first = Credentials.newAPIToken()
            let created = try await server.store.createAPIToken(container: Self.container, environment: "development",
                                                                origins: ["HTTPS://Gallery.Example.com:443", "http://localhost:8080"], tokenHash: Credentials.hash(first))
            #expect(created.name == "api-token-1" && created.origins == ["https://gallery.example.com", "http://localhost:8080"])
            _ = try await Self.apiToken(server)
            #expect(try await server.store.apiTokens().map(\.name) == ["api-token-1", "api-token-2"])
            for origin in ["https://example.com/", "ftp://example.com", "https://example.com/path", "example.com", ""] {
                await #expect(throws: RecordSyncError.self, "\(origin)") {
                    try await server.store.createAPIToken(container: Self.container, environment: "development", origins: [origin], tokenHash: Credentials.hash(Credentials.newAPIToken()))
                }
            }
            await #expect(throws: RecordSyncError.self) {
                try await server.store.createAPIToken(named: "api-token-1", container: Self.container, environment: "development", origins: [], tokenHash: Credentials.hash(Credentials.newAPIToken()))
            }
            await #expect(throws: RecordSyncError.self) {
                try await server.store.createAPIToken(container: Self.container, environment: "staging", origins: [], tokenHash: Credentials.hash(Credentials.newAPIToken()))
            }
            #expect(try await server.store.apiTokens().count == 2)
        }
    }

    @Test func corsAnswersListedOriginsOnly() async throws {
        try await withServer { server in
            let api = try await Self.apiToken(server, origins: ["https://gallery.example.com"])
            let path = "\(Self.base)/public/records/query?\(Self.ckjs)&ckAPIToken=\(api)"
            func preflight(_ origin: String, _ path: String = path) async throws -> (status: Int, headers: HTTPFields) {
                let response = try await server.client.executeRequest(uri: path, method: .options, headers: [
                    .origin: origin, .accessControlRequestMethod: "POST", .accessControlRequestHeaders: "content-type",
                ], body: nil)
                return (Int(response.status.code), response.headers)
            }
            let allowed = try await preflight("https://gallery.example.com")
            #expect(allowed.status == 204)
            #expect(allowed.headers[.accessControlAllowOrigin] == "https://gallery.example.com")
            #expect(allowed.headers[.accessControlAllowMethods]?.contains("POST") == true)
            #expect(allowed.headers[.accessControlAllowHeaders]?.contains("Content-Type") == true)
            #expect(allowed.headers[values: .vary].joined(separator: ",").contains("Origin"))
            let refused = try await preflight("https://evil.example.net")
            #expect(refused.status == 403 && refused.headers[.accessControlAllowOrigin] == nil)
            #expect(refused.headers[values: .vary].joined(separator: ",").contains("Origin"))
            // Without an API token: the origins of the container and environment's tokens.
            #expect(try await preflight("https://gallery.example.com", "\(Self.base)/private/records/modify").status == 204)
            #expect(try await preflight("https://gallery.example.com", "/database/1/iCloud.test.Other/development/private/records/modify").status == 403)

            // The request itself: only a listed origin gets Access-Control-Allow-Origin; every
            // answer varies by Origin, errors included.
            for (origin, listed) in [("https://gallery.example.com", true), ("https://evil.example.net", false)] {
                let response = try await server.client.executeRequest(uri: path, method: .post, headers: [.origin: origin, .contentType: "text/plain"],
                                                                      body: ByteBuffer(string: #"{"query":{"recordType":"Artist"}}"#))
                #expect(response.status == .ok)
                #expect(response.headers[.accessControlAllowOrigin] == (listed ? origin : nil), "\(origin)")
                #expect(response.headers[values: .vary].contains("Origin"))
            }
            // An unknown API token: the container's origins, so that the page reads the 401.
            let unknown = try await server.client.executeRequest(uri: "\(Self.base)/public/users/caller?ckAPIToken=\(Credentials.newAPIToken())", method: .get,
                                                                 headers: [.origin: "https://gallery.example.com"], body: nil)
            #expect(unknown.status.code == 401 && unknown.headers[.accessControlAllowOrigin] == "https://gallery.example.com")
            let failed = try await server.client.executeRequest(uri: "\(Self.base)/private/users/caller?ckAPIToken=\(api)", method: .get,
                                                                headers: [.origin: "https://gallery.example.com"], body: nil)
            #expect(failed.status.code == 421 && failed.headers[.accessControlAllowOrigin] == "https://gallery.example.com")
        }
    }

    @Test func usersCallerAnswersTheIdentityAtTheTopAndInUsers() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            _ = try await server.store.setProfile(ofUserNamed: "alice") { $0.givenName = "Alice"; $0.familyName = "Liddell"; $0.email = "alice@example.com" }
            for endpoint in ["users/caller", "users/current"] {
                let answer = try await server.send(.get, "\(Self.base)/public/\(endpoint)?\(Self.ckjs)&ckWebAuthToken=\(alice.token)")
                #expect(answer.status == 200, "\(answer.json)")
                let json = answer.json
                // CloudKit JS hands this body to the app as the identity.
                #expect(json["userRecordName"]?.stringValue == alice.userRecordName, "\(json)")
                #expect(json["nameComponents"]?["givenName"]?.stringValue == "Alice" && json["nameComponents"]?["familyName"]?.stringValue == "Liddell")
                #expect(json["lookupInfo"]?["emailAddress"]?.stringValue == "alice@example.com")
                // Apple's archived form, which other clients read.
                #expect(json["users"]?[0]?["userRecordName"]?.stringValue == alice.userRecordName)
                #expect(json["users"]?[0]?["nameComponents"]?["givenName"]?.stringValue == "Alice")
                #expect(json["firstName"]?.stringValue == "Alice" && json["userName"]?.stringValue == "alice")
                #expect(try answer.decode(UserIdentity.self).userRecordName == alice.userRecordName)
                #expect(try answer.decode(UserIdentitiesResponse.self).users.first?.userRecordName == alice.userRecordName)
            }
        }
    }

    /// The signature headers over `message`'s parts: `date:hash:path`.
    static func signed(_ key: P256.Signing.PrivateKey, id: String, hash: String, path: String) throws -> HTTPFields {
        let stamp = Date().formatted(.iso8601)
        let signature = try key.signature(for: Data("\(stamp):\(hash):\(path)".utf8)).derRepresentation.base64EncodedString()
        return [HTTPField.Name("X-Apple-CloudKit-Request-KeyID")!: id, HTTPField.Name("X-Apple-CloudKit-Request-ISO8601Date")!: stamp,
                HTTPField.Name("X-Apple-CloudKit-Request-SignatureV1")!: signature, .contentType: "text/plain"]
    }

    @Test func signaturesCoverThePathWithItsQueryThePathAloneOrAnEmptyHash() async throws {
        try await withServer { server in
            _ = try await server.user("bot")
            let key = P256.Signing.PrivateKey()
            let id = try await server.store.addServerKey(forUserNamed: "bot", publicKeyPEM: key.publicKey.pemRepresentation)
            let path = "\(Self.base)/public/records/modify"
            func hash(_ body: String) -> String { Data(SHA256.hash(data: Data(body.utf8))).base64EncodedString() }

            // CloudKit JS: the path with its query.
            let body = ServerKeyTests.save("one", "by ckjs")
            let withQuery = try Self.signed(key, id: id, hash: hash(body), path: "\(path)?\(Self.ckjs)")
            let ckjs = try await server.send(.post, "\(path)?\(Self.ckjs)", headers: withQuery, body: body)
            #expect(ckjs.status == 200 && ckjs.json["records"]?[0]?["recordName"]?.stringValue == "one", "\(ckjs.json)")
            // Earlier clients: the path alone, even with a query.
            let second = ServerKeyTests.save("two", "path alone")
            let alone = try await server.send(.post, "\(path)?\(Self.ckjs)", headers: try Self.signed(key, id: id, hash: hash(second), path: path), body: second)
            #expect(alone.status == 200, "\(alone.json)")
            // A changed query string: refused, and nothing saved.
            let third = ServerKeyTests.save("three", "changed query")
            let tampered = try await server.send(.post, "\(path)?\(Self.ckjs)&ckjsVersion=9", headers: try Self.signed(key, id: id, hash: hash(third), path: "\(path)?\(Self.ckjs)"), body: third)
            #expect(tampered.status == 401 && tampered.code == "AUTHENTICATION_FAILED", "\(tampered.json)")
            // A request without a body: the hash of nothing (CloudKit JS) or an empty field.
            let caller = "\(Self.base)/public/users/caller"
            for bodyHash in [hash(""), ""] {
                let answer = try await server.send(.get, caller, headers: try Self.signed(key, id: id, hash: bodyHash, path: caller))
                #expect(answer.status == 200 && answer.json["userRecordName"]?.stringValue != nil, "\(bodyHash): \(answer.json)")
            }
            // An empty hash field never stands for a body that was sent.
            let fourth = ServerKeyTests.save("four", "empty hash")
            #expect(try await server.send(.post, path, headers: try Self.signed(key, id: id, hash: "", path: path), body: fourth).status == 401)
            let names = try await server.send(.post, "\(Self.base)/public/records/lookup", headers: try Self.signed(key, id: id, hash: hash(#"{"records":[{"recordName":"three"},{"recordName":"four"}]}"#), path: "\(Self.base)/public/records/lookup"),
                                              body: #"{"records":[{"recordName":"three"},{"recordName":"four"}]}"#)
            #expect(names.json["records"]?[0]?["serverErrorCode"]?.stringValue == "NOT_FOUND" && names.json["records"]?[1]?["serverErrorCode"]?.stringValue == "NOT_FOUND", "\(names.json)")
        }
    }

    @Test func publicNotificationsAndKeepAlivesAsTheLibraryReadsThem() async throws {
        try await withServer(configure: { $0.webcourierWait = .milliseconds(300) }) { server in
            let alice = try await server.user("alice")
            let subscription = #"{"subscriptionID":"news","subscriptionType":"query","query":{"recordType":"Artist"},"firesOn":["create"],"notificationInfo":{"alertLocalizationKey":"NEW_ARTIST","alertLocalizationArgs":["name"],"alertActionLocalizationKey":"VIEW","soundName":"chime"}}"#
            let saved = try await alice.post("subscriptions/modify", #"{"operations":[{"operationType":"create","subscription":\#(subscription)}]}"#, database: "public")
            #expect(saved.status == 200, "\(saved.json)")
            let url = try await SubscriptionTests.webcourier(alice)
            // A keep-alive: the body is JSON null (no notification, no parse error).
            let keepAlive = try await AssetTests.http.execute(HTTPClientRequest(url: AssetTests.reachable(url)), timeout: .seconds(30))
            #expect(String(buffer: try await keepAlive.body.collect(upTo: 1024)) == "null")
            try await alice.save([.artist("renoir")], database: "public")
            let payload = try #require(try await SubscriptionTests.poll(url))
            // CloudKit JS: isPublicDatabase is dbs === 0; alert fields are read from aps.alert.
            #expect(payload["ck"]?["qry"]?["dbs"] == .int(0), "\(payload)")
            #expect(payload["ck"]?["qry"]?["rid"]?.stringValue == "renoir" && payload["ck"]?["qry"]?["fo"] == .int(1))
            #expect(payload["aps"]?["alert"]?["loc-key"]?.stringValue == "NEW_ARTIST" && payload["aps"]?["alert"]?["loc-args"]?[0]?.stringValue == "name")
            #expect(payload["aps"]?["alert"]?["action-loc-key"]?.stringValue == "VIEW" && payload["aps"]?["sound"]?.stringValue == "chime")
        }
    }

    @Test func finerCodesTravelAsExtensionErrorCode() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            // A share of over 100 participants: BAD_REQUEST, LIMIT_EXCEEDED where CKError keeps it.
            try await alice.createZones("Shared")
            let many = (0...100).map { #"{"userIdentity":{"lookupInfo":{"emailAddress":"p\#($0)@example.com"}}}"# }.joined(separator: ",")
            let share = try await alice.post("records/modify", #"{"zoneID":{"zoneName":"Shared"},"operations":[{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"participants":[\#(many)]}}]}"#)
            let refused = share.json["records"]?[0] ?? .null
            #expect(share.status == 200 && refused["serverErrorCode"]?.stringValue == "BAD_REQUEST")
            #expect(refused["extensionErrorCode"]?.stringValue == "LIMIT_EXCEEDED" && refused["recordSyncErrorCode"]?.stringValue == "LIMIT_EXCEEDED", "\(share.json)")
            // A zone token of an earlier incarnation, per zone in changes/zone.
            try await alice.createZones("Gallery")
            let token = try await alice.allChanges(zone: "Gallery").token
            #expect(try await alice.post("zones/modify", ModifyZonesRequest(operations: [.init(.delete, ZoneID(zoneName: "Gallery"))])).status == 200)
            try await alice.createZones("Gallery")
            let changes = try await alice.post("changes/zone", #"{"zones":[{"zoneID":{"zoneName":"Gallery"},"syncToken":"\#(token)"}]}"#)
            let zone = try #require(changes.json["zones"]?[0])
            #expect(zone["serverErrorCode"]?.stringValue == "BAD_REQUEST" && zone["extensionErrorCode"]?.stringValue == "CHANGE_TOKEN_EXPIRED", "\(changes.json)")
            // Codes Apple documents travel alone.
            let missing = try await alice.post("records/lookup", #"{"records":[{"recordName":"none"}]}"#)
            #expect(missing.json["records"]?[0]?["serverErrorCode"]?.stringValue == "NOT_FOUND" && missing.json["records"]?[0]?["extensionErrorCode"] == nil)
        }
    }

    /// `recordserver api-token add|list|revoke` on both engines.
    @Test func apiTokensAreIssuedListedAndRevokedFromTheCommandLine() async throws {
        try await withTemporaryDirectory { directory in
            for place in try await TokenTests.places(directory) {
                let added = try await TokenTests.recordserver(["api-token", "add", Self.container, "development", "--origin", "https://gallery.example.com",
                                                               "--origin", "http://localhost:8080"] + place)
                let token = added.output.trimmingCharacters(in: .whitespacesAndNewlines)
                #expect(added.status == 0 && token.hasPrefix("rsapi_"), "\(added.output)")
                let bad = try await TokenTests.recordserver(["api-token", "add", Self.container, "development", "--origin", "gallery.example.com"] + place)
                #expect(bad.status == 1 && bad.output.contains("not a web origin"), "\(bad.output)")
                let listed = TokenTests.rows(try await TokenTests.recordserver(["api-token", "list"] + place).output)
                #expect(listed.count == 1 && listed[0].prefix(4) == [Self.container, "development", "api-token-1", "https://gallery.example.com,http://localhost:8080"], "\(listed)")
                #expect(!(try await TokenTests.recordserver(["api-token", "list"] + place).output.contains(token)))
                #expect(try await TokenTests.recordserver(["api-token", "revoke", Self.container, "development", "api-token-1"] + place).status == 0)
                #expect(try await TokenTests.recordserver(["api-token", "list"] + place).output == "")
                #expect(try await TokenTests.recordserver(["api-token", "revoke", Self.container, "development", "api-token-1"] + place).status == 1)
            }
        }
    }
}
