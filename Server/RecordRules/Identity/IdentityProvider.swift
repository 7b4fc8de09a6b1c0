import Crypto
import Foundation
import JWTKit
import RecordModel
import RecordStorage

/// An identity provider as the operator configures it (docs/deploying.md, "Identity
/// providers"): whose OpenID Connect ID tokens sign users in.
public struct IdentityProviderSettings: Sendable, Hashable, Codable {
    /// The operator's name for it (`apple`, `google`): what a sign-in request may name, and
    /// what `recordserver user list` shows.
    public var name: String
    /// Its issuer: an ID token's `iss` must be exactly this.
    public var issuer: String
    /// The client IDs its tokens are issued to (Sign in with Apple: the app's bundle ID, and the
    /// Services ID of its web sign-in): every `aud` of a token must be one of them.
    public var audiences: [String]
    /// A file holding its keys as a JSON Web Key Set, read again when a token names a key it
    /// does not hold (at most once per ``keyRefreshSeconds``).
    public var jwksFile: String?
    /// The URL of its keys (`jwks_uri`), fetched when first needed and again when a token names a
    /// key it does not hold (at most once per ``keyRefreshSeconds``).
    public var jwksURL: String?
    /// How far its clock and this server's may differ, in seconds, when `exp`, `nbf` and `iat`
    /// are checked: 60 unless given, at most 300.
    public var clockSkewSeconds: Int?
    /// The least time between two fetches of its keys, in seconds: 60 unless given.
    public var keyRefreshSeconds: Int?
    /// How the web sign-in page signs users in with it (a button running OpenID Connect's
    /// authorization code flow); `nil`: it is not offered there.
    public var web: WebSignInSettings?

    /// Sign in with Apple's issuer and keys, for `audiences` (the app's bundle ID, and the
    /// Services ID of its web sign-in, if it has one).
    public static func signInWithApple(audiences: [String]) -> Self {
        Self(name: "apple", issuer: "https://appleid.apple.com", audiences: audiences, jwksURL: "https://appleid.apple.com/auth/keys")
    }

    public init(name: String, issuer: String, audiences: [String], jwksFile: String? = nil, jwksURL: String? = nil,
                clockSkewSeconds: Int? = nil, keyRefreshSeconds: Int? = nil, web: WebSignInSettings? = nil) {
        self.web = web
        self.name = name
        self.issuer = issuer
        self.audiences = audiences
        self.jwksFile = jwksFile
        self.jwksURL = jwksURL
        self.clockSkewSeconds = clockSkewSeconds
        self.keyRefreshSeconds = keyRefreshSeconds
    }

    /// The providers a configuration file holds (a JSON array of settings, `nil`: none), and
    /// Sign in with Apple for `signInWithApple`'s client IDs if there are any.
    ///
    /// - Throws: `BAD_REQUEST` naming the file and what is wrong.
    public static func read(file: String?, signInWithApple: [String]) throws -> [Self] {
        var settings: [Self] = []
        if let file {
            do {
                settings = try JSONDecoder().decode([Self].self, from: Data(contentsOf: URL(fileURLWithPath: file)))
            } catch {
                throw RecordSyncError(.badRequest, "\(file) is not a JSON array of identity providers ({name, issuer, audiences, jwksFile or jwksURL}): \(error)")
            }
        }
        if !signInWithApple.isEmpty { settings.append(.signInWithApple(audiences: signInWithApple)) }
        for provider in settings {
            if let problem = provider.problem { throw RecordSyncError(.badRequest, problem) }
        }
        return settings
    }

    /// What is wrong with the settings, or `nil`.
    public var problem: String? {
        if let problem = NameRules.problem(withName: name, kind: "identity provider name") { return problem }
        if issuer.isEmpty { return "identity provider \(NameRules.quoted(name)) needs an issuer" }
        if audiences.isEmpty || audiences.contains(where: \.isEmpty) {
            return "identity provider \(NameRules.quoted(name)) needs one or more audiences (client IDs), none empty"
        }
        if (jwksFile == nil) == (jwksURL == nil) {
            return "identity provider \(NameRules.quoted(name)) needs its keys from either jwksFile or jwksURL"
        }
        if let skew = clockSkewSeconds, !(0...300).contains(skew) {
            return "identity provider \(NameRules.quoted(name)): clockSkewSeconds must be 0 to 300"
        }
        if let refresh = keyRefreshSeconds, refresh < 0 {
            return "identity provider \(NameRules.quoted(name)): keyRefreshSeconds must not be negative"
        }
        if let web {
            if let problem = web.problem { return "identity provider \(NameRules.quoted(name)): \(problem)" }
            if !audiences.contains(web.clientID) {
                return "identity provider \(NameRules.quoted(name)): its web clientID \(NameRules.quoted(web.clientID)) must be one of its audiences"
            }
        }
        return nil
    }
}

