import Foundation

// Direct JSON writing of the types every record passes through: bytes straight from the value,
// keys in sorted order (except a change page's, see `changePage`), with no intermediate
// ``JSONValue`` tree (whose dictionaries cost more than the writing). ``JSONValueEncoder/encode(_:)`` uses it for these types; `JSONTests` checks
// that the output equals the `Codable` form.

/// A type that writes its own JSON (keys sorted, compact).
protocol JSONDirectWritable {
    func write(to writer: inout JSONWriter) throws
}

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

extension ZoneID: JSONDirectWritable {
    func write(to writer: inout JSONWriter) {
        var first = true
        writer.open()
        if let ownerRecordName { writer.key("ownerRecordName", first: &first); writer.writeString(ownerRecordName) }
        writer.key("zoneName", first: &first); writer.writeString(zoneName)
        writer.close()
    }
}

extension Stamp: JSONDirectWritable {
    func write(to writer: inout JSONWriter) {
        var first = true
        writer.open()
        if let deviceID { writer.key("deviceID", first: &first); writer.writeString(deviceID) }
        writer.key("timestamp", first: &first); writer.bytes.append(contentsOf: String(timestamp).utf8)
        writer.key("userRecordName", first: &first); writer.writeString(userRecordName)
        writer.close()
    }
}

extension FieldValue: JSONDirectWritable {
    func write(to writer: inout JSONWriter) throws {
        var first = true
        writer.open()
        let wire = WireForm.type(type)
        if let extensionType = wire.extensionType { writer.key("recordSyncType", first: &first); writer.writeString(extensionType.rawValue) }
        writer.key("type", first: &first); writer.writeString(wire.type.rawValue)
        writer.key("value", first: &first); try writeValue(to: &writer)
        writer.close()
    }

