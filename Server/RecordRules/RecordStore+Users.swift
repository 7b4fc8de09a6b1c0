import Foundation
import RecordModel

extension RecordStore {
    /// Creates a user holding one token, with a profile (an email given makes the user
    /// discoverable unless the profile says otherwise).
    ///
    /// - Parameters:
    ///   - tokenHash: SHA-256 of the bearer token (tokens are never stored).
    ///   - tokenName: The token's name (one per device); `nil`: `token-1`.
    ///   - expiresAt: When the token stops working (milliseconds since 1970); `nil`: never.
    /// - Throws: `EXISTS` if the name or the email is taken; `BAD_REQUEST` for a bad name,
    ///   token name, expiry or email.
    public func createUser(named name: String, tokenHash: Data, tokenName: String? = nil, expiresAt: Int64? = nil,
                           profile: UserProfile = UserProfile()) async throws -> User {
        if let problem = NameRules.problem(withName: name, kind: "user name") {
            throw RecordSyncError(.badRequest, problem)
        }
        let profile = try Self.checked(profile)
        let now = Self.now()
        try Self.checkToken(name: tokenName, expiresAt: expiresAt, now: now)
        return try await engine.write { transaction in
            if try transaction.user(named: name) != nil {
                throw RecordSyncError(.exists, "user \(NameRules.quoted(name)) exists; use 'user token' for another token")
            }
            let recordName = "_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            let user = try transaction.insertUser(named: name, recordName: recordName, createdAt: now)
            try transaction.insertToken(hash: tokenHash, userKey: user.id, name: tokenName ?? "token-1", createdAt: now, expiresAt: expiresAt)
            try Self.store(profile, of: user, in: transaction)
            return .commit(user)
        }
    }

    /// The user named `name`, or `nil`.
    public func user(named name: String) async throws -> User? {
        try await engine.read { transaction in try transaction.user(named: name) }
    }

    /// Adds another token to an existing user and answers its name.
    ///
    /// - Parameters:
    ///   - tokenName: The token's name (one per device); `nil`: the first free `token-N`.
    ///   - expiresAt: When the token stops working (milliseconds since 1970); `nil`: never.
    /// - Throws: `NOT_FOUND` if there is no such user; `EXISTS` if they hold a token of that
    ///   name; `BAD_REQUEST` for a bad name or an expiry already past.
    @discardableResult
    public func addToken(forUserNamed name: String, tokenHash: Data, tokenName: String? = nil, expiresAt: Int64? = nil) async throws -> String {
        let now = Self.now()
        try Self.checkToken(name: tokenName, expiresAt: expiresAt, now: now)
        return try await engine.write { transaction in
            let user = try Self.existingUser(named: name, in: transaction)
            let held = Set(try transaction.tokens(ofUser: user.id).map(\.name))
            let tokenName = tokenName ?? (1...).lazy.map { "token-\($0)" }.first { !held.contains($0) }!
            if held.contains(tokenName) {
                throw RecordSyncError(.exists, "user \(NameRules.quoted(name)) already holds a token named \(NameRules.quoted(tokenName)); revoke it first or choose another name")
            }
            try transaction.insertToken(hash: tokenHash, userKey: user.id, name: tokenName, createdAt: now, expiresAt: expiresAt)
            return .commit(tokenName)
        }
    }

    /// The user named `name`, or `NOT_FOUND`.
    static func existingUser(named name: String, in transaction: any StorageTransaction) throws -> User {
        guard let user = try transaction.user(named: name) else {
            throw RecordSyncError(.notFound, "there is no user \(NameRules.quoted(name))")
        }
        return user
    }

    private static func checkToken(name: String?, expiresAt: Int64?, now: Int64) throws {
        if let name, let problem = NameRules.problem(withName: name, kind: "token name") {
            throw RecordSyncError(.badRequest, problem)
        }
        if let expiresAt, expiresAt <= now {
            throw RecordSyncError(.badRequest, "the token's expiry is not in the future")
        }
    }

    /// A user's tokens, by name. Throws `NOT_FOUND` if there is no such user.
    public func tokens(ofUserNamed name: String) async throws -> [StoredToken] {
        try await engine.read { transaction in
            let user = try Self.existingUser(named: name, in: transaction)
            return try transaction.tokens(ofUser: user.id)
        }
    }

    /// Revokes a user's token by name: it stops working on every server within
    /// ``TokenCheck/revocationDelay``.
    ///
    /// - Throws: `NOT_FOUND` if there is no such user or they hold no token of that name.
    public func revokeToken(named tokenName: String, ofUserNamed name: String) async throws {
        try await engine.write { transaction in
            let user = try Self.existingUser(named: name, in: transaction)
            guard try transaction.deleteToken(named: tokenName, ofUser: user.id) else {
                throw RecordSyncError(.notFound, "user \(NameRules.quoted(name)) holds no token named \(NameRules.quoted(tokenName))")
            }
            try transaction.advanceRevocationSequence()
            return .commit(())
        }
    }

