import Foundation

extension Record {
    /// The stored fields text `text` with its `NULLIFY` references to `targets` (by field name)
    /// cleared: a field holding such a single reference is dropped, a list loses such elements
    /// (an emptied list stays, empty). The other fields are copied as they are, byte for byte;
    /// only the fields touched are decoded and written again (in the stored form).
    ///
    /// - Throws: when `text` is not the JSON form of fields.
    package static func fieldsText(_ text: String, clearingNullifyReferencesTo targets: [String: Set<String>]) throws -> String {
        func cleared(_ value: FieldValue, _ names: Set<String>) -> Bool {
            if case .reference(let reference) = value { return reference.action == .nullify && names.contains(reference.recordName) }
            return false
        }
        var copy = text
        return try copy.withUTF8 { bytes -> String in
            var parser = JSONParser(bytes: bytes)
            var members: [String] = []
            var edited = false
            guard try parser.peekByte() == UInt8(ascii: "{") else { throw JSONDirectMiss() }
            parser.index += 1
            if try parser.peekByte() != UInt8(ascii: "}") {
                while true {
                    parser.skipWhitespace()
                    let start = parser.index
                    let key = try parser.string()
                    guard try parser.peekByte() == UInt8(ascii: ":") else { throw JSONDirectMiss() }
                    parser.index += 1
                    parser.skipWhitespace()
                    let valueStart = parser.index
                    try parser.skipValueStructurally()
                    let end = parser.index
                    let member = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
                    if let names = targets[key] {
                        let valueText = String(decoding: UnsafeBufferPointer(rebasing: bytes[valueStart..<end]), as: UTF8.self)
                        var value = try Record.fields(fromJSON: "{\"f\":\(valueText)}")["f"]
                        if let current = value, cleared(current, names) {
                            value = nil
                        } else if case .list(let scalar, let elements)? = value {
                            value = .list(scalar, elements.filter { !cleared($0, names) })
                        }
                        edited = true
                        if let value {
                            let written = try JSONValueEncoder().encodeFieldsText([key: value])
                            members.append(String(written.dropFirst().dropLast()))
                        }
                    } else {
                        members.append(member)
                    }
                    switch try parser.peekByte() {
                    case UInt8(ascii: ","): parser.index += 1
                    case UInt8(ascii: "}"): parser.index += 1
                        return edited ? "{" + members.joined(separator: ",") + "}" : text
                    default: throw JSONDirectMiss()
                    }
                }
            }
            return text
        }
    }
}
