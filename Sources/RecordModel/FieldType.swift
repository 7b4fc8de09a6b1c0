import Foundation

/// The type of a single field value, as named on the wire.
public enum ScalarType: String, Sendable, Hashable, Codable, CaseIterable {
    case string = "STRING"
    case int64 = "INT64"
    case double = "DOUBLE"
    case timestamp = "TIMESTAMP"
    case bytes = "BYTES"
    case reference = "REFERENCE"
    case location = "LOCATION"
    case asset = "ASSETID"
    /// A boolean. An extension: CloudKit stores booleans as `INT64`.
    case boolean = "BOOLEAN"
    /// Dictionaries and arrays (any JSON object or array). An extension: it travels as a
    /// `STRING` holding the JSON, with `recordSyncType` `NESTED` beside it.
    case nested = "NESTED"
}

/// The type of a field: a scalar type or a list of one (`STRING_LIST`, …).
public struct FieldType: Sendable, Hashable, CustomStringConvertible {
    /// The element type.
    public var scalar: ScalarType
    /// Whether the field holds a list of ``scalar`` values.
    public var isList: Bool

    /// Creates a field type.
    public init(_ scalar: ScalarType, isList: Bool = false) {
        self.scalar = scalar
        self.isList = isList
    }

    /// Parses a wire type name such as `"INT64"` or `"REFERENCE_LIST"`; `nil` if unknown.
    public init?(rawValue: String) {
        if rawValue.hasSuffix("_LIST") {
            guard let scalar = ScalarType(rawValue: String(rawValue.dropLast(5))) else { return nil }
            self.init(scalar, isList: true)
        } else {
            guard let scalar = ScalarType(rawValue: rawValue) else { return nil }
            self.init(scalar)
        }
    }

    /// The wire name: `"STRING"`, `"STRING_LIST"`, ….
    public var rawValue: String { isList ? scalar.rawValue + "_LIST" : scalar.rawValue }
    public var description: String { rawValue }
}

extension FieldType: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let name = try container.decode(String.self)
        guard let type = FieldType(rawValue: name) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "unknown field type \(NameRules.quoted(name))")
        }
        self = type
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
