import Crypto
import Foundation
import RecordModel
import RecordStorage

/// Who may sign up for a built-in account.
public enum SignUpMode: String, Sendable, Hashable, CaseIterable, Codable {
    /// Anyone with an email address.
    case open
    /// Whoever holds an invitation code the operator made (single-use, expiring).
    case invitation
    /// No one: accounts come only from earlier sign-ups.
    case closed
}

/// How many attempts the server takes before it answers `THROTTLED`, counted in the store so
/// that every server of a deployment sees them.
public struct SignInThrottle: Sendable, Hashable {
    /// Failed sign-ins, codes and password checks for one email address, account or not.
    public var failuresPerAccount = 5
    /// Failed attempts from one client address, and mails sent at its request.
    public var failuresPerAddress = 50
    /// Mails sent to one address.
    public var mailsPerAccount = 5
    /// The window the counts are kept for, from the first attempt.
    public var window: Duration = .seconds(15 * 60)

    public init() {}
}

/// The operator's settings of built-in accounts (docs/deploying.md, "Accounts").
public struct AccountSettings: Sendable, Hashable {
    public var signUp: SignUpMode = .closed
    /// How long a mailed code works.
    public var codeLifetime: Duration = .seconds(60 * 60)
    public var throttle = SignInThrottle()
    public var hashing = PasswordHashing.standard
    /// The name mails sign with.
    public var serviceName = "RecordSync"

    public init() {}
}

/// A mail to send: the server's answer does not wait for anything but its sending.
public struct AccountMail: Sendable, Hashable {
    public var to: String
    public var subject: String
    public var body: String
}

/// Built-in accounts (docs/protocol.md, "Accounts"): sign-up by email address and password,
/// verified by a code mailed to the address; sign-in, password change and reset, deletion.
///
/// An address counts only once verified: a sign-up is kept as a code until then, and becomes
/// a user, with the address in its profile (where discovery finds it), when the code comes
/// back. Whether an address has an account shows in no answer: signing up with a taken
/// address answers as with a free one (the mail says the address has an account), and
/// signing in with an unknown address as with a wrong password (a key is derived either way).
public struct Accounts: Sendable {
    public let store: RecordStore
    public let settings: AccountSettings

    public init(store: RecordStore, settings: AccountSettings) {
        self.store = store
        self.settings = settings
    }

    // MARK: Signing up

    /// Signs up: checks the invitation (in `invitation` mode) and answers the mail to send: a
    /// code to verify the address with, or (the address has an account) a note saying so.
    /// The account is made when ``verify(email:code:deviceName:givenName:familyName:tokenHash:lifetime:client:)``
    /// gets the code.
    public func signUp(email: String, password: String, invitation: String?, client: String?) async throws -> AccountMail {
        guard settings.signUp != .closed else {
            throw RecordSyncError(.accessDenied, "signing up is closed on this server: its operator makes the accounts")
        }
        let email = try Self.checkedEmail(email)
        try Self.checkPassword(password)
        let invitationHash: Data?
        if settings.signUp == .invitation {
            guard let invitation, !invitation.isEmpty else {
                throw RecordSyncError(.accessDenied, "signing up on this server needs an invitation code (invitation)")
            }
            invitationHash = Self.codeHash(invitation)
        } else {
            invitationHash = nil
        }
        try await checkThrottle(Self.mailKeys(email, client), now: RecordStore.now())
        let passwordHash = try await settings.hashing.hash(password)
        let code = Self.newCode(length: 8)
        let now = RecordStore.now()
        let expiresAt = now + settings.codeLifetime.components.seconds * 1000
        let outcome = try await store.engine.write { transaction -> WriteOutcome<SignUpOutcome> in
            if let invitationHash {
                guard let held = try transaction.accountCode(hash: invitationHash), held.kind == "invitation", held.expiresAt > now,
                      held.email == nil || held.email == email else { return .commit(.badInvitation) }
            }
            try Self.count(Self.mailKeys(email, client), now: now, window: settings.throttle.window, in: transaction)
            guard try transaction.account(withEmail: email) == nil else { return .commit(.taken) }
            try transaction.deleteAccountCodes(kind: "signup", email: email)
            try transaction.insertAccountCode(StoredAccountCode(hash: Self.codeHash(code), kind: "signup", email: email, passwordHash: passwordHash,
                                                                invitation: invitationHash, createdAt: now, expiresAt: expiresAt),
                                              now: now)
            return .commit(.mailed)
        }
        switch outcome {
        case .badInvitation:
            try await countFailure(email: nil, client: client)
            throw RecordSyncError(.accessDenied, "the invitation code is not valid: unknown, used, expired, or made for another address")
        case .taken:
            return mail(to: email, subject: "You already have an account",
                        "Someone, you perhaps, tried to sign up to \(settings.serviceName) with this address, which has an account already.\n\nSign in with your password, or ask for a reset code if you forgot it. If it was not you, you need do nothing.")
        case .mailed:
            break
        }
        return mail(to: email, subject: "Your sign-up code: \(Self.shown(code))",
                    "Someone, you perhaps, signed up to \(settings.serviceName) with this address. To finish, enter this code:\n\n    \(Self.shown(code))\n\nIt works for \(Self.minutes(settings.codeLifetime)) minutes, once. If it was not you, you need do nothing: no account is made without it.")
    }

