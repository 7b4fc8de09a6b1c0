import Foundation

// One reader and one writer per wire type.
//
// The types every record passes through (records, fields, operations, answers and change
// pages: `Wire+Record.swift`, `Wire+Modify.swift`, `Wire+ChangePage.swift`) are read straight
// from the bytes and written straight to them, by hand, each type's reader beside its writer:
// Foundation's `JSONDecoder` was 41% of a save's CPU, and a tree of dictionaries in between
// cost a quarter of the client's time fetching changes. Their `Codable` conformances are built
// on the same pair (``JSONWire``), so `JSONEncoder`, `JSONDecoder` and the tree coders read and
// write exactly what the wire does. Every other wire type has one description, its `Codable`
// conformance, which ``JSONValueEncoder`` and ``JSONValueDecoder`` run over a ``JSONValue``.
//
// The readers take what the tree coders would (values without `type`, numbers as strings where
// a type allows it, keys in any order, unknown keys, a repeated key's last value) and refuse
// the rest with the `DecodingError`s `Codable` raises (kinds and coding paths), so `JSONBody`
// names the offending part the same way whichever reader ran.

/// A type that writes its own JSON (keys sorted, compact).
protocol JSONDirectWritable {
    func write(to writer: inout JSONWriter) throws
}

/// A type that reads itself from a parser positioned at its value.
///
/// Errors are `DecodingError`s whose coding paths are relative to the value read: each object
/// member and array element puts its key in front on the way out (``JSONParser/forEachMember(_:)``).
protocol JSONDirectDecodable {
    init(direct parser: inout JSONParser) throws
}

/// Text RecordSync wrote itself (stored fields) is not in the shape it writes.
struct JSONDirectMiss: Error {}

/// The `Codable` conformances of the types with a hand-written reader and writer, built on them.
enum JSONWire {
    /// Reads `T` from whatever decoder is decoding it: from a ``JSONValueDecoder`` tree as it
    /// is, from any other decoder through the ``JSONValue`` it gives; errors carry the
    /// decoder's coding path in front of the reader's.
    static func decode<T: JSONDirectDecodable>(_ type: T.Type, from decoder: any Decoder) throws -> T {
        try decode(type, from: try JSONValue(from: decoder), path: decoder.codingPath)
    }

    /// `T` read from the JSON text of `value`, errors under `path`.
    static func decode<T: JSONDirectDecodable>(_ type: T.Type, from value: JSONValue, path: [any CodingKey]) throws -> T {
        var writer = JSONWriter(storing: ())
        try writer.write(value)
        do {
            return try writer.bytes.withUnsafeBufferPointer { try JSONParser.decodeDirectly(type, from: $0) }
        } catch let error as DecodingError {
            throw error.under(path)
        }
    }

    /// Writes `value` to whatever encoder is encoding it, as the ``JSONValue`` of its JSON text.
    static func encode<T: JSONDirectWritable>(_ value: T, to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(try tree(of: value))
    }

    /// `value`'s JSON as a tree (written with the options of the answer being written).
    static func tree<T: JSONDirectWritable>(of value: T) throws -> JSONValue {
        var writer = JSONWriter()
        try value.write(to: &writer)
        return try writer.bytes.withUnsafeBufferPointer { try JSONValue.parse($0) }
    }

    /// Reads a whole text as `T`: leading byte order mark and whitespace, one value, nothing
    /// after. Text that is not JSON is refused as not JSON, whatever else is wrong with it
    /// (as decoding a parsed tree would: the parse comes first).
    ///
    /// - Throws: `DecodingError.dataCorrupted` with an empty coding path (the ``JSONParseError``
    ///   underneath) for text that is not JSON, else the reader's `DecodingError`.
    static func decode<T: JSONDirectDecodable>(_ type: T.Type, from bytes: UnsafeBufferPointer<UInt8>) throws -> T {
        do {
            return try JSONParser.decodeDirectly(type, from: bytes)
        } catch let error as DecodingError {
            do { _ = try JSONValue.parse(bytes) } catch let parse as JSONParseError { throw notJSON(parse) }
            throw error
        } catch let parse as JSONParseError {
            // The reader met bad text where the parser would have too: the parser says where.
            do { _ = try JSONValue.parse(bytes) } catch let first as JSONParseError { throw notJSON(first) }
            throw notJSON(parse)
        }
    }

    static func notJSON(_ error: JSONParseError) -> DecodingError {
        .dataCorrupted(.init(codingPath: [], debugDescription: "The given data was not valid JSON: \(error)", underlyingError: error))
    }
}

