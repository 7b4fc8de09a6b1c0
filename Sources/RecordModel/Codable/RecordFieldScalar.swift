import Foundation

/// A Swift type that ``RecordEncoder`` stores as one scalar field value and ``RecordDecoder``
/// reads back, bypassing the type's own `Codable` conformance (which for `Date`, `Data` or `URL`
/// would not give a record field).
protocol RecordFieldScalar {
    /// The field type a value of this type becomes; also the element type of an empty list.
    static var recordScalarType: ScalarType { get }
    /// The field value for `self`; `path` names the property in error reasons.
    func recordFieldValue(at path: [any CodingKey]) throws -> FieldValue
    /// The value a field holds, accepting what the server may return for the type; `nil` when
    /// the field's type does not fit. Throws `DecodingError` naming `path` for a value out of range.
    static func reading(_ field: FieldValue, at path: [any CodingKey]) throws -> Self?
}

extension RecordFieldScalar {
    /// Reads a value from a field; throws `DecodingError.typeMismatch` naming `path` and the
    /// expected and actual field types when it does not fit.
    init(recordField field: FieldValue, at path: [any CodingKey]) throws {
        guard let value = try Self.reading(field, at: path) else {
            throw DecodingError.typeMismatch(Self.self, DecodingError.Context(
                codingPath: path,
                debugDescription: "expected \(Self.recordScalarType.rawValue) for \(Self.self), got \(field.type.rawValue)"
            ))
        }
        self = value
    }

    static func outOfRange(_ reason: String, at path: [any CodingKey]) -> DecodingError {
        DecodingError.dataCorrupted(DecodingError.Context(codingPath: path, debugDescription: reason))
    }
}

extension String: RecordFieldScalar {
    static var recordScalarType: ScalarType { .string }
    func recordFieldValue(at path: [any CodingKey]) throws -> FieldValue { .string(self) }
    static func reading(_ field: FieldValue, at path: [any CodingKey]) -> String? {
        if case .string(let value) = field { value } else { nil }
    }
}

extension Bool: RecordFieldScalar {
    static var recordScalarType: ScalarType { .boolean }
    func recordFieldValue(at path: [any CodingKey]) throws -> FieldValue { .boolean(self) }

    /// Accepts `INT64` 0 and 1 too: CloudKit stores booleans as `INT64`.
    static func reading(_ field: FieldValue, at path: [any CodingKey]) throws -> Bool? {
        switch field {
        case .boolean(let value): return value
        case .int64(0): return false
        case .int64(1): return true
        case .int64(let value): throw outOfRange("expected INT64 0 or 1 for Bool, got \(value)", at: path)
        default: return nil
        }
    }
}

/// Every fixed-width integer is an `INT64` field; values beyond `Int64` fail to encode, and
/// stored values beyond the property's type fail to decode.
protocol RecordFieldInteger: RecordFieldScalar, FixedWidthInteger {}

extension RecordFieldInteger {
    static var recordScalarType: ScalarType { .int64 }

    func recordFieldValue(at path: [any CodingKey]) throws -> FieldValue {
        guard let value = Int64(exactly: self) else {
            throw RecordSyncError(.badRequest, "property \(RecordCoding.quoted(path)): \(self) does not fit in INT64")
        }
        return .int64(value)
    }

    static func reading(_ field: FieldValue, at path: [any CodingKey]) throws -> Self? {
        guard case .int64(let stored) = field else { return nil }
        guard let value = Self(exactly: stored) else {
            throw outOfRange("INT64 value \(stored) does not fit in \(Self.self)", at: path)
        }
        return value
    }
}

extension Int: RecordFieldInteger {}
extension Int8: RecordFieldInteger {}
extension Int16: RecordFieldInteger {}
extension Int32: RecordFieldInteger {}
extension Int64: RecordFieldInteger {}
extension UInt: RecordFieldInteger {}
extension UInt8: RecordFieldInteger {}
extension UInt16: RecordFieldInteger {}
extension UInt32: RecordFieldInteger {}
extension UInt64: RecordFieldInteger {}

