import Foundation

/// Decodes `Decodable` types from a parsed ``JSONValue``, raising the same `DecodingError`s
/// (kinds and coding paths) as Foundation's `JSONDecoder`.
///
/// Together with ``JSONValue/parse(_:)-(Data)`` this is how RecordSync reads its wire and storage JSON:
/// a ``JSONValue`` (every field value holds one) is taken from the tree as it is, where
/// `JSONDecoder` can only find a value's kind by trying each kind in turn and catching the
/// errors, which made decoding records several times slower than the rest of a request.
public struct JSONValueDecoder: Sendable {
    public init() {}

    /// Decodes `type` from `value`.
    public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try TreeDecoder.unbox(value, as: type, path: [])
    }

    /// Parses `data` and decodes `type` from it.
    ///
    /// - Throws: `DecodingError.dataCorrupted` with an empty coding path when `data` is not
    ///   JSON (its underlying error is the ``JSONParseError``), else what decoding throws.
    ///
    /// The types with a hand-written reader (records, change pages, modify requests and
    /// answers: `JSONDirect.swift`) are read straight from the bytes, with the same errors.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        if let direct = type as? any JSONDirectDecodable.Type {
            return try data.withUnsafeBytes { raw in
                try JSONWire.decode(direct, from: UnsafeBufferPointer(start: raw.baseAddress?.assumingMemoryBound(to: UInt8.self), count: raw.count))
            } as! T
        }
        return try decodeThroughTree(type, from: data)
    }

    /// Parses `data` into a ``JSONValue`` tree and decodes `type` from that.
    func decodeThroughTree<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        let value: JSONValue
        do {
            value = try JSONValue.parse(data)
        } catch let error as JSONParseError {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "The given data was not valid JSON: \(error)", underlyingError: error))
        }
        return try decode(type, from: value)
    }
}

/// A coding key for array positions and `superDecoder`.
struct TreeKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) { self.stringValue = "Index \(intValue)"; self.intValue = intValue }
    static let `super` = TreeKey(stringValue: "super")
}

final class TreeDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(_ value: JSONValue, path: [any CodingKey]) {
        self.value = value
        self.codingPath = path
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        switch value {
        case .object(let members): return KeyedDecodingContainer(KeyedContainer<Key>(members: members, codingPath: codingPath))
        case .null: throw DecodingError.valueNotFound([String: Any].self, .init(codingPath: codingPath, debugDescription: "Cannot get keyed decoding container -- found null value instead"))
        default: throw Self.mismatch([String: Any].self, value, codingPath)
        }
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        switch value {
        case .array(let elements): return UnkeyedContainer(elements: elements, codingPath: codingPath)
        case .null: throw DecodingError.valueNotFound([Any].self, .init(codingPath: codingPath, debugDescription: "Cannot get unkeyed decoding container -- found null value instead"))
        default: throw Self.mismatch([Any].self, value, codingPath)
        }
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(value: value, codingPath: codingPath)
    }

    static func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
        .typeMismatch(type, .init(codingPath: path, debugDescription: "Expected to decode \(type) but found \(value.kindDescription) instead."))
    }

    /// `value` as a `T`: primitives directly, ``JSONValue`` as it is, anything else through
    /// its `init(from:)`.
    static func unbox<T: Decodable>(_ value: JSONValue, as type: T.Type, path: [any CodingKey]) throws -> T {
        if type == JSONValue.self { return value as! T }
        if type == String.self { return try string(value, path) as! T }
        if type == Bool.self { return try bool(value, path) as! T }
        if type == Int.self { return try integer(value, Int.self, path) as! T }
        if type == Int64.self { return try integer(value, Int64.self, path) as! T }
        if type == Double.self { return try double(value, path) as! T }
        if let direct = type as? any JSONDirectDecodable.Type { return try JSONWire.decode(direct, from: value, path: path) as! T }
        return try T(from: TreeDecoder(value, path: path))
    }

    static func notFound(_ type: Any.Type, _ path: [any CodingKey]) -> DecodingError {
        .valueNotFound(type, .init(codingPath: path, debugDescription: "Expected \(type) value but found null instead."))
    }

    static func string(_ value: JSONValue, _ path: [any CodingKey]) throws -> String {
        switch value {
        case .string(let text): return text
        case .null: throw notFound(String.self, path)
        default: throw mismatch(String.self, value, path)
        }
    }

    static func bool(_ value: JSONValue, _ path: [any CodingKey]) throws -> Bool {
        switch value {
        case .bool(let flag): return flag
        case .null: throw notFound(Bool.self, path)
        default: throw mismatch(Bool.self, value, path)
        }
    }

    static func double(_ value: JSONValue, _ path: [any CodingKey]) throws -> Double {
        switch value {
        case .double(let number): return number
        case .int(let number): return Double(number)
        case .null: throw notFound(Double.self, path)
        default: throw mismatch(Double.self, value, path)
        }
    }

    static func integer<I: FixedWidthInteger>(_ value: JSONValue, _ type: I.Type, _ path: [any CodingKey]) throws -> I {
        switch value {
        case .int(let number):
            guard let result = I(exactly: number) else {
                throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "Number \(number) does not fit in \(I.self)."))
            }
            return result
        case .double(let number):
            guard let result = I(exactly: number) else {
                throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "Number \(number) is not representable as \(I.self)."))
            }
            return result
        case .null: throw notFound(I.self, path)
        default: throw mismatch(I.self, value, path)
        }
    }
}

struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func member(_ key: Key) throws -> JSONValue {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "No value associated with key \(key.stringValue)."))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key) == .null }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try TreeDecoder.unbox(try member(key), as: type, path: codingPath + [key])
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let value = members[key.stringValue], value != .null else { return nil }
        return try TreeDecoder.unbox(value, as: type, path: codingPath + [key])
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try TreeDecoder.bool(member(key), codingPath + [key]) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try TreeDecoder.string(member(key), codingPath + [key]) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try TreeDecoder.double(member(key), codingPath + [key]) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { Float(try TreeDecoder.double(member(key), codingPath + [key])) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try TreeDecoder.integer(member(key), type, codingPath + [key]) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try TreeDecoder.integer(member(key), type, codingPath + [key]) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try TreeDecoder.integer(member(key), type, codingPath + [key]) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try TreeDecoder.integer(member(key), type, codingPath + [key]) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try TreeDecoder.integer(member(key), type, codingPath + [key]) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try TreeDecoder.integer(member(key), type, codingPath + [key]) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try TreeDecoder.integer(member(key), type, codingPath + [key]) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try TreeDecoder.integer(member(key), type, codingPath + [key]) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try TreeDecoder.integer(member(key), type, codingPath + [key]) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try TreeDecoder.integer(member(key), type, codingPath + [key]) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try TreeDecoder(member(key), path: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try TreeDecoder(member(key), path: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        TreeDecoder(members["super"] ?? .null, path: codingPath + [TreeKey.super])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        TreeDecoder(members[key.stringValue] ?? .null, path: codingPath + [key])
    }
}

struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(elements: [JSONValue], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private mutating func next(_ type: Any.Type) throws -> (JSONValue, [any CodingKey]) {
        let path = codingPath + [TreeKey(intValue: currentIndex)]
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: path, debugDescription: "Unkeyed container is at end."))
        }
        defer { currentIndex += 1 }
        return (elements[currentIndex], path)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any?.self, .init(codingPath: codingPath + [TreeKey(intValue: currentIndex)], debugDescription: "Unkeyed container is at end."))
        }
        if elements[currentIndex] == .null {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (value, path) = try next(type)
        return try TreeDecoder.unbox(value, as: type, path: path)
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { let (v, p) = try next(type); return try TreeDecoder.bool(v, p) }
    mutating func decode(_ type: String.Type) throws -> String { let (v, p) = try next(type); return try TreeDecoder.string(v, p) }
    mutating func decode(_ type: Double.Type) throws -> Double { let (v, p) = try next(type); return try TreeDecoder.double(v, p) }
    mutating func decode(_ type: Float.Type) throws -> Float { let (v, p) = try next(type); return Float(try TreeDecoder.double(v, p)) }
    mutating func decode(_ type: Int.Type) throws -> Int { let (v, p) = try next(type); return try TreeDecoder.integer(v, type, p) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { let (v, p) = try next(type); return try TreeDecoder.integer(v, type, p) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { let (v, p) = try next(type); return try TreeDecoder.integer(v, type, p) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { let (v, p) = try next(type); return try TreeDecoder.integer(v, type, p) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { let (v, p) = try next(type); return try TreeDecoder.integer(v, type, p) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { let (v, p) = try next(type); return try TreeDecoder.integer(v, type, p) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { let (v, p) = try next(type); return try TreeDecoder.integer(v, type, p) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { let (v, p) = try next(type); return try TreeDecoder.integer(v, type, p) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { let (v, p) = try next(type); return try TreeDecoder.integer(v, type, p) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { let (v, p) = try next(type); return try TreeDecoder.integer(v, type, p) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let (value, path) = try next([String: Any].self)
        return try TreeDecoder(value, path: path).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (value, path) = try next([Any].self)
        return try TreeDecoder(value, path: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (value, path) = try next(Any.self)
        return TreeDecoder(value, path: path)
    }
}

struct SingleValueContainer: SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { value == .null }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try TreeDecoder.unbox(value, as: type, path: codingPath) }
    func decode(_ type: Bool.Type) throws -> Bool { try TreeDecoder.bool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try TreeDecoder.string(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try TreeDecoder.double(value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { Float(try TreeDecoder.double(value, codingPath)) }
    func decode(_ type: Int.Type) throws -> Int { try TreeDecoder.integer(value, type, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try TreeDecoder.integer(value, type, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try TreeDecoder.integer(value, type, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try TreeDecoder.integer(value, type, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try TreeDecoder.integer(value, type, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try TreeDecoder.integer(value, type, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try TreeDecoder.integer(value, type, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try TreeDecoder.integer(value, type, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try TreeDecoder.integer(value, type, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try TreeDecoder.integer(value, type, codingPath) }
}
