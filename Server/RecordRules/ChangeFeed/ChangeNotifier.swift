import Foundation
import RecordModel
import ServiceLifecycle

/// Fans "these zones changed" events out to the clients listening on a database.
///
/// Events are hints, not data: a client that receives one fetches the zone's changes with its
/// token, so an event lost while a client reconnects costs latency, never a change. The
/// ``RecordStore`` publishes the zones a committed write changed (it knows which); the server
/// runs ``run(keepAliveInterval:)`` as a service, which sends a keep-alive to every listener
/// periodically (so streams of clients that went away are noticed and dropped) and ends every
/// stream on shutdown.
///
/// Over storage that several servers share, the engine's ``ChangeRelay`` carries each
/// publication to the other servers, and theirs here. When the relay may have missed some,
/// every stream is ended: a client reconnects and, as on every connection, fetches.
public actor ChangeNotifier {
    /// What a listener receives: changed zones, or an empty list as a keep-alive.
    public typealias Event = [ZoneID]

    /// Which database a listener listens to.
    struct Key: Hashable {
        var container: String
        var environment: String
        var kind: DatabaseKind
        /// The owner of a private database; 0 for the public one.
        var owner: Int64

        init(_ scope: DatabaseScope) {
            let address = DatabaseAddress(scope)
            container = scope.container
            environment = scope.environment
            kind = address.kind
            owner = address.ownerKey
        }

        init?(_ announcement: ChangeAnnouncement) {
            guard let kind = DatabaseKind(rawValue: announcement.kind) else { return nil }
            container = announcement.container
            environment = announcement.environment
            self.kind = kind
            owner = announcement.owner
        }
    }

    private var listeners: [Key: [UUID: AsyncStream<Event>.Continuation]] = [:]
    private var finished = false
    /// Carries publications to and from the other servers over the same storage, if any.
    private let relay: (any ChangeRelay)?

    /// Creates a notifier; `relay` connects it with the other servers' notifiers.
    public init(relay: (any ChangeRelay)? = nil) {
        self.relay = relay
    }

    /// Starts listening to the database of `scope`.
    ///
    /// - Returns: an identifier for ``stopListening(_:id:)``, the stream of events, and its
    ///   continuation (finishing it ends the stream).
    public func listen(to scope: DatabaseScope) -> (id: UUID, events: AsyncStream<Event>, continuation: AsyncStream<Event>.Continuation) {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(64))
        let id = UUID()
        if finished {
            continuation.finish()
        } else {
            listeners[Key(scope), default: [:]][id] = continuation
        }
        return (id, stream, continuation)
    }

    /// Stops a listener.
    public func stopListening(_ scope: DatabaseScope, id: UUID) {
        listeners[Key(scope)]?.removeValue(forKey: id)?.finish()
    }

    /// Tells every listener of the database of `scope`, here and on the other servers, that
    /// `zones` changed.
    public func publish(_ zones: [ZoneID], in scope: DatabaseScope) async {
        guard !zones.isEmpty else { return }
        deliver(zones, to: Key(scope))
        await relay?.announce(ChangeAnnouncement(zones: zones, in: scope))
    }

    private func deliver(_ zones: [ZoneID], to key: Key) {
        published += 1
        for continuation in listeners[key]?.values ?? [:].values {
            continuation.yield(zones)
            delivered += 1
        }
    }

    /// How many changes were published here (this server's and those relayed from others), and
    /// how many events they made for listeners: the push fan-out, for `/metrics`.
    public private(set) var published = 0
    public private(set) var delivered = 0

    /// What the relay brought: another server's change, or word that some may have been missed
    /// (every stream ends; clients reconnect and fetch).
    private func relayed(_ change: RelayedChange) {
        switch change {
        case .changed(let announcement):
            if let key = Key(announcement) { deliver(announcement.zones, to: key) }
        case .interrupted:
            endStreams()
        }
    }

    /// Ends every open stream (a token was revoked or a user deleted, and a stream does not
    /// know its token): clients connect again, and a revoked token is refused then.
    public func endStreams() {
        for continuations in listeners.values {
            for continuation in continuations.values { continuation.finish() }
        }
        listeners = [:]
    }

    /// How many listeners there are (for tests and diagnostics).
    public var listenerCount: Int { listeners.values.reduce(0) { $0 + $1.count } }

    /// Sends keep-alives every `keepAliveInterval` and delivers what the relay brings, until
    /// graceful shutdown; then ends every stream.
    public func run(keepAliveInterval: Duration) async throws {
        finished = false
        let relayed = relay?.changes()
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                if let relayed {
                    group.addTask {
                        for await change in relayed { await self.relayed(change) }
                    }
                }
                while !Task.isCancelled {
                    try? await Task.sleep(for: keepAliveInterval)
                    await self.keepAlive()
                }
                group.cancelAll()
            }
        }
        finishAll()
    }

    private func keepAlive() {
        for continuations in listeners.values {
            for continuation in continuations.values { continuation.yield([]) }
        }
    }

    private func finishAll() {
        finished = true
        for continuations in listeners.values {
            for continuation in continuations.values { continuation.finish() }
        }
        listeners = [:]
    }
}
