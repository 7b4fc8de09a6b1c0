import Foundation
import RecordModel

/// How servers sharing one storage tell each other that zones changed, so that a client
/// listening on one server learns of a write made through another (the rules' `ChangeNotifier`).
///
/// An engine that several servers can share provides one (``StorageEngine/changeRelay``); the
/// SQLite engine, which one server owns, does not. Announcements are hints like the notifier's
/// events: one lost costs a client latency, never a change, provided the relay says when it
/// may have lost some (``RelayedChange/interrupted``): the notifier then ends every stream it
/// serves, and clients, which fetch on connecting, reconnect and fetch.
public protocol ChangeRelay: Sendable {
    /// Tells the other servers that `announcement`'s zones changed (after the write committed).
    func announce(_ announcement: ChangeAnnouncement) async

    /// What the other servers announce, and ``RelayedChange/interrupted`` whenever announcements
    /// may have been missed (the relay lost its connection, and again once it has it back). One
    /// consumer; the stream ends when the relay is closed.
    func changes() -> AsyncStream<RelayedChange>
}

/// Zones of one database that a committed write changed.
public struct ChangeAnnouncement: Sendable, Hashable, Codable {
    /// The container identifier.
    public var container: String
    /// `development` or `production`.
    public var environment: String
    /// `public` or `private`.
    public var kind: String
    /// The owner's user key for a private database, 0 for the public one.
    public var owner: Int64
    /// The zones that changed.
    public var zones: [ZoneID]

    /// An announcement of `zones` of the database at `address`.
    public init(zones: [ZoneID], in address: DatabaseAddress) {
        container = address.container
        environment = address.environment
        kind = address.kind.rawValue
        owner = address.ownerKey
        self.zones = zones
    }
}

/// What a relay delivers.
public enum RelayedChange: Sendable, Hashable {
    /// Another server announced a change.
    case changed(ChangeAnnouncement)
    /// Announcements may have been missed.
    case interrupted
}
