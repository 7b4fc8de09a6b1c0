import Foundation

/// A pause each engine makes before a write's `COMMIT`, its transaction's work all done, for
/// tests that need a write caught in flight: a reader that must never skip a change committed
/// late, a process killed with a whole cascade uncommitted. `RECORDSYNC_TEST_COMMIT_DELAY_MS`;
/// never set in production.
public enum CommitDelay {
    /// The pause, or `nil`.
    public static let duration: Duration? = ProcessInfo.processInfo.environment["RECORDSYNC_TEST_COMMIT_DELAY_MS"]
        .flatMap(Int.init).flatMap { $0 > 0 ? .milliseconds($0) : nil }

    /// Blocks the calling thread for the pause, if there is one.
    public static func pause() {
        guard let duration else { return }
        Thread.sleep(forTimeInterval: Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }
}
