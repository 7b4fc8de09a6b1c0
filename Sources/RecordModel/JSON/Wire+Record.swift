import Foundation

// The wire form of a record and what it holds (zone IDs, stamps, fields) and of a per-record
// result: each type's one reader beside its one writer (see `JSONDirect.swift`). Writers put
// keys in sorted order; readers take keys in any order and step over unknown ones.

// MARK: - ZoneID

extension ZoneID: Codable, JSONDirectWritable, JSONDirectDecodable {
    public init(from decoder: any Decoder) throws { self = try JSONWire.decode(Self.self, from: decoder) }
    public func encode(to encoder: any Encoder) throws { try JSONWire.encode(self, to: encoder) }

    /// `{"ownerRecordName"?, "zoneName"}`.
    func write(to writer: inout JSONWriter) {
        var first = true
        writer.open()
        if let ownerRecordName { writer.key("ownerRecordName", first: &first); writer.writeString(ownerRecordName) }
        writer.key("zoneName", first: &first); writer.writeString(zoneName)
        writer.close()
    }

    init(direct parser: inout JSONParser) throws {
        var zoneName: String?, nameIsNull = false, owner: String?
        try parser.forEachMember { parser, key in
            switch key {
            case "zoneName": zoneName = try parser.directOptionalString(); nameIsNull = zoneName == nil
            case "ownerRecordName": owner = try parser.directOptionalString()
            default: try parser.skipValue()
            }
        }
        guard let zoneName else { throw nameIsNull ? DecodingError.null(String.self, at: "zoneName") : DecodingError.missing("zoneName") }
        self.init(zoneName: zoneName, ownerRecordName: owner)
    }
}

/// A zone's `zoneID` object written once, for the records of a page, which all name the
/// page's zone, to copy.
struct WrittenZoneID {
    let zoneID: ZoneID
    let text: [UInt8]

    /// `zoneID` written with `writer`'s options.
    init(_ zoneID: ZoneID, like writer: JSONWriter) {
        var out = writer
        out.bytes = []
        zoneID.write(to: &out)
        self.zoneID = zoneID
        text = out.bytes
    }

    /// Whether `other` is written as `text`: the same name and owner byte for byte (Swift's
    /// `==` on strings treats canonically equivalent spellings as equal, which the wire does not).
    func writes(_ other: ZoneID) -> Bool {
        zoneID.zoneName.utf8.elementsEqual(other.zoneName.utf8)
            && (zoneID.ownerRecordName?.utf8).map { mine in other.ownerRecordName.map { mine.elementsEqual($0.utf8) } ?? false }
                ?? (other.ownerRecordName == nil)
    }
}

// MARK: - Stamp

extension Stamp: Codable, JSONDirectWritable, JSONDirectDecodable {
    public init(from decoder: any Decoder) throws { self = try JSONWire.decode(Self.self, from: decoder) }
    public func encode(to encoder: any Encoder) throws { try JSONWire.encode(self, to: encoder) }

    /// `{"deviceID"?, "timestamp", "userRecordName"}`.
    func write(to writer: inout JSONWriter) {
        var first = true
        writer.open()
        if let deviceID { writer.key("deviceID", first: &first); writer.writeString(deviceID) }
        writer.key("timestamp", first: &first); writer.writeInteger(timestamp)
        writer.key("userRecordName", first: &first); writer.writeString(userRecordName)
        writer.close()
    }

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
        guard let timestamp else { throw DecodingError.missing("timestamp") }
        guard let user else { throw DecodingError.missing("userRecordName") }
        self.init(timestamp: timestamp, userRecordName: user, deviceID: device)
    }
}

// MARK: - Fields

extension RawFieldValue: Codable, JSONDirectWritable, JSONDirectDecodable {
    public init(from decoder: any Decoder) throws { self = try JSONWire.decode(Self.self, from: decoder) }
    public func encode(to encoder: any Encoder) throws { try JSONWire.encode(self, to: encoder) }

