// libFuzzer harnesses for RecordModel's parsers of outside input, compiled together with
// RecordModel's sources by `Scripts/fuzz` (swiftc -sanitize=fuzzer,address). One binary holds
// every target; RECORDSYNC_FUZZ_TARGET picks one. Each target must never crash, whatever the
// bytes; where a parse succeeds, what it produced must round-trip.
import Foundation

enum FuzzTarget: String, CaseIterable {
    /// `JSONValue.parse`: any bytes; a parsed value serialises and parses back to itself.
    case json
    /// A `records/modify` body, as the server decodes it (`JSONValueDecoder`) and as the direct
    /// path does; both must agree when both accept it.
    case modify
    /// A `records/query` body (the query grammar: comparators, key paths, placeholders of
    /// values), then its filters planned against an empty schema as the cache would.
    case query
    /// `RecordPredicate(format:)`: the predicate format language.
    case predicate
    /// Zone and database change tokens and continuation markers from strings.
    case tokens
    /// gzip request bodies, inflated to at most 1 MiB.
    case gzip
}

let target: FuzzTarget = {
    guard let name = ProcessInfo.processInfo.environment["RECORDSYNC_FUZZ_TARGET"], let target = FuzzTarget(rawValue: name) else {
        fatalError("set RECORDSYNC_FUZZ_TARGET to one of \(FuzzTarget.allCases.map(\.rawValue))")
    }
    return target
}()

/// A schema with a field of each kind (lists too), and a referenced type, for key paths.
let schema = QuerySchema(
    fields: ["title": FieldType(.string), "year": FieldType(.int64), "price": FieldType(.double), "at": FieldType(.timestamp),
             "artist": FieldType(.reference), "place": FieldType(.location), "tags": FieldType(.string, isList: true),
             "artists": FieldType(.reference, isList: true), "done": FieldType(.boolean)],
    types: ["Artist": ["name": FieldType(.string), "born": FieldType(.int64), "teacher": FieldType(.reference)]])

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    switch target {
    case .json:
        if let value = try? JSONValue.parse(data) {
            guard let text = try? value.serialized(), let again = try? JSONValue.parse(text) else { fatalError("a parsed value did not serialise and parse again") }
            if again != value, !value.holdsNaNOrLossyNumber { fatalError("round trip changed the value: \(value) → \(again)") }
        }
    case .modify:
        let decoded = try? JSONValueDecoder().decode(ModifyRecordsRequest.self, from: data)
        let direct = data.withUnsafeBytes { raw in
            try? JSONParser.decodeDirectly(ModifyRecordsRequest.self, from: UnsafeBufferPointer(start: raw.baseAddress?.assumingMemoryBound(to: UInt8.self), count: raw.count))
        }
        if let decoded, let direct, decoded != direct { fatalError("the direct decoder read another request") }
    case .query:
        if let request = try? JSONValueDecoder().decode(QueryRecordsRequest.self, from: data) {
            _ = try? FilterPlan(request.query.filterBy ?? [], schema: schema)
        }
    case .predicate:
        _ = try? RecordPredicate(format: String(decoding: data, as: UTF8.self), argumentArray: ["a", 1, 2.5])
    case .tokens:
        let text = String(decoding: data, as: UTF8.self)
        _ = try? ZoneChangeToken(string: text)
        _ = try? DatabaseChangeToken(string: text)
        _ = try? ContinuationMarker(string: text)
    case .gzip:
        _ = try? Gzip.decompress(data, limit: 1 << 20)
    }
    return 0
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