    /// Verifies a sign-up's address with the code mailed to it: makes the user and the account
    /// (the address in its profile, discoverable) and signs in.
    ///
    /// - Throws: `AUTHENTICATION_FAILED` for a wrong or expired code (counted as a failed
    ///   sign-in); `ACCESS_DENIED` when the invitation was used meanwhile.
    public func verify(email: String, code: String, deviceName: String?, givenName: String?, familyName: String?, tokenHash: Data,
                       lifetime: Duration, client: String?) async throws -> SignIn {
        let email = try Self.checkedEmail(email)
        try RecordStore.checkSignIn(deviceName: deviceName, givenName: givenName, familyName: familyName)
        try await checkThrottle(Self.failureKeys(email, client), now: RecordStore.now())
        let now = RecordStore.now()
        let codeHash = Self.codeHash(code)
        let signIn = try await store.engine.write { transaction -> WriteOutcome<SignIn?> in
            guard let held = try transaction.accountCode(hash: codeHash), held.kind == "signup", held.email == email, held.expiresAt > now,
                  let passwordHash = held.passwordHash, try transaction.account(withEmail: email) == nil else { return .commit(nil) }
            return .commit(try Self.createAccount(email: email, passwordHash: passwordHash, invitation: held.invitation, givenName: givenName,
                                                  familyName: familyName, tokenHash: tokenHash, deviceName: deviceName,
                                                  expiresAt: now + lifetime.components.seconds * 1000, now: now, in: transaction))
        }
        guard let signIn else {
            try await countFailure(email: email, client: client)
            throw RecordSyncError(.authenticationFailed, "the code is wrong or expired, or the address is verified already: sign up again for a new code")
        }
        return signIn
    }

    /// The operator's verification (`recordserver account verify`): makes the account of the
    /// address's latest sign-up as its code would, without a session token.
    ///
    /// - Throws: `NOT_FOUND` when the address has no sign-up waiting; `EXISTS` when it has an
    ///   account.
    public func verifyWithoutCode(email: String) async throws -> User {
        let email = try Self.checkedEmail(email)
        let now = RecordStore.now()
        return try await store.engine.write { transaction in
            if try transaction.account(withEmail: email) != nil {
                throw RecordSyncError(.exists, "\(NameRules.quoted(email)) has an account already")
            }
            guard let held = try transaction.accountCodes(kind: "signup", email: email).first(where: { $0.expiresAt > now }),
                  let passwordHash = held.passwordHash else {
                throw RecordSyncError(.notFound, "no sign-up of \(NameRules.quoted(email)) is waiting (none, or its code expired)")
            }
            let signIn = try Self.createAccount(email: email, passwordHash: passwordHash, invitation: held.invitation, givenName: nil, familyName: nil,
                                                tokenHash: nil, deviceName: nil, expiresAt: 0, now: now, in: transaction)
            return .commit(signIn.user)
        }
    }

    /// Makes an invitation code (`recordserver account invite`), for any address or one.
    public func invite(email: String?, lifetime: Duration) async throws -> String {
        let email = try email.map(Self.checkedEmail)
        let code = Self.newCode(length: 16)
        let now = RecordStore.now()
        try await store.engine.write { transaction in
            try transaction.insertAccountCode(StoredAccountCode(hash: Self.codeHash(code), kind: "invitation", email: email, createdAt: now,
                                                                expiresAt: now + lifetime.components.seconds * 1000),
                                              now: now)
            return .commit(())
        }
        return Self.shown(code)
    }

    // MARK: Signing in