    /// What the records user `name` created hold (``Usage``: `recordserver user usage`).
    public func usage(ofUserNamed name: String) async throws -> Usage {
        try await engine.read { transaction in
            try transaction.usage(ofUser: try Self.existingUser(named: name, in: transaction).userRecordName)
        }
    }

    /// Every user, by name, with when they were created (milliseconds since 1970) and how many
    /// tokens they hold (`recordserver user list`).
    public func users() async throws -> [(user: User, createdAt: Int64, tokens: Int)] {
        try await engine.read { transaction in try transaction.users() }
    }

    /// What a bearer token is worth now: its user, or why it is refused.
    public func checkToken(hash tokenHash: Data) async throws -> TokenCheck {
        let now = Self.now()
        guard let (user, expiresAt) = try await engine.read({ transaction in try transaction.token(forHash: tokenHash) }) else {
            return .unknown
        }
        if let expiresAt, expiresAt <= now { return .expired(at: expiresAt) }
        return .valid(user, expiresAt: expiresAt)
    }

    /// The user holding the token with this hash if it is valid, or `nil`.
    public func user(forTokenHash tokenHash: Data) async throws -> User? {
        if case .valid(let user, _) = try await checkToken(hash: tokenHash) { return user }
        return nil
    }

    /// How many tokens were revoked before their time so far (grows with each revocation and
    /// each user deleted): a server keeping tokens in memory forgets them when it changes.
    public func revocationSequence() async throws -> Int64 {
        try await engine.read { transaction in try transaction.revocationSequence() }
    }

    /// Deletes a user: their private databases in every container and environment (zones,
    /// records, references, tombstones, search rows), the assets only those held, their
    /// subscriptions, notifications, webcourier tokens, upload receipts, bearer tokens and
    /// profile, in one transaction. Their tokens stop working as revoked ones do. Records they
    /// created in public databases stay, still naming them as creator, and no user's token can
    /// change them any more.
    ///
    /// A dry run (`dryRun`) answers what the deletion would remove and undoes it.
    ///
    /// - Throws: `NOT_FOUND` if there is no such user.
    @discardableResult
    public func deleteUser(named name: String, dryRun: Bool = false) async throws -> UserDeletion {
        let gone = try await engine.write { transaction in
            let user = try Self.existingUser(named: name, in: transaction)
            var deletion = UserDeletion(user: user)
            let databases = try transaction.privateDatabases(ofUser: user.id)
            let zones = try databases.flatMap { try transaction.zones(in: $0) }
            let checksums = try transaction.assetChecksums(inZones: zones.map(\.key), receiptsOfUser: user.id)
            for zone in zones where !zone.deleted {
                try transaction.deleteZoneContents(zone.key)
            }
            for database in databases { try transaction.deleteDatabase(database) }
            try transaction.deleteUser(user.id)
            try transaction.advanceRevocationSequence()
            try transaction.sweepAssetRefs(now: Self.now())
            deletion.databases = databases.count
            deletion.zones = zones.count
            deletion.assets = try transaction.collectUnheldAssetBlobs(checksums)
            return dryRun ? .rollback(deletion) : .commit(deletion)
        }
        if !dryRun, !gone.assets.isEmpty { try await engine.assetBytes.removeCollected(gone.assets) }
        return gone
    }

    // MARK: Profiles and discovery

    /// Changes a user's profile: `change` edits the stored one.
    ///
    /// - Throws: `NOT_FOUND` for an unknown user; `EXISTS` for an email another user holds;
    ///   `BAD_REQUEST` for an email that is not one.
    @discardableResult
    public func setProfile(ofUserNamed name: String, _ change: @escaping @Sendable (inout UserProfile) -> Void) async throws -> UserProfile {
        try await engine.write { transaction in
            let user = try Self.existingUser(named: name, in: transaction)
            return .commit(try Self.change(user, change, in: transaction))
        }
    }

    /// The caller's profile.
    public func profile(of user: User) async throws -> UserProfile {
        try await engine.read { transaction in try transaction.profile(ofUser: user.id) }
    }

    /// Extension `users/discoverability`: the caller makes themselves discoverable or not.
    public func setDiscoverable(_ discoverable: Bool, for user: User) async throws -> UserProfile {
        try await engine.write { transaction in
            .commit(try Self.change(user, { $0.discoverable = discoverable }, in: transaction))
        }
    }

