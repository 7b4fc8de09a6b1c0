import Crypto
import Foundation
import RecordModel
import RecordStorage

/// A sign-in's outcome: its user (created by it, or not) and its session token's name and expiry.
public struct SignIn: Sendable, Hashable {
    public var user: User
    public var created: Bool
    public var tokenName: String
    public var expiresAt: Int64
}

extension RecordStore {
    /// Signs in with an identity an ID token proved: its user, created at the identity's first
    /// sign-in, gets a session token (`tokenHash`) that expires after `lifetime`.
    ///
    /// A new user is named after the provider and the subject, gets a record name of its own
    /// that is never reused, and, when the provider verified the email address and no other
    /// user holds it, that address in its profile (which makes it discoverable, as for the
    /// users `recordserver user add` makes). The names the app sends are taken at the first
    /// sign-in only, unverified. An identity never joins an existing user by its email: two
    /// identities become one user only when the operator links them.
    ///
    /// The session token is named `deviceName` (replacing the user's token of that name: a
    /// device signing in again holds one token), or the first free `sign-in-N`.
    public func signIn(with identity: VerifiedIdentity, tokenHash: Data, deviceName: String?, givenName: String?, familyName: String?,
                       lifetime: Duration) async throws -> SignIn {
        try Self.checkSignIn(deviceName: deviceName, givenName: givenName, familyName: familyName)
        let now = Self.now()
        let expiresAt = now + lifetime.components.seconds * 1000
        return try await engine.write { transaction in
            var created = false
            let user: User
            if let existing = try transaction.user(withIdentityIssuer: identity.issuer, subject: identity.subject) {
                user = existing
            } else {
                user = try Self.createUser(for: identity, givenName: givenName, familyName: familyName, now: now, in: transaction)
                created = true
            }
            let tokenName = try Self.issueSessionToken(tokenHash, to: user, deviceName: deviceName, now: now, expiresAt: expiresAt, in: transaction)
            return .commit(SignIn(user: user, created: created, tokenName: tokenName, expiresAt: expiresAt))
        }
    }

    /// Gives `user` a session token (`tokenHash`) named `deviceName` (replacing the user's token
    /// of that name: a device signing in again holds one token), or the first free `sign-in-N`;
    /// answers its name.
    static func issueSessionToken(_ tokenHash: Data, to user: User, deviceName: String?, now: Int64, expiresAt: Int64,
                                  in transaction: any StorageTransaction) throws -> String {
        let held = Set(try transaction.tokens(ofUser: user.id).map(\.name))
        let tokenName = deviceName ?? (1...).lazy.map { "sign-in-\($0)" }.first { !held.contains($0) }!
        if held.contains(tokenName) {
            _ = try transaction.deleteToken(named: tokenName, ofUser: user.id)
            try transaction.advanceRevocationSequence()
        }
        try transaction.insertToken(hash: tokenHash, userKey: user.id, name: tokenName, createdAt: now, expiresAt: expiresAt)
        return tokenName
    }

    /// Checks a sign-in's device name and the names the app sends.
    static func checkSignIn(deviceName: String?, givenName: String?, familyName: String?) throws {
        if let deviceName, let problem = NameRules.problem(withName: deviceName, kind: "device name") {
            throw RecordSyncError(.badRequest, problem)
        }
        for name in [givenName, familyName].compactMap({ $0 }) where name.utf8.count > 255 {
            throw RecordSyncError(.badRequest, "a name of over 255 bytes")
        }
    }

    /// Signs out: revokes the session token whose SHA-256 is `tokenHash` (any user's token:
    /// one the operator issued too), refused on every server within
    /// ``TokenCheck/revocationDelay``.
    ///
    /// - Throws: `AUTHENTICATION_FAILED` when no such token is held (never issued, revoked
    ///   already, or its user deleted).
    public func signOut(tokenHash: Data) async throws {
        try await engine.write { transaction in
            guard try transaction.deleteToken(hash: tokenHash) else {
                throw RecordSyncError(.authenticationFailed, "the token is not valid (never issued, or revoked already)")
            }
            try transaction.advanceRevocationSequence()
            return .commit(())
        }
    }

    /// The identities a user signs in with, by issuer and subject (none: the operator issues
    /// their tokens).
    public func identities(of user: User) async throws -> [StoredIdentity] {
        try await engine.read { transaction in try transaction.identities(ofUser: user.id) }
    }

