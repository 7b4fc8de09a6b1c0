import Foundation

// Decoding the hot wire types straight from the bytes, without building a `JSONValue` tree of
// dictionaries first: the request of `records/modify` on the server, the answers of
// `records/modify`, `records/lookup` and `records/changes` on the client, and stored fields.
// Parsing into the tree and decoding from it was about a quarter of the client's CPU when it
// fetches changes, and as much of the server's when it takes in saves.
//
// This path only ever *accepts* what it fully understands. Anything else (a missing or null
// required member, a number where a string belongs, a key with an escape, an error result, text
// that is not JSON) makes it give up, and ``JSONValueDecoder`` decodes the same bytes through the
// tree, which gives the value or the `DecodingError` it always gave. So errors are exactly the
// tree's, and `JSONTests` checks that for accepted input both paths give equal values.

/// A type that decodes itself straight from a parser positioned at its value.
protocol JSONDirectDecodable {
    init(direct parser: inout JSONParser) throws
}

/// The direct path does not handle this input; decode it through the tree.
struct JSONDirectMiss: Error {}

extension JSONParser {
    /// Decodes a whole text as `T` directly: leading BOM and whitespace, one value, nothing after.
    static func decodeDirectly<T: JSONDirectDecodable>(_ type: T.Type, from bytes: UnsafeBufferPointer<UInt8>) throws -> T {
        var parser = JSONParser(bytes: bytes)
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { parser.index = 3 }
        let value = try T(direct: &parser)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw JSONDirectMiss() }
        return value
    }

    /// The next byte after whitespace.
    mutating func peekByte() throws -> UInt8 {
        skipWhitespace()
        guard index < bytes.count else { throw JSONDirectMiss() }
        return bytes[index]
    }

    /// Reads an object, calling `body` with each key; `body` reads the member's value.
    mutating func forEachMember(_ body: (inout JSONParser, String) throws -> Void) throws {
        guard try peekByte() == UInt8(ascii: "{") else { throw JSONDirectMiss() }
        try enter()
        defer { depth -= 1 }
        index += 1
        if try peekByte() == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            guard try peekByte() == UInt8(ascii: "\"") else { throw JSONDirectMiss() }
            let key = try string()
            guard try peekByte() == UInt8(ascii: ":") else { throw JSONDirectMiss() }
            index += 1
            try body(&self, key)
            switch try peekByte() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return
            default: throw JSONDirectMiss()
            }
        }
    }

    /// Reads an array, calling `body` to read each element.
    mutating func forEachElement(_ body: (inout JSONParser) throws -> Void) throws {
        guard try peekByte() == UInt8(ascii: "[") else { throw JSONDirectMiss() }
        try enter()
        defer { depth -= 1 }
        index += 1
        if try peekByte() == UInt8(ascii: "]") {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            try body(&self)
            switch try peekByte() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return
            default: throw JSONDirectMiss()
            }
        }
    }

    /// `true` (and consumed) when the next value is `null`.
    mutating func takeNull() throws -> Bool {
        guard try peekByte() == UInt8(ascii: "n") else { return false }
        try literal("null")
        return true
    }

    mutating func directString() throws -> String {
        guard try peekByte() == UInt8(ascii: "\"") else { throw JSONDirectMiss() }
        return try string()
    }

    mutating func directOptionalString() throws -> String? {
        try takeNull() ? nil : try directString()
    }

    mutating func directBool() throws -> Bool {
        switch try peekByte() {
        case UInt8(ascii: "t"): try literal("true"); return true
        case UInt8(ascii: "f"): try literal("false"); return false
        default: throw JSONDirectMiss()
        }
    }

    mutating func directInt64() throws -> Int64 {
        switch try peekByte() {
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            guard case .int(let integer) = try number() else { throw JSONDirectMiss() }
            return integer
        default: throw JSONDirectMiss()
        }
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
        guard let known = FieldType(rawValue: name) else { throw JSONDirectMiss() }
        return known
    }

    /// A field's `recordSyncType` member: a type RecordSync knows, or `nil` (null, or a name
    /// this version does not know, when the field is read by its `type`).
    mutating func directExtensionType() throws -> FieldType? {
        guard let name = try directOptionalString() else { return nil }
        return FieldType(rawValue: name)
    }

    /// Reads and discards a value (a member the type does not know).
    mutating func skipValue() throws {
        skipWhitespace()
        _ = try value()
    }
}

