import Foundation

/// A typed record field value.
///
/// On the wire a field is `{"value": …, "type": "…"}`. ``FieldValue/init(json:type:)`` reads
/// the value part given a type (from the request, the schema, or inferred).
public indirect enum FieldValue: Sendable, Hashable {
    case string(String)
    case int64(Int64)
    case double(Double)
    /// Milliseconds since 1970.
    case timestamp(Int64)
    case bytes(Data)
    case reference(Reference)
    case location(Location)
    /// An asset: an upload's stored form (``StoredAsset``), or any other object, kept as the
    /// client sent it.
    case asset(JSONValue)
    /// A boolean (an extension; see ``ScalarType/boolean``).
    case boolean(Bool)
    /// A list whose elements are all of the given scalar type.
    case list(ScalarType, [FieldValue])
    /// A nested value (an extension, ``ScalarType/nested``): a JSON object or array.
    case nested(JSONValue)

    /// The value's type.
    public var type: FieldType {
        switch self {
        case .string: FieldType(.string)
        case .int64: FieldType(.int64)
        case .double: FieldType(.double)
        case .timestamp: FieldType(.timestamp)
        case .bytes: FieldType(.bytes)
        case .reference: FieldType(.reference)
        case .location: FieldType(.location)
        case .asset: FieldType(.asset)
        case .boolean: FieldType(.boolean)
        case .list(let scalar, _): FieldType(scalar, isList: true)
        case .nested: FieldType(.nested)
        }
    }

    /// Every reference the value holds: itself, or the elements of a reference list.
    public var references: [Reference] {
        switch self {
        case .reference(let reference): [reference]
        case .list(.reference, let elements):
            elements.compactMap { if case .reference(let r) = $0 { r } else { nil } }
        default: []
        }
    }

    /// The value part of the wire form, as JSON (a boolean as `INT64` 0 or 1, see ``WireForm``).
    public var json: JSONValue {
        switch self {
        case .string(let value): return .string(value)
        case .int64(let value): return .int(value)
        case .double(let value): return .double(value)
        case .timestamp(let value): return .int(value)
        case .bytes(let value): return .string(value.base64EncodedString())
        case .reference(let value):
            let action = WireForm.wire(value.action)
            var members: [String: JSONValue] = ["recordName": .string(value.recordName), "action": .string(action.action)]
            if let finer = action.extension { members[WireForm.actionExtensionKey] = .string(finer) }
            if let zone = value.zoneID { members["zoneID"] = zone.json }
            return .object(members)
        case .location(let value):
            var members: [String: JSONValue] = ["latitude": .double(value.latitude), "longitude": .double(value.longitude)]
            let optionals: [(String, Double?)] = [
                ("horizontalAccuracy", value.horizontalAccuracy), ("verticalAccuracy", value.verticalAccuracy),
                ("altitude", value.altitude), ("speed", value.speed), ("course", value.course),
            ]
            for (key, number) in optionals { if let number { members[key] = .double(number) } }
            if let timestamp = value.timestamp { members["timestamp"] = .int(timestamp) }
            return .object(members)
        case .asset(let value): return value
        case .boolean(let value): return .int(value ? 1 : 0)
        case .list(_, let elements): return .array(elements.map(\.json))
        case .nested(let value): return .string((try? value.serializedString()) ?? "null")
        }
    }
}

extension ZoneID {
    var json: JSONValue {
        var members: [String: JSONValue] = ["zoneName": .string(zoneName)]
        if let owner = ownerRecordName { members["ownerRecordName"] = .string(owner) }
        return .object(members)
    }
}

// MARK: - Reading values