    /// `{"recordSyncType"?, "type"?, "value"}`: Apple's type, and RecordSync's finer one
    /// beside it where they differ (``WireForm/type(_:)``).
    func write(to writer: inout JSONWriter) throws {
        var first = true
        writer.open()
        if let type { writeType(type, to: &writer, first: &first) }
        writer.key("value", first: &first); try writer.write(value)
        writer.close()
    }

    /// `{"value": …, "type"?: …, "recordSyncType"?: …}`, in any order: `value` as it is (absent
    /// is null), the type a known name or null, `recordSyncType` read when RecordSync knows it.
    init(direct parser: inout JSONParser) throws {
        var value = JSONValue.null, type: FieldType?, extensionType: FieldType?
        try parser.forEachMember { parser, key in
            switch key {
            case "value": value = try parser.anyValue()
            case "type": type = try parser.directFieldType()
            case WireForm.typeExtensionKey: extensionType = try parser.directExtensionType()
            default: try parser.skipValue()
            }
        }
        self.init(value: value, type: WireForm.type(type: type, extensionType: extensionType))
    }
}

/// Writes the `recordSyncType` and `type` members of a field of `type`.
private func writeType(_ type: FieldType, to writer: inout JSONWriter, first: inout Bool) {
    let wire = WireForm.type(type)
    if let extensionType = wire.extensionType { writer.key("recordSyncType", first: &first); writer.writeString(extensionType.rawValue) }
    writer.key("type", first: &first); writer.writeString(wire.type.rawValue)
}

extension FieldValue: Codable, JSONDirectWritable, JSONDirectDecodable {
    public init(from decoder: any Decoder) throws { self = try JSONWire.decode(Self.self, from: decoder) }
    public func encode(to encoder: any Encoder) throws { try JSONWire.encode(self, to: encoder) }

    /// `{"recordSyncType"?, "type", "value"}`, the value as ``json`` gives it with the
    /// answer's options: with ``WireForm/numbersAsStrings``, `INT64` and `DOUBLE` values as
    /// strings; with ``WireForm/assetLinks``, stored assets with their download links.
    func write(to writer: inout JSONWriter) throws {
        var first = true
        writer.open()
        writeType(type, to: &writer, first: &first)
        writer.key("value", first: &first); try writeValue(to: &writer)
        writer.close()
    }

    private func writeValue(to writer: inout JSONWriter) throws {
        switch self {
        case .string(let value):
            writer.writeString(value)
        case .int64(let value) where writer.numbersAsStrings:
            writer.writeString(String(value))
        case .int64(let value), .timestamp(let value):
            writer.bytes.append(contentsOf: String(value).utf8)
        case .double(let value) where writer.numbersAsStrings:
            var number = JSONWriter(storing: ())
            try number.write(.double(value))
            writer.writeString(String(decoding: number.bytes, as: UTF8.self))
        case .list(_, let elements):
            try writer.array(elements) { try $1.writeValue(to: &$0) }
        case .asset(let value):
            if let links = writer.assetLinks, let asset = StoredAsset(value) {
                try writer.write(asset.wireJSON(links.link))
            } else {
                try writer.write(value)
            }
        default:
            try writer.write(json)
        }
    }