extension ZoneID: JSONDirectDecodable {
    init(direct parser: inout JSONParser) throws {
        var zoneName: String?, owner: String?
        try parser.forEachMember { parser, key in
            switch key {
            case "zoneName": zoneName = try parser.directString()
            case "ownerRecordName": owner = try parser.directOptionalString()
            default: try parser.skipValue()
            }
        }
        guard let zoneName else { throw JSONDirectMiss() }
        self.init(zoneName: zoneName, ownerRecordName: owner)
    }
}

extension Stamp: JSONDirectDecodable {
    init(direct parser: inout JSONParser) throws {
        var timestamp: Int64?, user: String?, device: String?
        try parser.forEachMember { parser, key in
            switch key {
            case "timestamp": timestamp = try parser.directInt64()
            case "userRecordName": user = try parser.directString()
            case "deviceID": device = try parser.directOptionalString()
            default: try parser.skipValue()
            }
        }
        guard let timestamp, let user else { throw JSONDirectMiss() }
        self.init(timestamp: timestamp, userRecordName: user, deviceID: device)
    }
}

extension RawFieldValue: JSONDirectDecodable {
    init(direct parser: inout JSONParser) throws {
        var value = JSONValue.null, type: FieldType?, extensionType: FieldType?
        try parser.forEachMember { parser, key in
            switch key {
            case "value": parser.skipWhitespace(); value = try parser.value()
            case "type": type = try parser.directFieldType()
            case "recordSyncType": extensionType = try parser.directExtensionType()
            default: try parser.skipValue()
            }
        }
        self.init(value: value, type: WireForm.type(type: type, extensionType: extensionType))
    }
}

extension FieldValue: JSONDirectDecodable {
    /// Reads `{"value": …, "type": …}` (in either order). The common values (a string, a
    /// number, a boolean, a reference) are read straight into the field value they make with
    /// their type; any other value, or a value its type does not take as it is, is read as a
    /// JSON tree and given to ``init(json:type:)``, as the tree path would.
    init(direct parser: inout JSONParser) throws {
        /// A value read before its type is known.
        enum Read {
            case string(String), int(Int64), double(Double), bool(Bool), reference(Reference)
            case other(JSONValue)
        }
        var read = Read.other(.null), type: FieldType?, extensionType: FieldType?
        var referenceText: JSONParser?  // at a value read as a reference, for the tree
        try parser.forEachMember { parser, key in
            switch key {
            case "value":
                switch try parser.peekByte() {
                case UInt8(ascii: "\""): read = .string(try parser.string())
                case UInt8(ascii: "t"), UInt8(ascii: "f"): read = .bool(try parser.directBool())
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    switch try parser.number() {
                    case .int(let integer): read = .int(integer)
                    case .double(let double): read = .double(double)
                    default: throw JSONDirectMiss()
                    }
                case UInt8(ascii: "{"):
                    var attempt = parser
                    if let reference = try? Reference(directValue: &attempt) {
                        referenceText = parser
                        parser = attempt
                        read = .reference(reference)
                    } else {
                        read = .other(try parser.value())
                    }
                default: read = .other(try parser.value())
                }
            case "type": type = try parser.directFieldType()
            case "recordSyncType": extensionType = try parser.directExtensionType()
            default: try parser.skipValue()
            }
        }
        type = WireForm.type(type: type, extensionType: extensionType)
        // The scalar type the value is read as: the given one, or without one, the type
        // ``FieldValue/inferredType(of:)`` gives these values; nil for a list or another value.
        let scalar: ScalarType?
        if let type {
            scalar = type.isList ? nil : type.scalar
        } else {
            switch read {
            case .string: scalar = .string
            case .int: scalar = .int64
            case .double: scalar = .double
            case .bool: scalar = .boolean
            case .reference: scalar = .reference
            case .other: scalar = nil
            }
        }
        switch (read, scalar) {
        case (.string(let value), .string?): self = .string(value)
        case (.int(let value), .int64?): self = .int64(value)
        case (.int(let value), .timestamp?): self = .timestamp(value)
        case (.int(let value), .double?): self = .double(Double(value))
        case (.double(let value), .double?): self = .double(value)
        case (.bool(let value), .boolean?): self = .boolean(value)
        case (.int(let value), .boolean?) where value == 0 || value == 1: self = .boolean(value == 1)
        case (.reference(let reference), .reference?):
            guard NameRules.problem(withName: reference.recordName, kind: "referenced recordName") == nil else { throw JSONDirectMiss() }
            self = .reference(reference)
        default:
            let json: JSONValue
            switch read {
            case .string(let value): json = .string(value)
            case .int(let value): json = .int(value)
            case .double(let value): json = .double(value)
            case .bool(let value): json = .bool(value)
            case .reference:
                guard var text = referenceText else { throw JSONDirectMiss() }
                json = try text.value()
            case .other(let value): json = value
            }
            guard let value = try? FieldValue(json: json, type: type, numbersMayBeStrings: type != nil) else { throw JSONDirectMiss() }
            self = value
        }
    }
}