/// How the web sign-in page runs OpenID Connect's authorization code flow with an identity
/// provider (docs/deploying.md, "Signing in on the web"): with PKCE (`S256`), `state` and
/// `nonce`, the code exchanged at the token endpoint for an ID token checked as any other.
public struct WebSignInSettings: Sendable, Hashable, Codable {
    /// The client ID registered with the provider for this server (Sign in with Apple: the
    /// Services ID); one of the provider's audiences.
    public var clientID: String
    /// Where the browser goes to sign in (`https://appleid.apple.com/auth/authorize`).
    public var authorizationEndpoint: String
    /// Where the server exchanges the code (`https://appleid.apple.com/auth/token`).
    public var tokenEndpoint: String
    /// The client secret sent with the code (`client_secret_post`), or a file holding it.
    public var clientSecret: String?
    public var clientSecretFile: String?
    /// Sign in with Apple: the client secret is a JWT this server signs (ES256) with the key
    /// Apple issued (a PKCS #8 PEM file, `AuthKey_KEYID.p8`), naming the team and the key.
    public var appleTeamID: String?
    public var appleKeyID: String?
    public var applePrivateKeyFile: String?
    /// The scopes asked for: `openid email` unless given (`openid` is always sent).
    public var scopes: [String]?
    /// How the provider answers: `query` (a redirect, the default) or `form_post` (a form the
    /// browser posts: Sign in with Apple when it asks for the name or email).
    public var responseMode: String?
    /// The button's words: "Sign in with NAME" unless given.
    public var buttonTitle: String?

    public init(clientID: String, authorizationEndpoint: String, tokenEndpoint: String, clientSecret: String? = nil,
                clientSecretFile: String? = nil, appleTeamID: String? = nil, appleKeyID: String? = nil, applePrivateKeyFile: String? = nil,
                scopes: [String]? = nil, responseMode: String? = nil, buttonTitle: String? = nil) {
        self.clientID = clientID
        self.authorizationEndpoint = authorizationEndpoint
        self.tokenEndpoint = tokenEndpoint
        self.clientSecret = clientSecret
        self.clientSecretFile = clientSecretFile
        self.appleTeamID = appleTeamID
        self.appleKeyID = appleKeyID
        self.applePrivateKeyFile = applePrivateKeyFile
        self.scopes = scopes
        self.responseMode = responseMode
        self.buttonTitle = buttonTitle
    }

    /// What is wrong with the settings, or `nil`.
    public var problem: String? {
        if clientID.isEmpty { return "web needs a clientID" }
        for (name, url) in [("authorizationEndpoint", authorizationEndpoint), ("tokenEndpoint", tokenEndpoint)] {
            guard let components = URLComponents(string: url), ["http", "https"].contains(components.scheme?.lowercased() ?? ""),
                  components.host?.isEmpty == false, components.fragment == nil else {
                return "web.\(name) must be an http or https URL, not \(NameRules.quoted(url))"
            }
        }
        let apple = [appleTeamID, appleKeyID, applePrivateKeyFile]
        if apple.contains(where: { $0 != nil }), apple.contains(where: { $0 == nil }) {
            return "web: a client secret signed with an Apple key needs appleTeamID, appleKeyID and applePrivateKeyFile"
        }
        let secrets = (clientSecret != nil ? 1 : 0) + (clientSecretFile != nil ? 1 : 0) + (appleKeyID != nil ? 1 : 0)
        if secrets > 1 { return "web: give one of clientSecret, clientSecretFile or the Apple key" }
        if let responseMode, !["query", "form_post"].contains(responseMode) {
            return "web.responseMode must be query or form_post, not \(NameRules.quoted(responseMode))"
        }
        return nil
    }
}

/// What an ID token that passed every check says of its person.
public struct VerifiedIdentity: Sendable, Hashable {
    /// The provider's name (``IdentityProviderSettings/name``).
    public var provider: String
    public var issuer: String
    public var subject: String
    /// The token's `email`, and whether the token says the provider verified it.
    public var email: String?
    public var emailVerified: Bool
}

