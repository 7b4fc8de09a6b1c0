import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import RecordModel
import RecordRules

/// Bearer tokens: how they are made, hashed for storage, and found in a request.
public enum Credentials {
    /// A new random bearer token: `rs_` and 32 random bytes in base64url.
    ///
    /// The prefix keeps a token from beginning with `-` (which command-line parsers take for an
    /// option) and makes a leaked token easy to recognise.
    public static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return "rs_" + Base64URL.encode(Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }))
    }

    /// The SHA-256 of a token: what the store keeps instead of the token.
    public static func hash(_ token: String) -> Data {
        Data(SHA256.hash(data: Data(token.utf8)))
    }

    /// The server-to-server signature a request carries, or `nil` when it has no
    /// `X-Apple-CloudKit-Request-KeyID`.
    ///
    /// - Throws: `AUTHENTICATION_FAILED` when the key ID comes without the date or signature.
    static func signedRequest(_ request: Request, body: Data) throws -> SignedRequest? {
        guard let keyID = request.headers[keyIDHeader] else { return nil }
        guard let date = request.headers[dateHeader], let signature = request.headers[signatureHeader] else {
            throw RecordSyncError(.authenticationFailed, "a signed request needs X-Apple-CloudKit-Request-ISO8601Date and X-Apple-CloudKit-Request-SignatureV1 beside X-Apple-CloudKit-Request-KeyID")
        }
        return SignedRequest(keyID: keyID, date: date, signature: signature, body: body, subpath: request.uri.path, query: request.uri.query)
    }

    static let keyIDHeader = HTTPField.Name("X-Apple-CloudKit-Request-KeyID")!
    static let dateHeader = HTTPField.Name("X-Apple-CloudKit-Request-ISO8601Date")!
    static let signatureHeader = HTTPField.Name("X-Apple-CloudKit-Request-SignatureV1")!

    /// A new random API token: `rsapi_` and 32 random bytes in base64url. The prefix tells it
    /// from a user's token (`rs_`) without reading the store.
    public static func newAPIToken() -> String {
        "rsapi_" + newToken().dropFirst(3)
    }

    /// A new operator's secret: `rsop_` and 32 random bytes in base64url. The prefix tells it
    /// from a user's token without reading the store.
    public static func newOperatorSecret() -> String {
        "rsop_" + newToken().dropFirst(3)
    }

    /// Whether a bearer token is meant as an operator's secret.
    static func isOperatorSecret(_ value: String) -> Bool {
        value.hasPrefix("rsop_")
    }

    /// The header naming the user an operator acts as on the database API.
    static let actAsHeader = HTTPField.Name("X-RecordSync-Act-As")!

    /// Whether a `ckAPIToken` value is meant as an API token (rather than a user's token sent
    /// under CloudKit JS's parameter, which ``token(in:userTokensAsAPIToken:)`` may accept).
    static func isAPIToken(_ value: String) -> Bool {
        value.hasPrefix("rsapi_")
    }

    /// What a request carries to say who sends it: a user's token (`Authorization: Bearer
    /// TOKEN`, else the `ckWebAuthToken` query parameter, else a `ckAPIToken` that is not an API
    /// token, when `userTokensAsAPIToken`), and an API token (`ckAPIToken=rsapi_…`). Either may be
    /// missing; a request with neither is refused by the caller.
    ///
    /// - Throws: `AUTHENTICATION_FAILED` for a malformed `Authorization` header, and for a
    ///   `ckAPIToken` that is no API token when `userTokensAsAPIToken` is off.
    static func token(in request: Request, userTokensAsAPIToken: Bool) throws -> (user: String?, apiToken: String?) {
        let query = request.uri.queryParameters
        var user: String?
        if let header = request.headers[.authorization] {
            let parts = header.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].isEmpty else {
                throw RecordSyncError(.authenticationFailed, "the Authorization header must be 'Bearer TOKEN'")
            }
            user = String(parts[1])
        } else if let token = query.get("ckWebAuthToken"), !token.isEmpty {
            user = token
        }
        guard let given = query.get("ckAPIToken"), !given.isEmpty else { return (user, nil) }
        if isAPIToken(given) { return (user, given) }
        guard userTokensAsAPIToken else {
            throw RecordSyncError(.authenticationFailed, "ckAPIToken is not an API token this server issued (recordserver api-token add)")
        }
        // CloudKit JS sends the app's key beside ckWebAuthToken, which then takes precedence.
        return (user ?? given, nil)
    }
}
