import Foundation

/// The data of a `zones` event on the notification stream: zones whose records changed (or that
/// were created or deleted). An extension; see docs/protocol.md, "Push".
public struct ZoneNotification: Sendable, Hashable, Codable {
    public var zones: [ZoneID]
    public init(zones: [ZoneID]) { self.zones = zones }
}