extension Reference {
    /// A reference value in its plain form: `recordName` a string, `action` a known action or
    /// null, `zoneID` an object or null, no other member. Anything else is for the tree.
    init(directValue parser: inout JSONParser) throws {
        var name: String?, wire: String?, finer: String?, zoneID: ZoneID?
        try parser.forEachMember { parser, key in
            switch key {
            case "recordName": name = try parser.directString()
            case "action": wire = try parser.directOptionalString()
            case WireForm.actionExtensionKey: finer = try parser.directOptionalString()
            case "zoneID": zoneID = try parser.takeNull() ? nil : try ZoneID(direct: &parser)
            default: throw JSONDirectMiss()
            }
        }
        guard let name, let action = WireForm.referenceAction(wire, extension: finer) else { throw JSONDirectMiss() }
        self.init(recordName: name, zoneID: zoneID, action: action)
    }
}

extension Record: JSONDirectDecodable {
    init(direct parser: inout JSONParser) throws {
        self = try Self.direct(&parser, asResult: false).record
    }

    /// A record, and (read as a ``RecordResult``) its `cascadedRecordNames`. A result carrying
    /// `serverErrorCode` is an error: left to the tree. With `keepingFieldsText`, also the text
    /// of its `fields` object as it arrived. With `skimmingFields` (and `keepingFieldsText`),
    /// the record's fields are left as that text and only summarised (``FieldsSummary``): a
    /// field whose type is given and holds no reference is stepped over, any other is decoded.
    static func direct(_ parser: inout JSONParser, asResult: Bool, keepingFieldsText: Bool = false, skimmingFields: Bool = false)
        throws -> (record: Record, cascaded: [String]?, fieldsJSON: String?, summary: FieldsSummary?) {
        var name: String?, type: String?, zoneID: ZoneID?, tag: String?
        var fields: [String: FieldValue] = [:], created: Stamp?, modified: Stamp?, deleted: Bool?
        var cascaded: [String]?, fieldsJSON: String?, summary: FieldsSummary?
        try parser.forEachMember { parser, key in
            switch key {
            case "recordName": name = try parser.directString()
            case "recordType": type = try parser.directOptionalString()
            case "zoneID": zoneID = try parser.takeNull() ? nil : try ZoneID(direct: &parser)
            case "recordChangeTag": tag = try parser.directOptionalString()
            case "fields":
                if try parser.takeNull() {
                    fields = [:]
                    fieldsJSON = nil
                } else {
                    let start = parser.index  // at the '{' (takeNull skipped the whitespace)
                    if keepingFieldsText && skimmingFields, let skimmed = try FieldsSummary(skimming: &parser) {
                        summary = skimmed
                    } else {
                        parser.index = start
                        var members = 0
                        var read: [String: FieldValue] = [:]
                        read.reserveCapacity(8)
                        try parser.forEachMember { parser, name in
                            members += 1
                            read[name] = try FieldValue(direct: &parser)
                        }
                        fields = read
                        // Kept only when it says exactly what was decoded: a repeated name keeps
                        // its last value here but its first for SQLite's json_extract.
                        guard members == read.count else { return }
                    }
                    if keepingFieldsText {
                        fieldsJSON = String(decoding: UnsafeBufferPointer(rebasing: parser.bytes[start..<parser.index]), as: UTF8.self)
                    }
                }
            case "created": created = try parser.takeNull() ? nil : try Stamp(direct: &parser)
            case "modified": modified = try parser.takeNull() ? nil : try Stamp(direct: &parser)
            case "deleted": deleted = try parser.takeNull() ? nil : try parser.directBool()
            case "cascadedRecordNames" where asResult: cascaded = try parser.directOptionalStrings()
            case "serverErrorCode" where asResult: throw JSONDirectMiss()
            default: try parser.skipValue()
            }
        }
        guard let name else { throw JSONDirectMiss() }
        return (Record(recordName: name, recordType: type ?? "", zoneID: zoneID, recordChangeTag: tag, fields: fields,
                       created: created, modified: modified, deleted: deleted ?? false), cascaded, fieldsJSON, summary)
    }
}

