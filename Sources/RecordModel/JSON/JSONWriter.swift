import Foundation

extension JSONValue {
    /// The value as compact JSON text (UTF-8), object keys sorted, so equal values always
    /// serialise to equal bytes.
    ///
    /// - Throws: `EncodingError.invalidValue` for a non-finite double, which JSON cannot hold.
    public func serialized() throws -> Data {
        var writer = JSONWriter()
        try writer.write(self)
        return Data(writer.bytes)
    }

    /// The value as compact JSON text, object keys sorted.
    public func serializedString() throws -> String {
        var writer = JSONWriter()
        try writer.write(self)
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}

/// Writes ``JSONValue``s as compact JSON.
struct JSONWriter {
    var bytes: [UInt8] = []
    /// Whether `INT64` and `DOUBLE` field values are written as strings (``WireForm/numbersAsStrings``
    /// when the writer was made).
    var numbersAsStrings: Bool
    /// How assets get their download links (``WireForm/assetLinks`` when the writer was made).
    var assetLinks: AssetLinks?

    /// A writer of an answer, with the options of the answer being written (``WireForm``).
    init() {
        bytes.reserveCapacity(256)
        numbersAsStrings = WireForm.numbersAsStrings
        assetLinks = WireForm.assetLinks
    }

    /// A writer of the stored form: no answer's options, whatever answer is being made.
    init(storing: Void) {
        bytes.reserveCapacity(256)
        numbersAsStrings = false
        assetLinks = nil
    }

    mutating func write(_ value: JSONValue) throws {
        switch value {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .int(let integer): writeInteger(Int64(integer))
        case .double(let double):
            guard double.isFinite else {
                throw EncodingError.invalidValue(double, .init(codingPath: [], debugDescription: "\(double) cannot be written as JSON"))
            }
            if double == double.rounded(.towardZero), abs(double) < 1e15 {
                // Whole numbers as integers with ".0" dropped would read back as INT64; keep a fraction.
                writeInteger(Int64(double))
                append(".0")
            } else {
                append(double.description)
            }
        case .string(let text): writeString(text)
        case .array(let elements):
            try array(elements) { try $0.write($1) }
        case .object(let members):
            try sortedObject(members) { try $0.write($1) }
        }
    }

    private mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// An integer's decimal digits, made on the stack (no `String` between).
    mutating func writeInteger(_ value: Int64) {
        var magnitude = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = 20
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude != 0
            if value < 0 { bytes.append(UInt8(ascii: "-")) }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    /// Whether UTF-8 `bytes` hold nothing a JSON string must escape (a control character, `"`
    /// or `\`), eight bytes at a time: a byte below 0x20, or equal to 0x22 or 0x5C, sets the
    /// high bit of its lane in the test (exact, since each lane's high bit is tested apart).
    static func needsNoEscaping(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        func zeroLanes(_ word: UInt64) -> UInt64 { (word &- ones) & ~word & highs }
        var index = 0
        let count = bytes.count
        while index + 8 <= count {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
            // (byte | 0x80) - 0x20 keeps its high bit for bytes from 0x20 up; a lane whose byte was
            // already ≥ 0x80 is not a control character, so its own high bit clears the test.
            let control = ~((word | highs) &- (ones &* 0x20)) & ~word & highs
            if control | zeroLanes(word ^ (ones &* 0x22)) | zeroLanes(word ^ (ones &* 0x5C)) != 0 { return false }
            index += 8
        }
        while index < count {
            let byte = base[index]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return false }
            index += 1
        }
        return true
    }

    mutating func writeString(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        // Most strings need no escaping: copy them whole.
        let plain = text.utf8.withContiguousStorageIfAvailable { utf8 in
            guard Self.needsNoEscaping(utf8) else { return false }
            bytes.append(contentsOf: utf8)
            return true
        }
        if plain == true {
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(0x5C); bytes.append(0x22)
            case UInt8(ascii: "\\"): bytes.append(0x5C); bytes.append(0x5C)
            case 0x0A: bytes.append(0x5C); bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(0x5C); bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(0x5C); bytes.append(UInt8(ascii: "t"))
            case 0x08: bytes.append(0x5C); bytes.append(UInt8(ascii: "b"))
            case 0x0C: bytes.append(0x5C); bytes.append(UInt8(ascii: "f"))
            case 0..<0x20:
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), Self.hex[Int(byte >> 4)], Self.hex[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
