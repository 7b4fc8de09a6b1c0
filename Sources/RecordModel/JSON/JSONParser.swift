import Foundation

/// Why a text is not JSON, and where.
public struct JSONParseError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, e.g. "expected ':' after an object key".
    public var message: String
    /// The byte offset where the problem was found.
    public var offset: Int

    public var description: String { "\(message) (at byte \(offset))" }
}

extension JSONValue {
    /// How deeply arrays and objects may nest. Deeper input is refused rather than risking the
    /// stack of the thread that parses it.
    public static let maximumNestingDepth = 256

    /// Parses JSON text (UTF-8) into a value.
    ///
    /// Integers that fit in `Int64` (no fraction, no exponent) become `.int`; every other number
    /// becomes `.double`, and a number too large for a `Double` is an error. Duplicate object
    /// keys keep the last value, as `JSONDecoder` does.
    ///
    /// - Throws: ``JSONParseError``.
    public static func parse(_ data: Data) throws -> JSONValue {
        try data.withUnsafeBytes { raw in
            try parse(UnsafeBufferPointer(start: raw.baseAddress?.assumingMemoryBound(to: UInt8.self), count: raw.count))
        }
    }

    /// Parses JSON text (UTF-8) into a value.
    public static func parse(_ text: String) throws -> JSONValue {
        var text = text
        return try text.withUTF8 { try parse($0) }
    }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        // A UTF-8 byte order mark is allowed (JSONDecoder accepts it too).
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { parser.index = 3 }
        parser.skipWhitespace()
        let value = try parser.value()
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected text after the JSON value") }
        return value
    }
}

/// A recursive-descent JSON parser over UTF-8 bytes.
struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var depth = 0
    /// The members of the objects being parsed, innermost last.
    var members: [Member] = []

    struct Member {
        var key: String
        var value: JSONValue
    }

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    func error(_ message: String) -> JSONParseError {
        JSONParseError(message: message, offset: index)
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    mutating func value() throws -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end of the text") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("unexpected character '\(Unicode.Scalar(bytes[index]))'")
        }
    }

    mutating func literal(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("unexpected end of the text") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw error("unexpected character '\(Unicode.Scalar(bytes[index + offset]))'")
        }
        index += count
    }

    mutating func enter() throws {
        depth += 1
        guard depth <= JSONValue.maximumNestingDepth else {
            throw error("arrays and objects nest more than \(JSONValue.maximumNestingDepth) deep")
        }
    }

    private mutating func object() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object([:])
        }
        // The members wait on a stack shared by every object being parsed, so the dictionary is
        // made once at its final size (growing it member by member rehashed every key each time
        // it doubled).
        let base = members.count
        defer { members.removeLast(members.count - base) }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a string key in an object") }
            let key = try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':' after an object key") }
            index += 1
            skipWhitespace()
            let value = try value()
            members.append(Member(key: key, value: value))
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of the text in an object") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                var object = [String: JSONValue](minimumCapacity: members.count - base)
                // A repeated key keeps its last value.
                for member in members[base...] { object[member.key] = member.value }
                return .object(object)
            default: throw error("expected ',' or '}' in an object")
            }
        }
    }

    private mutating func array() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value())
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of the text in an array") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return .array(elements)
            default: throw error("expected ',' or ']' in an array")
            }
        }
    }

    mutating func string() throws -> String {
        index += 1  // the opening quote
        let start = index
        var ascii = true
        // Fast path: no escapes (and, for ASCII text, no UTF-8 to validate).
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = ascii ? String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                    : try validated(bytes, start..<index)
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("a control character in a string must be escaped") }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        var buffer = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return try buffer.withUnsafeBufferPointer { try validated($0, 0..<$0.count) }
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error("unexpected end of the text in a string") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): buffer.append(0x22)
                case UInt8(ascii: "\\"): buffer.append(0x5C)
                case UInt8(ascii: "/"): buffer.append(0x2F)
                case UInt8(ascii: "b"): buffer.append(0x08)
                case UInt8(ascii: "f"): buffer.append(0x0C)
                case UInt8(ascii: "n"): buffer.append(0x0A)
                case UInt8(ascii: "r"): buffer.append(0x0D)
                case UInt8(ascii: "t"): buffer.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                            throw error("a high surrogate must be followed by a low one")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("a high surrogate must be followed by a low one") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw error("a lone low surrogate")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw error("an invalid \\u escape") }
                    buffer.append(contentsOf: Array(String(Character(unicode)).utf8))
                default:
                    throw error("an invalid escape '\\\(Unicode.Scalar(escape))'")
                }
            default:
                if byte < 0x20 { throw error("a control character in a string must be escaped") }
                buffer.append(byte)
                index += 1
            }
        }
        throw error("unexpected end of the text in a string")
    }

    /// The text of `range` of `buffer`, which must be valid UTF-8.
    private func validated(_ buffer: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) throws -> String {
        let slice = UnsafeBufferPointer(rebasing: buffer[range])
        guard Self.isValidUTF8(slice) else { throw error("a string is not valid UTF-8") }
        return String(decoding: slice, as: UTF8.self)
    }

    /// Whether `bytes` are well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF).
    static func isValidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        let count = bytes.count
        while i < count {
            let lead = bytes[i]
            if lead < 0x80 { i += 1; continue }
            let length: Int
            var lower: UInt8 = 0x80, upper: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; lower = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; upper = 0x9F
            case 0xF0: length = 4; lower = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; upper = 0x8F
            default: return false
            }
            guard i + length <= count else { return false }
            guard (lower...upper).contains(bytes[i + 1]) else { return false }
            for k in 2..<max(2, length) where !(0x80...0xBF).contains(bytes[i + k]) { return false }
            i += length
        }
        return true
    }

    private mutating func hex4() throws -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("unexpected end of the text in a \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("an invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    mutating func number() throws -> JSONValue {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { throw error("a number needs digits") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { throw error("a number may not have leading zeros") }
        } else {
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { throw error("a number needs digits after '.'") }
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { throw error("a number needs digits in its exponent") }
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        }
        if isInteger, index - start <= 18 {
            // At most 18 digits: always an Int64, read without making a string.
            var magnitude: Int64 = 0
            var digit = bytes[start] == UInt8(ascii: "-") ? start + 1 : start
            while digit < index { magnitude = magnitude * 10 + Int64(bytes[digit] &- UInt8(ascii: "0")); digit += 1 }
            return .int(bytes[start] == UInt8(ascii: "-") ? -magnitude : magnitude)
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if isInteger, let integer = Int64(text) { return .int(integer) }
        guard let double = Double(text), double.isFinite else {
            index = start
            throw error("the number \(text) is out of range")
        }
        return .double(double)
    }
}
