import Crypto
import Foundation
import Hummingbird
import RecordModel

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