extension FieldValue {
    /// Reads a field value from its JSON form.
    ///
    /// - Parameters:
    ///   - json: the `value` member of the wire form.
    ///   - type: the type to read it as; `nil` infers one from the JSON (string → `STRING`,
    ///     integer → `INT64`, other number → `DOUBLE`, boolean → `BOOLEAN`, object with
    ///     `recordName` → `REFERENCE`, with `latitude` → `LOCATION`, with `fileChecksum` or
    ///     `receipt` → `ASSETID`, array → a list).
    ///   - numbersMayBeStrings: whether an `INT64` or `DOUBLE` value may be a string holding the
    ///     number (as CloudKit JS's `numbersAsStrings` writes them): only for a type the field
    ///     itself gives, never for one taken from the schema, so an untyped `"1853"` stays a string.
    /// - Throws: ``RecordSyncError`` with ``ServerErrorCode/badRequest`` and a reason naming what
    ///   was expected, when the JSON does not fit the type.
    public init(json: JSONValue, type: FieldType?, numbersMayBeStrings: Bool = false) throws {
        guard let type = type ?? Self.inferredType(of: json) else {
            throw RecordSyncError(.badRequest, "cannot infer a type for \(json.kindDescription); give \"type\"")
        }
        if type.isList {
            guard case .array(let elements) = json else {
                throw RecordSyncError(.badRequest, "expected an array for \(type), got \(json.kindDescription)")
            }
            var values: [FieldValue] = []
            values.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                do {
                    values.append(try FieldValue(scalar: element, type: type.scalar, numbersMayBeStrings: numbersMayBeStrings))
                } catch let error as RecordSyncError {
                    throw RecordSyncError(.badRequest, "element \(index): \(error.reason)")
                }
            }
            self = .list(type.scalar, values)
        } else {
            self = try FieldValue(scalar: json, type: type.scalar, numbersMayBeStrings: numbersMayBeStrings)
        }
    }

    /// The type ``init(json:type:)`` infers for a JSON value, or `nil` (null, an empty array,
    /// a mixed array, an unrecognised object).
    public static func inferredType(of json: JSONValue) -> FieldType? {
        switch json {
        case .null: return nil
        case .bool: return FieldType(.boolean)
        case .int: return FieldType(.int64)
        case .double: return FieldType(.double)
        case .string: return FieldType(.string)
        case .object(let members):
            if members["recordName"] != nil { return FieldType(.reference) }
            if members["latitude"] != nil { return FieldType(.location) }
            // Apple's examples save an upload's receipt dictionary without a type.
            if members["fileChecksum"] != nil || members["receipt"] != nil { return FieldType(.asset) }
            return nil
        case .array(let elements):
            guard let first = elements.first, let scalar = inferredType(of: first), !scalar.isList else { return nil }
            var scalarType = scalar.scalar
            for element in elements.dropFirst() {
                guard let elementType = inferredType(of: element), !elementType.isList else { return nil }
                if elementType.scalar == scalarType { continue }
                // Integers and doubles mix into a DOUBLE_LIST.
                let numeric: Set<ScalarType> = [.int64, .double]
                if numeric.contains(elementType.scalar) && numeric.contains(scalarType) {
                    scalarType = .double
                } else {
                    return nil
                }
            }
            return FieldType(scalarType, isList: true)
        }
    }

    private init(scalar json: JSONValue, type: ScalarType, numbersMayBeStrings: Bool) throws {
        func mismatch() -> RecordSyncError {
            RecordSyncError(.badRequest, "expected \(Self.expectation(for: type)) for \(type.rawValue), got \(json.kindDescription)")
        }
        switch (type, json) {
        case (.string, .string(let value)): self = .string(value)
        case (.int64, .int(let value)): self = .int64(value)
        case (.int64, .string(let text)) where numbersMayBeStrings && Int64(text) != nil: self = .int64(Int64(text)!)
        case (.double, .string(let text)) where numbersMayBeStrings && Double(text)?.isFinite == true: self = .double(Double(text)!)
        case (.int64, .double(let value)):
            guard value.rounded() == value, let exact = Int64(exactly: value) else { throw mismatch() }
            self = .int64(exact)
        case (.double, .double(let value)): self = .double(value)
        case (.double, .int(let value)): self = .double(Double(value))
        case (.timestamp, .int(let value)): self = .timestamp(value)
        case (.timestamp, .double(let value)):
            guard value.isFinite, let ms = Int64(exactly: value.rounded()) else { throw mismatch() }
            self = .timestamp(ms)
        case (.bytes, .string(let value)):
            guard let data = Data(base64Encoded: value) else {
                throw RecordSyncError(.badRequest, "BYTES value is not valid base64")
            }
            self = .bytes(data)
        case (.boolean, .bool(let value)): self = .boolean(value)
        case (.boolean, .int(let value)) where value == 0 || value == 1: self = .boolean(value == 1)
        case (.reference, .object(let members)):
            guard case .string(let name)? = members["recordName"] else {
                throw RecordSyncError(.badRequest, "REFERENCE value needs a string recordName")
            }
            if let problem = NameRules.problem(withName: name, kind: "referenced recordName") {
                throw RecordSyncError(.badRequest, problem)
            }
            func text(_ key: String) throws -> String? {
                switch members[key] {
                case nil, .null?: return nil
                case .string(let text)?: return text
                default: throw RecordSyncError(.badRequest, "REFERENCE \(key) must be a string")
                }
            }
            guard let action = WireForm.referenceAction(try text("action"), extension: try text(WireForm.actionExtensionKey)) else {
                throw RecordSyncError(.badRequest, "REFERENCE action must be NONE, DELETE_SELF or VALIDATE (or, as recordSyncAction, NULLIFY)")
            }
            var zoneID: ZoneID?
            if let zone = members["zoneID"], zone != .null {
                guard case .string(let zoneName)? = zone["zoneName"] else {
                    throw RecordSyncError(.badRequest, "REFERENCE zoneID needs a string zoneName")
                }
                var owner: String?
                if case .string(let value)? = zone["ownerRecordName"] { owner = value }
                zoneID = ZoneID(zoneName: zoneName, ownerRecordName: owner)
            }
            self = .reference(Reference(recordName: name, zoneID: zoneID, action: action))
        case (.location, .object(let members)):
            func number(_ key: String) throws -> Double? {
                switch members[key] {
                case nil, .null?: return nil
                case .int(let value)?: return Double(value)
                case .double(let value)?: return value
                default: throw RecordSyncError(.badRequest, "LOCATION \(key) must be a number")
                }
            }
            guard let latitude = try number("latitude"), let longitude = try number("longitude") else {
                throw RecordSyncError(.badRequest, "LOCATION needs latitude and longitude")
            }
            guard (-90...90).contains(latitude), (-180...180).contains(longitude) else {
                throw RecordSyncError(.badRequest, "LOCATION latitude \(latitude), longitude \(longitude) is not a place: out of range (latitude -90…90, longitude -180…180)")
            }
            self = .location(Location(
                latitude: latitude, longitude: longitude,
                horizontalAccuracy: try number("horizontalAccuracy"), verticalAccuracy: try number("verticalAccuracy"),
                altitude: try number("altitude"), speed: try number("speed"), course: try number("course"),
                timestamp: try number("timestamp").map { value in
                    guard value.isFinite, let milliseconds = Int64(exactly: value.rounded()) else {
                        throw RecordSyncError(.badRequest, "LOCATION timestamp must be milliseconds since 1970 within the 64-bit range")
                    }
                    return milliseconds
                }
            ))
        case (.asset, .object): self = .asset(json)
        // As it travels, a string holding the JSON; RecordSync's own clients may send the JSON.
        case (.nested, .string(let text)):
            let parsed: JSONValue
            do { parsed = try JSONValue.parse(Data(text.utf8)) } catch { throw RecordSyncError(.badRequest, "NESTED value is not JSON text") }
            guard case .object = parsed else {
                guard case .array = parsed else { throw RecordSyncError(.badRequest, "NESTED value holds \(parsed.kindDescription), not an object or an array") }
                self = .nested(parsed)
                return
            }
            self = .nested(parsed)
        case (.nested, .object), (.nested, .array): self = .nested(json)
        default: throw mismatch()
        }
    }

    private static func expectation(for type: ScalarType) -> String {
        switch type {
        case .string: "a string"
        case .int64: "an integer"
        case .double: "a number"
        case .timestamp: "milliseconds since 1970"
        case .bytes: "a base64 string"
        case .reference: "an object with recordName"
        case .location: "an object with latitude and longitude"
        case .asset: "an asset object"
        case .boolean: "a boolean"
        case .nested: "a JSON object or array (or a string holding one)"
        }
    }
}

// MARK: - Wire coding

/// A field as it arrives on the wire: the JSON value and the type, if one was given.
///
/// The server resolves it against the record type's schema; ``FieldValue`` decodes it by
/// inference when the type is absent.
public struct RawFieldValue: Sendable, Hashable {
    /// The `value` member; `.null` (or absent) deletes the field in an update.
    public var value: JSONValue
    /// The type the field is read as: its `recordSyncType` member when RecordSync knows it,
    /// else its `type` member, when given (``WireForm/type(type:extensionType:)``).
    public var type: FieldType?

    /// Creates a raw field.
    public init(value: JSONValue, type: FieldType? = nil) {
        self.value = value
        self.type = type
    }
}
