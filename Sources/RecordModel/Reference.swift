import Foundation

/// A field value that points at another record in the same zone.
///
/// On the wire: `{"recordName": "…", "zoneID": {…}?, "action": "NONE" | "DELETE_SELF" | "VALIDATE"}`.
public struct Reference: Sendable, Hashable {
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

}

/// A geographic location value (`LOCATION`).
public struct Location: Sendable, Hashable {
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

// A reference and a location are written and read as the value of a field of their type
// (``FieldValue/json`` and ``FieldValue/init(json:type:numbersMayBeStrings:)``): one form each,
// wherever they appear.

extension Reference: Codable {
    public init(from decoder: any Decoder) throws {
        guard case .reference(let reference) = try FieldValue.decodeValue(of: FieldType(.reference), from: decoder) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a reference"))
        }
        self = reference
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(FieldValue.reference(self).json)
    }
}

extension Location: Codable {
    public init(from decoder: any Decoder) throws {
        guard case .location(let location) = try FieldValue.decodeValue(of: FieldType(.location), from: decoder) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a location"))
        }
        self = location
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(FieldValue.location(self).json)
    }
}

extension FieldValue {
    /// The value of a field of `type` that `decoder` holds, with the reading's error at the
    /// decoder's path.
    static func decodeValue(of type: FieldType, from decoder: any Decoder) throws -> FieldValue {
        do {
            return try FieldValue(json: try JSONValue(from: decoder), type: type)
        } catch let error as RecordSyncError {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.reason))
        }
    }
}