extension DecodingError {
    /// The error with `path` in front of its coding path.
    func under(_ path: [any CodingKey]) -> DecodingError {
        guard !path.isEmpty else { return self }
        func moved(_ context: Context) -> Context {
            Context(codingPath: path + context.codingPath, debugDescription: context.debugDescription, underlyingError: context.underlyingError)
        }
        switch self {
        case .typeMismatch(let type, let context): return .typeMismatch(type, moved(context))
        case .valueNotFound(let type, let context): return .valueNotFound(type, moved(context))
        case .keyNotFound(let key, let context): return .keyNotFound(key, moved(context))
        case .dataCorrupted(let context): return .dataCorrupted(moved(context))
        @unknown default: return self
        }
    }

    /// `Codable`'s error for a missing key of the object being read.
    static func missing(_ key: String) -> DecodingError {
        .keyNotFound(TreeKey(stringValue: key), .init(codingPath: [], debugDescription: "No value associated with key \(key)."))
    }

    /// `Codable`'s error for a null where a `type` is required, at member `key`.
    static func null(_ type: Any.Type, at key: String) -> DecodingError {
        TreeDecoder.notFound(type, [TreeKey(stringValue: key)])
    }
}

// MARK: - Reading

extension JSONParser {
    /// Decodes a whole text as `T` directly: leading BOM and whitespace, one value, nothing
    /// after. ``JSONWire/decode(_:from:)-(_,UnsafeBufferPointer<UInt8>)`` is the entry point.
    static func decodeDirectly<T: JSONDirectDecodable>(_ type: T.Type, from bytes: UnsafeBufferPointer<UInt8>) throws -> T {
        var parser = JSONParser(bytes: bytes)
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { parser.index = 3 }
        parser.skipWhitespace()
        let value = try T(direct: &parser)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected text after the JSON value") }
        return value
    }

    /// The next byte after whitespace.
    mutating func peekByte() throws -> UInt8 {
        skipWhitespace()
        guard index < bytes.count else { throw error("unexpected end of the text") }
        return bytes[index]
    }

    /// The next value, whatever it is, as a tree.
    mutating func anyValue() throws -> JSONValue {
        skipWhitespace()
        return try value()
    }

