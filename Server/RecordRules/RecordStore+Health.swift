import Foundation
import RecordModel
import Synchronization

extension RecordStore {
    /// Whether the storage answers a read of one row within `timeout`: what `GET /healthz`
    /// reports. A read that has not answered by then (a database that cannot be reached, a
    /// pool whose connections are all stuck) counts as no answer; it is left to finish or fail
    /// on its own.
    public func storageAnswers(within timeout: Duration) async -> Bool {
        let answer = Mutex<CheckedContinuation<Bool, Never>?>(nil)
        let finish: @Sendable (Bool) -> Void = { value in
            answer.withLock { continuation in
                continuation?.resume(returning: value)
                continuation = nil
            }
        }
        return await withCheckedContinuation { continuation in
            answer.withLock { $0 = continuation }
            let engine = self.engine
            let timer = Task {
                try? await Task.sleep(for: timeout)
                finish(false)
            }
            Task {
                do {
                    _ = try await engine.read { try $0.user(named: "") }
                    finish(true)
                } catch {
                    finish(false)
                }
                timer.cancel()
            }
        }
    }
}
