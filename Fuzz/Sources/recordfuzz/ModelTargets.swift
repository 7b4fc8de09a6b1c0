// Targets over RecordModel's parsers: JSON, the modify and query bodies, the predicate format,
// change tokens and continuation markers, gzip.
import Foundation
@testable import RecordModel

/// A schema with a field of each kind (lists too), and a referenced type, for key paths.
let schema = QuerySchema(
    fields: ["title": FieldType(.string), "year": FieldType(.int64), "price": FieldType(.double), "at": FieldType(.timestamp),
             "artist": FieldType(.reference), "place": FieldType(.location), "tags": FieldType(.string, isList: true),
             "artists": FieldType(.reference, isList: true), "done": FieldType(.boolean)],
    types: ["Artist": ["name": FieldType(.string), "born": FieldType(.int64), "teacher": FieldType(.reference)]])

func fuzzJSON(_ data: Data) {
    if let value = try? JSONValue.parse(data) {
        guard let text = try? value.serialized(), let again = try? JSONValue.parse(text) else { fatalError("a parsed value did not serialise and parse again") }
        if again != value, !value.holdsNaNOrLossyNumber { fatalError("round trip changed the value: \(value) → \(again)") }
    }
}

/// The reader of `records/modify` bodies (`Wire+Modify.swift`, reading the bytes) against this
/// target's own reading of the same text, over the tree `JSONValue.parse` makes of it
/// (`modifyRequest(_:)`, below, as Apple's reference describes the body). The two share only
/// the parser's handling of strings and numbers and `WireForm`'s names: a member the reader
/// drops, misreads or takes where it should refuse makes them differ.
func fuzzModify(_ data: Data) {
    let read = try? JSONValueDecoder().decode(ModifyRecordsRequest.self, from: data)
    let expected = (try? JSONValue.parse(data)).flatMap(modifyRequest)
    guard read == expected else {
        fatalError("the reader read \(read.map { "\($0)" } ?? "nothing") where the reference reading gives \(expected.map { "\($0)" } ?? "nothing")")
    }
}

