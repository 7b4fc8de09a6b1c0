import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RecordModel

extension Container {
    /// Signing in to a container's server (docs/protocol.md, "Signing in" and "Accounts"): with
    /// an identity provider's ID token, or an email address and a password; signing up, and
    /// resetting a forgotten password. Each sign-in answers the server's ``SignInResponse``;
    /// ``container(_:)`` makes the container that uses its token, and
    /// ``container(session:)`` one that keeps it and signs in again when it is refused.
    public struct Authentication: Sendable {
        public let serverURL: URL
        public let identifier: String
        public let environment: Environment
        let session: URLSession?
        let certificateAuthority: String?

        public init(serverURL: URL, identifier: String, environment: Environment = .development, session: URLSession? = nil,
                    certificateAuthority: String? = nil) {
            self.serverURL = serverURL
            self.identifier = identifier
            self.environment = environment
            self.session = session
            self.certificateAuthority = certificateAuthority
        }

        /// `{server}/auth/1/{container}/{environment}/`, without a token or with `token`.
        func transport(_ credentials: Credentials = .bearerToken("")) -> HTTPTransport {
            let base = serverURL.appendingPathComponent("auth/1").appendingPathComponent(identifier).appendingPathComponent(environment.rawValue)
            return HTTPTransport(baseURL: base, credentials: credentials, session: session, certificateAuthority: certificateAuthority)
        }

        /// Signs in with an identity provider's ID token (on Apple platforms, the
        /// `identityToken` of a Sign in with Apple credential). The first sign-in of an
        /// identity creates its user.
        ///
        /// - Parameters:
        ///   - provider: the server's name for the provider; `nil`: the one whose issuer the token names.
        ///   - nonce: the nonce the app gave the provider, if any.
        ///   - deviceName: the session token's name: signing in again from the same device replaces it.
        ///   - givenName, familyName: the names the provider gave the app (Sign in with Apple gives
        ///     them at the first sign-in only), kept for a user this sign-in creates.
        /// - Throws: `AUTHENTICATION_FAILED` with the reason for a token the server refuses.
        public func signIn(idToken: String, provider: String? = nil, nonce: String? = nil, deviceName: String? = nil, givenName: String? = nil,
                           familyName: String? = nil) async throws -> SignInResponse {
            let request = IDTokenSignInRequest(idToken: idToken, provider: provider, nonce: nonce, deviceName: deviceName, givenName: givenName,
                                               familyName: familyName)
            return try await transport().post("signin/idtoken", request, as: SignInResponse.self)
        }

        /// Signs in with an account's email address and password.
        ///
        /// - Throws: `AUTHENTICATION_FAILED` for a wrong address or password (the server does
        ///   not say which); `THROTTLED` after too many failures.
        public func signIn(email: String, password: String, deviceName: String? = nil) async throws -> SignInResponse {
            try await transport().post("signin/password", PasswordSignInRequest(email: email, password: password, deviceName: deviceName),
                                       as: SignInResponse.self)
        }

        /// Asks for an account: the server mails the address a code, which
        /// ``verifySignUp(email:code:deviceName:givenName:familyName:)`` takes. It answers
        /// alike whether the address has an account or not (the mail says which).
        ///
        /// - Throws: `ACCESS_DENIED` when signing up is closed, or needs an invitation this
        ///   is not; `BAD_REQUEST` for an address that is not one or a password under 8 bytes.
        public func signUp(email: String, password: String, invitation: String? = nil) async throws {
            _ = try await transport().post("signup", SignUpRequest(email: email, password: password, invitation: invitation), as: JSONValue.self)
        }

        /// Makes the account with the code mailed at sign-up, and signs in.
        public func verifySignUp(email: String, code: String, deviceName: String? = nil, givenName: String? = nil,
                                 familyName: String? = nil) async throws -> SignInResponse {
            try await transport().post("signup/verify", SignUpVerifyRequest(email: email, code: code, deviceName: deviceName, givenName: givenName,
                                                                            familyName: familyName), as: SignInResponse.self)
        }

