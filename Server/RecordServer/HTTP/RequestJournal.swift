import Foundation
import Hummingbird
import Logging
import RecordModel
import RecordRules
import ServiceLifecycle

/// What the routes learn of a request that its entry in the request log says: who sent it and
/// what went wrong. The request log middleware makes one per request and the routes below it
/// reach it as ``current`` (a task-local value).
final class RequestNotes: @unchecked Sendable {
    struct State {
        var userRecordName = ""
        var userName = ""
        var operatorName = ""
        var errorCode = ""
    }

    private let box = LockedBox(State())

    @TaskLocal static var current: RequestNotes?

    var state: State { box.withLock { $0 } }

    /// The request was sent as `user` (by `operatorName`, acting as them).
    static func sender(_ user: User, operator operatorName: String? = nil) {
        current?.box.withLock {
            if user != .visitor {
                $0.userRecordName = user.userRecordName
                $0.userName = user.name
            }
            if let operatorName { $0.operatorName = operatorName }
        }
    }

    /// The request was sent by the operator `name` (on the operators' API).
    static func sender(operator name: String) {
        current?.box.withLock { $0.operatorName = name }
    }

    /// The answer carries `code` (a request's error, or the errors of a batch's records).
    static func failed(_ code: String) {
        current?.box.withLock { $0.errorCode = code }
    }
}

/// The request log's writer on this node (docs/console.md, "The request log"): requests are
/// kept in memory as they are answered and written to the store in one transaction a second
/// (so a request waits for nothing), and the log is pruned to its retention every minute. At
/// shutdown what is kept is written.
final class RequestJournal: Service, @unchecked Sendable {
    let store: RecordStore
    let node: String
    let retention: Duration
    let maximum: Int64
    let logger: Logger
    private let pending = LockedBox([StoredRequest]())
    /// Past this many requests waiting (a second of a very busy node, or a store that does not
    /// answer), newer ones are dropped and counted rather than kept.
    static let maximumPending = 50_000
    private let dropped = LockedBox(0)

    init(store: RecordStore, node: String, retention: Duration, maximum: Int64, logger: Logger) {
        self.store = store
        self.node = node
        self.retention = retention
        self.maximum = maximum
        self.logger = logger
    }

    /// A node's name in the log: its host's name and its process's id.
    static func nodeName() -> String {
        "\(ProcessInfo.processInfo.hostName)/\(ProcessInfo.processInfo.processIdentifier)"
    }

    func record(_ request: StoredRequest) {
        let kept = pending.withLock { (pending: inout [StoredRequest]) -> Bool in
            guard pending.count < Self.maximumPending else { return false }
            pending.append(request)
            return true
        }
        if !kept { dropped.withLock { $0 += 1 } }
    }

    /// Writes what waits.
    func flush() async {
        let batch = pending.withLock { pending -> [StoredRequest] in
            defer { pending.removeAll(keepingCapacity: true) }
            return pending
        }
        let lost = dropped.withLock { count -> Int in
            defer { count = 0 }
            return count
        }
        if lost > 0 { logger.warning("the request log dropped \(lost) requests (more than \(Self.maximumPending) waited)") }
        do {
            try await store.logRequests(batch)
        } catch {
            logger.warning("could not write \(batch.count) requests to the request log: \(error)")
        }
    }

    func run() async throws {
        var sincePruning = 0
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
            } catch {
                break
            }
            await flush()
            sincePruning += 1
            if sincePruning >= 60 {
                sincePruning = 0
                do {
                    try await store.pruneRequestLog(retention: retention, maximum: maximum)
                } catch {
                    logger.warning("could not prune the request log: \(error)")
                }
            }
        }
        await flush()
    }
}
