import Foundation

// The wire form of a page of zone changes (`records/changes`, one zone of `changes/zone`), in
// CloudKit's form and in RecordSync's compact one (`recordSyncCompact`): the writer and reader
// of each (see `JSONDirect.swift`), and what lets a client ask for the next page before it has
// read this one (``StoredZoneChanges/continuation(of:)``).

// MARK: - Writing

extension JSONWriter {
    /// A page of zone changes; `records` writes the records array.
    ///
    /// Unlike other objects, its keys are not sorted: `moreComing` and `syncToken` come before
    /// `records`, so a client can ask for the next page as soon as it has read them, without
    /// stepping over the records (``StoredZoneChanges/continuation(of:)``). A compact page's
    /// `recordSyncFieldTypes` (each type's fields, each field's object without its value) and
    /// `recordSyncUsers` (the user record names its stamps give by position) come before its
    /// records too.
    mutating func changePage(moreComing: Bool, syncToken: String, zoneID: ZoneID, compact: CompactPage? = nil,
                             includedRecords: [Record]?, records: (inout JSONWriter) throws -> Void) throws {
        var first = true
        open()
        key("moreComing", first: &first); writeBool(moreComing)
        key("syncToken", first: &first); writeString(syncToken)
        key("zoneID", first: &first); zoneID.write(to: &self)
        if let compact {
            key("recordSyncFieldTypes", first: &first)
            compact.fieldTypes.write(to: &self)
            key("recordSyncUsers", first: &first)
            array(compact.users) { $0.writeString($1) }
        }
        key("records", first: &first)
        try records(&self)
        if let includedRecords {
            key("includedRecords", first: &first)
            try array(includedRecords) { try $1.write(to: &$0) }
        }
        close()
    }
}

extension StoredZoneChanges: Encodable, JSONDirectWritable {
    public func encode(to encoder: any Encoder) throws { try JSONWire.encode(self, to: encoder) }

    /// CloudKit's form, records' stored fields text copied as is; or the compact form.
    func write(to writer: inout JSONWriter) throws {
        // A page the compact form cannot hold (see compactRecords) is written in CloudKit's form.
        if compact, let page = try? compactRecords(like: writer) {
            try writer.changePage(moreComing: moreComing, syncToken: syncToken, zoneID: zoneID, compact: page,
                                  includedRecords: includedRecords) { $0.bytes.append(contentsOf: page.records) }
            return
        }
        try writer.changePage(moreComing: moreComing, syncToken: syncToken, zoneID: zoneID, includedRecords: includedRecords) { writer in
            try writer.array(entries) { try $1.record.write(to: &$0, cascadedRecordNames: nil, fieldsJSON: $1.fieldsJSON) }
        }
    }