/// A `records/modify` body read from its tree, or `nil` if it is not one.
private func modifyRequest(_ body: JSONValue) -> ModifyRecordsRequest? {
    /// `.some(nil)` for absent or null, `nil` for a value of another kind.
    func string(_ value: JSONValue?) -> String?? {
        switch value {
        case nil, .null?: return .some(nil)
        case .string(let text)?: return .some(text)
        default: return nil
        }
    }
    func flag(_ value: JSONValue?) -> Bool?? {
        switch value {
        case nil, .null?: return .some(nil)
        case .bool(let flag)?: return .some(flag)
        default: return nil
        }
    }
    func strings(_ value: JSONValue?) -> [String]?? {
        switch value {
        case nil, .null?: return .some(nil)
        case .array(let elements)?:
            var texts: [String] = []
            for element in elements {
                guard case .string(let text) = element else { return nil }
                texts.append(text)
            }
            return .some(texts)
        default: return nil
        }
    }
    func zoneID(_ value: JSONValue?) -> ZoneID?? {
        switch value {
        case nil, .null?: return .some(nil)
        case .object(let members)?:
            guard case .string(let name)? = members["zoneName"], let owner = string(members["ownerRecordName"]) else { return nil }
            return .some(ZoneID(zoneName: name, ownerRecordName: owner))
        default: return nil
        }
    }
    func field(_ value: JSONValue) -> RawFieldValue? {
        guard case .object(let members) = value, let typeName = string(members["type"]) else { return nil }
        var type: FieldType?
        if let typeName {
            guard let known = FieldType(rawValue: typeName) else { return nil }
            type = known
        }
        var finer: FieldType?
        if case .string(let name)? = members[WireForm.typeExtensionKey] { finer = FieldType(rawValue: name) }
        return RawFieldValue(value: members["value"] ?? .null, type: WireForm.type(type: type, extensionType: finer))
    }
    func payload(_ value: JSONValue) -> RecordPayload? {
        guard case .object(let members) = value, let name = string(members["recordName"]), let type = string(members["recordType"]),
              let tag = string(members["recordChangeTag"]) else { return nil }
        var fields: [String: RawFieldValue]?
        switch members["fields"] {
        case nil, .null?: break
        case .object(let given)?:
            var read: [String: RawFieldValue] = [:]
            for (key, element) in given {
                guard let value = field(element) else { return nil }
                read[key] = value
            }
            fields = read
        default: return nil
        }
        // A share record's keys: `forRecord` an object with a string `recordName`, the
        // permissions and participants as their Codable forms read them.
        var share = ShareEdit()
        switch members["forRecord"] {
        case nil, .null?: break
        case .object(let root)?:
            guard case .string(let rootName)? = root["recordName"] else { return nil }
            share.forRecord = rootName
        default: return nil
        }
        switch members["publicPermission"] {
        case nil, .null?: break
        case .string(let permission)?:
            guard let known = SharePermission(rawValue: permission) else { return nil }
            share.publicPermission = known
        default: return nil
        }
        if let participants = members["participants"], participants != .null {
            guard let read = try? JSONValueDecoder().decode([ShareParticipant].self, from: participants) else { return nil }
            share.participants = read
        }
        // `parent`: null removes it; an object names it by its string `recordName` (its other
        // members are stepped over).
        var parent: RecordPayload.ParentChange?
        switch members["parent"] {
        case nil: break
        case .null?: parent = .remove
        case .object(let given)?:
            guard case .string(let parentName)? = given["recordName"] else { return nil }
            parent = .set(parentName)
        default: return nil
        }
        return RecordPayload(recordName: name, recordType: type, recordChangeTag: tag, fields: fields, share: share.isEmpty ? nil : share, parent: parent)
    }
    func operation(_ value: JSONValue) -> RecordOperation? {
        guard case .object(let members) = value, case .string(let typeName)? = members["operationType"],
              let type = OperationType(rawValue: typeName), let record = members["record"], record != .null,
              let payload = payload(record), let keys = strings(members["desiredKeys"]) else { return nil }
        return RecordOperation(type, payload, desiredKeys: keys)
    }
    guard case .object(let members) = body, case .array(let given)? = members["operations"],
          let zone = zoneID(members["zoneID"]), let atomic = flag(members["atomic"]),
          let keys = strings(members["desiredKeys"]), let numbersAsStrings = flag(members["numbersAsStrings"]) else { return nil }
    var operations: [RecordOperation] = []
    for element in given {
        guard let read = operation(element) else { return nil }
        operations.append(read)
    }
    var request = ModifyRecordsRequest(operations: operations, zoneID: zone, atomic: atomic, desiredKeys: keys)
    request.numbersAsStrings = numbersAsStrings
    return request
}

func fuzzQuery(_ data: Data) {
    if let request = try? JSONValueDecoder().decode(QueryRecordsRequest.self, from: data) {
        _ = try? FilterPlan(request.query.filterBy ?? [], schema: schema)
    }
}

func fuzzPredicate(_ data: Data) {
    _ = try? RecordPredicate(format: String(decoding: data, as: UTF8.self), argumentArray: ["a", 1, 2.5])
}

func fuzzTokens(_ data: Data) {
    let text = String(decoding: data, as: UTF8.self)
    _ = try? ZoneChangeToken(string: text)
    _ = try? DatabaseChangeToken(string: text)
    _ = try? ContinuationMarker(string: text)
}

func fuzzGzip(_ data: Data) {
    _ = try? Gzip.decompress(data, limit: 1 << 20)
}

extension JSONValue {
    /// Whether a number in it may not come back the same through text (doubles print their
    /// shortest form, which parses back equal; kept as a guard for values like -0).
    var holdsNaNOrLossyNumber: Bool {
        switch self {
        case .double(let value): value == 0 || !value.isFinite
        case .array(let elements): elements.contains { $0.holdsNaNOrLossyNumber }
        case .object(let members): members.values.contains { $0.holdsNaNOrLossyNumber }
        default: false
        }
    }
}

