import Foundation
import HTTPTypes
import Hummingbird
import RecordModel
import RecordRules

/// The web console's sessions as requests carry them (docs/console.md, "Signing in"): a cookie
/// no script reads, sent to this site only (`SameSite=Strict`), and, on every request of the
/// server's APIs, the header `X-RecordSync-CSRF` holding the SHA-256 of the cookie, which the
/// console's page gives its script and another site can neither read nor compute. The cookie
/// alone opens nothing: a request without the header is read as if it had no cookie.
struct ConsoleSessions: Sendable {
    let store: RecordStore
    let limits: ConsoleSessionLimits
    let trustedProxies: TrustedProxies
    let publicURL: String?
    let scheme: String

    /// The header holding the session's CSRF token.
    static let csrfHeader = HTTPField.Name("X-RecordSync-CSRF")!

    /// Whether the browser reached the server over HTTPS: the server's own TLS, a public URL
    /// of `https`, or `X-Forwarded-Proto: https` from a proxy the operator trusts.
    func isSecure(_ request: Request, peer: String?) -> Bool {
        if scheme == "https" || publicURL?.lowercased().hasPrefix("https://") == true { return true }
        guard let peer, trustedProxies.contains(peer),
              let proto = request.headers[values: .init("X-Forwarded-Proto")!].first?.split(separator: ",").first else { return false }
        return proto.trimmingCharacters(in: .whitespaces).lowercased() == "https"
    }

    /// The session cookie's name: over HTTPS with the `__Host-` prefix, which browsers take
    /// only from this host over HTTPS with `Path=/` and no `Domain`.
    func cookieName(secure: Bool) -> String {
        secure ? "__Host-recordsync_console" : "recordsync_console"
    }

    /// The session cookie's `Set-Cookie` for `value` (`nil`: removing it).
    func setCookie(_ value: String?, secure: Bool) -> String {
        let lifetime = value == nil ? 0 : max(1, limits.lifetime.components.seconds)
        return "\(cookieName(secure: secure))=\(value ?? ""); Path=/; Max-Age=\(lifetime); HttpOnly; SameSite=Strict\(secure ? "; Secure" : "")"
    }

    /// The session cookie a request carries, or `nil`.
    func cookie(of request: Request, peer: String?) -> String? {
        SignInPage.cookie(cookieName(secure: isSecure(request, peer: peer)), in: request).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The CSRF token of a session: the SHA-256 of its cookie.
    static func csrfToken(_ cookie: String) -> String {
        SignInPage.csrfToken(cookie)
    }

    /// The operator a console session signed in, for a request of the server's APIs that carries
    /// the CSRF header; `nil` for one without it (whatever its cookies).
    ///
    /// - Throws: `AUTHENTICATION_FAILED` when the header comes without a session that is still
    ///   open, or does not match its cookie.
    func caller(of request: Request, peer: String?) async throws -> Operator? {
        guard let given = request.headers[Self.csrfHeader] else { return nil }
        guard let cookie = cookie(of: request, peer: peer) else {
            throw RecordSyncError(.authenticationFailed, "the console's session ended (or this browser holds none): sign in again at /console")
        }
        guard IdentityProvider.constantTimeEqual(given, Self.csrfToken(cookie)) else {
            throw RecordSyncError(.authenticationFailed, "X-RecordSync-CSRF does not match the console's session: reload the console")
        }
        guard let found = try await store.consoleOperator(tokenHash: Credentials.hash(cookie), limits: limits) else {
            throw RecordSyncError(.authenticationFailed, "the console's session ended (signed out, expired, idle too long, or its operator revoked): sign in again at /console")
        }
        return found
    }
}