/// An identity provider at work: checks its ID tokens against its settings and its keys,
/// fetching the keys when first needed and again when a token names one it does not hold.
///
/// A token is accepted only when all of these hold (OpenID Connect Core 3.1.3.7): three parts;
/// `alg` `RS256` or `ES256` and a `kid` naming one of the provider's keys, whose signature
/// verifies (`none`, HMAC and a key of another provider are refused: the algorithm is the
/// key's own); `iss` the provider's issuer; every `aud` one of its audiences, and `azp`, if
/// there are several or it is given, one of them too; `exp` not past and `nbf` and `iat` not
/// ahead, within the clock skew; a `sub`; and when the caller sends a nonce, the token's
/// `nonce` that nonce or its SHA-256 in hex (what Sign in with Apple's native flow puts there).
public final class IdentityProvider: Sendable {
    public let settings: IdentityProviderSettings
    private let keys: KeySet

    /// - Parameter loadKeys: reads the provider's JSON Web Key Set (its file, its URL).
    public init(_ settings: IdentityProviderSettings, loadKeys: @escaping @Sendable () async throws -> String) throws {
        if let problem = settings.problem { throw RecordSyncError(.badRequest, problem) }
        self.settings = settings
        keys = KeySet(load: loadKeys, refreshInterval: .seconds(settings.keyRefreshSeconds ?? 60))
    }

    /// The issuer a token claims, unverified: for choosing which provider checks it. `nil` when
    /// the token does not read as a JWT.
    public static func claimedIssuer(of token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Self.base64URLDecoded(parts[1]),
              let claims = try? JSONDecoder().decode([String: JSONValue].self, from: payload) else { return nil }
        return string(claims["iss"])
    }

    /// Checks an ID token; the identity it proves, or `AUTHENTICATION_FAILED` with a reason
    /// naming the check that failed.
    public func verify(_ token: String, nonce: String?, now: Date = Date()) async throws -> VerifiedIdentity {
        let header = try Self.header(of: token)
        var collection = try await keys.current()
        var claims: IDTokenClaims
        do {
            claims = try await collection.verify(token, as: IDTokenClaims.self)
        } catch let error as JWTError where error.errorType == .noKeyProvided {
            // A key the provider may have published since the keys were read.
            guard let refreshed = try await keys.refreshed(after: collection) else {
                throw Self.refused("the ID token's key \(NameRules.quoted(header.kid)) is not one of identity provider \(NameRules.quoted(settings.name))'s keys")
            }
            collection = refreshed
            do {
                claims = try await collection.verify(token, as: IDTokenClaims.self)
            } catch {
                throw Self.refusal(error, kid: header.kid, provider: settings.name)
            }
        } catch {
            throw Self.refusal(error, kid: header.kid, provider: settings.name)
        }
        try check(claims, nonce: nonce, now: now)
        return VerifiedIdentity(provider: settings.name, issuer: claims.issuer.value, subject: claims.subject.value,
                                email: claims.email, emailVerified: claims.emailVerified?.value ?? false)
    }

    private func check(_ claims: IDTokenClaims, nonce: String?, now: Date) throws {
        let skew = TimeInterval(settings.clockSkewSeconds ?? 60)
        guard claims.issuer.value == settings.issuer else {
            throw Self.refused("the ID token's issuer \(NameRules.quoted(claims.issuer.value)) is not identity provider \(NameRules.quoted(settings.name))'s")
        }
        let audiences = Set(settings.audiences)
        let given = claims.audience.value
        guard !given.isEmpty, given.allSatisfy(audiences.contains) else {
            throw Self.refused("the ID token's audience \(given.map(NameRules.quoted).joined(separator: ", ")) is not this app's (\(settings.audiences.joined(separator: ", ")))")
        }
        if given.count > 1 || claims.authorizedParty != nil {
            guard let party = claims.authorizedParty, audiences.contains(party) else {
                throw Self.refused("the ID token's authorized party (azp) is not this app's")
            }
        }
        guard claims.subject.value.isEmpty == false else { throw Self.refused("the ID token names no subject (sub)") }
        guard now.addingTimeInterval(-skew) < claims.expires.value else {
            throw Self.refused("the ID token expired at \(Self.text(claims.expires.value))")
        }
        if let notBefore = claims.notBefore?.value, notBefore > now.addingTimeInterval(skew) {
            throw Self.refused("the ID token is not valid before \(Self.text(notBefore))")
        }
        if let issuedAt = claims.issuedAt?.value, issuedAt > now.addingTimeInterval(skew) {
            throw Self.refused("the ID token was issued in the future (\(Self.text(issuedAt)))")
        }
        if let nonce {
            let hashed = SHA256.hash(data: Data(nonce.utf8)).map { String(format: "%02x", $0) }.joined()
            guard let given = claims.nonce, Self.constantTimeEqual(given, nonce) || Self.constantTimeEqual(given, hashed) else {
                throw Self.refused("the ID token's nonce is not the one sent")
            }
        }
    }

