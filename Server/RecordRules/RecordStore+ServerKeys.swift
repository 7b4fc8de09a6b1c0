import Crypto
import Foundation
import RecordModel

/// A request signed with a server-to-server key, as CloudKit's are: its three headers, the body
/// as sent and the URL path.
public struct SignedRequest: Sendable {
    /// `X-Apple-CloudKit-Request-KeyID`.
    public var keyID: String
    /// `X-Apple-CloudKit-Request-ISO8601Date`.
    public var date: String
    /// `X-Apple-CloudKit-Request-SignatureV1`: base64 of an ECDSA P-256 signature (DER) over
    /// SHA-256 of ``message``.
    public var signature: String
    /// The body as it came, before any `Content-Encoding` is undone.
    public var body: Data
    /// The path of the URL, from `/database/` on, without its query.
    public var subpath: String
    /// The URL's query (after `?`, as sent), or `nil` when it has none.
    public var query: String?

    /// A signed request's parts.
    public init(keyID: String, date: String, signature: String, body: Data, subpath: String, query: String? = nil) {
        self.keyID = keyID
        self.date = date
        self.signature = signature
        self.body = body
        self.subpath = subpath
        self.query = query
    }

    /// What a signature may be over, any one of which verifies the request:
    /// `date:base64(SHA-256(body)):path`, where `path` is the path with its query when the URL
    /// has one (as CloudKit JS signs), else the path alone (as earlier clients sign), and, for a
    /// request without a body, the hash field may also be empty (as some CKWS clients sign).
    public var messages: [Data] {
        var hashes = [Data(SHA256.hash(data: body)).base64EncodedString()]
        if body.isEmpty { hashes.append("") }
        var paths = [subpath]
        if let query, !query.isEmpty { paths.insert("\(subpath)?\(query)", at: 0) }
        return paths.flatMap { path in hashes.map { Data("\(date):\($0):\(path)".utf8) } }
    }
}

extension RecordStore {
    /// Registers a server-to-server key that signs requests as the user `name` (in public
    /// databases only) and answers its key ID (the SHA-256 of the public key, in hex). Its name
    /// is `keyName`, or the first free of `key-1`, `key-2`, ….
    ///
    /// - Parameter publicKeyPEM: A P-256 public key (`-----BEGIN PUBLIC KEY-----`, as
    ///   `openssl ec -pubout` writes it).
    /// - Throws: `NOT_FOUND` for an unknown user; `EXISTS` for a key already registered or a
    ///   name the user's keys already have; `BAD_REQUEST` for a key that is not a P-256 public
    ///   key, or a bad name.
    public func addServerKey(forUserNamed name: String, keyName: String? = nil, publicKeyPEM: String) async throws -> String {
        if let keyName, let problem = NameRules.problem(withName: keyName, kind: "key name") { throw RecordSyncError(.badRequest, problem) }
        let publicKey: P256.Signing.PublicKey
        do {
            publicKey = try P256.Signing.PublicKey(pemRepresentation: publicKeyPEM)
        } catch {
            throw RecordSyncError(.badRequest, "not a P-256 public key in PEM form (-----BEGIN PUBLIC KEY-----): \(error)")
        }
        let x963 = publicKey.x963Representation
        let id = SHA256.hash(data: x963).map { String(format: "%02x", $0) }.joined()
        let now = Self.now()
        return try await engine.write { transaction in
            let user = try Self.existingUser(named: name, in: transaction)
            if let existing = try transaction.serverKey(id: id) {
                throw RecordSyncError(.exists, "this key is already registered, as \(NameRules.quoted(existing.key.name)) of user \(NameRules.quoted(existing.user.name))")
            }
            let held = Set(try transaction.serverKeys(ofUser: user.id).map(\.name))
            let keyName = keyName ?? (1...).lazy.map { "key-\($0)" }.first { !held.contains($0) }!
            if held.contains(keyName) {
                throw RecordSyncError(.exists, "user \(NameRules.quoted(name)) already has a key named \(NameRules.quoted(keyName))")
            }
            try transaction.insertServerKey(StoredServerKey(id: id, name: keyName, publicKey: x963, createdAt: now), userKey: user.id)
            return .commit(id)
        }
    }

    /// A user's server-to-server keys, by name. Throws `NOT_FOUND` for an unknown user.
    public func serverKeys(ofUserNamed name: String) async throws -> [StoredServerKey] {
        try await engine.read { transaction in
            let user = try Self.existingUser(named: name, in: transaction)
            return try transaction.serverKeys(ofUser: user.id)
        }
    }