    /// The page's records array in the compact form, and what it leaves out; `nil` when two
    /// records of one type give a field different types (which a zone's schema never lets
    /// happen), and the page must then be written in CloudKit's form.
    ///
    /// A record is an array: `[recordName, recordType, recordChangeTag, created, modified,
    /// fields]`, or `[recordName, recordType]` for a deleted record; a stamp is `[timestamp,
    /// user]` or `[timestamp, user, deviceID]`, `user` being a position in the page's users;
    /// each field's object is replaced by its `value` (`null` if it has none), written as in
    /// CloudKit's form by `writer`'s options. What a record lacks is `null`. A page holding a
    /// record with a `parent` or `share` (which the compact form has no place for) is `nil` too.
    func compactRecords(like writer: JSONWriter) throws -> CompactPage? {
        guard !entries.contains(where: { $0.record.parent != nil || $0.record.share != nil }) else { return nil }
        var out = writer, fields = writer
        out.bytes = []
        out.bytes.reserveCapacity(entries.count * 200)
        fields.bytes = []
        var types = CompactFieldTypes()
        var users: [String] = [], positions: [String: Int] = [:]
        var consistent = true
        func write(_ stamp: Stamp?, to out: inout JSONWriter) {
            guard let stamp else { return out.bytes.append(contentsOf: "null".utf8) }
            let user: Int
            if users.last == stamp.userRecordName {
                user = users.count - 1
            } else if let found = positions[stamp.userRecordName] {
                user = found
            } else {
                user = users.count
                users.append(stamp.userRecordName)
                positions[stamp.userRecordName] = user
            }
            out.bytes.append(UInt8(ascii: "["))
            out.bytes.append(contentsOf: String(stamp.timestamp).utf8)
            out.bytes.append(UInt8(ascii: ","))
            out.bytes.append(contentsOf: String(user).utf8)
            if let deviceID = stamp.deviceID {
                out.bytes.append(UInt8(ascii: ","))
                out.writeString(deviceID)
            }
            out.bytes.append(UInt8(ascii: "]"))
        }
        try out.array(entries) { out, entry in
            let record = entry.record
            out.bytes.append(UInt8(ascii: "["))
            out.writeString(record.recordName)
            out.bytes.append(UInt8(ascii: ","))
            out.writeString(record.recordType)
            if !record.deleted {
                out.bytes.append(UInt8(ascii: ","))
                if let tag = record.recordChangeTag { out.writeString(tag) } else { out.bytes.append(contentsOf: "null".utf8) }
                out.bytes.append(UInt8(ascii: ","))
                write(record.created, to: &out)
                out.bytes.append(UInt8(ascii: ","))
                write(record.modified, to: &out)
                out.bytes.append(UInt8(ascii: ","))
                let table = types.table(for: record.recordType)
                let matched: Bool
                if var text = entry.fieldsJSON {
                    // Stored text, read where it is.
                    matched = try text.withUTF8 { try Self.writeValues(of: $0, to: &out, types: &types, table: table) }
                } else {
                    fields.bytes.removeAll(keepingCapacity: true)
                    try record.writeFields(to: &fields, fieldsJSON: nil)
                    matched = try fields.bytes.withUnsafeBufferPointer { try Self.writeValues(of: $0, to: &out, types: &types, table: table) }
                }
                if !matched { consistent = false }
            }
            out.bytes.append(UInt8(ascii: "]"))
        }
        return consistent ? CompactPage(records: out.bytes, fieldTypes: types, users: users) : nil
    }

    /// Writes wire-form `fields` (`{"NAME": {"type": …, "value": …}, …}`, as the server wrote
    /// them) as `{"NAME": value, …}`, each field's object without its `value` member going to
    /// `types`. Whether every field's object matched the one `types` had for it.
    private static func writeValues(of buffer: UnsafeBufferPointer<UInt8>, to out: inout JSONWriter, types: inout CompactFieldTypes,
                                    table: Int) throws -> Bool {
        var parser = JSONParser(bytes: buffer)
        var consistent = true
        guard try parser.peekByte() == UInt8(ascii: "{") else { throw JSONDirectMiss() }
        parser.index += 1
        out.open()
        var position = 0
        while try parser.peekByte() != UInt8(ascii: "}") {
            if position > 0 { out.bytes.append(UInt8(ascii: ",")) }
            // The name, as JSON text.
            let nameStart = parser.index
            guard buffer[nameStart] == UInt8(ascii: "\"") else { throw JSONDirectMiss() }
            try parser.skipRaw()
            let name = UnsafeBufferPointer(rebasing: buffer[nameStart..<parser.index])
            out.bytes.append(contentsOf: name)
            out.bytes.append(UInt8(ascii: ":"))
            guard try parser.peekByte() == UInt8(ascii: ":") else { throw JSONDirectMiss() }
            parser.index += 1
            // The field's object: its value goes to `out`, its other members to the entry.
            guard try parser.peekByte() == UInt8(ascii: "{") else { throw JSONDirectMiss() }
            parser.index += 1
            var value: Range<Int>?
            types.entry.removeAll(keepingCapacity: true)
            types.entry.append(UInt8(ascii: "{"))
            while try parser.peekByte() != UInt8(ascii: "}") {
                let member = parser.index
                try parser.skipRaw()
                let isValue: Bool
                if memchr(buffer.baseAddress! + member, Int32(UInt8(ascii: "\\")), parser.index - member) != nil {
                    // A name with an escape (which the server's writer never makes for "value").
                    var name = JSONParser(bytes: buffer)
                    name.index = member
                    isValue = try name.string() == "value"
                } else {
                    isValue = parser.index - member == 7 && memcmp(buffer.baseAddress! + member, "\"value\"", 7) == 0
                }
                guard try parser.peekByte() == UInt8(ascii: ":") else { throw JSONDirectMiss() }
                parser.index += 1
                parser.skipWhitespace()
                let start = parser.index
                try parser.skipRaw()
                if isValue {
                    value = start..<parser.index
                } else {
                    if types.entry.count > 1 { types.entry.append(UInt8(ascii: ",")) }
                    types.entry.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[member..<parser.index]))
                }
                if try parser.peekByte() == UInt8(ascii: ",") { parser.index += 1 }
            }
            parser.index += 1
            types.entry.append(UInt8(ascii: "}"))
            if let value {
                out.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[value]))
            } else {
                out.bytes.append(contentsOf: "null".utf8)
            }
            if !types.note(name: name, in: table, at: position) { consistent = false }
            position += 1
            if try parser.peekByte() == UInt8(ascii: ",") { parser.index += 1 }
        }
        parser.index += 1
        out.close()
        return consistent
    }
}

