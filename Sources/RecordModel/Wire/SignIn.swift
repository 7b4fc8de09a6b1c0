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