extension FieldsSummary {
    /// Summarises a `fields` object, the parser at its `{`; `nil` (the parser somewhere inside)
    /// when a name repeats, so that the caller decodes the object instead.
    init?(skimming parser: inout JSONParser) throws {
        var types: [(field: String, type: FieldType)] = []
        var holding: [(field: String, value: FieldValue)] = []
        var locations: [(key: String, value: FieldValue)] = []
        var names: Set<String> = []
        var repeated = false
        try parser.forEachMember { parser, name in
            if !names.insert(name).inserted { repeated = true }
            let start = parser
            var type: FieldType?, extensionType: FieldType?
            try parser.forEachMember { parser, key in
                switch key {
                case "type": type = try parser.directFieldType()
                case "recordSyncType": extensionType = try parser.directExtensionType()
                default: try parser.skipValueStructurally()
                }
            }
            type = WireForm.type(type: type, extensionType: extensionType)
            // Decoded only when it holds references or a location (a text's words are indexed
            // only for the few searchable types: the cache reads them from the text then).
            if let type, type.scalar != .reference, type != FieldType(.location) {
                types.append((name, type))
            } else {
                parser = start
                let value = try FieldValue(direct: &parser)
                types.append((name, value.type))
                if !value.references.isEmpty { holding.append((name, value)) }
                if case .location = value { locations.append((name, value)) }
            }
        }
        if repeated { return nil }
        self.init(types: types, references: Record.references(in: holding), locations: locations)
    }
}

extension RecordResult: JSONDirectDecodable {
    init(direct parser: inout JSONParser) throws {
        let (record, cascaded, _, _) = try Record.direct(&parser, asResult: true)
        self = .success(record, cascadedRecordNames: cascaded)
    }
}

extension RecordsResponse: JSONDirectDecodable {
    init(direct parser: inout JSONParser) throws {
        var records: [RecordResult]?, included: [Record]?
        try parser.forEachMember { parser, key in
            switch key {
            case "records": records = try parser.directArray(of: RecordResult.self)
            case "includedRecords": included = try parser.takeNull() ? nil : try parser.directArray(of: Record.self)
            default: try parser.skipValue()
            }
        }
        guard let records else { throw JSONDirectMiss() }
        self.init(records: records, includedRecords: included)
    }
}

