import Foundation

/// How an engine's connections are used at a moment: for `/metrics`.
public struct PoolUse: Sendable, Hashable {
    /// Transactions running on a connection.
    public var inUse: Int
    /// Transactions asked for and waiting for a connection.
    public var waiting: Int
    /// The most connections the engine uses at once.
    public var capacity: Int

    public init(inUse: Int, waiting: Int, capacity: Int) {
        self.inUse = inUse
        self.waiting = waiting
        self.capacity = capacity
    }
}

/// Counts an engine's transactions as they ask for a connection, get one and end.
public final class PoolCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var asked = 0
    private var running = 0
    /// The most connections the engine uses at once.
    public let capacity: Int

    public init(capacity: Int) { self.capacity = capacity }

    /// Runs `body`, counted as asking for a connection until it ends.
    public func asking<T>(_ body: () async throws -> T) async rethrows -> T {
        lock.withLock { asked += 1 }
        defer { lock.withLock { asked -= 1 } }
        return try await body()
    }

    /// Runs `body`, counted as holding a connection.
    public func holding<T>(_ body: () throws -> T) rethrows -> T {
        lock.withLock { running += 1 }
        defer { lock.withLock { running -= 1 } }
        return try body()
    }

    /// The counts now.
    public var use: PoolUse {
        lock.withLock { PoolUse(inUse: running, waiting: max(0, asked - running), capacity: capacity) }
    }
}
