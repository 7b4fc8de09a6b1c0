import Foundation
import RecordModel

/// API tokens, as CloudKit has them: the operator issues one for a container and environment,
/// with the web origins whose pages may use it. A request carrying one and no user is a
/// signed-out visitor, who reads the public database (`docs/protocol.md`, "API tokens").
extension RecordStore {
    /// Stores an API token for `container` and `environment` under the SHA-256 of its value,
    /// named `name` or the first free of `api-token-1`, `api-token-2`, … there.
    ///
    /// - Parameters:
    ///   - origins: The web origins (`https://example.com`, `http://localhost:8080`) whose pages
    ///     may use it, or `*` for any; stored lowercased.
    ///   - signInCallback: The URL the web sign-in page sends signed-in users to, with their
    ///     token (URL Redirect); `nil`: the page posts the token to the app's window (Post
    ///     Message).
    /// - Throws: `BAD_REQUEST` for a bad container, environment, name, origin or callback;
    ///   `EXISTS` for a name taken in that container and environment.
    @discardableResult
    public func createAPIToken(named name: String? = nil, container: String, environment: String, origins: [String],
                               signInCallback: String? = nil, tokenHash: Data) async throws -> StoredAPIToken {
        if let problem = NameRules.problem(withName: container, kind: "container") { throw RecordSyncError(.badRequest, problem) }
        guard environment == "development" || environment == "production" else {
            throw RecordSyncError(.badRequest, "environment must be development or production, not \(NameRules.quoted(environment))")
        }
        if let name, let problem = NameRules.problem(withName: name, kind: "API token name") { throw RecordSyncError(.badRequest, problem) }
        let origins = try origins.map(Self.checkedOrigin)
        if let signInCallback { try Self.checkCallback(signInCallback) }
        let now = Self.now()
        return try await engine.write { transaction in
            let held = Set(try transaction.apiTokens().filter { $0.container == container && $0.environment == environment }.map(\.name))
            let name = name ?? (1...).lazy.map { "api-token-\($0)" }.first { !held.contains($0) }!
            if held.contains(name) {
                throw RecordSyncError(.exists, "\(NameRules.quoted(container)) (\(environment)) already has an API token named \(NameRules.quoted(name))")
            }
            let token = StoredAPIToken(hash: tokenHash, name: name, container: container, environment: environment, origins: origins, createdAt: now,
                                         signInCallback: signInCallback)
            try transaction.insertAPIToken(token)
            return .commit(token)
        }
    }

    /// Every API token, by container, environment and name.
    public func apiTokens() async throws -> [StoredAPIToken] {
        try await engine.read { transaction in try transaction.apiTokens() }
    }

    /// The API token whose value's SHA-256 is `hash`, or `nil` (never issued, or revoked).
    public func apiToken(forHash hash: Data) async throws -> StoredAPIToken? {
        try await engine.read { transaction in try transaction.apiToken(forHash: hash) }
    }

    /// Revokes an API token: refused on every server sharing the storage within
    /// ``TokenCheck/revocationDelay`` (servers read their API tokens at least that often).
    ///
    /// - Throws: `NOT_FOUND` when the container and environment have no token of that name.
    public func revokeAPIToken(named name: String, container: String, environment: String) async throws {
        try await engine.write { transaction in
            guard try transaction.deleteAPIToken(named: name, container: container, environment: environment) else {
                throw RecordSyncError(.notFound, "\(NameRules.quoted(container)) (\(environment)) has no API token named \(NameRules.quoted(name))")
            }
            return .commit(())
        }
    }

    /// Checks a sign-in callback: an absolute `https` URL with a host and no fragment (the page
    /// adds its own query parameters to the URL's), or `http` to the machine itself (a
    /// developer's app): a token is never sent to another machine in clear text.
    ///
    /// - Throws: `BAD_REQUEST` naming the URL otherwise.
    static func checkCallback(_ url: String) throws {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.host, !host.isEmpty, components.fragment == nil, components.user == nil, components.password == nil,
              !url.contains(" ") else {
            throw RecordSyncError(.badRequest, "sign-in callback \(NameRules.quoted(url)) is not an https URL with a host and no fragment (https://app.example.com/signed-in)")
        }
        guard scheme == "https" || ["localhost", "127.0.0.1", "[::1]", "::1"].contains(host.lowercased()) else {
            throw RecordSyncError(.badRequest, "sign-in callback \(NameRules.quoted(url)) would send tokens in clear text: use https (http only to localhost)")
        }
    }

    /// A web origin as an API token stores it: `*`, or `scheme://host[:port]` with the scheme
    /// `http` or `https` and nothing after, lowercased and without the scheme's default port
    /// (browsers send origins so).
    ///
    /// - Throws: `BAD_REQUEST` naming the origin otherwise.
    static func checkedOrigin(_ origin: String) throws -> String {
        if origin == "*" { return origin }
        let lowered = origin.lowercased()
        guard let components = URLComponents(string: lowered), let scheme = components.scheme, scheme == "http" || scheme == "https",
              let host = components.host, !host.isEmpty, components.path.isEmpty, components.query == nil, components.fragment == nil,
              components.user == nil, components.password == nil, !lowered.hasSuffix("/"), !lowered.contains(" ") else {
            throw RecordSyncError(.badRequest, "origin \(NameRules.quoted(origin)) is not a web origin: give scheme://host[:port] (https://example.com), or * for any")
        }
        if let port = components.port, (scheme, port) == ("https", 443) || (scheme, port) == ("http", 80) {
            return "\(scheme)://\(host)"
        }
        return lowered
    }
}