extension ZoneChanges: JSONDirectDecodable {
    init(direct parser: inout JSONParser) throws {
        let page = try StoredZoneChangesText.page(&parser, keepingFieldsText: false)
        self.init(zoneID: page.zoneID, records: page.entries.map(\.record), syncToken: page.syncToken, moreComing: page.moreComing,
                  includedRecords: page.includedRecords)
    }
}

/// A `records/changes` answer whose records keep the text of their fields as it arrived.
struct StoredZoneChangesText: JSONDirectDecodable {
    var page: StoredZoneChanges

    init(direct parser: inout JSONParser) throws {
        page = try Self.page(&parser, keepingFieldsText: true)
    }

    /// A `records/changes` answer whose records keep their fields only as text and a summary.
    struct Skimmed: JSONDirectDecodable {
        var page: StoredZoneChanges

        init(direct parser: inout JSONParser) throws {
            page = try StoredZoneChangesText.page(&parser, keepingFieldsText: true, skimmingFields: true)
        }
    }

    /// A change page; with `keepingFieldsText`, each record's fields also as the text they
    /// arrived in, and with `skimmingFields` only as that text and its summary.
    static func page(_ parser: inout JSONParser, keepingFieldsText: Bool, skimmingFields: Bool = false) throws -> StoredZoneChanges {
        var zoneID: ZoneID?, entries: [StoredZoneChanges.Entry]?, token: String?, more: Bool?, included: [Record]?
        try parser.forEachMember { parser, key in
            switch key {
            case "zoneID": zoneID = try ZoneID(direct: &parser)
            case "includedRecords":
                var read: [Record] = []
                try parser.forEachElement { parser in read.append(try Record.direct(&parser, asResult: false, keepingFieldsText: false, skimmingFields: false).0) }
                included = read
            case "records":
                var read: [StoredZoneChanges.Entry] = []
                try parser.forEachElement { parser in
                    let (record, _, text, summary) = try Record.direct(&parser, asResult: false, keepingFieldsText: keepingFieldsText,
                                                                      skimmingFields: skimmingFields)
                    var entry = StoredZoneChanges.Entry(record: record, fieldsJSON: text)
                    entry.fieldsSummary = summary
                    read.append(entry)
                }
                entries = read
            case "syncToken": token = try parser.directString()
            case "moreComing": more = try parser.directBool()
            default: try parser.skipValue()
            }
        }
        guard let zoneID, let entries, let token, let more else { throw JSONDirectMiss() }
        return StoredZoneChanges(zoneID: zoneID, entries: entries, syncToken: token, moreComing: more, includedRecords: included)
    }
}

extension RecordPayload: JSONDirectDecodable {
    init(direct parser: inout JSONParser) throws {
        var name: String?, type: String?, tag: String?, fields: [String: RawFieldValue]?
        try parser.forEachMember { parser, key in
            switch key {
            case "recordName": name = try parser.directOptionalString()
            case "recordType": type = try parser.directOptionalString()
            case "recordChangeTag": tag = try parser.directOptionalString()
            case "fields": fields = try parser.takeNull() ? nil : try parser.directDictionary(of: RawFieldValue.self)
            default: try parser.skipValue()
            }
        }
        self.init(recordName: name, recordType: type, recordChangeTag: tag, fields: fields)
    }
}

extension RecordOperation: JSONDirectDecodable {
    init(direct parser: inout JSONParser) throws {
        var type: OperationType?, record: RecordPayload?, desiredKeys: [String]?
        try parser.forEachMember { parser, key in
            switch key {
            case "operationType":
                guard let known = OperationType(rawValue: try parser.directString()) else { throw JSONDirectMiss() }
                type = known
            case "record": record = try RecordPayload(direct: &parser)
            case "desiredKeys": desiredKeys = try parser.directOptionalStrings()
            default: try parser.skipValue()
            }
        }
        guard let type, let record else { throw JSONDirectMiss() }
        self.init(type, record, desiredKeys: desiredKeys)
    }
}

