import Foundation

/// Decodes a Codable value from a record's fields: the reverse of ``RecordEncoder``.
///
/// Each property reads the field named after its coding key. A missing field decodes as `nil`
/// for an optional property. A field may hold what the server returns for the property's type,
/// not only what ``RecordEncoder`` writes:
///
/// | Swift type | accepted field types |
/// |---|---|
/// | `String`, `URL` | `STRING` |
/// | `Int`, `Int8`…`Int64`, `UInt`…`UInt64` | `INT64`, when the value fits |
/// | `Double`, `Float` | `DOUBLE`, `INT64` |
/// | `Bool` | `BOOLEAN`, `INT64` 0 or 1 (CloudKit stores booleans as `INT64`) |
/// | `Date` | `TIMESTAMP`, `INT64` (milliseconds since 1970) |
/// | `Data` | `BYTES` |
/// | ``Reference``, ``RecordID`` | `REFERENCE` |
/// | ``Location`` | `LOCATION` |
/// | ``FieldValue`` | any |
/// | an array or set | a `…_LIST` whose elements fit the element type |
///
/// The record's name, type and system fields are not decoded; only its fields are.
public struct RecordDecoder: Sendable {
    /// Creates a decoder.
    public init() {}

    /// Decodes a value of `type` from `record`'s fields.
    ///
    /// - Throws: ``RecordSyncError`` with ``ServerErrorCode/badRequest`` and a reason naming the
    ///   field: a missing field for a non-optional property, a field whose type does not fit
    ///   the property (the reason gives the expected and actual field types), a value out of
    ///   the property type's range, or a `DecodingError` the type's own `init(from:)` threw.
    ///   Errors of other types that `init(from:)` throws are rethrown unchanged.
    public func decode<T: Decodable>(_ type: T.Type, from record: Record) throws -> T {
        if T.self is any DictionaryMarker.Type || T.self is any RecordFieldCollection.Type
            || T.self is any RecordFieldScalar.Type || T.self == FieldValue.self {
            throw RecordSyncError(.badRequest, "a record decodes into a struct or class, not a \(T.self)")
        }
        do {
            return try T(from: TopLevelFieldsDecoder(fields: record.fields))
        } catch let error as DecodingError {
            throw RecordCoding.recordSyncError(error)
        }
    }
}

extension RecordCoding {
    /// A `DecodingError` as a bad request naming the field.
    static func recordSyncError(_ error: DecodingError) -> RecordSyncError {
        switch error {
        case .keyNotFound(let key, let context):
            let path = quoted(context.codingPath + [key])
            return RecordSyncError(.badRequest, "field \(path) is missing, and its property is not optional")
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return RecordSyncError(.badRequest, "field \(quoted(context.codingPath)): \(context.debugDescription)")
        @unknown default:
            return RecordSyncError(.badRequest, "cannot decode the record: \(error)")
        }
    }

    static func mismatch(_ reason: String, at path: [any CodingKey]) -> DecodingError {
        DecodingError.typeMismatch(FieldValue.self, DecodingError.Context(codingPath: path, debugDescription: reason))
    }
}

/// The `Decoder` a value decodes itself from: it must ask for a keyed container.
struct TopLevelFieldsDecoder: Decoder {
    let fields: [String: FieldValue]
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(FieldsDecodingContainer<Key>(fields: fields))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw RecordCoding.mismatch("a record decodes into a struct or class (a keyed container), not a list", at: [])
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw RecordCoding.mismatch("a record decodes into a struct or class (a keyed container), not a single value", at: [])
    }
}

/// Reads each property from its field.
struct FieldsDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let fields: [String: FieldValue]
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { fields.keys.sorted().compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { fields[key.stringValue] != nil }

    /// A missing field reads as `nil`; a field never holds a null.
    func decodeNil(forKey key: Key) throws -> Bool { fields[key.stringValue] == nil }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try FieldDecoder.decode(type, from: field(key), at: [key])
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        throw RecordCoding.mismatch(FieldEncoder.nestedReason, at: [key])
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try FieldDecoder(field: field(key), codingPath: [key]).unkeyedContainer()
    }

    /// The superclass's properties are fields of the same record.
    func superDecoder() throws -> any Decoder { TopLevelFieldsDecoder(fields: fields) }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        throw RecordCoding.mismatch(FieldEncoder.nestedReason, at: [key])
    }

    private func field(_ key: Key) throws -> FieldValue {
        guard let field = fields[key.stringValue] else {
            throw DecodingError.keyNotFound(key, DecodingError.Context(
                codingPath: [], debugDescription: "no field \(NameRules.quoted(key.stringValue))"
            ))
        }
        return field
    }
}
