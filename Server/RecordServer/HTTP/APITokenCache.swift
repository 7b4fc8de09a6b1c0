import Foundation
import RecordRules

/// The API tokens the store holds, read at most every ``maximumAge`` while requests come (they
/// are few, and every visitor's request and every cross-origin request needs them).
///
/// A token issued since the last read (by `recordserver api-token add`, in another process)
/// is found by its hash at once; a revoked one stops working within ``maximumAge`` on every
/// server, as a revoked user's token does (``TokenCheck/revocationDelay``).
final class APITokenCache: @unchecked Sendable {
    /// How long a read of the tokens is trusted.
    let maximumAge: Duration

    private let lock = NSLock()
    private var tokens: [Data: StoredAPIToken] = [:]
    private var readAt: ContinuousClock.Instant?

    init(maximumAge: Duration = TokenCheck.revocationDelay) {
        self.maximumAge = maximumAge
    }

    /// Every API token, read anew when the last read is older than ``maximumAge``.
    func all(from store: RecordStore) async throws -> [Data: StoredAPIToken] {
        let now = ContinuousClock.now
        if let kept = lock.withLock({ readAt.map { now - $0 < maximumAge } ?? false ? tokens : nil }) { return kept }
        var read: [Data: StoredAPIToken] = [:]
        for token in try await store.apiTokens() { read[token.hash] = token }
        lock.withLock {
            tokens = read
            readAt = now
        }
        return read
    }

    /// The API token whose value's SHA-256 is `hash`, or `nil` (never issued, or revoked).
    func token(hash: Data, from store: RecordStore) async throws -> StoredAPIToken? {
        if let token = try await all(from: store)[hash] { return token }
        return try await store.apiToken(forHash: hash)
    }
}