/// A page's records in the compact form, with what they leave out.
struct CompactPage {
    /// The records array.
    var records: [UInt8]
    /// Each record type's fields' objects without their values.
    var fieldTypes: CompactFieldTypes
    /// The user record names of the stamps, which give their positions here.
    var users: [String]
}

/// The field types a compact page leaves out of its records: for each record type, each
/// field's object without its `value`, by the field's name as JSON text (so no name is
/// decoded, hashed or escaped again).
struct CompactFieldTypes {
    private struct Table {
        var recordType: String
        var names: [[UInt8]] = []
        var entries: [[UInt8]] = []
    }

    private var tables: [Table] = []
    private var current = -1
    /// The entry of the field being read, filled by the writer before ``note(name:in:at:)``.
    var entry: [UInt8] = []

    /// The table of `recordType`'s fields.
    mutating func table(for recordType: String) -> Int {
        if current >= 0, tables[current].recordType == recordType { return current }
        if let found = tables.firstIndex(where: { $0.recordType == recordType }) {
            current = found
        } else {
            tables.append(Table(recordType: recordType))
            current = tables.count - 1
        }
        return current
    }

    /// Notes ``entry`` as the field `name`'s in `table`, unless it has one; whether the entry
    /// matches. A record's fields come in name order, so the field at `position` of a record
    /// is usually the one at `position` of the table.
    mutating func note(name: UnsafeBufferPointer<UInt8>, in table: Int, at position: Int) -> Bool {
        func same(_ known: [UInt8]) -> Bool {
            known.count == name.count && known.withUnsafeBufferPointer { memcmp($0.baseAddress!, name.baseAddress!, name.count) == 0 }
        }
        let count = tables[table].names.count
        let index = position < count && same(tables[table].names[position]) ? position : tables[table].names.firstIndex(where: same)
        guard let index else {
            tables[table].names.append(Array(name))
            tables[table].entries.append(entry)
            return true
        }
        return tables[table].entries[index] == entry
    }

    /// `{"TYPE": {"NAME": ENTRY, …}, …}`, types and names sorted.
    func write(to writer: inout JSONWriter) {
        writer.open()
        for (offset, table) in tables.sorted(by: { $0.recordType < $1.recordType }).enumerated() {
            if offset > 0 { writer.bytes.append(UInt8(ascii: ",")) }
            writer.writeString(table.recordType)
            writer.bytes.append(UInt8(ascii: ":"))
            writer.open()
            for (position, index) in table.names.indices.sorted(by: { table.names[$0].lexicographicallyPrecedes(table.names[$1]) }).enumerated() {
                if position > 0 { writer.bytes.append(UInt8(ascii: ",")) }
                writer.bytes.append(contentsOf: table.names[index])
                writer.bytes.append(UInt8(ascii: ":"))
                writer.bytes.append(contentsOf: table.entries[index])
            }
            writer.close()
        }
        writer.close()
    }
}

