import Foundation

/// Encodes `Encodable` values to a ``JSONValue`` tree, and to compact JSON text with sorted
/// keys: what RecordSync writes on the wire and in storage.
///
/// It produces the same JSON as Foundation's `JSONEncoder` with `.sortedKeys` for the types
/// RecordSync encodes (strings, numbers, booleans, arrays, dictionaries, nested `Codable`
/// types, ``JSONValue``), without its per-value overhead.
public struct JSONValueEncoder: Sendable {
    public init() {}

    /// `value` as a ``JSONValue``.
    public func encodeTree<T: Encodable>(_ value: T) throws -> JSONValue {
        if let json = value as? JSONValue { return json }
        if let direct = value as? any JSONDirectWritable { return try JSONWire.tree(of: direct) }
        let root = TreeNode()
        try value.encode(to: TreeEncoder(root, path: []))
        return root.resolved()
    }

    /// A record's fields as compact JSON text (their wire form, names sorted).
    public func encodeFieldsText(_ fields: [String: FieldValue]) throws -> String {
        var writer = JSONWriter(storing: ())
        try writer.sortedObject(fields) { try $1.write(to: &$0) }
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// `value` as compact JSON text (UTF-8), object keys sorted.
    public func encode<T: Encodable>(_ value: T) throws -> Data {
        Data(try encodeBytes(value))
    }

    /// ``encode(_:)``'s bytes, as the writer left them (an answer of a megabyte is not copied
    /// into a `Data` on its way to the socket).
    package func encodeBytes<T: Encodable>(_ value: T) throws -> [UInt8] {
        var writer = JSONWriter()
        if let direct = value as? any JSONDirectWritable {
            try direct.write(to: &writer)
        } else {
            try writer.write(try encodeTree(value))
        }
        return writer.bytes
    }
}

/// A value being encoded: a leaf, or an object or array whose members may still change.
final class TreeNode {
    enum Slot {
        case leaf(JSONValue)
        case node(TreeNode)

        var resolved: JSONValue {
            switch self {
            case .leaf(let value): value
            case .node(let node): node.resolved()
            }
        }
    }

    var leaf: JSONValue?
    var object: [String: Slot]?
    var array: [Slot]?

    func resolved() -> JSONValue {
        if let object { return .object(object.mapValues(\.resolved)) }
        if let array { return .array(array.map(\.resolved)) }
        return leaf ?? .object([:])
    }

    /// Makes this node an object (keeping members already written) for a keyed container.
    func becomeObject() {
        if object == nil {
            object = [:]
            array = nil
            leaf = nil
        }
    }