        /// Asks for a password reset code by mail.
        public func requestPasswordReset(email: String) async throws {
            _ = try await transport().post("reset", ResetRequest(email: email), as: JSONValue.self)
        }

        /// Sets a new password with the mailed code, and signs in (every other token of the user
        /// is revoked).
        public func resetPassword(email: String, code: String, newPassword: String, deviceName: String? = nil) async throws -> SignInResponse {
            try await transport().post("reset/complete", ResetCompleteRequest(email: email, code: code, newPassword: newPassword, deviceName: deviceName),
                                       as: SignInResponse.self)
        }

        /// A container using the session token of `signIn`.
        public func container(_ signIn: SignInResponse) -> Container {
            container(credentials: .bearerToken(signIn.ckWebAuthToken))
        }

        /// A container using `session`, which keeps its token and signs in again when the
        /// server refuses it.
        public func container(session: SignedInSession) -> Container {
            container(credentials: .session(session))
        }

        private func container(credentials: Credentials) -> Container {
            var container = Container(serverURL: serverURL, identifier: identifier, environment: environment, credentials: credentials, session: session)
            container.certificateAuthority = certificateAuthority
            return container
        }
    }

    /// This container's ``Authentication``.
    public var authentication: Authentication {
        Authentication(serverURL: serverURL, identifier: identifier, environment: environment, session: session, certificateAuthority: certificateAuthority)
    }

    /// Signs in with an identity provider's ID token and answers a container signed in as its
    /// user, with the sign-in's answer (``Authentication/signIn(idToken:provider:nonce:deviceName:givenName:familyName:)``).
    public static func signIn(serverURL: URL, identifier: String, environment: Environment = .development, idToken: String,
                              provider: String? = nil, nonce: String? = nil, deviceName: String? = nil, givenName: String? = nil,
                              familyName: String? = nil, session: URLSession? = nil,
                              certificateAuthority: String? = nil) async throws -> (container: Container, signIn: SignInResponse) {
        let authentication = Authentication(serverURL: serverURL, identifier: identifier, environment: environment, session: session,
                                            certificateAuthority: certificateAuthority)
        let answer = try await authentication.signIn(idToken: idToken, provider: provider, nonce: nonce, deviceName: deviceName, givenName: givenName,
                                                     familyName: familyName)
        return (authentication.container(answer), answer)
    }

    /// Signs out: the server revokes the container's token (on every server sharing its data
    /// within about a second), and a session forgets it; the container can no longer be used.
    ///
    /// - Throws: `AUTHENTICATION_FAILED` for a token that is not valid any more.
    public func signOut() async throws {
        _ = try await authentication.transport(.bearerToken(token)).post("signout", EmptyBody(), as: JSONValue.self)
        if case .session(let session) = credentials { try session.forget() }
    }

    /// Changes the signed-in user's password (their present one checked); every other token of
    /// theirs is revoked: other devices sign in again. Answers how many tokens went. (A wrong
    /// password is `AUTHENTICATION_FAILED`, which here never renews a session.)
    @discardableResult
    public func changePassword(from password: String, to newPassword: String) async throws -> Int {
        try await authentication.transport(.bearerToken(token)).post("password", PasswordChangeRequest(password: password, newPassword: newPassword),
                                                             as: PasswordChangeResponse.self).revokedTokens
    }

    /// Deletes the signed-in user and everything they own (their private databases in every
    /// container, tokens, account); a user with a password gives it. The container can no
    /// longer be used.
    public func deleteAccount(password: String?) async throws {
        _ = try await authentication.transport(.bearerToken(token)).post("account/delete", AccountDeleteRequest(password: password), as: JSONValue.self)
        if case .session(let session) = credentials { try session.forget() }
    }
}
