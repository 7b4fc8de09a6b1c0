import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RecordModel

extension Container {
    /// Signs in with an identity provider's ID token (on Apple platforms, the `identityToken` of
    /// a Sign in with Apple credential) and answers a container signed in as its user, with the
    /// sign-in's answer (the session token, whether the user was created, when the token
    /// expires). The first sign-in of an identity creates its user (docs/protocol.md, "Signing in").
    ///
    /// - Parameters:
    ///   - provider: the server's name for the provider; `nil`: the one whose issuer the token names.
    ///   - nonce: the nonce the app gave the provider, if any.
    ///   - deviceName: the session token's name: signing in again from the same device replaces it.
    ///   - givenName, familyName: the names the provider gave the app (Sign in with Apple gives
    ///     them at the first sign-in only), kept for a user this sign-in creates.
    /// - Throws: `AUTHENTICATION_FAILED` with the reason for a token the server refuses.
    public static func signIn(serverURL: URL, identifier: String, environment: Environment = .development, idToken: String,
                              provider: String? = nil, nonce: String? = nil, deviceName: String? = nil, givenName: String? = nil,
                              familyName: String? = nil, session: URLSession? = nil,
                              certificateAuthority: String? = nil) async throws -> (container: Container, signIn: SignInResponse) {
        let base = serverURL.appendingPathComponent("auth/1").appendingPathComponent(identifier).appendingPathComponent(environment.rawValue)
        var transport = HTTPTransport(baseURL: base, token: "", session: session)
        transport.certificateAuthority = certificateAuthority
        let request = IDTokenSignInRequest(idToken: idToken, provider: provider, nonce: nonce, deviceName: deviceName, givenName: givenName,
                                           familyName: familyName)
        let answer = try await transport.post("signin/idtoken", request, as: SignInResponse.self)
        var container = Container(serverURL: serverURL, identifier: identifier, environment: environment,
                                  credentials: .bearerToken(answer.ckWebAuthToken), session: session)
        container.certificateAuthority = certificateAuthority
        return (container, answer)
    }

    /// Signs out: the server revokes the container's token (on every server sharing its data
    /// within about a second); the container can no longer be used.
    ///
    /// - Throws: `AUTHENTICATION_FAILED` for a token that is not valid any more.
    public func signOut() async throws {
        let base = serverURL.appendingPathComponent("auth/1").appendingPathComponent(identifier).appendingPathComponent(environment.rawValue)
        var transport = HTTPTransport(baseURL: base, token: token, session: session)
        transport.certificateAuthority = certificateAuthority
        _ = try await transport.post("signout", EmptyBody(), as: JSONValue.self)
    }
}