    /// A field as ``RawFieldValue`` reads it, its value read by ``init(json:type:numbersMayBeStrings:)``
    /// (numbers may be strings only when the field gives its type).
    ///
    /// The values nearly every field holds (a string, a number, a boolean, a reference in its
    /// plain form) are read straight into the value they make with their type, with no
    /// ``JSONValue`` in between: a reference as a tree of dictionaries cost the client's
    /// `cache-apply` about 5%. Any other value, or one its type does not take as it is, is read
    /// as a ``JSONValue`` and given to ``init(json:type:numbersMayBeStrings:)``, which decides.
    /// `WireRoundTripTests.fieldReadersAgree` checks that both give the same values and errors.
    init(direct parser: inout JSONParser) throws {
        /// A value read before its type is known: straight, or where it starts, to be read as JSON.
        enum Read {
            case string(String), int(Int64), double(Double), bool(Bool), reference(Reference, at: JSONParser)
            case json(JSONValue)
        }
        var read = Read.json(.null), type: FieldType?, extensionType: FieldType?
        try parser.forEachMember { parser, key in
            switch key {
            case "value":
                switch try parser.peekByte() {
                case UInt8(ascii: "\""): read = .string(try parser.string())
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    switch try parser.number() {
                    case .int(let integer): read = .int(integer)
                    case .double(let double): read = .double(double)
                    case let other: read = .json(other)
                    }
                case UInt8(ascii: "{"):
                    var attempt = parser
                    if let reference = try? Reference(plainValue: &attempt) {
                        read = .reference(reference, at: parser)
                        parser = attempt
                    } else {
                        read = .json(try parser.anyValue())
                    }
                default:
                    let value = try parser.anyValue()
                    if case .bool(let flag) = value { read = .bool(flag) } else { read = .json(value) }
                }
            case "type": type = try parser.directFieldType()
            case WireForm.typeExtensionKey: extensionType = try parser.directExtensionType()
            default: try parser.skipValue()
            }
        }
        type = WireForm.type(type: type, extensionType: extensionType)
        // The scalar type the value is read as: the given one, or without one the type
        // ``inferredType(of:)`` gives these values; nil for a list or a value read as JSON.
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
            case .json: scalar = nil
            }
        }
        switch (read, scalar) {
        case (.string(let value), .string?): self = .string(value); return
        case (.int(let value), .int64?): self = .int64(value); return
        case (.int(let value), .timestamp?): self = .timestamp(value); return
        case (.int(let value), .double?): self = .double(Double(value)); return
        case (.double(let value), .double?): self = .double(value); return
        case (.bool(let value), .boolean?): self = .boolean(value); return
        case (.reference(let reference, _), .reference?)
            where NameRules.problem(withName: reference.recordName, kind: "referenced recordName") == nil:
            self = .reference(reference); return
        default: break
        }
        let json: JSONValue
        switch read {
        case .string(let value): json = .string(value)
        case .int(let value): json = .int(value)
        case .double(let value): json = .double(value)
        case .bool(let value): json = .bool(value)
        case .reference(_, var start): json = try start.anyValue()
        case .json(let value): json = value
        }
        do {
            self = try FieldValue(json: json, type: type, numbersMayBeStrings: type != nil)
        } catch let error as RecordSyncError {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: error.reason))
        }
    }
}

