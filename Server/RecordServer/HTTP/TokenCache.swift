import Foundation
import RecordRules

/// The users of recently seen bearer tokens, so that a request does not read its token from
/// the store every time (that read, on a database reader, was about 0.5–1 ms of every request
/// under load).
///
/// Only valid tokens are kept, each for at most ``lifetime`` and never past its expiry: a token
/// issued a moment ago (by `recordserver user token`, in another process) works as soon as it
/// is used. While requests come, the store's count of revocations is read at most every
/// ``revocationCheck``; when it has changed (a token revoked or a user deleted, by any process
/// on the same storage) every kept token is forgotten, so a revoked token stops working within
/// about that long on every server, and the server ends its open push streams (their clients
/// connect again, and a revoked token is refused then).
final class TokenCache: @unchecked Sendable {
    /// How long a found token is trusted without reading it again.
    let lifetime: Duration
    /// How often, at most, the store's count of revocations is read.
    let revocationCheck: Duration
    /// How many tokens are kept; past it, the cache starts over.
    let capacity: Int

    private let lock = NSLock()
    private var users: [Data: (user: User, until: ContinuousClock.Instant)] = [:]
    /// The store's count of revocations when last read, and when that read began.
    private var revocations: Int64?
    private var checkedAt: ContinuousClock.Instant?
    /// Grows whenever the kept tokens are forgotten: a lookup that began before does not keep
    /// what it found.
    private var generation = 0

    init(lifetime: Duration = .seconds(60), revocationCheck: Duration = TokenCheck.revocationDelay, capacity: Int = 10_000) {
        self.lifetime = lifetime
        self.revocationCheck = revocationCheck
        self.capacity = capacity
    }

    /// What the token whose hash is `tokenHash` is worth: from the cache, else from `lookUp`
    /// (kept if valid). `revocations` reads the store's count of revocations; `revoked` runs
    /// when it has changed since the last read (a token was revoked or a user deleted).
    func check(_ tokenHash: Data, revocations: () async throws -> Int64, revoked: () async -> Void = {},
               lookUp: () async throws -> TokenCheck) async throws -> TokenCheck {
        let now = ContinuousClock.now
        let due = lock.withLock {
            guard checkedAt.map({ now - $0 >= revocationCheck }) ?? true else { return false }
            checkedAt = now
            return true
        }
        if due {
            do {
                let count = try await revocations()
                let changed = lock.withLock {
                    guard count != self.revocations else { return false }
                    let before = self.revocations
                    if before != nil { users.removeAll(keepingCapacity: true) }
                    self.revocations = count
                    self.generation += 1
                    return before != nil
                }
                if changed { await revoked() }
            } catch {
                lock.withLock { checkedAt = nil }
                throw error
            }
        }
        let (cached, generation) = lock.withLock { (users[tokenHash].flatMap { $0.until > now ? $0.user : nil }, self.generation) }
        if let cached { return .valid(cached, expiresAt: nil) }
        let check = try await lookUp()
        guard case .valid(let user, let expiresAt) = check else { return check }
        var until = now + lifetime
        if let expiresAt {
            let left = Duration.milliseconds(expiresAt - Int64(Date().timeIntervalSince1970 * 1000))
            until = min(until, now + left)
        }
        lock.withLock {
            guard generation == self.generation else { return }
            if users.count >= capacity { users.removeAll(keepingCapacity: true) }
            users[tokenHash] = (user, until)
        }
        return check
    }
}
