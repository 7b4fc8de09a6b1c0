import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import RecordModel
import RecordRules
@testable import RecordServer
import Testing

/// Who may do what, over every endpoint the server has (the table below must name each one of
/// `DatabaseRoutes.endpoints`): no credentials, a revoked token and an expired one are refused;
/// another user's token on a zone ID naming this user is refused and changes nothing; another
/// user's public record cannot be changed; a bad, stale or replayed server-to-server signature
/// is refused.
@Suite struct AuthorizationTests {
    /// A request body per endpoint; `zoneID` is put where the endpoint takes one (`nil`: the
    /// endpoint takes none, so there is no zone to name).
    static let bodies: [String: @Sendable (String) -> String?] = [
        "records/modify": { #"{"zoneID":\#($0),"operations":[{"operationType":"forceReplace","record":{"recordName":"secret","recordType":"Artist","fields":{"name":{"value":"changed"}}}}]}"# },
        "records/lookup": { #"{"zoneID":\#($0),"records":[{"recordName":"secret"}]}"# },
        "records/query": { #"{"zoneID":\#($0),"query":{"recordType":"Artist"}}"# },
        "records/backlinks": { #"{"zoneID":\#($0),"recordName":"secret"}"# },
        "records/resolve": { _ in nil },
        "records/accept": { _ in nil },
        "records/changes": { #"{"zoneID":\#($0)}"# },
        "changes/zone": { #"{"zones":[{"zoneID":\#($0)}]}"# },
        "changes/database": { _ in nil },
        "zones/changes": { _ in nil },
        "zones/list": { _ in nil },
        "zones/lookup": { #"{"zones":[\#($0)]}"# },
        "zones/modify": { #"{"operations":[{"operationType":"delete","zone":{"zoneID":\#($0)}},{"operationType":"create","zone":{"zoneID":\#($0)}}]}"# },
        "assets/upload": { #"{"zoneID":\#($0),"tokens":[{"recordType":"Artist","fieldName":"image"}]}"# },
        "assets/rereference": { #"{"zoneID":\#($0),"assets":[{"recordName":"secret","fieldName":"image"}]}"# },
        "subscriptions/modify": { #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"spy","subscriptionType":"zone","zoneID":\#($0)}}]}"# },
        "subscriptions/list": { _ in nil },
        "subscriptions/lookup": { _ in nil },
        "tokens/create": { _ in nil },
        "tokens/register": { _ in nil },
        "users/current": { _ in nil },
        "users/caller": { _ in nil },
        "users/discover": { _ in nil },
        "users/lookup/email": { _ in nil },
        "users/lookup/id": { _ in nil },
        "users/discoverability": { _ in nil },
    ]

    /// Every request a bearer token authorises: each endpoint with each method, in both
    /// databases, plus the push stream and `tokens/*` without a database.
    static func everyRequest() -> [(method: HTTPRequest.Method, path: String)] {
        var requests: [(HTTPRequest.Method, String)] = []
        for endpoint in DatabaseRoutes.endpoints {
            for method in endpoint.methods {
                for database in ["private", "public"] {
                    requests.append((method, "/database/1/iCloud.test.Gallery/development/\(database)/\(endpoint.path)"))
                }
            }
        }
        requests.append((.get, "/database/1/iCloud.test.Gallery/development/private/notifications"))
        for prefix in ["database", "device"] {
            for name in ["create", "register"] { requests.append((.post, "/\(prefix)/1/iCloud.test.Gallery/development/tokens/\(name)")) }
        }
        return requests
    }

    @Test func everyEndpointHasARow() {
        let missing = DatabaseRoutes.endpoints.map(\.path).filter { Self.bodies[$0] == nil }
        #expect(missing.isEmpty, "endpoints without a row in AuthorizationTests.bodies: \(missing)")
    }

    @Test func noCredentialsARevokedTokenAndAnExpiredOneAreRefusedEverywhere() async throws {
        try await withServer { server in
            let carol = try await server.user("carol")
            let revoked = Credentials.newToken()
            try await server.store.addToken(forUserNamed: "carol", tokenHash: Credentials.hash(revoked), tokenName: "lost")
            let expired = Credentials.newToken()
            try await server.store.addToken(forUserNamed: "carol", tokenHash: Credentials.hash(expired), tokenName: "short",
                                            expiresAt: Int64(Date().timeIntervalSince1970 * 1000) + 300)
            for token in [revoked, expired] {
                let used = try await server.send(.post, "/database/1/iCloud.test.Gallery/development/private/users/current", headers: [.authorization: "Bearer \(token)"])
                #expect(used.status == 200)
            }
            try await server.store.revokeToken(named: "lost", ofUserNamed: "carol")
            try await Task.sleep(for: TokenCheck.revocationDelay + .milliseconds(100))

            let requests = Self.everyRequest()
            #expect(requests.count >= 50)
            for (method, path) in requests {
                let body = method == .get ? nil : "{}"
                let anonymous = try await server.send(method, path, body: body)
                #expect(anonymous.status == 421 && anonymous.code == "AUTHENTICATION_REQUIRED", "\(method) \(path): \(anonymous.status)")
                for (kind, token) in [("revoked", revoked), ("expired", expired)] {
                    let refused = try await server.send(method, path, headers: [.authorization: "Bearer \(token)"], body: body)
                    #expect(refused.status == 401 && refused.code == "AUTHENTICATION_FAILED", "\(kind): \(method) \(path): \(refused.status)")
                }
            }
            // Carol's own token still works.
            #expect(try await carol.post("users/current", "").status == 200)
        }
    }

    /// Server-to-server requests to every endpoint of the public database: one signed by
    /// another key, one dated beyond the skew, and one whose signature was already used are
    /// each `AUTHENTICATION_FAILED`.
    @Test func badStaleAndReplayedSignaturesAreRefusedEverywhere() async throws {
        try await withServer { server in
            _ = try await server.user("bot")
            let key = P256.Signing.PrivateKey()
            let id = try await server.store.addServerKey(forUserNamed: "bot", publicKeyPEM: key.publicKey.pemRepresentation)
            var checked = 0
            for endpoint in DatabaseRoutes.endpoints {
                for method in endpoint.methods {
                    let path = "/database/1/iCloud.test.Gallery/development/public/\(endpoint.path)"
                    let body = method == .get ? "" : "{}"
                    let once = try ServerKeyTests.signature(key, id: id, path: path, body: body)
                    _ = try await server.send(method, path, headers: once, body: method == .get ? nil : body)
                    let cases = [("another key's", try ServerKeyTests.signature(P256.Signing.PrivateKey(), id: id, path: path, body: body)),
                                 ("stale", try ServerKeyTests.signature(key, id: id, path: path, body: body, date: Date().addingTimeInterval(-600))),
                                 ("replayed", once)]
                    for (kind, headers) in cases {
                        let reply = try await server.send(method, path, headers: headers, body: method == .get ? nil : body)
                        #expect(reply.status == 401 && reply.code == "AUTHENTICATION_FAILED", "\(kind): \(method) \(path): \(reply.status) \(reply.json)")
                    }
                    checked += 1
                }
            }
            #expect(checked == DatabaseRoutes.endpoints.map(\.methods.count).reduce(0, +))
        }
    }

    /// The error codes of an answer: its own, or each of its results'.
    static func codes(_ reply: Reply) -> [String?] {
        if let code = reply.code { return [code] }
        for key in ["records", "zones", "subscriptions", "tokens", "assets"] {
            if let results = reply.json[key]?.arrayValue { return results.map { $0["serverErrorCode"]?.stringValue } }
        }
        return [nil]
    }

    /// What a user's zones, records and subscriptions are, to compare before and after.
    static func snapshot(_ session: Session) async throws -> [JSONValue] {
        var parts = [try await session.post("zones/list", "").json, try await session.post("subscriptions/list", "").json]
        for zone in ["_defaultZone", "Secret"] {
            parts.append(try await session.post("records/changes", #"{"zoneID":{"zoneName":"\#(zone)"}}"#).json["records"] ?? .null)
        }
        parts.append(try await session.post("records/changes", #"{}"#, database: "public").json["records"] ?? .null)
        return parts
    }

    /// Bob names Alice as the owner of a zone, in each endpoint that takes a zone ID, in both
    /// databases: each is refused (`ZONE_NOT_FOUND`) and neither user's data changes.
    @Test func aZoneIDNamingAnotherUserIsRefusedAndChangesNothing() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            try await alice.createZones("Secret")
            _ = try await alice.save([.artist("secret", "Alice's")], zone: "Secret")
            _ = try await alice.save([.artist("secret", "Alice's")])
            _ = try await alice.save([.artist("notice", "Alice's")], database: "public")
            let before = (try await Self.snapshot(alice), try await Self.snapshot(bob))

            var refused = 0
            for endpoint in DatabaseRoutes.endpoints {
                for (database, zone) in [("private", "Secret"), ("private", "_defaultZone"), ("public", "_defaultZone")] {
                    let zoneID = #"{"zoneName":"\#(zone)","ownerRecordName":"\#(alice.userRecordName)"}"#
                    guard let body = Self.bodies[endpoint.path]?(zoneID) else { continue }
                    let reply = try await bob.post(endpoint.path, body, database: database)
                    let codes = Self.codes(reply)
                    // The public database has no zones to create or delete, whoever is named.
                    let expected = database == "public" && endpoint.path == "zones/modify" ? "BAD_REQUEST" : "ZONE_NOT_FOUND"
                    #expect(!codes.isEmpty && codes.allSatisfy { $0 == expected }, "\(database) \(endpoint.path): \(reply.status) \(reply.json)")
                    refused += 1
                }
            }
            #expect(refused == 33)
            let after = (try await Self.snapshot(alice), try await Self.snapshot(bob))
            #expect(after.0 == before.0)
            #expect(after.1 == before.1)
        }
    }

    /// Bob cannot change or delete Alice's public record by any operation; he can read it.
    @Test func anotherUsersPublicRecordCannotBeChanged() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let saved = try await alice.save([.artist("notice", "Alice's")], database: "public")
            let tag = try #require(saved.first?.recordChangeTag)
            for operation in ["update", "forceUpdate", "replace", "forceReplace", "delete", "forceDelete"] {
                let tagged = operation.hasPrefix("force") ? "" : #","recordChangeTag":"\#(tag)""#
                let body = #"{"operations":[{"operationType":"\#(operation)","record":{"recordName":"notice","recordType":"Artist"\#(tagged),"fields":{"name":{"value":"Bob's"}}}}]}"#
                let reply = try await bob.post("records/modify", body, database: "public")
                #expect(Self.codes(reply) == ["ACCESS_DENIED"], "\(operation): \(reply.json)")
                #expect(reply.json["records"]?[0]?["reason"]?.stringValue?.isEmpty == false)
            }
            let atomic = try await bob.post("records/modify", #"{"atomic":true,"operations":[{"operationType":"forceDelete","record":{"recordName":"notice"}}]}"#, database: "public")
            #expect(Self.codes(atomic).contains("ACCESS_DENIED"), "\(atomic.json)")
            let read = try await bob.post("records/lookup", #"{"records":[{"recordName":"notice"}]}"#, database: "public")
            #expect(read.json["records"]?[0]?["fields"]?["name"]?["value"]?.stringValue == "Alice's")
            #expect(read.json["records"]?[0]?["recordChangeTag"]?.stringValue == tag)
        }
    }
}