    /// Removes a user's server-to-server key by name: requests it signs are refused from the
    /// next one on, on every server (keys are read for each signed request).
    ///
    /// - Throws: `NOT_FOUND` for an unknown user or key name.
    public func revokeServerKey(named keyName: String, ofUserNamed name: String) async throws {
        try await engine.write { transaction in
            let user = try Self.existingUser(named: name, in: transaction)
            guard try transaction.deleteServerKey(named: keyName, ofUser: user.id) else {
                throw RecordSyncError(.notFound, "user \(NameRules.quoted(name)) has no key named \(NameRules.quoted(keyName))")
            }
            return .commit(())
        }
    }

    /// The user a signed request acts as: its key is registered, its date is within
    /// ``StoreLimits/signedRequestSkew`` of now, its signature verifies, and that signature was
    /// not seen before (by any server sharing the storage) within the skew.
    ///
    /// - Throws: `AUTHENTICATION_FAILED` saying which of those failed.
    public func verify(_ request: SignedRequest) async throws -> User {
        let now = Self.now()
        guard let date = Self.date(request.date) else {
            throw RecordSyncError(.authenticationFailed, "X-Apple-CloudKit-Request-ISO8601Date \(NameRules.quoted(request.date)) is not an ISO 8601 date (2026-01-31T12:00:00Z)")
        }
        let skew = limits.signedRequestSkew.milliseconds
        guard abs(date - now) <= skew else {
            throw RecordSyncError(.authenticationFailed, "X-Apple-CloudKit-Request-ISO8601Date is more than \(skew / 1000) s from the server's time; check the clocks")
        }
        guard let signature = Data(base64Encoded: request.signature), let ecdsa = try? P256.Signing.ECDSASignature(derRepresentation: signature) else {
            throw RecordSyncError(.authenticationFailed, "X-Apple-CloudKit-Request-SignatureV1 is not a base64 ECDSA signature")
        }
        guard let found = try await engine.read({ transaction in try transaction.serverKey(id: request.keyID) }) else {
            throw RecordSyncError(.authenticationFailed, "no server-to-server key has the ID in X-Apple-CloudKit-Request-KeyID")
        }
        guard let publicKey = try? P256.Signing.PublicKey(x963Representation: found.key.publicKey),
              request.messages.contains(where: { publicKey.isValidSignature(ecdsa, for: $0) }) else {
            throw RecordSyncError(.authenticationFailed, "the signature does not match the request (sign date:base64(SHA-256(body)):path, the path with its query if it has one, with the key's private half)")
        }
        // Remembered in its one low-s form: (r, s) and (r, n - s) both verify, and a replay
        // must not pass by flipping s.
        let hash = Data(SHA256.hash(data: Self.lowS(ecdsa.rawRepresentation)))
        let fresh = try await engine.write { transaction in
            .commit(try transaction.noteSignature(hash, now: now, forgetBefore: now - 2 * skew))
        }
        guard fresh else {
            throw RecordSyncError(.authenticationFailed, "this signature was used before; sign each request afresh")
        }
        return found.user
    }

    /// The order of P-256's group.
    static let p256Order: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                     0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51]

    /// A raw signature `r ‖ s` (32 bytes each) with `s` replaced by `n - s` when that is smaller:
    /// the one form of the two that verify.
    static func lowS(_ raw: Data) -> Data {
        guard raw.count == 64 else { return raw }
        let r = [UInt8](raw.prefix(32)), s = [UInt8](raw.suffix(32))
        var flipped = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in stride(from: 31, through: 0, by: -1) {
            var digit = Int(p256Order[index]) - Int(s[index]) - borrow
            borrow = digit < 0 ? 1 : 0
            if digit < 0 { digit += 256 }
            flipped[index] = UInt8(digit)
        }
        // Big-endian byte arrays of equal length compare as numbers.
        return Data(r + (flipped.lexicographicallyPrecedes(s) ? flipped : s))
    }

    /// Milliseconds since 1970 of an ISO 8601 date and time (fractional seconds allowed).
    static func date(_ text: String) -> Int64? {
        let date = (try? Date.ISO8601FormatStyle().parse(text)) ?? (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
        return date.map { Int64($0.timeIntervalSince1970 * 1000) }
    }
}