    /// Writes ``json`` (the same bytes), without building it for the common types.
    private func writeValue(to writer: inout JSONWriter) throws {
        switch self {
        case .string(let value):
            writer.writeString(value)
        case .int64(let value) where writer.numbersAsStrings:
            writer.writeString(String(value))
        case .int64(let value), .timestamp(let value):
            writer.bytes.append(contentsOf: String(value).utf8)
        case .double(let value) where writer.numbersAsStrings:
            var number = JSONWriter()
            try number.write(.double(value))
            writer.writeString(String(decoding: number.bytes, as: UTF8.self))
        case .double(let value):
            try writer.write(.double(value))
        case .boolean(let value):
            writer.bytes.append(value ? UInt8(ascii: "1") : UInt8(ascii: "0"))
        case .reference(let value) where value.zoneID == nil:
            var first = true
            writer.open()
            let action = WireForm.wire(value.action)
            writer.key("action", first: &first); writer.writeString(action.action)
            writer.key("recordName", first: &first); writer.writeString(value.recordName)
            if let finer = action.extension { writer.key("recordSyncAction", first: &first); writer.writeString(finer) }
            writer.close()
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
}

extension RawFieldValue: JSONDirectWritable {
    func write(to writer: inout JSONWriter) throws {
        var first = true
        writer.open()
        if let type {
            let wire = WireForm.type(type)
            if let extensionType = wire.extensionType { writer.key("recordSyncType", first: &first); writer.writeString(extensionType.rawValue) }
            writer.key("type", first: &first); writer.writeString(wire.type.rawValue)
        }
        writer.key("value", first: &first); try writer.write(value)
        writer.close()
    }
}

extension Record: JSONDirectWritable {
    func write(to writer: inout JSONWriter) throws {
        try write(to: &writer, cascadedRecordNames: nil)
    }

    /// `fieldsJSON`, when given, is written as the record's fields instead of ``fields``: the
    /// stored wire form, copied as is (see ``StoredZoneChanges``).
    func write(to writer: inout JSONWriter, cascadedRecordNames: [String]?, fieldsJSON: String? = nil) throws {
        try write(to: &writer, cascadedRecordNames: cascadedRecordNames, withZoneID: true) { writer in
            try writeFields(to: &writer, fieldsJSON: fieldsJSON)
        }
    }

    /// The record's fields in their wire form: `fieldsJSON` as is, or else ``fields``.
    func writeFields(to writer: inout JSONWriter, fieldsJSON: String?) throws {
        if let fieldsJSON {
            writer.bytes.append(contentsOf: fieldsJSON.utf8)
        } else {
            try writer.sortedObject(fields) { try $1.write(to: &$0) }
        }
    }

    /// The record with its fields written by `writeFields`, and its `zoneID` only `withZoneID`.
    func write(to writer: inout JSONWriter, cascadedRecordNames: [String]?, withZoneID: Bool,
               fields writeFields: (inout JSONWriter) throws -> Void) throws {
        var first = true
        writer.open()
        if let cascadedRecordNames {
            writer.key("cascadedRecordNames", first: &first)
            writer.array(cascadedRecordNames) { $0.writeString($1) }
        }
        if !deleted, let created { writer.key("created", first: &first); created.write(to: &writer) }
        if deleted { writer.key("deleted", first: &first); writer.bytes.append(contentsOf: "true".utf8) }
        if !deleted {
            writer.key("fields", first: &first)
            try writeFields(&writer)
            if let modified { writer.key("modified", first: &first); modified.write(to: &writer) }
            if let recordChangeTag { writer.key("recordChangeTag", first: &first); writer.writeString(recordChangeTag) }
        }
        writer.key("recordName", first: &first); writer.writeString(recordName)
        writer.key("recordType", first: &first); writer.writeString(recordType)
        if withZoneID, let zoneID { writer.key("zoneID", first: &first); zoneID.write(to: &writer) }
        writer.close()
    }
}

extension RecordResult: JSONDirectWritable {
    func write(to writer: inout JSONWriter) throws {
        switch self {
        case .success(let record, let cascaded): try record.write(to: &writer, cascadedRecordNames: cascaded)
        case .failure: try writer.write(try jsonTree())
        }
    }
}

extension RecordsResponse: JSONDirectWritable {
    func write(to writer: inout JSONWriter) throws {
        var first = true
        writer.open()
        if let includedRecords {
            writer.key("includedRecords", first: &first)
            try writer.array(includedRecords) { try $1.write(to: &$0) }
        }
        writer.key("records", first: &first)
        try writer.array(records) { try $1.write(to: &$0) }
        writer.close()
    }
}

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
        key("moreComing", first: &first); bytes.append(contentsOf: (moreComing ? "true" : "false").utf8)
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

extension ZoneChanges: JSONDirectWritable {
    func write(to writer: inout JSONWriter) throws {
        try writer.changePage(moreComing: moreComing, syncToken: syncToken, zoneID: zoneID, includedRecords: includedRecords) { writer in
            try writer.array(records) { try $1.write(to: &$0) }
        }
    }
}

extension StoredZoneChanges: JSONDirectWritable {
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
    /// CloudKit's form by `writer`'s options. What a record lacks is `null`.
    func compactRecords(like writer: JSONWriter) throws -> CompactPage? {
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

extension QueryRecordsResponse: JSONDirectWritable {
    func write(to writer: inout JSONWriter) throws {
        var first = true
        writer.open()
        if let continuationMarker { writer.key("continuationMarker", first: &first); writer.writeString(continuationMarker) }
        if let includedRecords {
            writer.key("includedRecords", first: &first)
            try writer.array(includedRecords) { try $1.write(to: &$0) }
        }
        writer.key("records", first: &first)
        try writer.array(records) { try $1.write(to: &$0) }
        writer.close()
    }
}

extension RecordPayload: JSONDirectWritable {
    func write(to writer: inout JSONWriter) throws {
        var first = true
        writer.open()
        if let fields { writer.key("fields", first: &first); try writer.sortedObject(fields) { try $1.write(to: &$0) } }
        if let recordChangeTag { writer.key("recordChangeTag", first: &first); writer.writeString(recordChangeTag) }
        if let recordName { writer.key("recordName", first: &first); writer.writeString(recordName) }
        if let recordType { writer.key("recordType", first: &first); writer.writeString(recordType) }
        writer.close()
    }
}

extension RecordOperation: JSONDirectWritable {
    func write(to writer: inout JSONWriter) throws {
        var first = true
        writer.open()
        if let desiredKeys { writer.key("desiredKeys", first: &first); writer.array(desiredKeys) { $0.writeString($1) } }
        writer.key("operationType", first: &first); writer.writeString(operationType.rawValue)
        writer.key("record", first: &first); try record.write(to: &writer)
        writer.close()
    }
}

/// An operation with its JSON, encoded once: the client sizes each operation against its
/// request limits and then sends those same bytes.
package struct EncodedOperation: Sendable {
    package let operation: RecordOperation
    /// The operation's JSON; empty when it could not be encoded (see ``failure``).
    package let json: [UInt8]
    /// Why the operation could not be encoded (a non-finite number, say), or `nil`.
    package let failure: String?

    package init(_ operation: RecordOperation) {
        var writer = JSONWriter()
        self.operation = operation
        do {
            try operation.write(to: &writer)
            self.json = writer.bytes
            self.failure = nil
        } catch {
            self.json = []
            self.failure = "\(error)"
        }
    }
}

/// A `records/modify` body whose operations are already encoded; written as the
/// ``ModifyRecordsRequest`` it stands for, byte for byte.
package struct EncodedModifyRecordsRequest: Sendable, Encodable, JSONDirectWritable {
    package var operations: [EncodedOperation]
    package var zoneID: ZoneID?
    package var atomic: Bool?

    package init(operations: [EncodedOperation], zoneID: ZoneID?, atomic: Bool?) {
        self.operations = operations
        self.zoneID = zoneID
        self.atomic = atomic
    }

    /// The request it stands for.
    package var request: ModifyRecordsRequest {
        ModifyRecordsRequest(operations: operations.map(\.operation), zoneID: zoneID, atomic: atomic)
    }

    package func encode(to encoder: any Encoder) throws {
        try request.encode(to: encoder)
    }

    func write(to writer: inout JSONWriter) throws {
        if let failure = operations.lazy.compactMap(\.failure).first {
            throw EncodingError.invalidValue(operations, .init(codingPath: [], debugDescription: failure))
        }
        var first = true
        writer.open()
        if let atomic { writer.key("atomic", first: &first); writer.bytes.append(contentsOf: (atomic ? "true" : "false").utf8) }
        writer.key("operations", first: &first)
        writer.array(operations) { $0.bytes.append(contentsOf: $1.json) }
        if let zoneID { writer.key("zoneID", first: &first); zoneID.write(to: &writer) }
        writer.close()
    }
}

extension ModifyRecordsRequest: JSONDirectWritable {
    func write(to writer: inout JSONWriter) throws {
        var first = true
        writer.open()
        if let atomic { writer.key("atomic", first: &first); writer.bytes.append(contentsOf: (atomic ? "true" : "false").utf8) }
        if let desiredKeys { writer.key("desiredKeys", first: &first); writer.array(desiredKeys) { $0.writeString($1) } }
        if let numbersAsStrings { writer.key("numbersAsStrings", first: &first); writer.bytes.append(contentsOf: (numbersAsStrings ? "true" : "false").utf8) }
        writer.key("operations", first: &first)
        try writer.array(operations) { try $1.write(to: &$0) }
        if let zoneID { writer.key("zoneID", first: &first); zoneID.write(to: &writer) }
        writer.close()
    }
}
