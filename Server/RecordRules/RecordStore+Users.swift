import Foundation
import RecordModel

extension RecordStore {
    /// Creates a user holding one token.
    ///
    /// - Parameter tokenHash: SHA-256 of the bearer token (tokens are never stored).
    /// - Throws: `EXISTS` if the name is taken; `BAD_REQUEST` for a bad name.
    public func createUser(named name: String, tokenHash: Data) async throws -> User {
        if let problem = NameRules.problem(withName: name, kind: "user name") {
            throw RecordSyncError(.badRequest, problem)
        }
        return try await engine.write { transaction in
            if try transaction.user(named: name) != nil {
                throw RecordSyncError(.exists, "user \(NameRules.quoted(name)) exists; use 'user token' for another token")
            }
            let recordName = "_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            let now = Self.now()
            let user = try transaction.insertUser(named: name, recordName: recordName, createdAt: now)
            try transaction.insertToken(hash: tokenHash, userKey: user.id, createdAt: now)
            return .commit(user)
        }
    }

    /// Adds another token to an existing user. Throws `NOT_FOUND` if there is no such user.
    public func addToken(forUserNamed name: String, tokenHash: Data) async throws -> User {
        try await engine.write { transaction in
            guard let user = try transaction.user(named: name) else {
                throw RecordSyncError(.notFound, "there is no user \(NameRules.quoted(name))")
            }
            try transaction.insertToken(hash: tokenHash, userKey: user.id, createdAt: Self.now())
            return .commit(user)
        }
    }

    /// The user holding the token with this hash, or `nil`.
    public func user(forTokenHash tokenHash: Data) async throws -> User? {
        try await engine.read { transaction in try transaction.user(forTokenHash: tokenHash) }
    }
}
