import Foundation
import RecordRules

/// The users of recently seen bearer tokens, so that a request does not read its token from
/// the store every time (that read, on a database reader, was about 0.5–1 ms of every request
/// under load).
///
/// Only tokens that were found are kept, each for at most ``lifetime``: a token issued a moment
/// ago (by `recordserver user token`, in another process) works as soon as it is used. Tokens
/// cannot be revoked yet; a way to revoke one must also remove it here.
final class TokenCache: @unchecked Sendable {
    /// How long a found token is trusted without reading it again.
    let lifetime: Duration
    /// How many tokens are kept; past it, the cache starts over.
    let capacity: Int

    private let lock = NSLock()
    private var users: [Data: (user: User, until: ContinuousClock.Instant)] = [:]

    init(lifetime: Duration = .seconds(60), capacity: Int = 10_000) {
        self.lifetime = lifetime
        self.capacity = capacity
    }

    /// The user of the token whose hash is `tokenHash`: from the cache, else from `lookUp`
    /// (kept if found).
    func user(forTokenHash tokenHash: Data, lookUp: () async throws -> User?) async throws -> User? {
        let now = ContinuousClock.now
        let cached = lock.withLock { users[tokenHash].flatMap { $0.until > now ? $0.user : nil } }
        if let cached { return cached }
        guard let user = try await lookUp() else { return nil }
        lock.withLock {
            if users.count >= capacity { users.removeAll(keepingCapacity: true) }
            users[tokenHash] = (user, now + lifetime)
        }
        return user
    }
}
