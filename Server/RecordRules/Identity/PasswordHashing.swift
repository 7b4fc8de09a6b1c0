import Crypto
import CryptoExtras
import Foundation
import RecordModel

/// Passwords as the server keeps them: scrypt (RFC 7914) with a random 16-byte salt, stored as
/// `scrypt$N$r$p$SALT$KEY` (base64), so that a hash made with other parameters still verifies.
///
/// Deriving a key takes tens of milliseconds and `128·N·r` bytes (32 MiB at N = 2^15, r = 8),
/// so it runs on a queue of its own, as many at once as the machine has cores, never on the
/// threads that serve requests.
public struct PasswordHashing: Sendable, Hashable {
    /// scrypt's N (a power of two, 2^10 to 2^20).
    public var rounds: Int
    /// scrypt's r and p.
    public var blockSize = 8
    public var parallelism = 1

    /// N = 2^15, r = 8, p = 1: about 50 ms on this project's 2-core test machines.
    public static let standard = PasswordHashing(rounds: 1 << 15)

    public init(rounds: Int) {
        self.rounds = rounds
    }

    /// Whether `rounds` is a power of two from 2^10 to 2^20.
    public static func problem(withRounds rounds: Int) -> String? {
        rounds >= 1 << 10 && rounds <= 1 << 20 && rounds & (rounds - 1) == 0
            ? nil : "the password hashing rounds must be a power of two from 1024 to 1048576, not \(rounds)"
    }

    /// A new hash of `password`.
    public func hash(_ password: String) async throws -> String {
        var salt = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in salt.indices { salt[index] = generator.next() }
        let key = try await Self.derive(password, salt: Data(salt), rounds: rounds, blockSize: blockSize, parallelism: parallelism)
        return "scrypt$\(rounds)$\(blockSize)$\(parallelism)$\(Data(salt).base64EncodedString())$\(key.base64EncodedString())"
    }

    /// Whether `password` is the one `stored` was made from, compared in constant time. With no
    /// stored hash (an address without an account) a key is derived all the same and the
    /// answer is `false`: the two cases take the same time.
    public func verify(_ password: String, against stored: String?) async throws -> Bool {
        guard let stored, let parsed = Self.parse(stored) else {
            _ = try await hash(password)
            return false
        }
        let key = try await Self.derive(password, salt: parsed.salt, rounds: parsed.rounds, blockSize: parsed.blockSize, parallelism: parsed.parallelism)
        return SymmetricKey(data: key) == SymmetricKey(data: parsed.key)
    }

    /// The parts of a stored hash, or `nil` for one this server never wrote.
    private static func parse(_ stored: String) -> (rounds: Int, blockSize: Int, parallelism: Int, salt: Data, key: Data)? {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0] == "scrypt", let rounds = Int(parts[1]), let blockSize = Int(parts[2]), let parallelism = Int(parts[3]),
              problem(withRounds: rounds) == nil, (1...16).contains(blockSize), (1...4).contains(parallelism),
              let salt = Data(base64Encoded: String(parts[4])), let key = Data(base64Encoded: String(parts[5])), key.count == 32 else { return nil }
        return (rounds, blockSize, parallelism, salt, key)
    }

    /// The queue keys are derived on: one at a time per core.
    private static let queue: OperationQueue = {
        let queue = OperationQueue()
        queue.name = "password-hashing"
        queue.maxConcurrentOperationCount = max(1, ProcessInfo.processInfo.activeProcessorCount)
        return queue
    }()

    private static func derive(_ password: String, salt: Data, rounds: Int, blockSize: Int, parallelism: Int) async throws -> Data {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, any Error>) in
            queue.addOperation {
                continuation.resume(with: Result {
                    let key = try KDF.Scrypt.deriveKey(from: Data(password.utf8), salt: salt, outputByteCount: 32, rounds: rounds,
                                                       blockSize: blockSize, parallelism: parallelism)
                    return key.withUnsafeBytes { Data($0) }
                })
            }
        }
    }
}
