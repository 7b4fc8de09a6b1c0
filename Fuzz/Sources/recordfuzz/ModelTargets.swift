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

func fuzzModify(_ data: Data) {
    let decoded = try? JSONValueDecoder().decode(ModifyRecordsRequest.self, from: data)
    let direct = data.withUnsafeBytes { raw in
        try? JSONParser.decodeDirectly(ModifyRecordsRequest.self, from: UnsafeBufferPointer(start: raw.baseAddress?.assumingMemoryBound(to: UInt8.self), count: raw.count))
    }
    if let decoded, let direct, decoded != direct { fatalError("the direct decoder read another request") }
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
    let compact = try? JSONValueEncoder().encode(page)
    // Records whose texts differ (the text and its first half): never a crash.
    var mixed = StoredZoneChanges(zoneID: zone, entries: [
        record("a", "T", fields: text), record("b", "T", fields: String(decoding: data.prefix(data.count / 2), as: UTF8.self)),
    ], syncToken: "token", moreComing: false)
    mixed.compact = true
    _ = try? JSONValueEncoder().encode(mixed)
    // The property holds for text in the server's own form (canonical JSON, as its writer
    // makes it): an object of field objects, each with a value.
    func serverForm(_ bytes: Data) -> Bool {
        guard let value = try? JSONValue.parse(bytes), case .object(let fields) = value,
              fields.values.allSatisfy({ if case .object(let field) = $0 { return field["value"] != nil } else { return false } }),
              let canonical = try? value.serialized() else { return false }
        return canonical == bytes
    }
    guard serverForm(data) else { return }
    guard let cloudKit, let compact, let expected = try? JSONValue.parse(cloudKit), let written = try? JSONValue.parse(compact) else {
        fatalError("a page of field text in the server's form did not encode to JSON")
    }
    if written["recordSyncFieldTypes"] == nil {
        if written != expected { fatalError("a compact page fell back to another page than CloudKit's") }
    } else if ZoneChanges.expandingCompactPage(written) != expected {
        fatalError("the compact page is not CloudKit's without its repeats: \(text)")
    }
}