extension ModifyRecordsRequest: JSONDirectDecodable {
    init(direct parser: inout JSONParser) throws {
        var operations: [RecordOperation]?, zoneID: ZoneID?, atomic: Bool?, desiredKeys: [String]?, numbersAsStrings: Bool?
        try parser.forEachMember { parser, key in
            switch key {
            case "operations": operations = try parser.directArray(of: RecordOperation.self)
            case "zoneID": zoneID = try parser.takeNull() ? nil : try ZoneID(direct: &parser)
            case "atomic": atomic = try parser.takeNull() ? nil : try parser.directBool()
            case "desiredKeys": desiredKeys = try parser.directOptionalStrings()
            case "numbersAsStrings": numbersAsStrings = try parser.takeNull() ? nil : try parser.directBool()
            default: try parser.skipValue()
            }
        }
        guard let operations else { throw JSONDirectMiss() }
        self.init(operations: operations, zoneID: zoneID, atomic: atomic, desiredKeys: desiredKeys)
        self.numbersAsStrings = numbersAsStrings
    }
}

/// The `fields` object of a record as stored.
struct StoredFields: JSONDirectDecodable {
    var fields: [String: FieldValue]

    init(direct parser: inout JSONParser) throws {
        fields = try parser.directDictionary(of: FieldValue.self)
    }
}

extension JSONParser {
    /// Steps over one value by its structure alone (strings and nesting), building nothing and
    /// checking little: for finding a later member quickly. Whoever needs the value decodes the
    /// text properly.
    mutating func skipValueStructurally() throws {
        var depth = 0
        skipWhitespace()
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                index += 1
                while true {
                    guard index < bytes.count else { throw JSONDirectMiss() }
                    let next = bytes[index]
                    index += next == UInt8(ascii: "\\") ? 2 : 1
                    if next == UInt8(ascii: "\"") { break }
                }
                if depth == 0 { return }
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                index += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard depth > 0 else { throw JSONDirectMiss() }
                depth -= 1
                index += 1
                if depth == 0 { return }
            case UInt8(ascii: ","), UInt8(ascii: ":"), UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"):
                guard depth > 0 else { return }
                index += 1
            default:
                // A scalar (number, true, false, null): up to the next delimiter.
                index += 1
                if depth == 0 {
                    while index < bytes.count, !Self.delimiters.contains(bytes[index]) { index += 1 }
                    return
                }
            }
        }
        throw JSONDirectMiss()
    }

    private static let delimiters: Set<UInt8> = [UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: " "),
                                                 UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t")]
}

extension StoredZoneChanges {
    /// The `syncToken` and `moreComing` of a `records/changes` answer, found without decoding
    /// its records, so the next page can be asked for while this one is decoded. RecordSync's
    /// server writes both before the records, and reading stops there; in another order, the
    /// records are stepped over by structure. `nil` when the text does not read as such an
    /// answer; a text that yields a continuation here may still fail ``decode(_:)`` or decode
    /// to another token (the sync engine checks that it does not).
    package static func continuation(of data: Data) -> (syncToken: String, moreComing: Bool)? {
        data.withUnsafeBytes { raw -> (syncToken: String, moreComing: Bool)? in
            guard let base = raw.baseAddress else { return nil }
            var parser = JSONParser(bytes: UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: raw.count))
            var token: String?, more: Bool?
            /// Both were read: the rest (RecordSync writes them before the records) is not.
            struct Found: Error {}
            do {
                try parser.forEachMember { parser, key in
                    switch key {
                    case "syncToken": token = try parser.directString()
                    case "moreComing": more = try parser.directBool()
                    default: try parser.skipValueStructurally()
                    }
                    if token != nil, more != nil { throw Found() }
                }
            } catch is Found {
            } catch {
                return nil
            }
            guard let token, let more else { return nil }
            return (token, more)
        }
    }
}
