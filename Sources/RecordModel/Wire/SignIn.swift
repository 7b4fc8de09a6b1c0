import Foundation

/// Extension `POST /auth/1/{container}/{environment}/signin/idtoken`: signs in with an
/// identity provider's ID token (docs/protocol.md, "Signing in").
public struct IDTokenSignInRequest: Sendable, Hashable, Codable {
    /// The ID token (a JWT) the provider gave the app.
    public var idToken: String
    /// The operator's name for the provider; `nil`: the provider whose issuer the token names.
    public var provider: String?
    /// The nonce the app gave the provider, if it gave one: the token must carry it (or, as Sign
    /// in with Apple's native flow does, its SHA-256 in hex).
    public var nonce: String?
    /// The session token's name, one per device (signing in again from it replaces its token).
    public var deviceName: String?
    /// The person's names, as the app got them (Sign in with Apple gives them once, at the
    /// first sign-in, and never in the token): unverified, kept at the user's first sign-in only.
    public var givenName: String?
    public var familyName: String?

    public init(idToken: String, provider: String? = nil, nonce: String? = nil, deviceName: String? = nil, givenName: String? = nil,
                familyName: String? = nil) {
        self.idToken = idToken
        self.provider = provider
        self.nonce = nonce
        self.deviceName = deviceName
        self.givenName = givenName
        self.familyName = familyName
    }
}

/// The answer to a sign-in: the session token, which the app sends as `ckWebAuthToken` (or
/// `Authorization: Bearer`), whose user it signs in as, and when it stops working.
public struct SignInResponse: Sendable, Hashable, Codable {
    /// The session token.
    public var ckWebAuthToken: String
    public var userRecordName: String
    /// When the token expires, in milliseconds since 1970.
    public var expires: Int64
    /// Whether this sign-in created the user.
    public var created: Bool
    /// The token's name (``IDTokenSignInRequest/deviceName``, or `sign-in-N`).
    public var tokenName: String

    public init(ckWebAuthToken: String, userRecordName: String, expires: Int64, created: Bool, tokenName: String) {
        self.ckWebAuthToken = ckWebAuthToken
        self.userRecordName = userRecordName
        self.expires = expires
        self.created = created
        self.tokenName = tokenName
    }
}

// MARK: Built-in accounts (docs/protocol.md, "Accounts")

/// `POST /auth/1/{container}/{environment}/signup`: asks for an account; the server mails the
/// address a code (``SignUpVerifyRequest``). Answered `{}` whether the address was free or not.
public struct SignUpRequest: Sendable, Hashable, Codable {
    public var email: String
    public var password: String
    /// The operator's invitation code, where signing up needs one.
    public var invitation: String?

    public init(email: String, password: String, invitation: String? = nil) {
        self.email = email
        self.password = password
        self.invitation = invitation
    }
}

/// `POST /auth/1/{container}/{environment}/signup/verify`: the code mailed at sign-up; makes the
/// account and signs in (``SignInResponse``).
public struct SignUpVerifyRequest: Sendable, Hashable, Codable {
    public var email: String
    public var code: String
    public var deviceName: String?
    /// The person's names, kept in their profile.
    public var givenName: String?
    public var familyName: String?

    public init(email: String, code: String, deviceName: String? = nil, givenName: String? = nil, familyName: String? = nil) {
        self.email = email
        self.code = code
        self.deviceName = deviceName
        self.givenName = givenName
        self.familyName = familyName
    }
}

/// `POST /auth/1/{container}/{environment}/signin/password`: signs in with an address and a
/// password (``SignInResponse``).
public struct PasswordSignInRequest: Sendable, Hashable, Codable {
    public var email: String
    public var password: String
    public var deviceName: String?

    public init(email: String, password: String, deviceName: String? = nil) {
        self.email = email
        self.password = password
        self.deviceName = deviceName
    }
}

/// `POST /auth/1/{container}/{environment}/password`, with the session token: changes the
/// password; every other token of the user is revoked.
public struct PasswordChangeRequest: Sendable, Hashable, Codable {
    public var password: String
    public var newPassword: String

    public init(password: String, newPassword: String) {
        self.password = password
        self.newPassword = newPassword
    }
}

/// The answer to a password change: how many of the user's other tokens were revoked.
public struct PasswordChangeResponse: Sendable, Hashable, Codable {
    public var revokedTokens: Int

    public init(revokedTokens: Int) {
        self.revokedTokens = revokedTokens
    }
}

/// `POST /auth/1/{container}/{environment}/reset`: asks for a reset code by mail. Answered `{}`
/// whether the address has an account or not.
public struct ResetRequest: Sendable, Hashable, Codable {
    public var email: String

    public init(email: String) {
        self.email = email
    }
}

/// `POST /auth/1/{container}/{environment}/reset/complete`: sets a new password with the mailed
/// code, revokes every token of the user, and signs in (``SignInResponse``).
public struct ResetCompleteRequest: Sendable, Hashable, Codable {
    public var email: String
    public var code: String
    public var newPassword: String
    public var deviceName: String?

    public init(email: String, code: String, newPassword: String, deviceName: String? = nil) {
        self.email = email
        self.code = code
        self.newPassword = newPassword
        self.deviceName = deviceName
    }
}

/// `POST /auth/1/{container}/{environment}/account/delete`, with the session token: deletes the
/// caller's user and everything they own, as `recordserver user delete` does. A user with a
/// password gives it.
public struct AccountDeleteRequest: Sendable, Hashable, Codable {
    public var password: String?

    public init(password: String? = nil) {
        self.password = password
    }
}
