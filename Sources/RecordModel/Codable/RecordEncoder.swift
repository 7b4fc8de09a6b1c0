import Foundation

/// Encodes a Codable value's stored properties as record fields.
///
/// Each property becomes one field named after its coding key (so `CodingKeys` renames
/// carry over):
///
/// | Swift type | field type |
/// |---|---|
/// | `String`, `URL` (its `absoluteString`) | `STRING` |
/// | `Int`, `Int8`…`Int64`, `UInt`…`UInt64` | `INT64` (values beyond `Int64.max` throw) |
/// | `Double`, `Float` | `DOUBLE` |
/// | `Bool` | `BOOLEAN` |
/// | `Date` | `TIMESTAMP` (milliseconds since 1970, rounded) |
/// | `Data` | `BYTES` |
/// | ``Reference`` | `REFERENCE` |
/// | ``RecordID`` | `REFERENCE` with action `NONE` |
/// | ``Location`` | `LOCATION` |
/// | ``FieldValue`` | itself |
/// | an enum with a raw value | the raw value's type |
/// | an array or set of any of these | the matching `…_LIST` |
/// | `nil` | no field |
///
/// An empty array takes its list type from the static element type; when that does not tell
/// (an empty `[FieldValue]`, or an element type with a custom `Encodable` conformance), the
/// list is a `STRING_LIST`. A class's `super.encode(to: container.superEncoder())` writes the
/// superclass's properties as fields of the same record.
public struct RecordEncoder: Sendable {
    /// Creates an encoder.
    public init() {}

    /// Encodes `value` as a new record of type `recordType` named by `recordID`.
    ///
    /// - Throws: ``RecordSyncError`` with ``ServerErrorCode/badRequest`` and a reason naming
    ///   the property path, for a value that cannot be a field: a nested struct or dictionary,
    ///   an array of arrays, an array of optionals, a mixed array, an integer beyond `Int64`,
    ///   a property whose name fails ``NameRules/problem(withFieldName:)``; or when `value`
    ///   is not a struct or class.
    public func encode<T: Encodable>(_ value: T, recordType: String, recordID: RecordID) throws -> Record {
        var record = Record(recordType: recordType, recordID: recordID)
        try encode(value, into: &record)
        return record
    }

    /// Re-encodes `value` into an existing record.
    ///
    /// The record keeps its name, type, zone, change tag and other system fields. Each field
    /// named by a property is replaced; a field whose property is `nil` is removed; fields
    /// that no property names are kept. On error the record is left unchanged.
    ///
    /// - Throws: ``RecordSyncError`` with ``ServerErrorCode/badRequest``, as
    ///   ``encode(_:recordType:recordID:)`` does.
    public func encode<T: Encodable>(_ value: T, into record: inout Record) throws {
        for (name, field) in try fieldChanges(encoding: value) {
            record.fields[name] = field
        }
    }

    /// The fields `value` sets (`nil`: removes), by name.
    func fieldChanges<T: Encodable>(encoding value: T) throws -> [String: FieldValue?] {
        if value is any DictionaryMarker || value is any RecordFieldCollection || value is FieldValue
            || value is any RecordFieldScalar {
            throw RecordSyncError(.badRequest, "a record encodes a struct or class, not a \(T.self)")
        }
        let storage = FieldChanges()
        do {
            try value.encode(to: TopLevelFieldsEncoder(storage: storage))
            try storage.finish()
        } catch let error as EncodingError {
            throw RecordCoding.recordSyncError(error)
        }
        return storage.fields
    }
}

extension RecordCoding {
    /// An `EncodingError` (thrown by the value's own `encode(to:)`, or by the standard library
    /// for an unsupported type such as `Int128`) as a bad request naming the property.
    static func recordSyncError(_ error: EncodingError) -> RecordSyncError {
        switch error {
        case .invalidValue(_, let context):
            return RecordSyncError(.badRequest, "property \(quoted(context.codingPath)): \(context.debugDescription)")
        @unknown default:
            return RecordSyncError(.badRequest, "cannot encode the value: \(error)")
        }
    }
}

/// The field changes an encoding collects, shared by the top-level encoder and its containers.
final class FieldChanges {
    /// New values by field name; `nil` removes the field.
    var fields: [String: FieldValue?] = [:]
    /// Fields written through a nested unkeyed container, resolved when encoding finishes.
    var pending: [(name: String, encoder: FieldEncoder)] = []
    /// The first problem found where the `Encoder` API cannot throw.
    var problem: String?

    /// Records a change after checking the field name.
    func set(_ field: FieldValue?, at path: [any CodingKey]) throws {
        guard let key = path.last else { return }
        try Self.check(key, at: path)
        fields[key.stringValue] = field
    }

    /// Notes a problem to throw when encoding finishes; the first one wins.
    func fail(_ reason: String) {
        if problem == nil { problem = reason }
    }

    /// Throws the first problem, and resolves the pending fields.
    func finish() throws {
        if let problem { throw RecordSyncError(.badRequest, problem) }
        for (name, encoder) in pending {
            fields[name] = try encoder.result()
        }
    }

    static func check(_ key: any CodingKey, at path: [any CodingKey]) throws {
        if let problem = NameRules.problem(withFieldName: key.stringValue) {
            throw RecordSyncError(.badRequest, "property \(RecordCoding.quoted(path)): \(problem)")
        }
    }
}

/// The `Encoder` a record's value encodes itself into: it must ask for a keyed container.
struct TopLevelFieldsEncoder: Encoder {
    let storage: FieldChanges
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(FieldsEncodingContainer<Key>(storage: storage))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        storage.fail("a record encodes a struct or class (a keyed container), not a list")
        return FieldEncoder(path: [], valueType: Void.self).unkeyedContainer()
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        storage.fail("a record encodes a struct or class (a keyed container), not a single value")
        return FieldEncoder(path: [], valueType: Void.self).singleValueContainer()
    }
}

/// Writes each property as a field.
struct FieldsEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let storage: FieldChanges
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil(forKey key: Key) throws { try storage.set(nil, at: [key]) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try storage.set(FieldEncoder.fieldValue(for: value, at: [key]), at: [key])
    }

    // The standard library's `encodeIfPresent` overloads skip `nil` silently; these record
    // it, so that re-encoding into a record removes the field.
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws { try store(value, key) }
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { try store(value, key) }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { try store(value, key) }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { try store(value, key) }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { try store(value, key) }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { try store(value, key) }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { try store(value, key) }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { try store(value, key) }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { try store(value, key) }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { try store(value, key) }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { try store(value, key) }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { try store(value, key) }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { try store(value, key) }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { try store(value, key) }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { try store(value, key) }

    private mutating func store<T: Encodable>(_ value: T?, _ key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let encoder = FieldEncoder(path: [key], valueType: Void.self)
        storage.fail("property \(RecordCoding.quoted([key])): \(FieldEncoder.nestedReason)")
        return encoder.container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let encoder = FieldEncoder(path: [key], valueType: Void.self)
        if let problem = NameRules.problem(withFieldName: key.stringValue) {
            storage.fail("property \(RecordCoding.quoted([key])): \(problem)")
        }
        storage.pending.append((key.stringValue, encoder))
        return encoder.unkeyedContainer()
    }

    /// The superclass's properties become fields of the same record.
    mutating func superEncoder() -> any Encoder { TopLevelFieldsEncoder(storage: storage) }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        storage.fail("property \(RecordCoding.quoted([key])): \(FieldEncoder.nestedReason)")
        return FieldEncoder(path: [key], valueType: Void.self)
    }
}