extension JSONParser {
    /// Steps over the value at ``index`` without making it: for text the server wrote itself,
    /// so strings are only scanned for their closing quote (an escape's next byte skipped).
    /// Malformed structure throws ``JSONDirectMiss``.
    mutating func skipRaw() throws {
        skipWhitespace()
        guard index < bytes.count else { throw JSONDirectMiss() }
        switch bytes[index] {
        case UInt8(ascii: "\""):
            index += 1
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
            }
            guard index < bytes.count else { throw JSONDirectMiss() }
            index += 1
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            try enter()
            defer { depth -= 1 }
            let close = bytes[index] == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
            index += 1
            while try peekByte() != close {
                try skipRaw()
                switch try peekByte() {
                case UInt8(ascii: ","), UInt8(ascii: ":"): index += 1
                case close: break
                default: throw JSONDirectMiss()
                }
            }
            index += 1
        default:
            // A number or a literal: up to the next delimiter.
            let start = index
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: ":"), 0x20, 0x0A, 0x0D, 0x09: break
                default: index += 1; continue
                }
                break
            }
            guard index > start else { throw JSONDirectMiss() }
        }
    }
}

/// The answer to `changes/zone` as the server writes it: each zone's page as its store read it
/// (``StoredZoneChanges``, field text copied as is), or that zone's error. The writer of
/// ``ZoneChangesResponse`` too.
package struct StoredZoneChangesResponse: Sendable, Encodable, JSONDirectWritable {
    package var zones: [Result<StoredZoneChanges, RecordSyncError>]

    package init(zones: [Result<StoredZoneChanges, RecordSyncError>]) { self.zones = zones }

    package func encode(to encoder: any Encoder) throws { try JSONWire.encode(self, to: encoder) }

    /// `{"zones": [page or error, …]}`.
    func write(to writer: inout JSONWriter) throws {
        var first = true
        writer.open()
        writer.key("zones", first: &first)
        try writer.array(zones) { writer, zone in
            switch zone {
            case .success(let page): try page.write(to: &writer)
            case .failure(let error): try writer.write(JSONValueEncoder().encodeTree(ErrorBody(error)))
            }
        }
        writer.close()
    }
}

extension ZoneChangesResponse: JSONDirectWritable {
    func write(to writer: inout JSONWriter) throws {
        try StoredZoneChangesResponse(zones: zones.map { zone in
            switch zone {
            case .success(let changes): .success(StoredZoneChanges(changes))
            case .failure(let error): .failure(error)
            }
        }).write(to: &writer)
    }
}

// MARK: - Reading

extension ZoneChanges: Codable, JSONDirectWritable, JSONDirectDecodable {
    public init(from decoder: any Decoder) throws { self = try JSONWire.decode(Self.self, from: decoder) }
    public func encode(to encoder: any Encoder) throws { try JSONWire.encode(self, to: encoder) }

    func write(to writer: inout JSONWriter) throws {
        try writer.changePage(moreComing: moreComing, syncToken: syncToken, zoneID: zoneID, includedRecords: includedRecords) { writer in
            try writer.array(records) { try $1.write(to: &$0) }
        }
    }

    /// `{"includedRecords"?, "moreComing", "records", "syncToken", "zoneID"}`, in any order.
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

