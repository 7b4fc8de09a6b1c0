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
