import Crypto
import Foundation
import RecordModel

/// Signs and checks the tokens in asset URLs (upload grants, download links) with HMAC-SHA256
/// keys kept in storage, so that every server over the same storage accepts every other's URLs.
/// The newest key signs; every stored key verifies, so a rotation (``rotate(in:now:)``) never
/// breaks a URL already handed out. Keys are read again every minute, and at once when a token
/// names a key not yet seen.
public final class AssetSigner: @unchecked Sendable {
    private let engine: any StorageEngine
    private let lock = NSLock()
    private var keys: [AssetKey] = []
    private var loadedAt = Date.distantPast

    init(engine: any StorageEngine) {
        self.engine = engine
    }

    /// A signer of its own over `engine` (for tests: one that has read no key yet).
    package convenience init(testing engine: any StorageEngine) {
        self.init(engine: engine)
    }

    /// `payload` signed: `base64url(payload).keyID.base64url(HMAC)`.
    public func sign(_ payload: Data) async throws -> String {
        Self.sign(payload, with: try await signingKey())
    }

    /// `payload` signed with `key` (from ``signingKey()``).
    public static func sign(_ payload: Data, with key: AssetKey) -> String {
        let body = payload.base64URLEncoded()
        return "\(body).\(key.id).\(mac(body, key).base64URLEncoded())"
    }

    /// The payload of a token this storage's keys signed, or `nil` (forged, altered, garbage, or
    /// signed by a key no longer stored).
    public func verify(_ token: String) async throws -> Data? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let mac = Data(base64URLEncoded: String(parts[2])) else { return nil }
        let id = String(parts[1])
        var key = cached(id)
        // Read again when unknown, and every minute (a retired key stops verifying).
        if key == nil || lock.withLock({ Date().timeIntervalSince(loadedAt) >= 60 }) {
            try await load()
            key = cached(id)
        }
        guard let key, HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: Data(parts[0].utf8), using: SymmetricKey(data: key.secret)) else {
            return nil
        }
        return Data(base64URLEncoded: String(parts[0]))
    }

    /// Adds a new signing key and removes all but it and the one before (whose URLs stay valid
    /// until they expire); answers the new key's ID. Servers sign with it within a minute.
    public static func rotate(in engine: any StorageEngine, now: Int64) async throws -> String {
        let key = newKey(now: now)
        try await engine.write { transaction in
            let kept = try transaction.assetKeys().sorted { $0.createdAt > $1.createdAt }.prefix(1).map(\.id)
            try transaction.deleteAssetKeys(except: kept)
            try transaction.insertAssetKey(key)
            return .commit(())
        }
        return key.id
    }

    private static func newKey(now: Int64) -> AssetKey {
        var secret = Data(count: 32)
        var generator = SystemRandomNumberGenerator()
        for index in secret.indices { secret[index] = UInt8.random(in: 0...255, using: &generator) }
        let id = String(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12)).lowercased()
        return AssetKey(id: id, secret: secret, createdAt: now)
    }

    private static func mac(_ body: String, _ key: AssetKey) -> Data {
        Data(HMAC<SHA256>.authenticationCode(for: Data(body.utf8), using: SymmetricKey(data: key.secret)))
    }

    private func cached(_ id: String) -> AssetKey? {
        lock.withLock { keys.first { $0.id == id } }
    }

    /// The key that signs now (the newest stored; the first is made on first use).
    public func signingKey() async throws -> AssetKey {
        if let key = lock.withLock({ Date().timeIntervalSince(loadedAt) < 60 ? keys.max { $0.createdAt < $1.createdAt } : nil }) {
            return key
        }
        try await load()
        if let key = lock.withLock({ keys.max { $0.createdAt < $1.createdAt } }) { return key }
        // The first key of this storage (two servers may race: the newest signs, both verify).
        let key = Self.newKey(now: RecordStore.now())
        try await engine.write { transaction in
            if try transaction.assetKeys().isEmpty { try transaction.insertAssetKey(key) }
            return .commit(())
        }
        try await load()
        guard let stored = lock.withLock({ keys.max { $0.createdAt < $1.createdAt } }) else {
            throw RecordSyncError(.internalError, "no key signs asset URLs")
        }
        return stored
    }

    private func load() async throws {
        let stored = try await engine.read { try $0.assetKeys() }
        lock.withLock {
            keys = stored
            loadedAt = Date()
        }
    }
}

extension Data {
    /// Base64url without padding.
    func base64URLEncoded() -> String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// Reads base64url, with or without padding.
    init?(base64URLEncoded text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }
}
