import Foundation
import RecordModel

extension RecordStore {
    /// Creates a user holding one token, with a profile (an email given makes the user
    /// discoverable unless the profile says otherwise).
    ///
    /// - Parameter tokenHash: SHA-256 of the bearer token (tokens are never stored).
    /// - Throws: `EXISTS` if the name or the email is taken; `BAD_REQUEST` for a bad name or email.
    public func createUser(named name: String, tokenHash: Data, profile: UserProfile = UserProfile()) async throws -> User {
        if let problem = NameRules.problem(withName: name, kind: "user name") {
            throw RecordSyncError(.badRequest, problem)
        }
        let profile = try Self.checked(profile)
        return try await engine.write { transaction in
            if try transaction.user(named: name) != nil {
                throw RecordSyncError(.exists, "user \(NameRules.quoted(name)) exists; use 'user token' for another token")
            }
            let recordName = "_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            let now = Self.now()
            let user = try transaction.insertUser(named: name, recordName: recordName, createdAt: now)
            try transaction.insertToken(hash: tokenHash, userKey: user.id, createdAt: now)
            try Self.store(profile, of: user, in: transaction)
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

    /// Every user, by name, with when they were created (milliseconds since 1970) and how many
    /// tokens they hold (`recordserver user list`).
    public func users() async throws -> [(user: User, createdAt: Int64, tokens: Int)] {
        try await engine.read { transaction in try transaction.users() }
    }

    /// The user holding the token with this hash, or `nil`.
    public func user(forTokenHash tokenHash: Data) async throws -> User? {
        try await engine.read { transaction in try transaction.user(forTokenHash: tokenHash) }
    }

    // MARK: Profiles and discovery

    /// Changes a user's profile: `change` edits the stored one.
    ///
    /// - Throws: `NOT_FOUND` for an unknown user; `EXISTS` for an email another user holds;
    ///   `BAD_REQUEST` for an email that is not one.
    @discardableResult
    public func setProfile(ofUserNamed name: String, _ change: @escaping @Sendable (inout UserProfile) -> Void) async throws -> UserProfile {
        try await engine.write { transaction in
            guard let user = try transaction.user(named: name) else {
                throw RecordSyncError(.notFound, "there is no user \(NameRules.quoted(name))")
            }
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
