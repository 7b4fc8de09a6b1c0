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
        return SignedRequest(keyID: keyID, date: date, signature: signature, body: body, subpath: request.uri.path)
    }

    static let keyIDHeader = HTTPField.Name("X-Apple-CloudKit-Request-KeyID")!
    static let dateHeader = HTTPField.Name("X-Apple-CloudKit-Request-ISO8601Date")!
    static let signatureHeader = HTTPField.Name("X-Apple-CloudKit-Request-SignatureV1")!

    /// The token a request carries: `Authorization: Bearer TOKEN`, else the `ckWebAuthToken`
    /// query parameter, else `ckAPIToken`.
    ///
    /// - Throws: `AUTHENTICATION_REQUIRED` when there is none; `AUTHENTICATION_FAILED` for a
    ///   malformed `Authorization` header.
    static func token(in request: Request) throws -> String {
        if let header = request.headers[.authorization] {
            let parts = header.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].isEmpty else {
                throw RecordSyncError(.authenticationFailed, "the Authorization header must be 'Bearer TOKEN'")
            }
            return String(parts[1])
        }
        let query = request.uri.queryParameters
        if let token = query.get("ckWebAuthToken") ?? query.get("ckAPIToken"), !token.isEmpty {
            return token
        }
        throw RecordSyncError(.authenticationRequired, "sign in: send 'Authorization: Bearer TOKEN' or the ckWebAuthToken query parameter")
    }
}