    /// Links two users (`recordserver user link`): the identities and the account of `source`
    /// sign in as `target` from then on, and `source`'s tokens are revoked. `source` keeps its
    /// data (delete it with `user delete` once nothing of it is wanted). An account's verified
    /// address moves to `target`'s profile when `target` has none. Never done but by the operator.
    ///
    /// - Throws: `NOT_FOUND` for a user that does not exist; `BAD_REQUEST` for one user twice;
    ///   `EXISTS` when both have an account (a user has one password).
    public func linkUser(named source: String, into target: String) async throws -> (identities: Int, account: Bool) {
        guard source != target else { throw RecordSyncError(.badRequest, "a user cannot be linked into themselves") }
        return try await engine.write { transaction in
            let from = try Self.existingUser(named: source, in: transaction)
            let to = try Self.existingUser(named: target, in: transaction)
            let account = try transaction.account(ofUser: from.id)
            if account != nil, try transaction.account(ofUser: to.id) != nil {
                throw RecordSyncError(.exists, "both \(NameRules.quoted(source)) and \(NameRules.quoted(target)) have an account (a password): a user has one")
            }
            let moved = try transaction.moveSignIns(fromUser: from.id, toUser: to.id)
            if let email = account?.email {
                var sourceProfile = try transaction.profile(ofUser: from.id)
                var targetProfile = try transaction.profile(ofUser: to.id)
                if sourceProfile.email == email, targetProfile.email == nil {
                    sourceProfile.email = nil
                    sourceProfile.discoverable = false
                    try transaction.setProfile(sourceProfile, ofUser: from.id)
                    targetProfile.email = email
                    targetProfile.discoverable = true
                    try transaction.setProfile(targetProfile, ofUser: to.id)
                }
            }
            if try transaction.deleteTokens(ofUser: from.id, keeping: nil) > 0 { try transaction.advanceRevocationSequence() }
            return .commit(moved)
        }
    }

    /// How a user signs in: `password` (a built-in account) and the names of the identity
    /// providers of their identities; none: the operator issues their tokens.
    public func signInMethods(of user: User) async throws -> [String] {
        try await engine.read { transaction in
            (try transaction.account(ofUser: user.id) == nil ? [] : ["password"]) + (try transaction.identities(ofUser: user.id).map(\.provider))
        }
    }

    /// A user for an identity seen for the first time.
    private static func createUser(for identity: VerifiedIdentity, givenName: String?, familyName: String?, now: Int64,
                                   in transaction: any StorageTransaction) throws -> User {
        let recordName = "_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let user = try transaction.insertUser(named: try freeName(for: identity, in: transaction), recordName: recordName, createdAt: now)
        let email = identity.email.map(normalizedEmail)
        try transaction.insertIdentity(StoredIdentity(issuer: identity.issuer, subject: identity.subject, provider: identity.provider,
                                                      email: email, emailVerified: identity.emailVerified, createdAt: now),
                                       userKey: user.id)
        try setSignedInProfile(of: user, verifiedEmail: identity.emailVerified ? email : nil, givenName: givenName, familyName: familyName,
                               in: transaction)
        return user
    }

    /// The profile of a user a sign-in created: the names the app sent, and the verified email
    /// address (which makes the user discoverable) when it reads as one and no user holds it.
    /// An address nobody verified is never stored there.
    static func setSignedInProfile(of user: User, verifiedEmail: String?, givenName: String?, familyName: String?,
                                   in transaction: any StorageTransaction) throws {
        var profile = UserProfile(givenName: givenName?.trimmingCharacters(in: .whitespacesAndNewlines),
                                  familyName: familyName?.trimmingCharacters(in: .whitespacesAndNewlines))
        if let verifiedEmail, let checked = try? checked(UserProfile(email: verifiedEmail)).email,
           try transaction.users(withEmails: [checked]).isEmpty {
            profile.email = checked
            profile.discoverable = true
        }
        try transaction.setProfile(profile, ofUser: user.id)
    }

    /// `PROVIDER-SUBJECT`, or (when that is no name, or taken) `PROVIDER-` and the first 16 hex
    /// digits of the SHA-256 of the issuer and subject, with `-N` after it if need be.
    private static func freeName(for identity: VerifiedIdentity, in transaction: any StorageTransaction) throws -> String {
        let plain = "\(identity.provider)-\(identity.subject)"
        if NameRules.problem(withName: plain, kind: "user name") == nil, try transaction.user(named: plain) == nil { return plain }
        let digest = SHA256.hash(data: Data("\(identity.issuer)\n\(identity.subject)".utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
        let hashed = "\(identity.provider)-\(digest)"
        if try transaction.user(named: hashed) == nil { return hashed }
        var number = 2
        while try transaction.user(named: "\(hashed)-\(number)") != nil { number += 1 }
        return "\(hashed)-\(number)"
    }
}