    /// Signs in with an address and a password.
    ///
    /// - Throws: `AUTHENTICATION_FAILED`, the same for an unknown address and a wrong password;
    ///   `THROTTLED` after too many failures for the address or from the client.
    public func signIn(email: String, password: String, deviceName: String?, tokenHash: Data, lifetime: Duration, client: String?) async throws -> SignIn {
        let email = try Self.checkedEmail(email)
        try RecordStore.checkSignIn(deviceName: deviceName, givenName: nil, familyName: nil)
        try await checkThrottle(Self.failureKeys(email, client), now: RecordStore.now())
        let held = try await store.engine.read { try $0.account(withEmail: email) }
        guard try await settings.hashing.verify(password, against: held?.account.passwordHash), let held else {
            try await countFailure(email: email, client: client)
            throw RecordSyncError(.authenticationFailed, "the email address or the password is wrong")
        }
        let now = RecordStore.now()
        let expiresAt = now + lifetime.components.seconds * 1000
        return try await store.engine.write { transaction in
            // The password changed, or the account went, while the key was derived.
            guard try transaction.account(ofUser: held.user.id)?.passwordHash == held.account.passwordHash else {
                throw RecordSyncError(.authenticationFailed, "the email address or the password is wrong")
            }
            try transaction.clearSignInAttempts(key: "account:\(email)")
            let name = try RecordStore.issueSessionToken(tokenHash, to: held.user, deviceName: deviceName, now: now, expiresAt: expiresAt, in: transaction)
            return .commit(SignIn(user: held.user, created: false, tokenName: name, expiresAt: expiresAt))
        }
    }

    /// Changes a signed-in user's password, checking the present one, and revokes their other
    /// tokens (every device but the one asking signs in again); answers how many went.
    ///
    /// - Throws: `BAD_REQUEST` for a user without a password (they sign in with an identity
    ///   provider, or the operator's tokens); `AUTHENTICATION_FAILED` for a wrong password.
    @discardableResult
    public func changePassword(of user: User, password: String, newPassword: String, keeping tokenHash: Data?, client: String?) async throws -> Int {
        try Self.checkPassword(newPassword)
        let account = try await checkedPassword(password, of: user, client: client)
        let newHash = try await settings.hashing.hash(newPassword)
        let now = RecordStore.now()
        return try await store.engine.write { transaction in
            guard try transaction.account(ofUser: user.id)?.passwordHash == account.passwordHash else {
                throw RecordSyncError(.conflict, "the password changed meanwhile: try again with the new one")
            }
            try transaction.setPasswordHash(newHash, ofUser: user.id, at: now)
            let revoked = try transaction.deleteTokens(ofUser: user.id, keeping: tokenHash)
            if revoked > 0 { try transaction.advanceRevocationSequence() }
            return .commit(revoked)
        }
    }

    /// Asks for a password reset: answers the mail to send, a code to the account's address,
    /// or (the address has none) a note saying so.
    public func requestReset(email: String, client: String?) async throws -> AccountMail {
        let email = try Self.checkedEmail(email)
        try await checkThrottle(Self.mailKeys(email, client), now: RecordStore.now())
        let code = Self.newCode(length: 8)
        let now = RecordStore.now()
        let hasAccount = try await store.engine.write { transaction in
            let held = try transaction.account(withEmail: email) != nil
            if held {
                try transaction.deleteAccountCodes(kind: "reset", email: email)
                try transaction.insertAccountCode(StoredAccountCode(hash: Self.codeHash(code), kind: "reset", email: email, createdAt: now,
                                                                    expiresAt: now + settings.codeLifetime.components.seconds * 1000),
                                                  now: now)
            }
            try Self.count(Self.mailKeys(email, client), now: now, window: settings.throttle.window, in: transaction)
            return .commit(held)
        }
        guard hasAccount else {
            return mail(to: email, subject: "Your password reset",
                        "Someone, you perhaps, asked to reset the password of this address at \(settings.serviceName), but the address has no account there. If it was not you, you need do nothing.")
        }
        return mail(to: email, subject: "Your password reset code: \(Self.shown(code))",
                    "Someone, you perhaps, asked to reset the password of this address at \(settings.serviceName). To choose a new one, enter this code:\n\n    \(Self.shown(code))\n\nIt works for \(Self.minutes(settings.codeLifetime)) minutes, once. If it was not you, you need do nothing: your password stays as it is.")
    }