extension Double: RecordFieldScalar {
    static var recordScalarType: ScalarType { .double }
    func recordFieldValue(at path: [any CodingKey]) throws -> FieldValue { .double(self) }

    /// Accepts `INT64` too.
    static func reading(_ field: FieldValue, at path: [any CodingKey]) -> Double? {
        switch field {
        case .double(let value): value
        case .int64(let value): Double(value)
        default: nil
        }
    }
}

extension Float: RecordFieldScalar {
    static var recordScalarType: ScalarType { .double }
    func recordFieldValue(at path: [any CodingKey]) throws -> FieldValue { .double(Double(self)) }

    /// Accepts `DOUBLE` (rounded to the nearest `Float`) and `INT64`.
    static func reading(_ field: FieldValue, at path: [any CodingKey]) -> Float? {
        Double.reading(field, at: path).map(Float.init)
    }
}

extension Date: RecordFieldScalar {
    static var recordScalarType: ScalarType { .timestamp }

    /// Milliseconds since 1970, rounded to the nearest millisecond.
    func recordFieldValue(at path: [any CodingKey]) throws -> FieldValue {
        let milliseconds = (timeIntervalSince1970 * 1000).rounded()
        guard milliseconds.isFinite, let value = Int64(exactly: milliseconds) else {
            throw RecordSyncError(.badRequest, "property \(RecordCoding.quoted(path)): the date is out of the TIMESTAMP range")
        }
        return .timestamp(value)
    }

    /// Accepts `INT64` milliseconds too (a timestamp saved without a type is inferred as `INT64`).
    static func reading(_ field: FieldValue, at path: [any CodingKey]) -> Date? {
        switch field {
        case .timestamp(let milliseconds), .int64(let milliseconds):
            Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        default: nil
        }
    }
}

extension Data: RecordFieldScalar {
    static var recordScalarType: ScalarType { .bytes }
    func recordFieldValue(at path: [any CodingKey]) throws -> FieldValue { .bytes(self) }
    static func reading(_ field: FieldValue, at path: [any CodingKey]) -> Data? {
        if case .bytes(let value) = field { value } else { nil }
    }
}

extension URL: RecordFieldScalar {
    static var recordScalarType: ScalarType { .string }
    func recordFieldValue(at path: [any CodingKey]) throws -> FieldValue { .string(absoluteString) }

    static func reading(_ field: FieldValue, at path: [any CodingKey]) throws -> URL? {
        guard let text = String.reading(field, at: path) else { return nil }
        guard let url = URL(string: text) else {
            throw outOfRange("STRING value \(NameRules.quoted(text)) is not a URL", at: path)
        }
        return url
    }
}

extension Reference: RecordFieldScalar {
    static var recordScalarType: ScalarType { .reference }
    func recordFieldValue(at path: [any CodingKey]) throws -> FieldValue { .reference(self) }
    static func reading(_ field: FieldValue, at path: [any CodingKey]) -> Reference? {
        if case .reference(let value) = field { value } else { nil }
    }
}

extension RecordID: RecordFieldScalar {
    static var recordScalarType: ScalarType { .reference }

    /// A reference with action `NONE`.
    func recordFieldValue(at path: [any CodingKey]) throws -> FieldValue {
        .reference(Reference(recordID: self, action: .none))
    }

    static func reading(_ field: FieldValue, at path: [any CodingKey]) -> RecordID? {
        Reference.reading(field, at: path)?.recordID
    }
}

extension Location: RecordFieldScalar {
    static var recordScalarType: ScalarType { .location }
    func recordFieldValue(at path: [any CodingKey]) throws -> FieldValue { .location(self) }
    static func reading(_ field: FieldValue, at path: [any CodingKey]) -> Location? {
        if case .location(let value) = field { value } else { nil }
    }
}

extension Asset: RecordFieldScalar {
    static var recordScalarType: ScalarType { .asset }
    func recordFieldValue(at path: [any CodingKey]) throws -> FieldValue { fieldValue }
    static func reading(_ field: FieldValue, at path: [any CodingKey]) -> Asset? { field.asset }
}
