import Foundation
import GRDB
import RecordModel

extension SyncEngine {
    /// Keeps the cache in sync until the calling task is cancelled.
    ///
    /// It fetches when the server's push channel announces a change to the database (and when
    /// the channel connects, to catch up), sends whenever the outbox changes, and polls every
    /// ``Configuration/pollInterval`` while the push channel is down (every
    /// ``Configuration/connectedPollInterval`` while it is up, as a safety net). Failures are
    /// logged and retried on the next wake-up; they never end the loop.
    ///
    /// The engine owns no unstructured tasks: everything runs in a task group inside this call.
    public func run() async throws {
        let work = WorkSignal()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.listenForPushes(work) }
            group.addTask { await self.watchOutbox(work) }
            group.addTask { await self.poll(work) }
            work.raise(fetch: true, send: true)
            for await _ in work.doorbell {
                guard !Task.isCancelled else { break }
                let (fetch, send) = work.take()
                var failed = (fetch: false, send: false)
                if send {
                    do { try await sendChanges() } catch is CancellationError { break } catch {
                        failed.send = true
                        configuration.logger.warning("send failed", metadata: ["sync.error": "\(error)"])
                    }
                }
                if fetch {
                    do { try await fetchChanges() } catch is CancellationError { break } catch {
                        failed.fetch = true
                        configuration.logger.warning("fetch failed", metadata: ["sync.error": "\(error)"])
                    }
                }
                if failed.fetch || failed.send {
                    // Try the failed part again after a pause, whatever else wakes the loop.
                    try? await Task.sleep(for: configuration.reconnectDelay)
                    work.raise(fetch: failed.fetch, send: failed.send)
                }
            }
            group.cancelAll()
        }
    }

    private func listenForPushes(_ work: WorkSignal) async {
        while !Task.isCancelled {
            do {
                for try await event in PushChannel(database: database).events() {
                    if event == .connected { work.setConnected(true) }
                    work.raise(fetch: true, send: false)
                }
            } catch {
                configuration.logger.debug("push channel closed", metadata: ["sync.error": "\(error)"])
            }
            work.setConnected(false)
            try? await Task.sleep(for: configuration.reconnectDelay)
        }
    }

    /// Raises a send whenever the outbox changes (and once when it starts watching). If the
    /// observation fails, the failure is logged and it watches again after
    /// ``Configuration/reconnectDelay``, as ``listenForPushes(_:)`` reconnects: otherwise edits
    /// would wait for a poll.
    private func watchOutbox(_ work: WorkSignal) async {
        while !Task.isCancelled {
            do {
                for try await _ in cache.outboxState().values(in: cache.writer) {
                    work.raise(fetch: false, send: true)
                }
            } catch is CancellationError {
                return
            } catch {
                configuration.logger.warning("watching the outbox failed", metadata: ["sync.error": "\(error)"])
            }
            try? await Task.sleep(for: configuration.reconnectDelay)
        }
    }

    private func poll(_ work: WorkSignal) async {
        var sinceLastPoll = Duration.zero
        while !Task.isCancelled {
            try? await Task.sleep(for: configuration.pollInterval)
            sinceLastPoll += configuration.pollInterval
            if !work.isConnected || sinceLastPoll >= configuration.connectedPollInterval {
                sinceLastPoll = .zero
                work.raise(fetch: true, send: true)
            }
        }
    }
}

/// Work requested of the sync loop, coalesced: however often a fetch is asked for while the
/// loop is busy, it runs once.
final class WorkSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var fetch = false
    private var send = false
    private var connected = false
    let doorbell: AsyncStream<Void>
    private let ring: AsyncStream<Void>.Continuation

    init() {
        (doorbell, ring) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func raise(fetch: Bool, send: Bool) {
        lock.withLock {
            self.fetch = self.fetch || fetch
            self.send = self.send || send
        }
        ring.yield()
    }

    func take() -> (fetch: Bool, send: Bool) {
        lock.withLock {
            defer { fetch = false; send = false }
            return (fetch, send)
        }
    }

    func setConnected(_ value: Bool) { lock.withLock { connected = value } }
    var isConnected: Bool { lock.withLock { connected } }
}
