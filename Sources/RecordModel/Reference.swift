import Foundation

/// A field value that points at another record in the same zone.
///
/// On the wire: `{"recordName": "…", "zoneID": {…}?, "action": "NONE" | "DELETE_SELF" | "VALIDATE"}`.
public struct Reference: Sendable, Hashable, Codable {
    /// What the server does when the target of a reference is deleted or missing.
    public enum Action: String, Sendable, Hashable, Codable, CaseIterable {
        /// Nothing: the reference may dangle.
        case none = "NONE"
        /// The target owns the source: deleting the target deletes the source (cascading).
        case deleteSelf = "DELETE_SELF"
        /// The target must exist when the source is saved, and cannot be deleted while the source
        /// still points at it.
        case validate = "VALIDATE"
        /// Extension: deleting the target clears the reference: the field is removed (from a
        /// list, the element), a change of the source. On the wire the action is `NONE` with
        /// `recordSyncAction` beside it (``WireForm/referenceAction(_:extension:)``).
        case nullify = "NULLIFY"
    }

    /// The name of the target record.
    public var recordName: String
    /// The target's zone; it must be the source's zone.
    public var zoneID: ZoneID?
    /// The reference's action.
    public var action: Action

    /// Creates a reference to `recordName`.
    public init(recordName: String, zoneID: ZoneID? = nil, action: Action = .none) {
        self.recordName = recordName
        self.zoneID = zoneID
        self.action = action
    }

    enum CodingKeys: String, CodingKey { case recordName, zoneID, action, recordSyncAction }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        recordName = try container.decode(String.self, forKey: .recordName)
        zoneID = try container.decodeIfPresent(ZoneID.self, forKey: .zoneID)
        let wire = try container.decodeIfPresent(String.self, forKey: .action)
        let finer = try container.decodeIfPresent(String.self, forKey: .recordSyncAction)
        guard let action = WireForm.referenceAction(wire, extension: finer) else {
            throw DecodingError.dataCorruptedError(forKey: .action, in: container, debugDescription: "unknown reference action \(wire ?? "")")
        }
        self.action = action
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(recordName, forKey: .recordName)
        try container.encodeIfPresent(zoneID, forKey: .zoneID)
        let wire = WireForm.wire(action)
        try container.encode(wire.action, forKey: .action)
        try container.encodeIfPresent(wire.extension, forKey: .recordSyncAction)
    }
}

/// A geographic location value (`LOCATION`).
public struct Location: Sendable, Hashable, Codable {
    public var latitude: Double
    public var longitude: Double
    public var horizontalAccuracy: Double?
    public var verticalAccuracy: Double?
    public var altitude: Double?
    public var speed: Double?
    public var course: Double?
    /// Milliseconds since 1970.
    public var timestamp: Int64?

    /// Creates a location.
    public init(
        latitude: Double, longitude: Double, horizontalAccuracy: Double? = nil,
        verticalAccuracy: Double? = nil, altitude: Double? = nil, speed: Double? = nil,
        course: Double? = nil, timestamp: Int64? = nil
    ) {
        self.latitude = latitude
        self.longitude = longitude
        self.horizontalAccuracy = horizontalAccuracy
        self.verticalAccuracy = verticalAccuracy
        self.altitude = altitude
        self.speed = speed
        self.course = course
        self.timestamp = timestamp
    }
}
