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
        // The page's size, nearly: one allocation rather than a doubling chain copied each time.
        // (Never less than double what the writer has: `changes/zone` writes many pages into
        // one writer, and exact reservations would copy everything written for each page.)
        var size = 256
        for entry in entries { size += 320 + (entry.fieldsJSON?.utf8.count ?? 256) }
        let needed = writer.bytes.count + size
        if needed > writer.bytes.capacity { writer.bytes.reserveCapacity(max(needed, 2 * writer.bytes.capacity)) }
        let pageZone = WrittenZoneID(zoneID, like: writer)
        try writer.changePage(moreComing: moreComing, syncToken: syncToken, zoneID: zoneID, includedRecords: includedRecords) { writer in
            // Each entry read where it is, not copied out of the array (the copy retains every
            // string it holds).
            try entries.withUnsafeBufferPointer { entries in
                writer.bytes.append(UInt8(ascii: "["))
                for index in entries.indices {
                    if index > 0 { writer.bytes.append(UInt8(ascii: ",")) }
                    try entries[index].record.write(to: &writer, cascadedRecordNames: nil, fieldsJSON: entries[index].fieldsJSON, pageZone: pageZone)
                }
                writer.bytes.append(UInt8(ascii: "]"))
            }
        }
    }

    /// The page's records array in the compact form, and what it leaves out; `nil` when two
    /// records of one type give a field different types (which a zone's schema never lets
    /// happen), and the page must then be written in CloudKit's form.
    ///
    /// A record is an array: `[recordName, recordType, recordChangeTag, created, modified,
    /// fields]`, or `[recordName, recordType]` for a deleted record; a stamp is `[timestamp,
    /// user]` or `[timestamp, user, deviceID]`, `user` being a position in the page's users;
    /// `fields` is `{"NAME": value, …}`, each field's object replaced by its `value`, or with
    /// ``compactFieldsByPosition`` `[value, …]`, a value for each of the record type's fields in
    /// `recordSyncFieldTypes` (names in byte order), `null` where the record has none, none
    /// after its last. Values are written as in CloudKit's form by `writer`'s options. What a
    /// record lacks is `null`. A page holding a record with a `parent` or `share`, or a share's
    /// own keys (`shortGUID`, `participants` and the rest), which the compact form has no place
    /// for, is `nil` too, and by position one with a field object without a value or with a
    /// `null` one (which stands for no field there).
    func compactRecords(like writer: JSONWriter) throws -> CompactPage? {
        guard !entries.contains(where: { $0.record.parent != nil || $0.record.share != nil || $0.record.shareInfo != nil }) else { return nil }
        guard let first = try compactRecords(like: writer, types: CompactFieldTypes()) else { return nil }
        if !compactFieldsByPosition || first.fieldTypes.inByteOrder { return first }
        // A field first met after others that sort after it: the page again, each type's
        // fields known from the start and in byte order.
        let second = try compactRecords(like: writer, types: first.fieldTypes.sorted())
        return second?.fieldTypes.inByteOrder == true ? second : nil
    }

    private func compactRecords(like writer: JSONWriter, types: CompactFieldTypes) throws -> CompactPage? {
        var out = writer, fields = writer
        out.bytes = []
        out.bytes.reserveCapacity(entries.count * 200)
        fields.bytes = []
        var types = types
        types.byPosition = compactFieldsByPosition
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
            out.writeInteger(stamp.timestamp)
            out.bytes.append(UInt8(ascii: ","))
            out.writeInteger(Int64(user))
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
    /// them) as `{"NAME": value, …}`, or with `types.byPosition` as `[value, …]` by the
    /// fields' positions in `types`, each field's object without its `value` member going to
    /// `types`. Whether every field's object matched the one `types` had for it (and by position
    /// had a value other than `null`).
    private static func writeValues(of buffer: UnsafeBufferPointer<UInt8>, to out: inout JSONWriter, types: inout CompactFieldTypes,
                                    table: Int) throws -> Bool {
        var parser = JSONParser(bytes: buffer)
        var consistent = true
        let byPosition = types.byPosition
        guard try parser.peekByte() == UInt8(ascii: "{") else { throw JSONDirectMiss() }
        parser.index += 1
        out.bytes.append(byPosition ? UInt8(ascii: "[") : UInt8(ascii: "{"))
        var position = 0
        var next = 0  // by position: where the next value written goes
        while try parser.peekByte() != UInt8(ascii: "}") {
            // The name, as JSON text.
            let nameStart = parser.index
            guard buffer[nameStart] == UInt8(ascii: "\"") else { throw JSONDirectMiss() }
            try parser.skipRaw()
            let name = UnsafeBufferPointer(rebasing: buffer[nameStart..<parser.index])
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
            // By position, `null` stands for a field the record lacks.
            if byPosition, value == nil || (value!.count == 4 && memcmp(buffer.baseAddress! + value!.lowerBound, "null", 4) == 0) {
                consistent = false
            }
            let (index, matches) = types.note(name: name, in: table, at: position)
            if !matches { consistent = false }
            if byPosition {
                // Fields come in byte order; a table in byte order gives them rising positions
                // (otherwise the caller writes the page again, see compactRecords(like:)).
                if index >= next {
                    for skipped in next..<index { out.bytes.append(contentsOf: (skipped > 0 ? ",null" : "null").utf8) }
                    if index > 0 { out.bytes.append(UInt8(ascii: ",")) }
                    if let value { out.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[value])) }
                    next = index + 1
                } else {
                    types.outOfOrder = true
                }
            } else {
                if position > 0 { out.bytes.append(UInt8(ascii: ",")) }
                out.bytes.append(contentsOf: name)
                out.bytes.append(UInt8(ascii: ":"))
                if let value { out.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[value])) } else { out.bytes.append(contentsOf: "null".utf8) }
            }
            position += 1
            if try parser.peekByte() == UInt8(ascii: ",") { parser.index += 1 }
        }
        parser.index += 1
        out.bytes.append(byPosition ? UInt8(ascii: "]") : UInt8(ascii: "}"))
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
    /// Whether records give their fields by position (``StoredZoneChanges/compactFieldsByPosition``).
    var byPosition = false
    /// Set by the writer when a record's field has a position before its previous field's.
    var outOfOrder = false

    /// Whether every record's fields were written by rising positions and each table's names
    /// are in byte order, so positions match `recordSyncFieldTypes` as ``write(to:)`` writes it.
    var inByteOrder: Bool {
        !outOfOrder && tables.allSatisfy { table in
            zip(table.names, table.names.dropFirst()).allSatisfy { Self.precedes($0, $1) }
        }
    }

    /// Whether the name `a` (JSON text) comes before `b` in the byte order of their UTF-8: the
    /// text between the quotes, which is the name's UTF-8 when it holds no escape (by position,
    /// a name with one makes the page CloudKit's form: see ``note(name:in:at:)``).
    static func precedes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.dropFirst().dropLast().lexicographicallyPrecedes(b.dropFirst().dropLast())
    }

    /// These types with each table's names (and entries) in byte order.
    func sorted() -> CompactFieldTypes {
        var sorted = CompactFieldTypes()
        sorted.tables = tables.map { table in
            let order = table.names.indices.sorted { Self.precedes(table.names[$0], table.names[$1]) }
            return Table(recordType: table.recordType, names: order.map { table.names[$0] }, entries: order.map { table.entries[$0] })
        }
        return sorted
    }

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

    /// Notes ``entry`` as the field `name`'s in `table`, unless it has one; the field's
    /// position in the table and whether the entry matches (by position, a new name with an
    /// escape never does: its order would not be its text's). A record's fields come in name
    /// order, so the field at `position` of a record is usually the one at `position` of the
    /// table.
    mutating func note(name: UnsafeBufferPointer<UInt8>, in table: Int, at position: Int) -> (index: Int, matches: Bool) {
        func same(_ known: [UInt8]) -> Bool {
            known.count == name.count && known.withUnsafeBufferPointer { memcmp($0.baseAddress!, name.baseAddress!, name.count) == 0 }
        }
        let count = tables[table].names.count
        let index = position < count && same(tables[table].names[position]) ? position : tables[table].names.firstIndex(where: same)
        guard let index else {
            tables[table].names.append(Array(name))
            tables[table].entries.append(entry)
            return (count, !(byPosition && name.contains(UInt8(ascii: "\\"))))
        }
        return (index, tables[table].entries[index] == entry)
    }

    /// `{"TYPE": {"NAME": ENTRY, …}, …}`, types and names sorted.
    func write(to writer: inout JSONWriter) {
        writer.open()
        for (offset, table) in tables.sorted(by: { $0.recordType < $1.recordType }).enumerated() {
            if offset > 0 { writer.bytes.append(UInt8(ascii: ",")) }
            writer.writeString(table.recordType)
            writer.bytes.append(UInt8(ascii: ":"))
            writer.open()
            for (position, index) in table.names.indices.sorted(by: { Self.precedes(table.names[$0], table.names[$1]) }).enumerated() {
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

    /// A change page (`zoneID`, `records`, `syncToken` and `moreComing` required), in
    /// CloudKit's form or in the compact one (``CompactPageReader``); with
    /// `keepingFieldsText`, each record's fields also as the text they arrived in (in CloudKit's
    /// form), and with `skimmingFields` only as that text and its summary.
    static func page(_ parser: inout JSONParser, keepingFieldsText: Bool, skimmingFields: Bool = false) throws -> StoredZoneChanges {
        var zoneID: ZoneID?, entries: [StoredZoneChanges.Entry]?, token: String?, more: Bool?, included: [Record]?
        var compact: CompactPageReader?, users: [String]?
        var compactRecords: Int?  // where compact records met before their page's field types begin
        func readRecords(_ parser: inout JSONParser) throws {
            var read: [StoredZoneChanges.Entry] = []
            try parser.forEachElement { parser in
                if var reader = compact {
                    compact = nil  // not to copy its buffer on write
                    defer { compact = reader }
                    return read.append(try reader.entry(&parser, keepingFieldsText: keepingFieldsText, skimmingFields: skimmingFields))
                }
                let (record, _, text, summary) = try Record.direct(&parser, asResult: false, keepingFieldsText: keepingFieldsText,
                                                                  skimmingFields: skimmingFields)
                var entry = StoredZoneChanges.Entry(record: record, fieldsJSON: text)
                entry.fieldsSummary = summary
                read.append(entry)
            }
            entries = read
        }
        try parser.forEachMember { parser, key in
            switch key {
            case "zoneID": zoneID = try ZoneID(direct: &parser)
            case "includedRecords": included = try parser.takeNull() ? nil : try parser.directArray(of: Record.self)
            case "recordSyncFieldTypes": compact = try CompactPageReader(fieldTypes: &parser, users: users ?? [])
            case "recordSyncUsers":
                users = try parser.directStrings()
                compact?.users = users ?? []
            case "records":
                if compact == nil || users == nil, CompactPageReader.holdsCompactRecords(parser) {
                    // Compact records before the field types or users they need: read once
                    // those are.
                    compactRecords = parser.index
                    try parser.skipValueStructurally()
                } else {
                    try readRecords(&parser)
                }
            case "syncToken": token = try parser.directString()
            case "moreComing": more = try parser.directBool()
            default: try parser.skipValue()
            }
        }
        if let start = compactRecords {
            guard compact != nil else { throw DecodingError.missing("recordSyncFieldTypes") }
            guard users != nil else { throw DecodingError.missing("recordSyncUsers") }
            let end = parser.index
            parser.index = start
            do {
                try readRecords(&parser)
            } catch let error as DecodingError {
                throw error.under([TreeKey(stringValue: "records")])
            }
            parser.index = end
        }
        guard let zoneID else { throw DecodingError.missing("zoneID") }
        guard var entries else { throw DecodingError.missing("records") }
        guard let token else { throw DecodingError.missing("syncToken") }
        guard let more else { throw DecodingError.missing("moreComing") }
        if compact != nil {
            guard users != nil else { throw DecodingError.missing("recordSyncUsers") }
            for index in entries.indices { entries[index].record.zoneID = zoneID }
        }
        return StoredZoneChanges(zoneID: zoneID, entries: entries, syncToken: token, moreComing: more, includedRecords: included)
    }
}

/// Reads the records of a page in RecordSync's compact form (``StoredZoneChanges/compactRecords(like:)``)
/// as the entries of the same page in CloudKit's form: each record's fields are written back as
/// CloudKit's text (each field's object from `recordSyncFieldTypes` with its `value` put back
/// in key order, as the server stores and writes it) and then read as that text is in
/// CloudKit's form (``Record/readFields(_:keepingFieldsText:skimmingFields:)``), so a cache
/// keeps the same text whichever form the page came in. The records get their page's
/// `zoneID` once it is read.
struct CompactPageReader {
    /// A field's object without its value, as the text around it: `{BEFORE,"value":…,AFTER}`.
    struct FieldObject {
        var name: String
        /// The name as JSON text.
        var nameText: [UInt8] = []
        var before: [UInt8] = []
        var after: [UInt8] = []
        /// The field's type as its object gives it (`nil` if it gives none the reader knows).
        var type: FieldType?
    }

    /// Each record type's fields, by name in byte order: the positions of a record's values.
    var types: [String: [FieldObject]] = [:]
    /// The user record names the stamps give by position (`recordSyncUsers`).
    var users: [String]
    /// The fields text of the record being read.
    private var text = JSONWriter()

    /// Whether the array at the parser begins with an array: a compact page's records.
    static func holdsCompactRecords(_ parser: JSONParser) -> Bool {
        var probe = parser
        guard (try? probe.peekByte()) == UInt8(ascii: "[") else { return false }
        probe.index += 1
        return (try? probe.peekByte()) == UInt8(ascii: "[")
    }

    /// Reads `recordSyncFieldTypes`: `{"TYPE": {"NAME": {members but value}, …}, …}`.
    init(fieldTypes parser: inout JSONParser, users: [String]) throws {
        self.users = users
        var types: [String: [FieldObject]] = [:]
        try parser.forEachMember { parser, type in
            var fields: [FieldObject] = []
            try parser.forEachMember { parser, name in
                var field = FieldObject(name: name)
                var before = JSONWriter(), after = JSONWriter(), nameText = JSONWriter()
                nameText.writeString(name)
                var given: FieldType?, extensionType: FieldType?
                try parser.forEachMember { parser, key in
                    let start = parser.index
                    try parser.skipValue()
                    guard key != "value" else { return }
                    var member = JSONParser(bytes: parser.bytes)
                    member.index = start
                    switch key {
                    // Read as CloudKit's form reads them (a type it refuses is refused here).
                    case "type": given = try member.directFieldType()
                    case WireForm.typeExtensionKey: extensionType = try member.directExtensionType()
                    default: break
                    }
                    // Members sort by their keys' UTF-8 bytes, as the server writes them.
                    if key.utf8.lexicographicallyPrecedes("value".utf8) {
                        if !before.bytes.isEmpty { before.bytes.append(UInt8(ascii: ",")) }
                        before.writeString(key)
                        before.bytes.append(UInt8(ascii: ":"))
                        before.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: parser.bytes[start..<parser.index]))
                    } else {
                        after.bytes.append(UInt8(ascii: ","))
                        after.writeString(key)
                        after.bytes.append(UInt8(ascii: ":"))
                        after.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: parser.bytes[start..<parser.index]))
                    }
                }
                field.nameText = nameText.bytes
                field.before = before.bytes
                field.after = after.bytes
                field.type = WireForm.type(type: given, extensionType: extensionType)
                fields.append(field)
            }
            // Positions go by the names' bytes, whatever order the page gave them in.
            fields.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
            types[type] = fields
        }
        self.types = types
    }

    /// The record at the parser: `[recordName, recordType, recordChangeTag, created, modified,
    /// fields, …]`, or `[recordName, recordType]` for a deleted one.
    mutating func entry(_ parser: inout JSONParser, keepingFieldsText: Bool, skimmingFields: Bool) throws -> StoredZoneChanges.Entry {
        var position = 0
        var name = "", type = "", tag: String?, created: Stamp?, modified: Stamp?
        var fields: (fields: [String: FieldValue], text: String?, summary: FieldsSummary?) = ([:], nil, nil)
        try parser.forEachElement { parser in
            defer { position += 1 }
            switch position {
            case 0: name = try parser.directString()
            case 1: type = try parser.directString()
            case 2: tag = try parser.directOptionalString()
            case 3: created = try stamp(&parser)
            case 4: modified = try stamp(&parser)
            case 5: fields = try self.fields(&parser, of: type, keepingFieldsText: keepingFieldsText, skimmingFields: skimmingFields)
            default: try parser.skipValue()  // what a later release may add
            }
        }
        guard position == 2 || position >= 6 else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "a compact record has 2 positions (deleted) or 6, not \(position)"))
        }
        var entry = StoredZoneChanges.Entry(record: Record(recordName: name, recordType: type, recordChangeTag: tag, fields: fields.fields,
                                                           created: created, modified: modified, deleted: position == 2),
                                            fieldsJSON: fields.text)
        entry.fieldsSummary = fields.summary
        return entry
    }

    /// A stamp: `null`, `[timestamp, user]` or `[timestamp, user, deviceID]`.
    private func stamp(_ parser: inout JSONParser) throws -> Stamp? {
        if try parser.takeNull() { return nil }
        var position = 0, timestamp: Int64 = 0, user = "", deviceID: String?
        try parser.forEachElement { parser in
            defer { position += 1 }
            switch position {
            case 0: timestamp = try parser.directInt64()
            case 1:
                let index = try parser.directInt64()
                guard index >= 0, index < users.count else {
                    throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "a stamp names user \(index) of \(users.count) in recordSyncUsers"))
                }
                user = users[Int(index)]
            case 2: deviceID = try parser.directString()
            default: throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "a compact stamp has 2 or 3 positions"))
            }
        }
        guard position >= 2 else { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "a compact stamp has 2 or 3 positions")) }
        return Stamp(timestamp: timestamp, userRecordName: user, deviceID: deviceID)
    }

    /// A record's compact fields, `{"NAME": value, …}` or `[value, …]` by position, written as
    /// CloudKit's text and read as it. A skimming reader's summary comes from the fields' types
    /// in `recordSyncFieldTypes` without reading the text again, only references and locations
    /// being decoded.
    private mutating func fields(_ parser: inout JSONParser, of type: String, keepingFieldsText: Bool, skimmingFields: Bool)
        throws -> (fields: [String: FieldValue], text: String?, summary: FieldsSummary?) {
        guard let objects = types[type] else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "recordSyncFieldTypes has no record type \(NameRules.quoted(type))"))
        }
        text.bytes.removeAll(keepingCapacity: true)
        text.open()
        let summarising = keepingFieldsText && skimmingFields
        var summaryTypes: [(field: String, type: FieldType)] = [], holding: [(field: String, value: FieldValue)] = []
        var locations: [(key: String, value: FieldValue)] = []
        if summarising { summaryTypes.reserveCapacity(objects.count) }
        var rising = true  // each field after the one before it, so no name twice
        var next = 0
        func append(_ found: Int, value: Range<Int>, of parser: JSONParser) throws {
            if found < next { rising = false }
            next = found + 1
            let object = objects[found]
            if text.bytes.count > 1 { text.bytes.append(UInt8(ascii: ",")) }
            text.bytes.append(contentsOf: object.nameText)
            text.bytes.append(UInt8(ascii: ":"))
            let start = text.bytes.count
            text.bytes.append(UInt8(ascii: "{"))
            text.bytes.append(contentsOf: object.before)
            if !object.before.isEmpty { text.bytes.append(UInt8(ascii: ",")) }
            text.bytes.append(contentsOf: #""value":"#.utf8)
            text.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: parser.bytes[value]))
            text.bytes.append(contentsOf: object.after)
            text.bytes.append(UInt8(ascii: "}"))
            guard summarising else { return }
            // Decoded only when it holds references or a location, as FieldsSummary(skimming:).
            if let known = object.type, known.scalar != .reference, known != FieldType(.location) {
                summaryTypes.append((object.name, known))
            } else {
                let decoded = try text.bytes.withUnsafeBufferPointer { bytes in
                    var field = JSONParser(bytes: bytes)
                    field.index = start
                    return try FieldValue(direct: &field)
                }
                summaryTypes.append((object.name, decoded.type))
                if !decoded.references.isEmpty { holding.append((object.name, decoded)) }
                if case .location = decoded { locations.append((object.name, decoded)) }
            }
        }
        if try parser.peekByte() == UInt8(ascii: "[") {
            var position = 0
            try parser.forEachElement { parser in
                defer { position += 1 }
                guard position < objects.count else {
                    throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "a record of \(NameRules.quoted(type)) has a value at position \(position); recordSyncFieldTypes gives it \(objects.count) fields"))
                }
                if try parser.takeNull() { return }
                // The value is copied as text, and read as such with the rest below.
                let start = parser.index
                try parser.skipValueStructurally()
                try append(position, value: start..<parser.index, of: parser)
            }
        } else {
            var ahead = 0  // the record's fields come in the table's order, some missing
            try parser.forEachMember { parser, name in
                let found: Int
                if let at = objects[ahead...].firstIndex(where: { $0.name == name }) {
                    found = at
                } else if let anywhere = objects.firstIndex(where: { $0.name == name }) {
                    found = anywhere
                } else {
                    throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "recordSyncFieldTypes has no field \(NameRules.quoted(name)) of \(NameRules.quoted(type))"))
                }
                ahead = found + 1
                let start = parser.index
                try parser.skipValueStructurally()
                try append(found, value: start..<parser.index, of: parser)
            }
        }
        text.close()
        if summarising && rising {
            return ([:], String(decoding: text.bytes, as: UTF8.self),
                    FieldsSummary(types: summaryTypes, references: Record.references(in: holding), locations: locations))
        }
        return try text.bytes.withUnsafeBufferPointer { bytes in
            var fieldsParser = JSONParser(bytes: bytes)
            return try Record.readFields(&fieldsParser, keepingFieldsText: keepingFieldsText, skimmingFields: skimmingFields)
        }
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
    /// page's `zoneID`; `fields` is an object of bare values or (version 2) an array of them by
    /// position in the type's fields of `recordSyncFieldTypes`, names in byte order, `null` for
    /// none; each field gets its type's object from `recordSyncFieldTypes` with its value in it; each stamp (`[timestamp, user]` or `[timestamp, user, deviceID]`) becomes
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
            var fields: [(String, JSONValue)] = []
            switch parts[5] {
            case .object(let named): fields = Array(named)
            case .array(let values):
                // By position in the type's fields, their names in byte order; null for none.
                guard case .object(let known)? = types[type] else { return nil }
                let names = known.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                guard values.count <= names.count else { return nil }
                fields = zip(names, values).filter { $0.1 != .null }
            default: return nil
            }
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