    /// A change page (`zoneID`, `records`, `syncToken` and `moreComing` required); with
    /// `keepingFieldsText`, each record's fields also as the text they arrived in, and with
    /// `skimmingFields` only as that text and its summary.
    static func page(_ parser: inout JSONParser, keepingFieldsText: Bool, skimmingFields: Bool = false) throws -> StoredZoneChanges {
        var zoneID: ZoneID?, entries: [StoredZoneChanges.Entry]?, token: String?, more: Bool?, included: [Record]?
        try parser.forEachMember { parser, key in
            switch key {
            case "zoneID": zoneID = try ZoneID(direct: &parser)
            case "includedRecords": included = try parser.takeNull() ? nil : try parser.directArray(of: Record.self)
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
        guard let zoneID else { throw DecodingError.missing("zoneID") }
        guard let entries else { throw DecodingError.missing("records") }
        guard let token else { throw DecodingError.missing("syncToken") }
        guard let more else { throw DecodingError.missing("moreComing") }
        return StoredZoneChanges(zoneID: zoneID, entries: entries, syncToken: token, moreComing: more, includedRecords: included)
    }
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

extension JSONParser {
    /// Steps over one value by its structure alone (strings and nesting), building nothing and
    /// checking little: for finding a later member quickly, and for the members of a field the
    /// client's skim leaves as text. Whoever needs the value decodes the text properly.
    mutating func skipValueStructurally() throws {
        var depth = 0
        skipWhitespace()
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                index += 1
                while true {
                    guard index < bytes.count else { throw error("unexpected end of the text in a string") }
                    let next = bytes[index]
                    index += next == UInt8(ascii: "\\") ? 2 : 1
                    if next == UInt8(ascii: "\"") { break }
                }
                if depth == 0 { return }
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                index += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard depth > 0 else { throw error("unexpected '\(Unicode.Scalar(bytes[index]))'") }
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
        throw error("unexpected end of the text")
    }

    private static let delimiters: Set<UInt8> = [UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: " "),
                                                 UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t")]
}

// MARK: - The compact form read back

extension ZoneChanges {
    /// A `records/changes` answer in RecordSync's compact form (`recordSyncCompact`) put back in
    /// CloudKit's form. Each record is an array, `[recordName, recordType, recordChangeTag,
    /// created, modified, fields]` (`[recordName, recordType]` if deleted), and gets the
    /// page's `zoneID`; each field gets its type's object from `recordSyncFieldTypes` with its
    /// value in it; each stamp (`[timestamp, user]` or `[timestamp, user, deviceID]`) becomes
    /// its object, the user named by position in `recordSyncUsers`; `null` stands for what a
    /// record lacks. An answer in CloudKit's form comes back as it is; `nil` if the page is
    /// not a well-formed compact page.
    public static func expandingCompactPage(_ page: JSONValue) -> JSONValue? {
        guard case .object(var members) = page else { return nil }
        guard let types = members.removeValue(forKey: "recordSyncFieldTypes") else { return members["recordSyncUsers"] == nil ? page : nil }
        guard case .object(let types) = types, case .array(let users)? = members.removeValue(forKey: "recordSyncUsers"),
              case .array(let records)? = members["records"], let zoneID = members["zoneID"] else { return nil }
        func stamp(_ value: JSONValue) -> JSONValue? {
            guard case .array(let parts) = value, parts.count == 2 || parts.count == 3, case .int(let timestamp) = parts[0],
                  case .int(let user) = parts[1], users.indices.contains(Int(user)), case .string = users[Int(user)] else { return nil }
            var object: [String: JSONValue] = ["timestamp": .int(timestamp), "userRecordName": users[Int(user)]]
            if parts.count == 3 {
                guard case .string = parts[2] else { return nil }
                object["deviceID"] = parts[2]
            }
            return .object(object)
        }
        var expanded: [JSONValue] = []
        expanded.reserveCapacity(records.count)
        for value in records {
            // A tombstone has two positions, a record six or more (a later release may add some).
            guard case .array(let parts) = value, parts.count == 2 || parts.count >= 6,
                  case .string = parts[0], case .string(let type) = parts[1] else { return nil }
            var record: [String: JSONValue] = ["recordName": parts[0], "recordType": parts[1], "zoneID": zoneID]
            guard parts.count >= 6 else {
                record["deleted"] = .bool(true)
                expanded.append(.object(record))
                continue
            }
            switch parts[2] {
            case .null: break
            case .string: record["recordChangeTag"] = parts[2]
            default: return nil
            }
            for (key, part) in [("created", parts[3]), ("modified", parts[4])] where part != .null {
                guard let object = stamp(part) else { return nil }
                record[key] = object
            }
            guard case .object(let fields) = parts[5] else { return nil }
            var typed: [String: JSONValue] = [:]
            for (name, value) in fields {
                guard case .object(var entry)? = types[type]?[name] else { return nil }
                entry["value"] = value
                typed[name] = .object(entry)
            }
            record["fields"] = .object(typed)
            expanded.append(.object(record))
        }
        members["records"] = .array(expanded)
        return .object(members)
    }
}