    /// `users/discover` and `users/lookup/*`: the discoverable users matching each entry, in
    /// the order asked, each once; entries matching nobody (or only users who are not
    /// discoverable, or by phone number, which RecordSync does not store) add nothing. The
    /// caller always finds themselves. Each user comes with the entry that found them.
    public func discoverUsers(_ infos: [UserLookupInfo], by caller: User) async throws -> [(user: User, profile: UserProfile, info: UserLookupInfo)] {
        try limits.checkCount(infos.count, of: "users")
        let emails = infos.compactMap { $0.emailAddress.map(Self.normalizedEmail) }
        let names = infos.compactMap(\.userRecordName)
        let found = try await engine.read { transaction in
            (try transaction.users(withEmails: emails), try transaction.users(withRecordNames: names))
        }
        var byEmail: [String: (user: User, profile: UserProfile)] = [:]
        for entry in found.0 { if let email = entry.profile.email { byEmail[email] = entry } }
        let byName = Dictionary(found.1.map { ($0.user.userRecordName, $0) }, uniquingKeysWith: { first, _ in first })
        var answered: Set<Int64> = []
        var users: [(user: User, profile: UserProfile, info: UserLookupInfo)] = []
        for info in infos {
            let match = info.emailAddress.flatMap { byEmail[Self.normalizedEmail($0)] } ?? info.userRecordName.flatMap { byName[$0] }
            guard let match, match.profile.discoverable || match.user.id == caller.id, answered.insert(match.user.id).inserted else { continue }
            users.append((match.user, match.profile, info))
        }
        return users
    }

    /// An email as stored and compared: trimmed and lowercased.
    static func normalizedEmail(_ email: String) -> String {
        email.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
    }

    /// The profile with its email normalised and its names trimmed.
    ///
    /// - Throws: `BAD_REQUEST` for an email without one `@` between non-empty parts, or with
    ///   spaces or control characters, or over 255 bytes; a name over 255 bytes.
    static func checked(_ profile: UserProfile) throws -> UserProfile {
        var profile = profile
        if let email = profile.email {
            let normalized = normalizedEmail(email)
            let parts = normalized.split(separator: "@", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty, normalized.utf8.count <= 255,
                  !normalized.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control }) else {
                throw RecordSyncError(.badRequest, "\(NameRules.quoted(email)) is not an email address")
            }
            profile.email = normalized
        }
        for (name, kind) in [(profile.givenName, "given name"), (profile.familyName, "family name")] {
            if let name, name.utf8.count > 255 { throw RecordSyncError(.badRequest, "the \(kind) is longer than 255 bytes") }
        }
        return profile
    }

    private static func change(_ user: User, _ change: (inout UserProfile) -> Void, in transaction: any StorageTransaction) throws -> UserProfile {
        var profile = try transaction.profile(ofUser: user.id)
        change(&profile)
        profile = try checked(profile)
        try store(profile, of: user, in: transaction)
        return profile
    }

    /// Stores a checked profile, its email free or already this user's.
    private static func store(_ profile: UserProfile, of user: User, in transaction: any StorageTransaction) throws {
        if let email = profile.email, try transaction.users(withEmails: [email]).contains(where: { $0.user.id != user.id }) {
            throw RecordSyncError(.exists, "another user has the email \(NameRules.quoted(email))")
        }
        try transaction.setProfile(profile, ofUser: user.id)
    }
}

/// What a bearer token is worth at the moment it is checked.
public enum TokenCheck: Sendable, Equatable {
    /// It names this user, until `expiresAt` (milliseconds since 1970; `nil`: no expiry).
    case valid(User, expiresAt: Int64?)
    /// It expired at this time (milliseconds since 1970).
    case expired(at: Int64)
    /// No user holds it: never issued, revoked, or its user deleted.
    case unknown

    /// How long a server may go on accepting a token after it was revoked or its user deleted:
    /// a server keeping tokens in memory reads ``RecordStore/revocationSequence()`` at least
    /// this often while it serves requests.
    public static let revocationDelay: Duration = .milliseconds(500)
}

/// What ``RecordStore/deleteUser(named:)`` removed.
public struct UserDeletion: Sendable {
    /// The user, as they were.
    public var user: User
    /// Their private databases (one per container and environment they used).
    public var databases = 0
    /// The zones of those, deleted ones included.
    public var zones = 0
    /// The checksums of the asset blobs that went with them (blobs other users' records or
    /// uploads also hold stay).
    public var assets: [String] = []

    init(user: User) { self.user = user }
}

extension UserProfile {
    /// Apple's User dictionary for this user: names only when discoverable (or `toSelf`), and
    /// the email when `withEmail`.
    public func userInfo(_ user: User, withEmail: Bool, toSelf: Bool = false, userName: String? = nil) -> UserIdentity {
        let named = discoverable || toSelf
        return UserIdentity(userRecordName: user.userRecordName, firstName: named ? givenName : nil, lastName: named ? familyName : nil,
                            emailAddress: withEmail ? email : nil, userName: userName)
    }

    /// Apple's User Identity dictionary for this user, its `lookupInfo` the entry that found
    /// them (for the caller themselves, their own email and record name).
    public func identity(_ user: User, foundBy info: UserLookupInfo? = nil) -> UserIdentityInfo {
        let named = discoverable || info == nil
        let names = named && (givenName != nil || familyName != nil) ? UserNameComponents(givenName: givenName, familyName: familyName) : nil
        return UserIdentityInfo(userRecordName: user.userRecordName,
                                lookupInfo: info ?? UserLookupInfo(emailAddress: email, userRecordName: user.userRecordName), nameComponents: names)
    }
}