extension Reference {
    /// A reference value in its plain form: `recordName` a string, `action` and
    /// `recordSyncAction` strings naming an action or null, `zoneID` null or an object with a
    /// string `zoneName` and `ownerRecordName` a string or null, no other member. Anything else
    /// throws, for ``FieldValue/init(json:type:numbersMayBeStrings:)`` to read.
    init(plainValue parser: inout JSONParser) throws {
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

/// The `fields` object of a record as stored.
struct StoredFields: JSONDirectDecodable {
    var fields: [String: FieldValue]

    init(direct parser: inout JSONParser) throws {
        fields = try parser.directDictionary(of: FieldValue.self)
    }
}

extension Record {
    /// Fields from the JSON text of their wire form (`{"NAME": {"type": …, "value": …}}`).
    package static func fields(fromJSON text: String) throws -> [String: FieldValue] {
        var text = text
        return try text.withUTF8 { try JSONWire.decode(StoredFields.self, from: $0) }.fields
    }
}

// MARK: - Record

extension Record: Codable, JSONDirectWritable, JSONDirectDecodable {
    public init(from decoder: any Decoder) throws { self = try JSONWire.decode(Self.self, from: decoder) }
    public func encode(to encoder: any Encoder) throws { try JSONWire.encode(self, to: encoder) }

    /// `{"cascadedRecordNames"?, "created"?, "deleted"?, "fields", "modified"?,
    /// "recordChangeTag"?, "recordName", "recordType", "zoneID"?}`; a deleted record has no
    /// fields, stamps or tag.
    func write(to writer: inout JSONWriter) throws {
        try write(to: &writer, cascadedRecordNames: nil)
    }

    /// `fieldsJSON`, when given, is written as the record's fields instead of ``fields``: the
    /// stored wire form, copied as is (see ``StoredZoneChanges``).
    func write(to writer: inout JSONWriter, cascadedRecordNames: [String]?, fieldsJSON: String? = nil, pageZone: WrittenZoneID? = nil) throws {
        // The closures take the fields, not the record (capturing `self` would copy it).
        if let fieldsJSON {
            try write(to: &writer, cascadedRecordNames: cascadedRecordNames, pageZone: pageZone) { $0.bytes.append(contentsOf: fieldsJSON.utf8) }
        } else {
            let fields = fields
            try write(to: &writer, cascadedRecordNames: cascadedRecordNames, pageZone: pageZone) { try Self.write(fields, to: &$0) }
        }
    }

    /// The record's fields in their wire form: `fieldsJSON` as is, or else ``fields``.
    func writeFields(to writer: inout JSONWriter, fieldsJSON: String?) throws {
        if let fieldsJSON {
            writer.bytes.append(contentsOf: fieldsJSON.utf8)
        } else {
            try Self.write(fields, to: &writer)
        }
    }

    /// Fields in their wire form, names sorted.
    static func write(_ fields: [String: FieldValue], to writer: inout JSONWriter) throws {
        try writer.sortedObject(fields) { try $1.write(to: &$0) }
    }

    /// The record with its fields written by `writeFields`; its `zoneID` copied from
    /// `pageZone` when it is that zone.
    func write(to writer: inout JSONWriter, cascadedRecordNames: [String]?, pageZone: WrittenZoneID? = nil,
               fields writeFields: (inout JSONWriter) throws -> Void) throws {
        var first = true
        writer.open()
        if let cascadedRecordNames {
            writer.key("cascadedRecordNames", first: &first)
            writer.array(cascadedRecordNames) { $0.writeString($1) }
        }
        if !deleted, let created { writer.key("created", first: &first); created.write(to: &writer) }
        let share = deleted ? nil : shareInfo
        if let participant = share?.currentUserParticipant { writer.key("currentUserParticipant", first: &first); try writer.write(JSONValueEncoder().encodeTree(participant)) }
        if deleted { writer.key("deleted", first: &first); writer.writeBool(true) }
        if !deleted {
            writer.key("fields", first: &first)
            try writeFields(&writer)
            if let modified { writer.key("modified", first: &first); modified.write(to: &writer) }
        }
        if let share {
            writer.key("owner", first: &first); try writer.write(JSONValueEncoder().encodeTree(share.owner))
        }
        if !deleted, let parent {
            writer.key("parent", first: &first)
            writer.open()
            var inner = true
            writer.key("recordName", first: &inner); writer.writeString(parent)
            writer.close()
        }
        if let share {
            writer.key("participants", first: &first); try writer.write(JSONValueEncoder().encodeTree(share.participants))
            writer.key("publicPermission", first: &first); writer.writeString(share.publicPermission.rawValue)
        }
        if !deleted, let recordChangeTag { writer.key("recordChangeTag", first: &first); writer.writeString(recordChangeTag) }
        writer.key("recordName", first: &first); writer.writeString(recordName)
        writer.key("recordType", first: &first); writer.writeString(recordType)
        if !deleted, let rootShare = self.share {
            writer.key("share", first: &first)
            writer.open()
            var inner = true
            writer.key("recordName", first: &inner); writer.writeString(rootShare)
            if let zoneID { writer.key("zoneID", first: &inner); zoneID.write(to: &writer) }
            writer.close()
        }
        if let share {
            writer.key("shortGUID", first: &first); writer.writeString(share.shortGUID)
            if let url = share.url { writer.key("url", first: &first); writer.writeString(url) }
        }
        if let zoneID {
            writer.key("zoneID", first: &first)
            if let pageZone, pageZone.writes(zoneID) { writer.bytes.append(contentsOf: pageZone.text) } else { zoneID.write(to: &writer) }
        }
        writer.close()
    }

    init(direct parser: inout JSONParser) throws {
        self = try Self.direct(&parser, asResult: false).record
    }

    /// Thrown by ``direct(_:asResult:keepingFieldsText:skimmingFields:)`` reading a result
    /// that is an error (it carries `serverErrorCode`).
    struct ErrorResult: Error {}

    /// A record, and (read as a ``RecordResult``) its `cascadedRecordNames`. With
    /// `keepingFieldsText`, also the text of its `fields` object as it arrived. With
    /// `skimmingFields` (and `keepingFieldsText`), the record's fields are left as that text
    /// and only summarised (``FieldsSummary``): a field whose type is given and holds no
    /// reference is stepped over, any other is decoded.
    ///
    /// `recordName` is required (a string); `recordType` missing is empty, `deleted` false.
    /// As a result, an object with `serverErrorCode` throws ``ErrorResult``.
    static func direct(_ parser: inout JSONParser, asResult: Bool, keepingFieldsText: Bool = false, skimmingFields: Bool = false)
        throws -> (record: Record, cascaded: [String]?, fieldsJSON: String?, summary: FieldsSummary?) {
        var name: String?, nameIsNull = false, type: String?, zoneID: ZoneID?, tag: String?
        var fields: [String: FieldValue] = [:], created: Stamp?, modified: Stamp?, deleted: Bool?
        var cascaded: [String]?, fieldsJSON: String?, summary: FieldsSummary?
        var share: [String: JSONValue] = [:]
        var parent: String?, rootShare: String?
        try parser.forEachMember { parser, key in
            switch key {
            case "recordName": name = try parser.directOptionalString(); nameIsNull = name == nil
            case "recordType": type = try parser.directOptionalString()
            case "zoneID": zoneID = try parser.takeNull() ? nil : try ZoneID(direct: &parser)
            case "recordChangeTag": tag = try parser.directOptionalString()
            case "fields": (fields, fieldsJSON, summary) = try readFields(&parser, keepingFieldsText: keepingFieldsText, skimmingFields: skimmingFields)
            case "created": created = try parser.takeNull() ? nil : try Stamp(direct: &parser)
            case "modified": modified = try parser.takeNull() ? nil : try Stamp(direct: &parser)
            case "deleted": deleted = try parser.directOptionalBool()
            case "shortGUID", "publicPermission", "owner", "participants", "currentUserParticipant", "url": share[key] = try parser.anyValue()
            case "parent": parent = try RecordNameReference.read(&parser)
            case "share": rootShare = try RecordNameReference.read(&parser)
            case "cascadedRecordNames" where asResult: cascaded = try parser.directOptionalStrings()
            case "serverErrorCode" where asResult: throw ErrorResult()
            default: try parser.skipValue()
            }
        }
        guard let name else { throw nameIsNull ? DecodingError.null(String.self, at: "recordName") : DecodingError.missing("recordName") }
        return (Record(recordName: name, recordType: type ?? "", zoneID: zoneID, recordChangeTag: tag, fields: fields,
                       created: created, modified: modified, deleted: deleted ?? false, shareInfo: try ShareInfo(keys: share),
                       parent: parent, share: rootShare), cascaded, fieldsJSON, summary)
    }
}

extension Record {
    /// A record's `fields` (an object, or null for none): decoded, and with
    /// `keepingFieldsText` also as the text it arrived in; with `skimmingFields` (and
    /// `keepingFieldsText`) only as that text and its summary (``FieldsSummary``), unless a
    /// name repeats.
    static func readFields(_ parser: inout JSONParser, keepingFieldsText: Bool, skimmingFields: Bool)
        throws -> (fields: [String: FieldValue], text: String?, summary: FieldsSummary?) {
        if try parser.takeNull() { return ([:], nil, nil) }
        var fields: [String: FieldValue] = [:], summary: FieldsSummary?
        let start = parser.index  // at the value (takeNull skipped the whitespace)
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
            // Kept only when it says exactly what was decoded: a repeated name keeps its last
            // value here but its first for SQLite's json_extract.
            guard members == read.count else { return (fields, nil, nil) }
        }
        guard keepingFieldsText else { return (fields, nil, summary) }
        return (fields, String(decoding: UnsafeBufferPointer(rebasing: parser.bytes[start..<parser.index]), as: UTF8.self), summary)
    }
}

/// A record's system references (`parent`, `share`): `null`, or an object whose `recordName`
/// is read (`zoneID` and `action` are stepped over: the record's own zone, no action).
enum RecordNameReference {
    static func read(_ parser: inout JSONParser) throws -> String? {
        if try parser.takeNull() { return nil }
        var name: String?
        try parser.forEachMember { parser, key in
            switch key {
            case "recordName": name = try parser.directString()
            default: try parser.skipValue()
            }
        }
        guard let name else { throw DecodingError.missing("recordName") }
        return name
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
                case WireForm.typeExtensionKey: extensionType = try parser.directExtensionType()
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

// MARK: - RecordResult

extension RecordResult: Codable, JSONDirectWritable, JSONDirectDecodable {
    public init(from decoder: any Decoder) throws { self = try JSONWire.decode(Self.self, from: decoder) }
    public func encode(to encoder: any Encoder) throws { try JSONWire.encode(self, to: encoder) }

    /// A record (with `cascadedRecordNames` when given), or an ``ErrorBody``.
    func write(to writer: inout JSONWriter) throws {
        switch self {
        case .success(let record, let cascaded): try record.write(to: &writer, cascadedRecordNames: cascaded)
        case .failure(let error): try writer.write(try JSONValueEncoder().encodeTree(ErrorBody(error)))
        }
    }

    /// An object with `serverErrorCode` is an ``ErrorBody``; any other a record.
    init(direct parser: inout JSONParser) throws {
        let start = parser.index
        do {
            let (record, cascaded, _, _) = try Record.direct(&parser, asResult: true)
            self = .success(record, cascadedRecordNames: cascaded)
        } catch let error as DecodingError {
            // An error result is read as one even when it is not a record.
            parser.index = start
            guard case .object(let members) = try parser.anyValue(), members["serverErrorCode"] != nil else { throw error }
            self = .failure(try JSONValueDecoder().decode(ErrorBody.self, from: .object(members)).error)
        } catch is Record.ErrorResult {
            parser.index = start
            self = .failure(try JSONValueDecoder().decode(ErrorBody.self, from: try parser.anyValue()).error)
        }
    }
}

extension ShareInfo {
    /// A share's keys as a record carries them, or `nil` when it carries no `shortGUID`.
    init?(keys: [String: JSONValue]) throws {
        guard let guid = keys["shortGUID"], guid != .null else { return nil }
        func decode<T: Decodable>(_ type: T.Type, _ key: String) throws -> T? {
            guard let value = keys[key], value != .null else { return nil }
            return try JSONValueDecoder().decode(type, from: value)
        }
        guard case .string(let shortGUID) = guid else { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "shortGUID is not a string")) }
        self.init(shortGUID: shortGUID, publicPermission: try decode(SharePermission.self, "publicPermission") ?? .none,
                  owner: try decode(ShareParticipant.self, "owner") ?? ShareParticipant(type: .owner),
                  participants: try decode([ShareParticipant].self, "participants") ?? [],
                  currentUserParticipant: try decode(ShareParticipant.self, "currentUserParticipant"), url: try decode(String.self, "url"))
    }
}