    func becomeArray() {
        if array == nil {
            array = []
            object = nil
            leaf = nil
        }
    }
}

final class TreeEncoder: Encoder {
    let node: TreeNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(_ node: TreeNode, path: [any CodingKey]) {
        self.node = node
        self.codingPath = path
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.becomeObject()
        return KeyedEncodingContainer(KeyedEncoder<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        node.becomeArray()
        return UnkeyedEncoder(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleEncoder(node: node, codingPath: codingPath)
    }

    /// `value` as a slot: primitives and ``JSONValue`` as leaves, anything else through its
    /// `encode(to:)`.
    static func slot<T: Encodable>(_ value: T, path: [any CodingKey]) throws -> TreeNode.Slot {
        switch value {
        case let json as JSONValue: return .leaf(json)
        case let text as String: return .leaf(.string(text))
        case let flag as Bool: return .leaf(.bool(flag))
        case let number as Int: return .leaf(.int(Int64(number)))
        case let number as Int64: return .leaf(.int(number))
        case let number as Double: return .leaf(try double(number, path))
        case let direct as any JSONDirectWritable: return .leaf(try JSONWire.tree(of: direct))
        default:
            let child = TreeNode()
            try value.encode(to: TreeEncoder(child, path: path))
            if child.object == nil, child.array == nil, let leaf = child.leaf { return .leaf(leaf) }
            return .node(child)
        }
    }

    static func double(_ number: Double, _ path: [any CodingKey]) throws -> JSONValue {
        guard number.isFinite else {
            throw EncodingError.invalidValue(number, .init(codingPath: path, debugDescription: "Unable to encode Double.\(number) directly in JSON."))
        }
        return .double(number)
    }

    static func integer<I: BinaryInteger>(_ number: I, _ path: [any CodingKey]) throws -> JSONValue {
        if let exact = Int64(exactly: number) { return .int(exact) }
        return .double(Double(number))
    }
}

struct KeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: TreeNode
    let codingPath: [any CodingKey]

    private func set(_ slot: TreeNode.Slot, _ key: Key) { node.object![key.stringValue] = slot }

    mutating func encodeNil(forKey key: Key) throws { set(.leaf(.null), key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.leaf(.bool(value)), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.leaf(.string(value)), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { set(.leaf(try TreeEncoder.double(value, codingPath + [key])), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { set(.leaf(try TreeEncoder.double(Double(value), codingPath + [key])), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.leaf(.int(Int64(value))), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.leaf(.int(Int64(value))), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.leaf(.int(Int64(value))), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.leaf(.int(Int64(value))), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(.leaf(.int(value)), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(.leaf(try TreeEncoder.integer(value, codingPath)), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.leaf(.int(Int64(value))), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.leaf(.int(Int64(value))), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.leaf(.int(Int64(value))), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(.leaf(try TreeEncoder.integer(value, codingPath)), key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { set(try TreeEncoder.slot(value, path: codingPath + [key]), key) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let child = TreeNode()
        child.becomeObject()
        set(.node(child), key)
        return KeyedEncodingContainer(KeyedEncoder<NestedKey>(node: child, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = TreeNode()
        child.becomeArray()
        set(.node(child), key)
        return UnkeyedEncoder(node: child, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        let child = TreeNode()
        node.object!["super"] = .node(child)
        return TreeEncoder(child, path: codingPath + [TreeKey.super])
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let child = TreeNode()
        set(.node(child), key)
        return TreeEncoder(child, path: codingPath + [key])
    }
}

struct UnkeyedEncoder: UnkeyedEncodingContainer {
    let node: TreeNode
    let codingPath: [any CodingKey]
    var count: Int { node.array?.count ?? 0 }

    private var nextPath: [any CodingKey] { codingPath + [TreeKey(intValue: count)] }
    private func append(_ slot: TreeNode.Slot) { node.array!.append(slot) }

    mutating func encodeNil() throws { append(.leaf(.null)) }
    mutating func encode(_ value: Bool) throws { append(.leaf(.bool(value))) }
    mutating func encode(_ value: String) throws { append(.leaf(.string(value))) }
    mutating func encode(_ value: Double) throws { append(.leaf(try TreeEncoder.double(value, nextPath))) }
    mutating func encode(_ value: Float) throws { append(.leaf(try TreeEncoder.double(Double(value), nextPath))) }
    mutating func encode(_ value: Int) throws { append(.leaf(.int(Int64(value)))) }
    mutating func encode(_ value: Int8) throws { append(.leaf(.int(Int64(value)))) }
    mutating func encode(_ value: Int16) throws { append(.leaf(.int(Int64(value)))) }
    mutating func encode(_ value: Int32) throws { append(.leaf(.int(Int64(value)))) }
    mutating func encode(_ value: Int64) throws { append(.leaf(.int(value))) }
    mutating func encode(_ value: UInt) throws { append(.leaf(try TreeEncoder.integer(value, nextPath))) }
    mutating func encode(_ value: UInt8) throws { append(.leaf(.int(Int64(value)))) }
    mutating func encode(_ value: UInt16) throws { append(.leaf(.int(Int64(value)))) }
    mutating func encode(_ value: UInt32) throws { append(.leaf(.int(Int64(value)))) }
    mutating func encode(_ value: UInt64) throws { append(.leaf(try TreeEncoder.integer(value, nextPath))) }
    mutating func encode<T: Encodable>(_ value: T) throws { append(try TreeEncoder.slot(value, path: nextPath)) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let child = TreeNode()
        child.becomeObject()
        let path = nextPath
        append(.node(child))
        return KeyedEncodingContainer(KeyedEncoder<NestedKey>(node: child, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let child = TreeNode()
        child.becomeArray()
        let path = nextPath
        append(.node(child))
        return UnkeyedEncoder(node: child, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let child = TreeNode()
        let path = nextPath
        append(.node(child))
        return TreeEncoder(child, path: path)
    }
}

struct SingleEncoder: SingleValueEncodingContainer {
    let node: TreeNode
    let codingPath: [any CodingKey]

    private func set(_ value: JSONValue) {
        node.leaf = value
        node.object = nil
        node.array = nil
    }

    mutating func encodeNil() throws { set(.null) }
    mutating func encode(_ value: Bool) throws { set(.bool(value)) }
    mutating func encode(_ value: String) throws { set(.string(value)) }
    mutating func encode(_ value: Double) throws { set(try TreeEncoder.double(value, codingPath)) }
    mutating func encode(_ value: Float) throws { set(try TreeEncoder.double(Double(value), codingPath)) }
    mutating func encode(_ value: Int) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { set(.int(value)) }
    mutating func encode(_ value: UInt) throws { set(try TreeEncoder.integer(value, codingPath)) }
    mutating func encode(_ value: UInt8) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { set(try TreeEncoder.integer(value, codingPath)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        switch try TreeEncoder.slot(value, path: codingPath) {
        case .leaf(let json): set(json)
        case .node(let child):
            node.leaf = child.leaf
            node.object = child.object
            node.array = child.array
        }
    }
}