    /// Reads an object, calling `body` with each key; `body` reads the member's value.
    ///
    /// Not an object: `Codable`'s errors for a keyed container. A member `body` refuses is
    /// stepped over and its error kept, with the key in front of its path: a later member of
    /// the same name replaces it (a repeated key's last value counts, as in a parsed tree), and
    /// the first error left is thrown when the object ends.
    mutating func forEachMember(_ body: (inout JSONParser, String) throws -> Void) throws {
        switch try peekByte() {
        case UInt8(ascii: "{"): break
        case UInt8(ascii: "n"):
            try literal("null")
            throw DecodingError.valueNotFound([String: Any].self, .init(codingPath: [], debugDescription: "Cannot get keyed decoding container -- found null value instead"))
        default:
            throw TreeDecoder.mismatch([String: Any].self, try value(), [])
        }
        try enter()
        defer { depth -= 1 }
        index += 1
        if try peekByte() == UInt8(ascii: "}") {
            index += 1
            return
        }
        var refused: [(key: String, error: DecodingError)] = []
        while true {
            guard try peekByte() == UInt8(ascii: "\"") else { throw error("expected a string key in an object") }
            let key = try string()
            guard try peekByte() == UInt8(ascii: ":") else { throw error("expected ':' after an object key") }
            index += 1
            skipWhitespace()
            let start = index
            do {
                try body(&self, key)
                if !refused.isEmpty { refused.removeAll { $0.key == key } }
            } catch let failure as DecodingError {
                index = start
                _ = try value()
                refused.removeAll { $0.key == key }
                refused.append((key, failure.under([TreeKey(stringValue: key)])))
            }
            switch try peekByte() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                if let first = refused.first { throw first.error }
                return
            default: throw error("expected ',' or '}' in an object")
            }
        }
    }

    /// Reads an array, calling `body` to read each element. Not an array: `Codable`'s errors
    /// for an unkeyed container; an element's error gets its position in front of its path.
    mutating func forEachElement(_ body: (inout JSONParser) throws -> Void) throws {
        switch try peekByte() {
        case UInt8(ascii: "["): break
        case UInt8(ascii: "n"):
            try literal("null")
            throw DecodingError.valueNotFound([Any].self, .init(codingPath: [], debugDescription: "Cannot get unkeyed decoding container -- found null value instead"))
        default:
            throw TreeDecoder.mismatch([Any].self, try value(), [])
        }
        try enter()
        defer { depth -= 1 }
        index += 1
        if try peekByte() == UInt8(ascii: "]") {
            index += 1
            return
        }
        var position = 0
        while true {
            skipWhitespace()
            do {
                try body(&self)
            } catch let failure as DecodingError {
                throw failure.under([TreeKey(intValue: position)])
            }
            position += 1
            switch try peekByte() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return
            default: throw error("expected ',' or ']' in an array")
            }
        }
    }

    /// `true` (and consumed) when the next value is `null`.
    mutating func takeNull() throws -> Bool {
        guard try peekByte() == UInt8(ascii: "n") else { return false }
        try literal("null")
        return true
    }

    /// A string (`Codable`'s errors for anything else, null included).
    mutating func directString() throws -> String {
        if try peekByte() == UInt8(ascii: "\"") { return try string() }
        return try TreeDecoder.string(try value(), [])
    }

    /// A string, or `nil` for null.
    mutating func directOptionalString() throws -> String? {
        try takeNull() ? nil : try directString()
    }

    mutating func directBool() throws -> Bool {
        switch try peekByte() {
        case UInt8(ascii: "t"): try literal("true"); return true
        case UInt8(ascii: "f"): try literal("false"); return false
        default: return try TreeDecoder.bool(try value(), [])
        }
    }

    /// A boolean, or `nil` for null.
    mutating func directOptionalBool() throws -> Bool? {
        try takeNull() ? nil : try directBool()
    }

    /// An integer (a number with a fraction only when it is whole, as `Codable` takes it).
    mutating func directInt64() throws -> Int64 {
        _ = try peekByte()
        return try TreeDecoder.integer(try value(), Int64.self, [])
    }

    mutating func directStrings() throws -> [String] {
        var strings: [String] = []
        try forEachElement { strings.append(try $0.directString()) }
        return strings
    }

    mutating func directOptionalStrings() throws -> [String]? {
        try takeNull() ? nil : try directStrings()
    }

    mutating func directArray<T: JSONDirectDecodable>(of type: T.Type) throws -> [T] {
        var elements: [T] = []
        try forEachElement { elements.append(try T(direct: &$0)) }
        return elements
    }

    /// An object of values by name (the `fields` of a record); a repeated name keeps its last value.
    mutating func directDictionary<T: JSONDirectDecodable>(of type: T.Type) throws -> [String: T] {
        var values: [String: T] = [:]
        values.reserveCapacity(8)
        try forEachMember { parser, name in values[name] = try T(direct: &parser) }
        return values
    }

    /// A field's `type` member: a known type name, or null.
    mutating func directFieldType() throws -> FieldType? {
        guard let name = try directOptionalString() else { return nil }
        guard let known = FieldType(rawValue: name) else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "unknown field type \(NameRules.quoted(name))"))
        }
        return known
    }

    /// A field's `recordSyncType` member: a type RecordSync knows, or `nil` (anything else: a
    /// name this version does not know, when the field is read by its `type`).
    mutating func directExtensionType() throws -> FieldType? {
        guard case .string(let name) = try anyValue() else { return nil }
        return FieldType(rawValue: name)
    }

    /// Reads and discards a value (a member the type does not know).
    mutating func skipValue() throws {
        _ = try anyValue()
    }
}

// MARK: - Writing

extension JSONWriter {
    /// Writes `,` unless this is the first member, then `"key":`.
    mutating func key(_ key: StaticString, first: inout Bool) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func open() { bytes.append(UInt8(ascii: "{")) }
    mutating func close() { bytes.append(UInt8(ascii: "}")) }

    mutating func writeBool(_ flag: Bool) { bytes.append(contentsOf: (flag ? "true" : "false").utf8) }

    mutating func array<C: Collection>(_ elements: C, _ each: (inout JSONWriter, C.Element) throws -> Void) rethrows {
        bytes.append(UInt8(ascii: "["))
        var first = true
        for element in elements {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            try each(&self, element)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// An object of `values` by name, names sorted.
    mutating func sortedObject<V>(_ values: [String: V], _ each: (inout JSONWriter, V) throws -> Void) rethrows {
        bytes.append(UInt8(ascii: "{"))
        var first = true
        for (name, value) in values.sorted(by: { $0.key < $1.key }) {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            writeString(name)
            bytes.append(UInt8(ascii: ":"))
            try each(&self, value)
        }
        bytes.append(UInt8(ascii: "}"))
    }
}