    /// The `alg` and `kid` of a token's header, refusing what no provider's key may sign.
    private static func header(of token: String) throws -> (alg: String, kid: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let data = base64URLDecoded(parts[0]),
              let header = try? JSONDecoder().decode([String: JSONValue].self, from: data) else {
            throw refused("the ID token is not a JWT (three base64url parts, a JSON header)")
        }
        guard let alg = string(header["alg"]), ["RS256", "ES256"].contains(alg) else {
            throw refused("the ID token's algorithm \(string(header["alg"]).map(NameRules.quoted) ?? "(none)") is not accepted: RS256 or ES256")
        }
        guard let kid = string(header["kid"]), !kid.isEmpty else { throw refused("the ID token names no key (kid)") }
        return (alg, kid)
    }

    private static func refusal(_ error: any Error, kid: String, provider: String) -> RecordSyncError {
        if let error = error as? RecordSyncError { return error }
        guard let error = error as? JWTError else { return refused("the ID token could not be checked: \(error)") }
        switch error.errorType {
        case .noKeyProvided, .unknownKID:
            return refused("the ID token's key \(NameRules.quoted(kid)) is not one of identity provider \(NameRules.quoted(provider))'s keys")
        case .signatureVerificationFailed:
            return refused("the ID token's signature does not verify with identity provider \(NameRules.quoted(provider))'s key \(NameRules.quoted(kid))")
        case .malformedToken, .invalidBool:
            return refused("the ID token's claims do not read: iss, sub, aud and exp are required")
        default:
            return refused("the ID token is refused (\(error.errorType))")
        }
    }

    private static func string(_ value: JSONValue?) -> String? {
        if case .string(let text)? = value { return text }
        return nil
    }

    static func refused(_ reason: String) -> RecordSyncError { RecordSyncError(.authenticationFailed, reason) }

    private static func text(_ date: Date) -> String { ISO8601DateFormatter().string(from: date) }

    /// Whether two strings are equal, compared in time that does not depend on where they
    /// differ (for secrets).
    public static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let a = Array(a.utf8), b = Array(b.utf8)
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    static func base64URLDecoded(_ part: Substring) -> Data? {
        var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return Data(base64Encoded: text)
    }
}

/// The claims of an ID token RecordSync reads; every check is ``IdentityProvider``'s.
struct IDTokenClaims: JWTPayload {
    enum CodingKeys: String, CodingKey {
        case issuer = "iss", audience = "aud", subject = "sub", expires = "exp"
        case issuedAt = "iat", notBefore = "nbf", authorizedParty = "azp"
        case nonce, email
        case emailVerified = "email_verified"
    }

    var issuer: IssuerClaim
    var audience: AudienceClaim
    var subject: SubjectClaim
    var expires: ExpirationClaim
    var issuedAt: IssuedAtClaim?
    var notBefore: NotBeforeClaim?
    var authorizedParty: String?
    var nonce: String?
    var email: String?
    /// Apple sends the string `"true"`; others a boolean.
    var emailVerified: BoolClaim?

    func verify(using _: some JWTAlgorithm) async throws {}
}

/// A provider's keys: read when first needed, read again at most once per `refreshInterval`
/// when a token names a key they lack. Each read builds a new collection, so keys the provider
/// dropped are dropped here too.
actor KeySet {
    private let load: @Sendable () async throws -> String
    private let refreshInterval: Duration
    private var collection: JWTKeyCollection?
    private var readAt: ContinuousClock.Instant?

    init(load: @escaping @Sendable () async throws -> String, refreshInterval: Duration) {
        self.load = load
        self.refreshInterval = refreshInterval
    }

    func current() async throws -> JWTKeyCollection {
        if let collection { return collection }
        return try await read()
    }

    /// Newer keys than `stale`, read now unless they were read within the interval: `nil` then.
    func refreshed(after stale: JWTKeyCollection) async throws -> JWTKeyCollection? {
        if let collection, collection !== stale { return collection }
        if let readAt, ContinuousClock.now - readAt < refreshInterval { return nil }
        return try await read()
    }

    private func read() async throws -> JWTKeyCollection {
        readAt = .now
        let text: String
        do {
            text = try await load()
        } catch {
            throw RecordSyncError(.tryAgainLater, "the identity provider's keys could not be read: \(error)")
        }
        let keys = JWTKeyCollection()
        do {
            try await keys.add(jwksJSON: text)
        } catch {
            throw RecordSyncError(.tryAgainLater, "the identity provider's keys do not read as a JSON Web Key Set: \(error)")
        }
        // Without a default key, a token naming an unknown key is refused as such
        // (`noKeyProvided`) rather than checked against whichever key came first.
        await keys.clearDefault()
        collection = keys
        return keys
    }
}
