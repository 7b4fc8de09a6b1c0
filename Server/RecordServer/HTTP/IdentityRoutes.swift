import AsyncHTTPClient
import Foundation
import Hummingbird
import NIOCore
import RecordModel
import RecordRules

/// Signing in with an identity provider's ID token (docs/protocol.md, "Signing in"):
/// `POST /auth/1/{container}/{environment}/signin/idtoken`.
struct IdentityRoutes: Sendable {
    let store: RecordStore
    /// The providers the operator configured, in their order.
    let providers: [IdentityProvider]
    /// How long a session token works.
    let sessionLifetime: Duration

    /// The providers of `settings`, each reading its keys from its file or URL.
    static func providers(_ settings: [IdentityProviderSettings]) throws -> [IdentityProvider] {
        var names: Set<String> = []
        return try settings.map { settings in
            guard names.insert(settings.name).inserted else {
                throw RecordSyncError(.badRequest, "two identity providers are named \(NameRules.quoted(settings.name))")
            }
            return try IdentityProvider(settings, loadKeys: keyLoader(settings))
        }
    }

    /// Reads a provider's key set: its file, or its URL (an answer of at most a megabyte, within
    /// ten seconds).
    static func keyLoader(_ settings: IdentityProviderSettings) -> @Sendable () async throws -> String {
        if let path = settings.jwksFile {
            return { try String(contentsOfFile: path, encoding: .utf8) }
        }
        let url = settings.jwksURL ?? ""
        return {
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
            guard response.status == .ok else { throw RecordSyncError(.tryAgainLater, "\(url) answered HTTP \(response.status.code)") }
            return String(buffer: try await response.body.collect(upTo: 1 << 20))
        }
    }

    func register(on router: Router<RequestContextWithAddress>) {
        registerSignOut(on: router)
        router.post("/auth/1/:container/:environment/signin/idtoken") { request, context in
            try Self.checkEnvironment(context)
            let body = Data(buffer: try await request.body.collect(upTo: 64 * 1024))
            let signIn = try JSONBody.decode(IDTokenSignInRequest.self, from: body)
            let identity = try await provider(for: signIn).verify(signIn.idToken, nonce: signIn.nonce)
            let token = Credentials.newToken()
            let result = try await store.signIn(with: identity, tokenHash: Credentials.hash(token), deviceName: signIn.deviceName,
                                                givenName: signIn.givenName, familyName: signIn.familyName, lifetime: sessionLifetime)
            return try AccountRoutes.response(result, token: token)
        }
    }

    /// `BAD_REQUEST` unless the path's environment is `development` or `production`.
    static func checkEnvironment(_ context: RequestContextWithAddress) throws {
        let environment = context.parameters.get("environment") ?? ""
        guard ["development", "production"].contains(environment) else {
            throw RecordSyncError(.badRequest, "the environment must be development or production, not \(NameRules.quoted(environment))")
        }
    }

    /// `POST /auth/1/{container}/{environment}/signout`: revokes the token the request
    /// carries (`Authorization: Bearer` or `ckWebAuthToken`); answers `{}`.
    func registerSignOut(on router: Router<RequestContextWithAddress>) {
        router.post("/auth/1/:container/:environment/signout") { request, _ in
            _ = try await request.body.collect(upTo: 64 * 1024)
            guard let token = try Credentials.token(in: request, userTokensAsAPIToken: false).user else {
                throw RecordSyncError(.authenticationRequired, "sign out: send the session token as 'Authorization: Bearer TOKEN' or ckWebAuthToken")
            }
            try await store.signOut(tokenHash: Credentials.hash(token))
            return try JSONBody.response([String: String]())
        }
    }

    /// The provider a sign-in names, or else the one whose issuer its token claims.
    private func provider(for signIn: IDTokenSignInRequest) throws -> IdentityProvider {
        guard !providers.isEmpty else {
            throw RecordSyncError(.notFound, "this server signs no one in with ID tokens: its operator configured no identity provider")
        }
        if let name = signIn.provider {
            guard let provider = providers.first(where: { $0.settings.name == name }) else {
                throw RecordSyncError(.authenticationFailed, "there is no identity provider \(NameRules.quoted(name)) (\(providers.map(\.settings.name).joined(separator: ", ")))")
            }
            return provider
        }
        guard let issuer = IdentityProvider.claimedIssuer(of: signIn.idToken) else {
            throw RecordSyncError(.authenticationFailed, "the ID token is not a JWT naming its issuer (iss)")
        }
        guard let provider = providers.first(where: { $0.settings.issuer == issuer }) else {
            throw RecordSyncError(.authenticationFailed, "no identity provider of this server has the issuer \(NameRules.quoted(issuer))")
        }
        return provider
    }
}
