import Foundation
import Hummingbird
import NIOCore
import RecordModel
import RecordRules

/// Built-in accounts over HTTP (docs/protocol.md, "Accounts"), under
/// `/auth/1/{container}/{environment}/`: `signup`, `signup/verify`, `signin/password`,
/// `password`, `reset`, `reset/complete`, `account/delete`.
struct AccountRoutes: Sendable {
    let accounts: Accounts
    /// Where mails go; `nil`: this server sends none (signing up is then closed, and resets
    /// answer `NOT_SUPPORTED`).
    let mailer: Mailer?
    let sessionLifetime: Duration
    let trustedProxies: TrustedProxies

    func register(on router: Router<RequestContextWithAddress>) {
        route(router, "signup") { (body: SignUpRequest, _, client) in
            let mail = try await accounts.signUp(email: body.email, password: body.password, invitation: body.invitation, client: client)
            try await send(mail)
            return try JSONBody.response([String: String]())
        }
        route(router, "signup/verify") { (body: SignUpVerifyRequest, _, client) in
            let token = Credentials.newToken()
            let signIn = try await accounts.verify(email: body.email, code: body.code, deviceName: body.deviceName, givenName: body.givenName,
                                                   familyName: body.familyName, tokenHash: Credentials.hash(token), lifetime: sessionLifetime,
                                                   client: client)
            return try Self.response(signIn, token: token)
        }
        route(router, "signin/password") { (body: PasswordSignInRequest, _, client) in
            let token = Credentials.newToken()
            let signIn = try await accounts.signIn(email: body.email, password: body.password, deviceName: body.deviceName,
                                                   tokenHash: Credentials.hash(token), lifetime: sessionLifetime, client: client)
            return try Self.response(signIn, token: token)
        }
        route(router, "password") { (body: PasswordChangeRequest, request, client) in
            let (user, tokenHash) = try await signedIn(request)
            let revoked = try await accounts.changePassword(of: user, password: body.password, newPassword: body.newPassword,
                                                            keeping: tokenHash, client: client)
            return try JSONBody.response(PasswordChangeResponse(revokedTokens: revoked))
        }
        route(router, "reset") { (body: ResetRequest, _, client) in
            guard mailer != nil else {
                throw RecordSyncError(.notSupported, "this server sends no mail, so it resets no password: ask its operator")
            }
            let mail = try await accounts.requestReset(email: body.email, client: client)
            try await send(mail)
            return try JSONBody.response([String: String]())
        }
        route(router, "reset/complete") { (body: ResetCompleteRequest, _, client) in
            let token = Credentials.newToken()
            let signIn = try await accounts.completeReset(email: body.email, code: body.code, newPassword: body.newPassword, deviceName: body.deviceName,
                                                          tokenHash: Credentials.hash(token), lifetime: sessionLifetime, client: client)
            return try Self.response(signIn, token: token)
        }
        route(router, "account/delete") { (body: AccountDeleteRequest, request, client) in
            let (user, _) = try await signedIn(request)
            try await accounts.deleteAccount(of: user, password: body.password, client: client)
            return try JSONBody.response([String: String]())
        }
    }

    /// A `POST` route whose body is a `Body`, handed the client's address.
    private func route<Body: Decodable & SendableMetatype>(_ router: Router<RequestContextWithAddress>, _ path: String,
                                        _ handle: @escaping @Sendable (Body, Request, String?) async throws -> Response) {
        let proxies = trustedProxies
        router.post("/auth/1/:container/:environment/\(path)") { request, context in
            try IdentityRoutes.checkEnvironment(context)
            let data = Data(buffer: try await request.body.collect(upTo: 64 * 1024))
            let body = try JSONBody.decode(Body.self, from: data)
            return try await handle(body, request, proxies.client(of: request, peer: context.remoteAddress))
        }
    }

    private func send(_ mail: AccountMail) async throws {
        guard let mailer else {
            throw RecordSyncError(.notSupported, "this server sends no mail: its operator makes the accounts")
        }
        try await mailer.send(mail)
    }

    /// The user whose session token the request carries, and the token's hash.
    private func signedIn(_ request: Request) async throws -> (User, Data) {
        guard let token = try Credentials.token(in: request, userTokensAsAPIToken: false).user else {
            throw RecordSyncError(.authenticationRequired, "send the session token as 'Authorization: Bearer TOKEN' or ckWebAuthToken")
        }
        let hash = Credentials.hash(token)
        switch try await accounts.store.checkToken(hash: hash) {
        case .valid(let user, _): return (user, hash)
        case .expired: throw RecordSyncError(.authenticationFailed, "the token expired: sign in again")
        case .unknown: throw RecordSyncError(.authenticationFailed, "the token is not valid (never issued, revoked, or its user deleted)")
        }
    }

    static func response(_ signIn: SignIn, token: String) throws -> Response {
        try JSONBody.response(SignInResponse(ckWebAuthToken: token, userRecordName: signIn.user.userRecordName, expires: signIn.expiresAt,
                                             created: signIn.created, tokenName: signIn.tokenName))
    }
}