    /// Resets a password with the code mailed to the account's address: sets it, revokes every
    /// token of the user, and signs in.
    ///
    /// - Throws: `AUTHENTICATION_FAILED` for a wrong or expired code (counted as a failed
    ///   sign-in), the same whether the address has an account or not.
    public func completeReset(email: String, code: String, newPassword: String, deviceName: String?, tokenHash: Data, lifetime: Duration,
                              client: String?) async throws -> SignIn {
        let email = try Self.checkedEmail(email)
        try Self.checkPassword(newPassword)
        try RecordStore.checkSignIn(deviceName: deviceName, givenName: nil, familyName: nil)
        try await checkThrottle(Self.failureKeys(email, client), now: RecordStore.now())
        let newHash = try await settings.hashing.hash(newPassword)
        let now = RecordStore.now()
        let expiresAt = now + lifetime.components.seconds * 1000
        let signIn = try await store.engine.write { transaction -> WriteOutcome<SignIn?> in
            guard let held = try transaction.accountCode(hash: Self.codeHash(code)), held.kind == "reset", held.email == email, held.expiresAt > now,
                  let account = try transaction.account(withEmail: email) else { return .commit(nil) }
            try transaction.setPasswordHash(newHash, ofUser: account.user.id, at: now)
            if try transaction.deleteTokens(ofUser: account.user.id, keeping: nil) > 0 { try transaction.advanceRevocationSequence() }
            try transaction.deleteAccountCodes(kind: "reset", email: email)
            try transaction.clearSignInAttempts(key: "account:\(email)")
            let name = try RecordStore.issueSessionToken(tokenHash, to: account.user, deviceName: deviceName, now: now, expiresAt: expiresAt, in: transaction)
            return .commit(SignIn(user: account.user, created: false, tokenName: name, expiresAt: expiresAt))
        }
        guard let signIn else {
            try await countFailure(email: email, client: client)
            throw RecordSyncError(.authenticationFailed, "the code is wrong or expired: ask for a new one")
        }
        return signIn
    }

    /// Deletes a signed-in user's own account, as `recordserver user delete` does; a user with
    /// a password gives it.
    ///
    /// - Throws: `AUTHENTICATION_FAILED` for a missing or wrong password.
    @discardableResult
    public func deleteAccount(of user: User, password: String?, client: String?) async throws -> UserDeletion {
        if try await store.engine.read({ try $0.account(ofUser: user.id) }) != nil {
            guard let password else {
                throw RecordSyncError(.authenticationFailed, "deleting an account with a password needs the password (password)")
            }
            _ = try await checkedPassword(password, of: user, client: client)
        }
        return try await store.deleteUser(named: user.name)
    }

    /// The user's account, once `password` is checked against it (throttled as a sign-in).
    private func checkedPassword(_ password: String, of user: User, client: String?) async throws -> StoredAccount {
        guard let account = try await store.engine.read({ try $0.account(ofUser: user.id) }) else {
            throw RecordSyncError(.badRequest, "user \(NameRules.quoted(user.name)) has no password: they sign in with an identity provider, or with the operator's tokens")
        }
        try await checkThrottle(Self.failureKeys(account.email, client), now: RecordStore.now())
        guard try await settings.hashing.verify(password, against: account.passwordHash) else {
            try await countFailure(email: account.email, client: client)
            throw RecordSyncError(.authenticationFailed, "the password is wrong")
        }
        return account
    }

    private enum SignUpOutcome { case badInvitation, taken, mailed }

    // MARK: Throttling

    private static func failureKeys(_ email: String, _ client: String?) -> [String] {
        ["account:\(email)"] + (client.map { ["address:\($0)"] } ?? [])
    }

    private static func mailKeys(_ email: String, _ client: String?) -> [String] {
        ["mail:\(email)"] + (client.map { ["address:\($0)"] } ?? [])
    }

    private func limit(of key: String) -> Int64 {
        let throttle = settings.throttle
        if key.hasPrefix("address:") { return Int64(throttle.failuresPerAddress) }
        if key.hasPrefix("mail:") { return Int64(throttle.mailsPerAccount) }
        return Int64(throttle.failuresPerAccount)
    }

    /// `THROTTLED` when a key has reached its limit in its window, with the seconds left.
    private func checkThrottle(_ keys: [String], now: Int64) async throws {
        let window = settings.throttle.window.components.seconds * 1000
        let counts = try await store.engine.read { transaction in try keys.map { ($0, try transaction.signInAttempts(key: $0)) } }
        for (key, count) in counts {
            guard let count, count.windowStart > now - window, count.attempts >= limit(of: key) else { continue }
            let seconds = Double(count.windowStart + window - now) / 1000
            let what = key.hasPrefix("address:") ? "from this client address" : key.hasPrefix("mail:") ? "mails to this address" : "for this address"
            throw RecordSyncError(.throttled, "too many attempts \(what): try again in \(Int(seconds.rounded(.up))) seconds", retryAfter: seconds.rounded(.up))
        }
    }

