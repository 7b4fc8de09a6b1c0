import Foundation
@testable import RecordServer
import RecordRules
import Testing

/// `TokenCache`: a found token's user is read once per lifetime; a missing one every time.
@Suite struct TokenCacheTests {
    final class Lookups: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        var count: Int { lock.withLock { value } }
        func note() { lock.withLock { value += 1 } }
    }

    static let alice = User(id: 1, name: "alice", userRecordName: "_alice")

    @Test func aFoundUserIsReadOncePerLifetime() async throws {
        let cache = TokenCache(lifetime: .seconds(3600))
        let lookups = Lookups()
        let hash = Data([1, 2, 3])
        for _ in 0..<3 {
            let user = try await cache.user(forTokenHash: hash) { lookups.note(); return Self.alice }
            #expect(user == Self.alice)
        }
        #expect(lookups.count == 1)
        // Past its lifetime (here: at once) a token is read again.
        let expiring = TokenCache(lifetime: .zero)
        for _ in 0..<2 { _ = try await expiring.user(forTokenHash: hash) { lookups.note(); return Self.alice } }
        #expect(lookups.count == 3)
    }

    @Test func aMissingTokenIsLookedUpEveryTime() async throws {
        let cache = TokenCache()
        let lookups = Lookups()
        for _ in 0..<3 {
            #expect(try await cache.user(forTokenHash: Data([9])) { lookups.note(); return nil } == nil)
        }
        #expect(lookups.count == 3)
    }

    @Test func pastItsCapacityTheCacheStartsOver() async throws {
        let cache = TokenCache(capacity: 2)
        let lookups = Lookups()
        for byte: UInt8 in [1, 2, 3, 1] {
            _ = try await cache.user(forTokenHash: Data([byte])) { lookups.note(); return Self.alice }
        }
        // 1 and 2 filled it; 3 started it over, so 1 was read again.
        #expect(lookups.count == 4)
    }
}