func fuzzCompact(_ data: Data) {
    let text = String(decoding: data, as: UTF8.self)
    let zone = ZoneID(zoneName: "Z", ownerRecordName: "_owner"), stamp = Stamp(timestamp: 1, userRecordName: "_owner")
    let other = Stamp(timestamp: 2, userRecordName: "_other", deviceID: "device")
    func record(_ name: String, _ type: String, fields: String?) -> StoredZoneChanges.Entry {
        StoredZoneChanges.Entry(record: Record(recordName: name, recordType: type, zoneID: zone, recordChangeTag: "1", created: stamp, modified: other),
                                fieldsJSON: fields)
    }
    // Two records of a type with the text, one of another type, and a tombstone.
    var page = StoredZoneChanges(zoneID: zone, entries: [
        record("a", "T", fields: text), record("b", "T", fields: text), record("c", "U", fields: text),
        StoredZoneChanges.Entry(record: Record(recordName: "d", recordType: "T", zoneID: zone, deleted: true)),
    ], syncToken: "token", moreComing: false)
    let cloudKit = try? JSONValueEncoder().encode(page)
    page.compact = true
    let objects = try? JSONValueEncoder().encode(page)
    page.compactFieldsByPosition = true
    let positions = try? JSONValueEncoder().encode(page)
    // Records whose texts differ (the text and its first half): never a crash.
    var mixed = StoredZoneChanges(zoneID: zone, entries: [
        record("a", "T", fields: text), record("b", "T", fields: String(decoding: data.prefix(data.count / 2), as: UTF8.self)),
    ], syncToken: "token", moreComing: false)
    mixed.compact = true
    _ = try? JSONValueEncoder().encode(mixed)
    mixed.compactFieldsByPosition = true
    _ = try? JSONValueEncoder().encode(mixed)
    // Any text read as a page, in either form: never a crash.
    for skimming in [false, true] { _ = try? StoredZoneChanges.decode(data, skimmingFields: skimming) }
    // The property holds for text in the server's own form (canonical JSON, as its writer
    // makes it): an object of field objects, each with a value.
    func serverForm(_ bytes: Data) -> Bool {
        guard let value = try? JSONValue.parse(bytes), case .object(let fields) = value,
              fields.values.allSatisfy({ if case .object(let field) = $0 { return field["value"] != nil } else { return false } }),
              let canonical = try? value.serialized() else { return false }
        return canonical == bytes
    }
    guard serverForm(data) else { return }
    // Both versions of the compact form: fields as objects (1) and by position (2).
    for compact in [objects, positions] {
        guard let cloudKit, let compact, let expected = try? JSONValue.parse(cloudKit), let written = try? JSONValue.parse(compact) else {
            fatalError("a page of field text in the server's form did not encode to JSON")
        }
        if written["recordSyncFieldTypes"] == nil {
            if written != expected { fatalError("a compact page fell back to another page than CloudKit's") }
        } else if ZoneChanges.expandingCompactPage(written) != expected {
            fatalError("the compact page is not CloudKit's without its repeats: \(text)")
        }
        // The client's reader takes the compact page back to CloudKit's, records and fields
        // text alike, whether it decodes the fields or skims them.
        for skimming in [false, true] {
            let fromCloudKit = try? StoredZoneChanges.decode(cloudKit, skimmingFields: skimming)
            let fromCompact = try? StoredZoneChanges.decode(compact, skimmingFields: skimming)
            guard let fromCloudKit else { continue }
            guard let fromCompact, fromCompact.entries.map(\.record) == fromCloudKit.entries.map(\.record),
                  fromCompact.entries.map(\.fieldsJSON) == fromCloudKit.entries.map(\.fieldsJSON),
                  fromCompact.entries.map({ $0.fieldsSummary?.types.map(\.type) }) == fromCloudKit.entries.map({ $0.fieldsSummary?.types.map(\.type) }),
                  fromCompact.entries.map({ $0.fieldsSummary?.types.map(\.field) }) == fromCloudKit.entries.map({ $0.fieldsSummary?.types.map(\.field) }),
                  fromCompact.entries.map({ $0.fieldsSummary?.references.map(\.reference) }) == fromCloudKit.entries.map({ $0.fieldsSummary?.references.map(\.reference) }),
                  fromCompact.entries.map({ $0.fieldsSummary?.locations.map(\.key) }) == fromCloudKit.entries.map({ $0.fieldsSummary?.locations.map(\.key) })
            else { fatalError("the compact page reads otherwise than CloudKit's (skimming: \(skimming)): \(text)") }
        }
    }
}

// MARK: The schema language

func fuzzSchema(_ data: Data) {
    guard let schema = try? CloudKitSchema.read(String(decoding: data, as: UTF8.self)) else { return }
    let written = schema.written
    guard let again = try? CloudKitSchema.read(written), again == schema, again.written == written else {
        fatalError("a schema does not read back from what it writes: \(written)")
    }
}