    /// `THROTTLED` when `client` (a client address) has failed too often lately: what the web
    /// sign-in page checks before a form or a provider's answer that names no account.
    public func checkThrottle(client: String?) async throws {
        guard let client else { return }
        try await checkThrottle(["address:\(client)"], now: RecordStore.now())
    }

    /// Counts a failure from `client` that names no account (a form without its CSRF field, a
    /// provider's answer refused).
    public func countFailure(client: String?) async throws {
        try await countFailure(email: nil, client: client)
    }

    private func countFailure(email: String?, client: String?) async throws {
        let keys = (email.map { ["account:\($0)"] } ?? []) + (client.map { ["address:\($0)"] } ?? [])
        let now = RecordStore.now()
        try await store.engine.write { transaction in
            try Self.count(keys, now: now, window: settings.throttle.window, in: transaction)
            return .commit(())
        }
    }

    private static func count(_ keys: [String], now: Int64, window: Duration, in transaction: any StorageTransaction) throws {
        for key in keys {
            try transaction.countSignInAttempt(key: key, now: now, windowStart: now - window.components.seconds * 1000)
        }
    }

    // MARK: Parts

    /// Makes the user and account of a verified sign-up, consumes its invitation, and gives a
    /// session token when `tokenHash` is given.
    private static func createAccount(email: String, passwordHash: String, invitation: Data?, givenName: String?, familyName: String?,
                                      tokenHash: Data?, deviceName: String?, expiresAt: Int64, now: Int64,
                                      in transaction: any StorageTransaction) throws -> SignIn {
        if let invitation, !(try transaction.deleteAccountCode(hash: invitation)) {
            throw RecordSyncError(.accessDenied, "the invitation code of this sign-up was used meanwhile, or expired")
        }
        var name = email
        var number = 2
        while try transaction.user(named: name) != nil {
            name = "\(email)-\(number)"
            number += 1
        }
        let recordName = "_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let user = try transaction.insertUser(named: name, recordName: recordName, createdAt: now)
        try transaction.insertAccount(StoredAccount(email: email, passwordHash: passwordHash, createdAt: now, passwordChangedAt: now), userKey: user.id)
        try RecordStore.setSignedInProfile(of: user, verifiedEmail: email, givenName: givenName, familyName: familyName, in: transaction)
        try transaction.deleteAccountCodes(kind: "signup", email: email)
        try transaction.clearSignInAttempts(key: "account:\(email)")
        var tokenName = ""
        if let tokenHash {
            tokenName = try RecordStore.issueSessionToken(tokenHash, to: user, deviceName: deviceName, now: now, expiresAt: expiresAt, in: transaction)
        }
        return SignIn(user: user, created: true, tokenName: tokenName, expiresAt: expiresAt)
    }

    private func mail(to email: String, subject: String, _ body: String) -> AccountMail {
        AccountMail(to: email, subject: subject, body: body + "\n\n\(settings.serviceName)\n")
    }

    static func checkedEmail(_ email: String) throws -> String {
        try RecordStore.checked(UserProfile(email: email)).email!
    }

    /// From 8 to 1,024 bytes of UTF-8; nothing else is asked of a password.
    static func checkPassword(_ password: String) throws {
        let bytes = password.utf8.count
        guard bytes >= 8 else { throw RecordSyncError(.badRequest, "the password is \(bytes) bytes long: at least 8, please") }
        guard bytes <= 1024 else { throw RecordSyncError(.badRequest, "the password is \(bytes) bytes long; the limit is 1024") }
    }

    /// Letters and digits easy to read and type (no 0, O, 1, I).
    private static let codeAlphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")

    /// `length` characters of ``codeAlphabet`` (5 bits each).
    static func newCode(length: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return String((0..<length).map { _ in codeAlphabet[Int(generator.next(upperBound: UInt32(codeAlphabet.count)))] })
    }

    /// A code as mailed: in groups of four, joined by dashes.
    static func shown(_ code: String) -> String {
        stride(from: 0, to: code.count, by: 4).map { start in
            String(code.dropFirst(start).prefix(4))
        }.joined(separator: "-")
    }

    /// The SHA-256 of a code as typed: spaces and dashes dropped, letters upper-cased.
    static func codeHash(_ code: String) -> Data {
        let plain = code.uppercased().filter { $0 != "-" && !$0.isWhitespace }
        return Data(SHA256.hash(data: Data(plain.utf8)))
    }

    private static func minutes(_ duration: Duration) -> Int64 { max(1, duration.components.seconds / 60) }
}
