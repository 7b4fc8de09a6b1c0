import Foundation

/// Decodes one property's value from its field value.
struct FieldDecoder: Decoder {
    let field: FieldValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// Reads a value of `type` from `field`: directly for the scalar types and ``FieldValue``,
    /// else through the type's `init(from:)` (enums with raw values, arrays, sets, wrappers).
    ///
    /// - Throws: `DecodingError` whose coding path is `path`.
    static func decode<T: Decodable>(_ type: T.Type, from field: FieldValue, at path: [any CodingKey]) throws -> T {
        if let value = field as? T { return value }
        if case .nested(let json) = field {
            do { return try JSONValueDecoder().decode(T.self, from: json) } catch { throw RecordCoding.mismatch("the NESTED value does not decode: \(error)", at: path) }
        }
        if let scalar = T.self as? any RecordFieldScalar.Type,
           let value = try scalar.init(recordField: field, at: path) as? T {
            return value
        }
        if T.self is any DictionaryMarker.Type {
            throw RecordCoding.mismatch(FieldEncoder.dictionaryReason, at: path)
        }
        if let collection = T.self as? any RecordFieldCollection.Type,
           collection.recordElementType is any RecordFieldCollection.Type {
            throw RecordCoding.mismatch(FieldEncoder.listOfListsReason, at: path)
        }
        return try T(from: FieldDecoder(field: field, codingPath: path))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        throw RecordCoding.mismatch(FieldEncoder.nestedReason, at: codingPath)
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .list(_, let elements) = field else {
            throw RecordCoding.mismatch("expected a list, got \(field.type.rawValue)", at: codingPath)
        }
        return FieldListDecodingContainer(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        FieldSingleValueDecodingContainer(field: field, codingPath: codingPath)
    }
}

/// A value that decodes itself from one value: an enum with a raw value, or a wrapper.
private struct FieldSingleValueDecodingContainer: SingleValueDecodingContainer {
    let field: FieldValue
    let codingPath: [any CodingKey]

    /// A present field is never null.
    func decodeNil() -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try FieldDecoder.decode(type, from: field, at: codingPath)
    }
}

/// The elements of a list field, for an array or set.
private struct FieldListDecodingContainer: UnkeyedDecodingContainer {
    let elements: [FieldValue]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(elements: [FieldValue], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }
    private var elementPath: [any CodingKey] { codingPath + [IndexKey(currentIndex)] }

    /// A list element is never null.
    mutating func decodeNil() throws -> Bool {
        try checkNotAtEnd(Never?.self)
        return false
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try checkNotAtEnd(type)
        let value = try FieldDecoder.decode(type, from: elements[currentIndex], at: elementPath)
        currentIndex += 1
        return value
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        throw RecordCoding.mismatch(FieldEncoder.nestedReason, at: elementPath)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw RecordCoding.mismatch(FieldEncoder.listOfListsReason, at: elementPath)
    }

    mutating func superDecoder() throws -> any Decoder {
        throw RecordCoding.mismatch(FieldEncoder.nestedReason, at: elementPath)
    }

    private func checkNotAtEnd<T>(_ type: T.Type) throws {
        guard isAtEnd else { return }
        throw DecodingError.valueNotFound(type, DecodingError.Context(
            codingPath: elementPath, debugDescription: "the list has only \(elements.count) elements"
        ))
    }
}
