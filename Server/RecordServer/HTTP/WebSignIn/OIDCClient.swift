import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import RecordModel
import RecordRules

/// The server's side of OpenID Connect's authorization code flow with PKCE (RFC 7636), for the
/// web sign-in page's provider buttons: where to send the browser, and the code's exchange
/// for an ID token, with the client secret the provider's settings give (a JWT this server
/// signs, for Sign in with Apple).
struct OIDCClient: Sendable {
    let provider: IdentityProvider
    let web: WebSignInSettings

    /// A new random value for `state`, `nonce` or the code verifier: 32 random bytes, base64url.
    static func randomValue() -> String {
        String(Credentials.newToken().dropFirst("rs_".count))
    }

    /// The PKCE challenge of a verifier (`S256`).
    static func challenge(of verifier: String) -> String {
        Base64URL.encode(Data(SHA256.hash(data: Data(verifier.utf8))))
    }

    /// The provider's sign-in URL for one flow.
    func authorizationURL(redirectURI: String, state: String, nonce: String, verifier: String) -> String {
        var components = URLComponents(string: web.authorizationEndpoint)!
        var items = components.queryItems ?? []
        let scopes = ["openid"] + (web.scopes ?? ["email"]).filter { $0 != "openid" }
        items += [
            URLQueryItem(name: "response_type", value: "code"),
            URLQueryItem(name: "client_id", value: web.clientID),
            URLQueryItem(name: "redirect_uri", value: redirectURI),
            URLQueryItem(name: "scope", value: scopes.joined(separator: " ")),
            URLQueryItem(name: "state", value: state),
            URLQueryItem(name: "nonce", value: nonce),
            URLQueryItem(name: "code_challenge", value: Self.challenge(of: verifier)),
            URLQueryItem(name: "code_challenge_method", value: "S256"),
        ]
        if let mode = web.responseMode, mode != "query" { items.append(URLQueryItem(name: "response_mode", value: mode)) }
        components.percentEncodedQuery = items.map { "\(Self.formEncoded($0.name))=\(Self.formEncoded($0.value ?? ""))" }.joined(separator: "&")
        return components.string!
    }

    /// Exchanges a code for an ID token and checks it (issuer, audience, signature, expiry,
    /// `nonce`): the identity it proves.
    ///
    /// - Throws: `AUTHENTICATION_FAILED` when the provider refuses the code (a wrong verifier,
    ///   a code used before) or the ID token fails a check; `TRY_AGAIN_LATER` when the provider
    ///   cannot be reached.
    func identity(code: String, verifier: String, redirectURI: String, nonce: String) async throws -> VerifiedIdentity {
        var form = [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI),
                    ("client_id", web.clientID), ("code_verifier", verifier)]
        if let secret = try clientSecret() { form.append(("client_secret", secret)) }
        var request = HTTPClientRequest(url: web.tokenEndpoint)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        request.body = .bytes(ByteBuffer(string: form.map { "\(Self.formEncoded($0.0))=\(Self.formEncoded($0.1))" }.joined(separator: "&")))
        let name = NameRules.quoted(provider.settings.name)
        let status: UInt, body: ByteBuffer
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            status = response.status.code
            body = try await response.body.collect(upTo: 1 << 20)
        } catch {
            throw RecordSyncError(.tryAgainLater, "identity provider \(name) could not be reached to finish the sign-in")
        }
        let answer = (try? JSONDecoder().decode([String: JSONValue].self, from: Data(buffer: body))) ?? [:]
        guard status == 200, case .string(let idToken)? = answer["id_token"] else {
            var said = ""
            if case .string(let error)? = answer["error"] { said = " (\(error))" }
            throw RecordSyncError(.authenticationFailed, "identity provider \(name) refused the sign-in's code\(said)")
        }
        return try await provider.verify(idToken, nonce: nonce)
    }

    /// The client secret sent with the code: the configured one, the file's, or for Sign in
    /// with Apple a JWT signed (ES256) with the operator's key: `iss` the team, `sub` the
    /// Services ID, `aud` Apple, five minutes' life.
    func clientSecret(now: Date = Date()) throws -> String? {
        if let secret = web.clientSecret { return secret }
        if let file = web.clientSecretFile {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw RecordSyncError(.internalError, "the client secret file of identity provider \(NameRules.quoted(provider.settings.name)) cannot be read")
            }
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard let team = web.appleTeamID, let keyID = web.appleKeyID, let keyFile = web.applePrivateKeyFile else { return nil }
        guard let pem = try? String(contentsOfFile: keyFile, encoding: .utf8), let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) else {
            throw RecordSyncError(.internalError, "the Apple key file of identity provider \(NameRules.quoted(provider.settings.name)) is not a P-256 private key in PEM")
        }
        return try Self.appleClientSecret(team: team, keyID: keyID, clientID: web.clientID, audience: provider.settings.issuer, key: key, now: now)
    }

    /// Sign in with Apple's client secret: a JWT (ES256) naming the key, signed by it.
    static func appleClientSecret(team: String, keyID: String, clientID: String, audience: String, key: P256.Signing.PrivateKey,
                                  now: Date) throws -> String {
        let issued = Int(now.timeIntervalSince1970)
        let header = try JSONSerialization.data(withJSONObject: ["alg": "ES256", "kid": keyID], options: [.sortedKeys])
        let claims = try JSONSerialization.data(withJSONObject: ["iss": team, "iat": issued, "exp": issued + 300, "aud": audience, "sub": clientID] as [String: Any],
                                                options: [.sortedKeys])
        let input = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        let signature = try key.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// `text` encoded for a form or a query: everything but ASCII's unreserved characters
    /// (RFC 3986) escaped.
    static func formEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
