import Foundation

/// An async lock: one sync pass (fetch or send) at a time per engine, so an app calling
/// ``SyncEngine/sendChanges()`` while ``SyncEngine/run()`` is active cannot send an edit twice
/// or let a fetch overwrite a just-acknowledged version.
final class SyncLock: @unchecked Sendable {
    private let lock = NSLock()
    private var held = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Runs `body` once every earlier holder is done.
    func withLock<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = lock.withLock { () -> Bool in
                if held {
                    waiters.append(continuation)
                    return false
                }
                held = true
                return true
            }
            if resumeNow { continuation.resume() }
        }
    }

    private func release() {
        let next = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            if waiters.isEmpty {
                held = false
                return nil
            }
            return waiters.removeFirst()
        }
        next?.resume()
    }
}
