import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import RecordModel
import RecordStorage

/// The servers over one PostgreSQL database tell each other of changes with `NOTIFY` on the
/// channel ``channel``, each listening on a connection of its own (`application_name`
/// `recordsync-listen`). A payload is one ``ChangeAnnouncement`` as JSON, tagged with the
/// sending server (which skips its own: it has told its listeners already); an announcement
/// too large for one notification (PostgreSQL takes 8,000 bytes) is split by zones.
///
/// When the listening connection drops, the relay says ``RelayedChange/interrupted`` at once,
/// tries again every second, and says it again once it listens again (a client that connected
/// in between missed what was announced meanwhile).
final class PostgresChangeRelay: ChangeRelay {
    static let channel = "recordsync_changes"
    /// The largest payload sent (PostgreSQL refuses 8,000 bytes and more).
    static let maximumPayload = 7_900

    private let location: PostgresLocation
    private let client: PostgresClient
    private let logger: Logger
    /// Names this server in what it sends.
    let node = UUID().uuidString
    /// The listening task and its connection, while there is one.
    private let state = NIOLockedValueBox<(task: Task<Void, Never>?, connection: PostgresConnection?, closed: Bool)>((nil, nil, false))

    init(location: PostgresLocation, client: PostgresClient, logger: Logger) {
        self.location = location
        self.client = client
        self.logger = logger
    }

    /// What goes on the wire.
    struct Payload: Codable {
        /// The sending server.
        var n: String
        var a: ChangeAnnouncement
    }

    func announce(_ announcement: ChangeAnnouncement) async {
        for payload in payloads(announcement) {
            do {
                try await client.withConnection { connection in
                    _ = try await connection.answering("SELECT pg_notify(\(Self.channel), \(payload))", logger: logger).get()
                }
            } catch {
                // A hint lost: listeners on the other servers hear of the zone with its next change.
                logger.warning("could not announce a change to the other servers: \(PostgresEngineError.describe(error))")
            }
        }
    }

    /// The payloads of an announcement, split by zones until each fits.
    func payloads(_ announcement: ChangeAnnouncement) -> [String] {
        guard let data = try? JSONEncoder().encode(Payload(n: node, a: announcement)) else { return [] }
        if data.count <= Self.maximumPayload || announcement.zones.count < 2 {
            return data.count <= Self.maximumPayload ? [String(decoding: data, as: UTF8.self)] : []
        }
        let half = announcement.zones.count / 2
        var first = announcement, second = announcement
        first.zones = Array(announcement.zones[..<half])
        second.zones = Array(announcement.zones[half...])
        return payloads(first) + payloads(second)
    }

    func changes() -> AsyncStream<RelayedChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: RelayedChange.self, bufferingPolicy: .bufferingNewest(4096))
        let task = Task { await listen(continuation) }
        let closed = state.withLockedValue { state in
            if !state.closed { state.task = task }
            return state.closed
        }
        if closed { task.cancel() }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Stops listening.
    func close() async {
        let (task, connection) = state.withLockedValue { state in
            state.closed = true
            defer { state.task = nil; state.connection = nil }
            return (state.task, state.connection)
        }
        task?.cancel()
        try? await connection?.close()
        await task?.value
    }

    private func listen(_ continuation: AsyncStream<RelayedChange>.Continuation) async {
        var listenedBefore = false
        let decoder = JSONDecoder()
        while !Task.isCancelled {
            var connection: PostgresConnection?
            do {
                let listening = try await PostgresEngine.connect(location, logger: logger, applicationName: "recordsync-listen")
                connection = listening
                state.withLockedValue { $0.connection = listening }
                try await listening.listen(on: Self.channel) { notifications in
                    if listenedBefore { continuation.yield(.interrupted) }
                    listenedBefore = true
                    for try await notification in notifications {
                        guard let payload = try? decoder.decode(Payload.self, from: Data(notification.payload.utf8)) else { continue }
                        if payload.n != node { continuation.yield(.changed(payload.a)) }
                    }
                }
            } catch {
                if !Task.isCancelled { logger.warning("listening for other servers' changes failed: \(PostgresEngineError.describe(error))") }
            }
            // Closed here, by the task that opened it, before it listens again or ends.
            state.withLockedValue { $0.connection = nil }
            try? await connection?.close()
            if Task.isCancelled { break }
            continuation.yield(.interrupted)
            listenedBefore = true
            try? await Task.sleep(for: .seconds(1))
        }
        continuation.finish()
    }
}
