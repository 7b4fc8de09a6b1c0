import Crypto
import CryptoExtras
import Foundation
import Hummingbird
import JWTKit
import RecordClient
import RecordModel
import RecordRules
import RecordServer
import TestSupport
import Testing

/// Signing in with ID tokens (docs/protocol.md, "Signing in"), against identity providers the
/// tests make: their own keys, their key sets served over HTTP on a loopback port, their tokens.
@Suite struct IdentityProviderTests {
    static let container = "iCloud.test.Gallery"
    static let path = "/auth/1/\(container)/development/signin/idtoken"

    @Test func aValidIDTokenSignsInAndCreatesTheUserOnce() async throws {
        let provider = try await TestIdentityProvider.make(issuer: "https://id.test.example")
        try await withKeyHost(provider.jwks()) { host in
            try await withServer(configure: { $0.identityProviders = [provider.settings(keys: host.url)] }) { server in
                let usersBefore = try await server.store.users().count
                let first = try await Self.signIn(server, try await provider.token(provider.claims(sub: "person-1", email: "Ada@Example.com", verified: .string("true"))))
                #expect(first.status == 200, "\(first.reason)")
                let answer = try first.decode(SignInResponse.self)
                #expect(answer.created)
                #expect(answer.tokenName == "sign-in-1")

                // The session token works: a record saved with it names the new user.
                let session = Session(client: server.client, token: answer.ckWebAuthToken, container: Self.container, userRecordName: answer.userRecordName)
                let saved = try await session.save([Record(recordName: "note", recordType: "Note", fields: ["text": .string("hello")])])
                #expect(saved.first?.created?.userRecordName == answer.userRecordName)

                // Again, with the provider's other key (ES256) and a device name: the same user.
                let again = try await Self.signIn(server, try await provider.token(provider.claims(sub: "person-1"), kid: provider.ecKid),
                                                  deviceName: "Ada's iPad")
                #expect(again.status == 200, "\(again.reason)")
                let second = try again.decode(SignInResponse.self)
                #expect(!second.created)
                #expect(second.userRecordName == answer.userRecordName)
                #expect(second.tokenName == "Ada's iPad")
                #expect(try await server.store.users().count == usersBefore + 1)

                // Apple's "true" made the address verified: the user can be found by it.
                let user = try #require(try await server.store.users().first { $0.user.userRecordName == answer.userRecordName }?.user)
                #expect(try await server.store.profile(of: user).email == "ada@example.com")

                // An unverified address is never the user's to be found by.
                let other = try await Self.signIn(server, try await provider.token(provider.claims(sub: "person-2", email: "bob@example.com", verified: .bool(false))))
                let bob = try other.decode(SignInResponse.self)
                let bobUser = try #require(try await server.store.users().first { $0.user.userRecordName == bob.userRecordName }?.user)
                #expect(try await server.store.profile(of: bobUser).email == nil)

                // `user list` says how each signs in.
                if server.backend.description == Backend.sqlite.description {
                    let listed = try await ChildProcess.run("recordserver", ["user", "list", "--data", server.directory])
                    #expect(listed.output.contains("\t\(user.userRecordName)\t") && listed.output.split(separator: "\n").allSatisfy { $0.hasSuffix("\ttest") },
                            "\(listed.output)")
                }

                // Signing out revokes the token it sends, and only that one.
                let out = try await server.send(.post, "/auth/1/\(Self.container)/development/signout",
                                                headers: [.authorization: "Bearer \(answer.ckWebAuthToken)"])
                #expect(out.status == 200, "\(out.reason)")
                #expect(try await server.store.tokens(ofUserNamed: user.name).map(\.name) == ["Ada's iPad"])
                let again2 = try await server.send(.post, "/auth/1/\(Self.container)/development/signout",
                                                   headers: [.authorization: "Bearer \(answer.ckWebAuthToken)"])
                #expect(again2.status == 401 && again2.code == "AUTHENTICATION_FAILED", "\(again2.reason)")

                // Deleting the user removes its identity: the next sign-in makes a new user, whose
                // record name is never the deleted one's.
                try await server.store.deleteUser(named: user.name)
                let anew = try await Self.signIn(server, try await provider.token(provider.claims(sub: "person-1")))
                let reborn = try anew.decode(SignInResponse.self)
                #expect(reborn.created)
                #expect(reborn.userRecordName != answer.userRecordName)
                #expect(try await server.store.tokens(ofUserNamed: user.name).count == 1)
            }
        }
    }

    @Test func badIDTokensAreRefusedAndCreateNothing() async throws {
        let provider = try await TestIdentityProvider.make(issuer: "https://id.test.example")
        let stranger = try await TestIdentityProvider.make(issuer: "https://stranger.test.example", rsaKid: provider.rsaKid, ecKid: "stranger-ec")
        let now = Int64(Date().timeIntervalSince1970)
        try await withKeyHost(provider.jwks()) { host in
            try await withServer(configure: { $0.identityProviders = [provider.settings(keys: host.url)] }) { server in
                var cases: [(String, String, nonce: String?, named: String?, expected: String)] = []
                func add(_ name: String, _ token: String, nonce: String? = nil, named: String? = nil, _ expected: String) {
                    cases.append((name, token, nonce, named, expected))
                }
                add("expired", try await provider.token(provider.claims(exp: now - 3600)), "expired")
                add("not yet valid", try await provider.token(provider.claims(nbf: now + 3600)), "not valid before")
                add("issued in the future", try await provider.token(provider.claims(iat: now + 3600)), "issued in the future")
                add("wrong issuer, provider named", try await provider.token(provider.claims(iss: "https://evil.example")), named: "test", "issuer")
                add("wrong issuer", try await provider.token(provider.claims(iss: "https://evil.example")), "no identity provider")
                add("wrong audience", try await provider.token(provider.claims(aud: .string("com.example.other"))), "audience")
                add("an extra audience", try await provider.token(provider.claims(aud: .array([.string("com.example.app"), .string("com.example.other")]))), "audience")
                add("wrong nonce", try await provider.token(provider.claims(nonce: "n-2")), nonce: "n-1", "nonce")
                add("no nonce", try await provider.token(provider.claims()), nonce: "n-1", "nonce")
                add("bad signature", Self.tampered(try await provider.token(provider.claims())), "signature")
                add("changed claims", Self.withPayload(try await provider.token(provider.claims()), provider.claims(sub: "someone-else")), "signature")
                add("alg none", Self.unsigned(provider.claims(), kid: provider.rsaKid), "algorithm")
                add("HS256 with the public key", provider.hmacWithPublicKey(provider.claims()), "algorithm")
                add("another provider's key", try await stranger.token(provider.claims(), kid: stranger.ecKid), "key")
                add("another provider's key under this one's kid", try await stranger.token(provider.claims()), "signature")
                add("no subject", try await provider.token(provider.claims(sub: "")), "subject")
                add("not a JWT", "not.a-jwt", "JWT")
                for (name, token, nonce, named, expected) in cases {
                    let reply = try await Self.signIn(server, token, nonce: nonce, provider: named)
                    #expect(reply.status == 401, "\(name): \(reply.status) \(reply.reason)")
                    #expect(reply.code == "AUTHENTICATION_FAILED", "\(name)")
                    #expect(reply.reason.contains(expected), "\(name): \(reply.reason)")
                }
                #expect(try await server.store.users().isEmpty)
                // The right nonce, raw or as Sign in with Apple's native flow hashes it, passes.
                let hashed = SHA256.hash(data: Data("n-1".utf8)).map { String(format: "%02x", $0) }.joined()
                for given in ["n-1", hashed] {
                    let reply = try await Self.signIn(server, try await provider.token(provider.claims(nonce: given)), nonce: "n-1")
                    #expect(reply.status == 200, "\(reply.reason)")
                }
            }
        }
    }

    @Test func rotatedKeysAreReadAgainAtMostOncePerInterval() async throws {
        let provider = try await TestIdentityProvider.make(issuer: "https://id.test.example")
        let rotated = try await TestIdentityProvider.make(issuer: "https://id.test.example", rsaKid: "rsa-2", ecKid: "ec-2")
        try await withKeyHost(provider.jwks()) { host in
            try await withServer(configure: { $0.identityProviders = [provider.settings(keys: host.url, refreshSeconds: 2)] }) { server in
                await host.serve(try provider.jwks())  // each engine's server starts from the first set
                let reads = await host.reads
                #expect(try await Self.signIn(server, try await provider.token(provider.claims())).status == 200)
                #expect(await host.reads == reads + 1)

                // The provider rotates its keys: a token naming the new key, within the interval,
                // is refused without reading the keys again.
                await host.serve(try rotated.jwks())
                let early = try await Self.signIn(server, try await rotated.token(provider.claims()))
                #expect(early.status == 401 && early.reason.contains("not one of"), "\(early.reason)")
                #expect(await host.reads == reads + 1)

                // After the interval, the unknown key makes the server read the keys again.
                try await Task.sleep(for: .milliseconds(2100))
                let late = try await Self.signIn(server, try await rotated.token(provider.claims()))
                #expect(late.status == 200, "\(late.reason)")
                #expect(await host.reads == reads + 2)
                // The old key is gone with the old set.
                let old = try await Self.signIn(server, try await provider.token(provider.claims()))
                #expect(old.status == 401, "\(old.reason)")
                #expect(await host.reads == reads + 2)
            }
        }
    }

    @Test func theClientLibrarySignsInWithAnIDToken() async throws {
        let provider = try await TestIdentityProvider.make(issuer: "https://id.test.example")
        try await withKeyHost(provider.jwks()) { host in
            try await withTemporaryDirectory { directory in
                try await withLiveServer(directory: directory, configure: { $0.identityProviders = [provider.settings(keys: host.url)] }) { server in
                    let token = try await provider.token(provider.claims(sub: "client-1"))
                    let (container, answer) = try await Container.signIn(serverURL: server.url, identifier: Self.container, idToken: token,
                                                                         deviceName: "laptop", givenName: "Ada")
                    #expect(answer.created && answer.tokenName == "laptop")
                    #expect(try await container.userRecordID().recordName == answer.userRecordName)
                    // Signing out revokes the session token.
                    try await container.signOut()
                    // Refused once the server's token cache notices the revocation (within about a second).
                    var refused: RecordSyncError?
                    for _ in 0..<40 where refused == nil {
                        do { _ = try await container.userRecordID(); try await Task.sleep(for: .milliseconds(100)) } catch let error as RecordSyncError { refused = error }
                    }
                    #expect(refused?.code == .authenticationFailed, "\(String(describing: refused))")
                    await #expect { try await container.signOut() } throws: { ($0 as? RecordSyncError)?.code == .authenticationFailed }
                    // A refused token is the server's error, with its reason.
                    await #expect {
                        _ = try await Container.signIn(serverURL: server.url, identifier: Self.container, idToken: Self.tampered(token))
                    } throws: { error in
                        guard let error = error as? RecordSyncError else { return false }
                        return error.code == .authenticationFailed && error.reason.contains("signature")
                    }
                }
            }
        }
    }

    @Test func recordctlLogsInAndOut() async throws {
        let provider = try await TestIdentityProvider.make(issuer: "https://id.test.example")
        try await withKeyHost(provider.jwks()) { host in
            try await withTemporaryDirectory { directory in
                try await withLiveServer(directory: directory, configure: { $0.identityProviders = [provider.settings(keys: host.url)] }) { server in
                    let profile = directory + "/config/profile.json"
                    let token = try await provider.token(provider.claims(sub: "cli-1"))
                    let login = try await ChildProcess.run("recordctl", ["login", "--server", server.url.absoluteString, "--container", Self.container,
                                                                         "--profile", profile, "--id-token", token, "--device-name", "ci"], mergeErrors: true)
                    #expect(login.status == 0 && login.output.contains("signed in as _") && login.output.contains("a new user"), "\(login.output)")
                    let permissions = try FileManager.default.attributesOfItem(atPath: profile)[.posixPermissions] as? Int
                    #expect(permissions == 0o600)
                    let listed = try await ChildProcess.run("recordctl", ["zones", "list", "--profile", profile], mergeErrors: true)
                    #expect(listed.status == 0, "\(listed.output)")

                    let logout = try await ChildProcess.run("recordctl", ["logout", "--profile", profile], mergeErrors: true)
                    #expect(logout.status == 0, "\(logout.output)")
                    let kept = try JSONDecoder().decode([String: String].self, from: Data(contentsOf: URL(fileURLWithPath: profile)))
                    #expect(kept["token"] == nil && kept["server"] == server.url.absoluteString, "\(kept)")
                    #expect(try await server.store.users().count == 1)
                    let user = try #require(try await server.store.users().first?.user)
                    #expect(try await server.store.tokens(ofUserNamed: user.name).isEmpty)
                    let refused = try await ChildProcess.run("recordctl", ["login", "--server", server.url.absoluteString, "--profile", profile,
                                                                           "--id-token", Self.tampered(token)], mergeErrors: true)
                    #expect(refused.status == 1 && refused.output.contains("AUTHENTICATION_FAILED"), "\(refused.output)")
                }
            }
        }
    }

    @Test func keysFromAFile() async throws {
        let provider = try await TestIdentityProvider.make(issuer: "https://file.test.example")
        try await withTemporaryDirectory { directory in
            let file = directory + "/jwks.json"
            try provider.jwks().write(toFile: file, atomically: true, encoding: .utf8)
            var settings = provider.settings(keys: URL(fileURLWithPath: file))
            settings.jwksURL = nil
            settings.jwksFile = file
            try await withServer(configure: { [settings] in $0.identityProviders = [settings] }) { server in
                let reply = try await Self.signIn(server, try await provider.token(provider.claims()))
                #expect(reply.status == 200, "\(reply.reason)")
            }
        }
    }

    @Test func withoutProvidersIDTokensFindNoEndpointAndSettingsAreChecked() async throws {
        try await withServer { server in
            let reply = try await Self.signIn(server, "a.b.c")
            #expect(reply.status == 404 && reply.code == "NOT_FOUND", "\(reply.reason)")
        }
        let bad = [
            IdentityProviderSettings(name: "x", issuer: "", audiences: ["a"], jwksURL: "http://127.0.0.1/keys"),
            IdentityProviderSettings(name: "x", issuer: "i", audiences: [], jwksURL: "http://127.0.0.1/keys"),
            IdentityProviderSettings(name: "x", issuer: "i", audiences: ["a"]),
            IdentityProviderSettings(name: "x", issuer: "i", audiences: ["a"], jwksFile: "f", jwksURL: "http://127.0.0.1/keys"),
            IdentityProviderSettings(name: "x", issuer: "i", audiences: ["a"], jwksFile: "f", clockSkewSeconds: 301),
        ]
        for settings in bad { #expect(settings.problem != nil, "\(settings)") }
    }

    // MARK: - Helpers

    static func signIn(_ server: TestServer, _ token: String, nonce: String? = nil, provider: String? = nil, deviceName: String? = nil) async throws -> Reply {
        let body = IDTokenSignInRequest(idToken: token, provider: provider, nonce: nonce, deviceName: deviceName)
        return try await server.send(.post, path, headers: [.contentType: "application/json"],
                                     body: String(decoding: try JSONEncoder().encode(body), as: UTF8.self))
    }

    /// The token with one character of its signature changed.
    static func tampered(_ token: String) -> String {
        var parts = token.split(separator: ".").map(String.init)
        let signature = parts[2]
        let middle = signature.index(signature.startIndex, offsetBy: signature.count / 2)
        parts[2] = signature.replacingCharacters(in: middle...middle, with: signature[middle] == "A" ? "B" : "A")
        return parts.joined(separator: ".")
    }

    /// The token with other claims and its signature kept.
    static func withPayload(_ token: String, _ claims: [String: JSONValue]) -> String {
        var parts = token.split(separator: ".").map(String.init)
        parts[1] = TestIdentityProvider.base64URL(try! JSONEncoder().encode(claims))
        return parts.joined(separator: ".")
    }

    /// `alg: none`, no signature.
    static func unsigned(_ claims: [String: JSONValue], kid: String) -> String {
        let header = TestIdentityProvider.base64URL(Data(#"{"alg":"none","kid":"\#(kid)","typ":"JWT"}"#.utf8))
        return header + "." + TestIdentityProvider.base64URL(try! JSONEncoder().encode(claims)) + "."
    }
}

/// Serves a key set on a loopback port and counts its reads; the set can change (a rotation).
actor KeyHost {
    let url: URL
    private var text: String
    private(set) var reads = 0

    init(url: URL, text: String) {
        self.url = url
        self.text = text
    }

    func serve(_ text: String) { self.text = text }

    func read() -> String {
        reads += 1
        return text
    }
}

/// Runs `body` with a key host serving `jwks` at `/keys`.
func withKeyHost(_ jwks: String, _ body: @escaping @Sendable (KeyHost) async throws -> Void) async throws {
    let holder = KeyHostHolder()
    let router = Router()
    router.get("/keys") { _, _ -> Response in
        let text = await holder.host?.read() ?? ""
        return Response(status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
    try await withLoopbackServer(router) { url in
        let host = KeyHost(url: url.appendingPathComponent("keys"), text: jwks)
        await holder.set(host)
        try await body(host)
    }
}

private actor KeyHostHolder {
    var host: KeyHost?
    func set(_ host: KeyHost) { self.host = host }
}

/// An identity provider made by a test: an RSA key and a P-256 key, their key set, and tokens.
struct TestIdentityProvider: Sendable {
    let issuer: String
    let rsaKid: String
    let ecKid: String
    let rsa: _RSA.Signing.PrivateKey
    let ec: ES256PrivateKey
    let signer: JWTKeyCollection

    static func make(issuer: String, rsaKid: String = "rsa-1", ecKid: String = "ec-1") async throws -> Self {
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let ec = ES256PrivateKey()
        let signer = JWTKeyCollection()
        await signer.add(rsa: try Insecure.RSA.PrivateKey(backing: rsa), digestAlgorithm: .sha256, kid: JWKIdentifier(string: rsaKid))
        await signer.add(ecdsa: ec, kid: JWKIdentifier(string: ecKid))
        return Self(issuer: issuer, rsaKid: rsaKid, ecKid: ecKid, rsa: rsa, ec: ec, signer: signer)
    }

    func settings(keys: URL, refreshSeconds: Int? = nil) -> IdentityProviderSettings {
        IdentityProviderSettings(name: "test", issuer: issuer, audiences: ["com.example.app", "com.example.web"], jwksURL: keys.absoluteString,
                                 keyRefreshSeconds: refreshSeconds)
    }

    /// The public keys as a JSON Web Key Set, as a provider publishes them.
    func jwks() throws -> String {
        let primitives = try Insecure.RSA.PrivateKey(backing: rsa).publicKey.getKeyPrimitives()
        guard let point = ec.publicKey.parameters else { throw CancellationError() }
        return """
            {"keys":[
            {"kty":"RSA","alg":"RS256","use":"sig","kid":"\(rsaKid)","n":"\(Self.base64URL(primitives.modulus))","e":"\(Self.base64URL(primitives.publicExponent))"},
            {"kty":"EC","alg":"ES256","use":"sig","kid":"\(ecKid)","crv":"P-256","x":"\(point.x)","y":"\(point.y)"}
            ]}
            """
    }

    /// Valid claims for the app, changed where given.
    func claims(iss: String? = nil, sub: String = "person-1", aud: JSONValue = .string("com.example.app"), exp: Int64? = nil,
                nbf: Int64? = nil, iat: Int64? = nil, nonce: String? = nil, email: String? = nil, verified: JSONValue? = nil) -> [String: JSONValue] {
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: JSONValue] = ["iss": .string(iss ?? issuer), "sub": .string(sub), "aud": aud, "exp": .int(exp ?? now + 600),
                                           "iat": .int(iat ?? now)]
        if let nbf { claims["nbf"] = .int(nbf) }
        if let nonce { claims["nonce"] = .string(nonce) }
        if let email { claims["email"] = .string(email) }
        if let verified { claims["email_verified"] = verified }
        return claims
    }

    /// The claims signed with the key `kid` (the RSA key unless given).
    func token(_ claims: [String: JSONValue], kid: String? = nil) async throws -> String {
        try await signer.sign(Claims(values: claims), kid: JWKIdentifier(string: kid ?? rsaKid))
    }

    /// The claims "signed" with HS256, the RSA public key's PEM as the secret: the confusion
    /// attack a verifier that lets the header pick the algorithm falls for.
    func hmacWithPublicKey(_ claims: [String: JSONValue]) -> String {
        let header = Self.base64URL(Data(#"{"alg":"HS256","kid":"\#(rsaKid)","typ":"JWT"}"#.utf8))
        let signed = header + "." + Self.base64URL(try! JSONEncoder().encode(claims))
        let mac = HMAC<SHA256>.authenticationCode(for: Data(signed.utf8), using: SymmetricKey(data: Data(rsa.publicKey.pemRepresentation.utf8)))
        return signed + "." + Self.base64URL(Data(mac))
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    struct Claims: JWTPayload {
        var values: [String: JSONValue]
        init(values: [String: JSONValue]) { self.values = values }
        init(from decoder: any Decoder) throws { values = try [String: JSONValue](from: decoder) }
        func encode(to encoder: any Encoder) throws { try values.encode(to: encoder) }
        func verify(using _: some JWTAlgorithm) async throws {}
    }
}
