import Foundation

/// Encodes one property's value as a field value: a scalar, a list of scalars, or `nil`.
///
/// The `Encoder` API cannot throw when a value asks for a container, so a value that asks
/// for one a field cannot hold (a keyed container: a nested struct or dictionary) is noted and
/// thrown by ``result()``.
final class FieldEncoder: Encoder {
    static let nestedReason = "a nested struct or dictionary cannot be a record field"
    static let dictionaryReason = "a dictionary cannot be a record field"
    static let listOfListsReason = "a list of lists cannot be a record field"
    static let listOfOptionalsReason = "a list of optionals cannot be a record field (a list cannot hold nil)"

    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    /// The static type of the value, which tells the element type of an empty list.
    private let valueType: Any.Type
    private var content = Content.nothing
    private var problem: String?

    private enum Content {
        case nothing
        case value(FieldValue?)
        case list([FieldValue])
    }

    init(path: [any CodingKey], valueType: Any.Type) {
        self.codingPath = path
        self.valueType = valueType
    }

    /// The field value for `value`, or `nil` when it is `nil`.
    ///
    /// - Throws: ``RecordSyncError`` with ``ServerErrorCode/badRequest`` naming `path`, for a
    ///   value that cannot be a field.
    static func fieldValue<T: Encodable>(for value: T, at path: [any CodingKey]) throws -> FieldValue? {
        if let field = value as? FieldValue { return field }
        if let scalar = value as? any RecordFieldScalar { return try scalar.recordFieldValue(at: path) }
        // A dictionary, a nested struct, or a list of either: a NESTED field holding its JSON.
        if value is any DictionaryMarker { return try nested(value, at: path) }
        if let collection = T.self as? any RecordFieldCollection.Type {
            let element = collection.recordElementType
            if element is any DictionaryMarker.Type { return try nested(value, at: path) }
            if RecordCoding.isOptional(element) { throw error(listOfOptionalsReason, at: path) }
            if element is any RecordFieldCollection.Type { throw error(listOfListsReason, at: path) }
        }
        let encoder = FieldEncoder(path: path, valueType: T.self)
        try value.encode(to: encoder)
        if encoder.problem?.hasSuffix(nestedReason) == true { return try nested(value, at: path) }
        // A list of nested values is one nested array, queryable by key path like any.
        if case .list(.nested, _)? = try encoder.result() { return try nested(value, at: path) }
        return try encoder.result()
    }

    /// `value` as a NESTED field: its JSON object or array (``ScalarType/nested``), never
    /// taken for a location or a reference whatever its keys.
    private static func nested<T: Encodable>(_ value: T, at path: [any CodingKey]) throws -> FieldValue {
        let tree: JSONValue
        do { tree = try JSONValueEncoder().encodeTree(value) } catch { throw Self.error("\(error)", at: path) }
        switch tree {
        case .object, .array: return .nested(tree)
        default: throw Self.error("encodes \(tree.kindDescription), not a dictionary or an array", at: path)
        }
    }

    static func error(_ reason: String, at path: [any CodingKey]) -> RecordSyncError {
        RecordSyncError(.badRequest, "property \(RecordCoding.quoted(path)): \(reason)")
    }

    /// What the value encoded.
    func result() throws -> FieldValue? {
        if let problem { throw RecordSyncError(.badRequest, problem) }
        switch content {
        case .nothing: throw Self.error("the value encoded nothing", at: codingPath)
        case .value(let field): return field
        case .list(let elements): return .list(try listType(of: elements), elements)
        }
    }

    /// The elements' common type; for an empty list, the static element type's, else `STRING`.
    private func listType(of elements: [FieldValue]) throws -> ScalarType {
        guard let first = elements.first else {
            let element = (valueType as? any RecordFieldCollection.Type)?.recordElementType
            return element.flatMap(RecordCoding.scalarType(of:)) ?? .string
        }
        let scalar = first.type.scalar
        for (index, element) in elements.enumerated() where element.type.scalar != scalar {
            throw Self.error(
                "a list cannot mix \(scalar.rawValue) and \(element.type.scalar.rawValue) elements",
                at: codingPath + [IndexKey(index)]
            )
        }
        return scalar
    }

    /// Notes a problem for ``result()``; the first one wins.
    fileprivate func fail(_ reason: String, at path: [any CodingKey]) {
        if problem == nil { problem = Self.error(reason, at: path).reason }
    }

    fileprivate func set(_ field: FieldValue?) { content = .value(field) }

    fileprivate var elements: [FieldValue] {
        if case .list(let elements) = content { return elements }
        return []
    }

    fileprivate func append(_ element: FieldValue) {
        guard case .list(var elements) = content else {
            content = .list([element])
            return
        }
        content = .nothing  // so that the array is uniquely referenced and appends in place
        elements.append(element)
        content = .list(elements)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        fail(Self.nestedReason, at: codingPath)
        return KeyedEncodingContainer(DiscardingEncodingContainer<Key>(codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .list = content {} else { content = .list([]) }
        return FieldListEncodingContainer(encoder: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        FieldSingleValueEncodingContainer(encoder: self)
    }
}

/// A value that encodes itself as one value: an enum with a raw value, or a wrapper.
private struct FieldSingleValueEncodingContainer: SingleValueEncodingContainer {
    let encoder: FieldEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil() throws { encoder.set(nil) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        encoder.set(try FieldEncoder.fieldValue(for: value, at: codingPath))
    }
}

/// An array or set: each element must be a scalar.
private struct FieldListEncodingContainer: UnkeyedEncodingContainer {
    let encoder: FieldEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }
    var count: Int { encoder.elements.count }
    private var elementPath: [any CodingKey] { codingPath + [IndexKey(count)] }

    init(encoder: FieldEncoder) { self.encoder = encoder }

    mutating func encodeNil() throws {
        throw FieldEncoder.error(FieldEncoder.listOfOptionalsReason, at: elementPath)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        if RecordCoding.isOptional(T.self) {
            throw FieldEncoder.error(FieldEncoder.listOfOptionalsReason, at: elementPath)
        }
        guard let element = try FieldEncoder.fieldValue(for: value, at: elementPath) else {
            throw FieldEncoder.error(FieldEncoder.listOfOptionalsReason, at: elementPath)
        }
        if case .list = element { throw FieldEncoder.error(FieldEncoder.listOfListsReason, at: elementPath) }
        encoder.append(element)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        encoder.fail(FieldEncoder.nestedReason, at: elementPath)
        return KeyedEncodingContainer(DiscardingEncodingContainer<NestedKey>(codingPath: elementPath))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        encoder.fail(FieldEncoder.listOfListsReason, at: elementPath)
        return FieldEncoder(path: elementPath, valueType: Void.self).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        encoder.fail(FieldEncoder.nestedReason, at: elementPath)
        return FieldEncoder(path: elementPath, valueType: Void.self)
    }
}

/// Stands in for a keyed container a field cannot hold; the problem is already noted.
private struct DiscardingEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws {}
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {}

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(DiscardingEncodingContainer<NestedKey>(codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        FieldEncoder(path: codingPath + [key], valueType: Void.self).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { FieldEncoder(path: codingPath, valueType: Void.self) }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        FieldEncoder(path: codingPath + [key], valueType: Void.self)
    }
}
