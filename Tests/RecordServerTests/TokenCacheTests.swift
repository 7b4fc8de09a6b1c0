import Foundation
@testable import RecordServer
import RecordRules
import Testing

/// `TokenCache`: a valid token's user is read once per lifetime (and never kept past its
/// expiry); a refused one every time; every kept token is forgotten when the store's count of
/// revocations changes, which is read at most once per check interval.
@Suite struct TokenCacheTests {
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        var count: Int { lock.withLock { value } }
        func note() { lock.withLock { value += 1 } }
    }

    static let alice = User(id: 1, name: "alice", userRecordName: "_alice")
    static let valid = TokenCheck.valid(alice, expiresAt: nil)

    @Test func aFoundUserIsReadOncePerLifetime() async throws {
        let cache = TokenCache(lifetime: .seconds(3600))
        let lookups = Counter()
        let hash = Data([1, 2, 3])
        for _ in 0..<3 {
            let check = try await cache.check(hash, revocations: { 0 }) { lookups.note(); return Self.valid }
            #expect(check == Self.valid)
        }
        #expect(lookups.count == 1)
        // Past its lifetime (here: at once) a token is read again.
        let expiring = TokenCache(lifetime: .zero)
        for _ in 0..<2 { _ = try await expiring.check(hash, revocations: { 0 }) { lookups.note(); return Self.valid } }
        #expect(lookups.count == 3)
    }

    @Test func aTokenIsNotKeptPastItsExpiry() async throws {
        let cache = TokenCache(lifetime: .seconds(3600))
        let lookups = Counter()
        let soon = Int64(Date().timeIntervalSince1970 * 1000) + 150
        for _ in 0..<2 { _ = try await cache.check(Data([1]), revocations: { 0 }) { lookups.note(); return .valid(Self.alice, expiresAt: soon) } }
        #expect(lookups.count == 1)
        try await Task.sleep(for: .milliseconds(200))
        _ = try await cache.check(Data([1]), revocations: { 0 }) { lookups.note(); return .expired(at: soon) }
        #expect(lookups.count == 2)
    }

    @Test func refusedTokensAreLookedUpEveryTime() async throws {
        let cache = TokenCache()
        let lookups = Counter()
        for check in [TokenCheck.unknown, .expired(at: 1), .unknown] {
            #expect(try await cache.check(Data([9]), revocations: { 0 }) { lookups.note(); return check } == check)
        }
        #expect(lookups.count == 3)
    }

    @Test func aChangedRevocationCountForgetsEveryKeptToken() async throws {
        let cache = TokenCache(lifetime: .seconds(3600), revocationCheck: .milliseconds(50))
        let lookups = Counter(), reads = Counter()
        let revocations = Counter()
        func check() async throws {
            _ = try await cache.check(Data([1]), revocations: { reads.note(); return Int64(revocations.count) }) { lookups.note(); return Self.valid }
        }
        for _ in 0..<3 { try await check() }
        // Read once: the first request; the others came within the interval.
        #expect(lookups.count == 1 && reads.count == 1)
        try await Task.sleep(for: .milliseconds(60))
        try await check()
        #expect(lookups.count == 1 && reads.count == 2)
        revocations.note()
        try await Task.sleep(for: .milliseconds(60))
        try await check()
        #expect(lookups.count == 2 && reads.count == 3)
    }

    @Test func pastItsCapacityTheCacheStartsOver() async throws {
        let cache = TokenCache(capacity: 2)
        let lookups = Counter()
        for byte: UInt8 in [1, 2, 3, 1] {
            _ = try await cache.check(Data([byte]), revocations: { 0 }) { lookups.note(); return Self.valid }
        }
        // 1 and 2 filled it; 3 started it over, so 1 was read again.
        #expect(lookups.count == 4)
    }
}
