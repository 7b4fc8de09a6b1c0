import Foundation
import RecordModel

/// What the server's push channel reports (see docs/protocol.md, "Push").
public enum ChangeNotification: Sendable, Hashable {
    /// The channel is open: changes from now on are announced. Fetch now to catch up.
    case connected
    /// These zones changed.
    case zonesChanged([ZoneID])
}

extension Database {
    /// Opens the server's push channel for this database. The stream ends (or throws) when the
    /// connection closes; cancelling the consumer closes the connection.
    public func changeNotifications() -> AsyncThrowingStream<ChangeNotification, any Error> {
        PushChannel(database: self).events()
    }
}
