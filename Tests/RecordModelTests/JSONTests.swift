import Foundation
import PropertyBased
@testable import RecordModel
import Testing

/// The JSON parser, writer, and tree encoder and decoder that carry RecordSync's wire and
/// storage JSON.
@Suite struct JSONTests {
    @Test(arguments: [
        (#"{"a": [1, -2, 3.5, 1e3, true, false, null, "x"]}"#,
         JSONValue.object(["a": .array([.int(1), .int(-2), .double(3.5), .double(1000), .bool(true), .bool(false), .null, .string("x")])])),
        (#""\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00""#, .string("\"\\/\u{8}\u{c}\n\r\té😀")),
        ("9223372036854775807", .int(Int64.max)),
        ("9223372036854775808", .double(9223372036854775808)),
        (" [ ] ", .array([])),
        ("{}", .object([:])),
        (#""é""#, .string("é")),
        ("\u{FEFF}[1]", .array([.int(1)])),
        // Integers of up to 18 characters are read without a string; longer ones with one.
        ("[-0, 0, 999999999999999999, -99999999999999999, 1000000000000000000, -9223372036854775808]",
         .array([.int(0), .int(0), .int(999_999_999_999_999_999), .int(-99_999_999_999_999_999), .int(1_000_000_000_000_000_000), .int(Int64.min)])),
        ("-9223372036854775809", .double(-9223372036854775809)),
        // A repeated key keeps its last value, in nested objects too (their members share a stack).
        (#"{"a": 1, "b": {"a": 2, "a": 3, "c": {}}, "a": 4, "d": [{"e": 5}, {}]}"#,
         .object(["a": .int(4), "b": .object(["a": .int(3), "c": .object([:])]), "d": .array([.object(["e": .int(5)]), .object([:])])])),
    ])
    func parsesValidJSON(text: String, expected: JSONValue) throws {
        #expect(try JSONValue.parse(text) == expected)
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\" 1}", "01", "1.", "-", "1e", "tru", "\"abc", "\"\u{1}\"", "\"\\x\"",
        "\"\\ud83d\"", "\"\\ude00\"", "[1] 2", "1e400", "{\"a\":1,}", "NaN",
        "{\"a\": {\"b\": 1, }}", "{\"a\": 1 \"b\": 2}", "-a", "--1",
    ])
    func refusesInvalidJSON(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    @Test func refusesInvalidUTF8AndDeepNesting() {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Data([0x22, 0xF0, 0x9F, 0x98, 0x22])) }
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Data([0x22, 0xC0, 0xAF, 0x22])) }
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONParseError.self) { try JSONValue.parse(deep) }
        let allowed = String(repeating: "[", count: JSONValue.maximumNestingDepth) + String(repeating: "]", count: JSONValue.maximumNestingDepth)
        #expect(throws: Never.self) { try JSONValue.parse(allowed) }
    }

    @Test func writesWhatItReadsBack() throws {
        let value = JSONValue.object([
            "b": .array([.int(-5), .double(0.1), .double(3), .double(1e300), .bool(true), .null]),
            "a": .string("quote \" backslash \\ newline \n control \u{1} é 😀"),
        ])
        let text = try value.serializedString()
        #expect(text.hasPrefix(#"{"a":"#))
        #expect(try JSONValue.parse(text) == value)
        #expect(throws: EncodingError.self) { try JSONValue.double(.nan).serialized() }
    }

    /// Strings (whose escape check reads eight bytes at a time) and integers (written digit by
    /// digit) come out as a byte-at-a-time writer and `String(_:)` would write them: strings
    /// built of the bytes either side of each one that must be escaped, at every offset in a
    /// block of eight.
    @Test func stringsAndIntegersAreWrittenByteForByte() async {
        let pieces = ["\u{1F}", " ", "!", "\"", "#", "[", "\\", "]", "\u{7F}", "\u{0}", "\n", "a", "é", "😀", "\u{80}", "\u{A2}", "\u{DC}"]
        func expected(_ text: String) -> [UInt8] {
            var out: [UInt8] = [0x22]
            for byte in text.utf8 {
                switch byte {
                case 0x22: out += [0x5C, 0x22]
                case 0x5C: out += [0x5C, 0x5C]
                case 0x0A: out += [0x5C, UInt8(ascii: "n")]
                case 0x0D: out += [0x5C, UInt8(ascii: "r")]
                case 0x09: out += [0x5C, UInt8(ascii: "t")]
                case 0x08: out += [0x5C, UInt8(ascii: "b")]
                case 0x0C: out += [0x5C, UInt8(ascii: "f")]
                case 0..<0x20: out += Array(String(format: "\\u%04x", byte).utf8)
                default: out.append(byte)
                }
            }
            return out + [0x22]
        }
        await propertyCheck(count: 3000, input: Generator(run: { rng in
            (0..<Int.random(in: 0..<40, using: &rng)).map { _ in pieces[Int.random(in: 0..<pieces.count, using: &rng)] }.joined()
        })) { text in
            var writer = JSONWriter(storing: ())
            writer.writeString(text)
            #expect(writer.bytes == expected(text), "\(Array(text.utf8))")
        }
        await propertyCheck(count: 3000, input: Generator(run: { rng in
            Int64.random(in: Int64.min...Int64.max, using: &rng) >> Int64.random(in: 0..<64, using: &rng)
        })) { value in
            var writer = JSONWriter(storing: ())
            writer.writeInteger(value)
            #expect(writer.bytes == Array(String(value).utf8))
        }
        for value in [0, -1, 9, 10, Int64.min, Int64.max] {
            var writer = JSONWriter(storing: ())
            writer.writeInteger(value)
            #expect(writer.bytes == Array(String(value).utf8))
        }
    }

    /// Decodes `text` with the type's reader, `nil` when it refuses.
    static func read<T: Decodable>(_ text: String, as type: T.Type) -> T? {
        try? JSONValueDecoder().decode(T.self, from: Data(text.utf8))
    }

    /// The readers take what the wire carries: nulls, unknown and repeated members, escapes,
    /// whitespace and a byte order mark, keys in any order.
    @Test func readersTakeWhatTheWireCarries() throws {
        let record = #"{"recordName":"w1","recordType":"Artwork","recordChangeTag":"3b","zoneID":{"zoneName":"Z","ownerRecordName":"_o"},"#
            + #""fields":{"title":{"type":"STRING","value":"Lilies \"1\" \u00e9\ud83c\udf38"},"year":{"type":"INT64","value":1906},"price":{"type":"DOUBLE","value":2.5},"#
            + #""artist":{"type":"REFERENCE","value":{"recordName":"monet","action":"DELETE_SELF"}},"tags":{"type":"STRING_LIST","value":["a","b"]}},"#
            + #""created":{"timestamp":1,"userRecordName":"_u"},"modified":{"timestamp":2,"userRecordName":"_u","deviceID":"d"},"extra":[1,{"x":null}]}"#
        let expected = Record(recordName: "w1", recordType: "Artwork", zoneID: ZoneID(zoneName: "Z", ownerRecordName: "_o"), recordChangeTag: "3b",
                              fields: ["title": .string("Lilies \"1\" é🌸"), "year": .int64(1906), "price": .double(2.5),
                                       "artist": .reference(Reference(recordName: "monet", action: .deleteSelf)), "tags": .list(.string, [.string("a"), .string("b")])],
                              created: Stamp(timestamp: 1, userRecordName: "_u"), modified: Stamp(timestamp: 2, userRecordName: "_u", deviceID: "d"))
        #expect(Self.read(record, as: Record.self) == expected)
        let gone = Record(recordName: "gone", recordType: "Artwork", deleted: true)
        let changes: [(String, ZoneChanges)] = [
            (#"{"moreComing":true,"records":[\#(record),{"recordName":"gone","recordType":"Artwork","deleted":true}],"syncToken":"t","zoneID":{"zoneName":"Z"}}"#,
             ZoneChanges(zoneID: ZoneID(zoneName: "Z"), records: [expected, gone], syncToken: "t", moreComing: true)),
            (#"\#u{FEFF} { "zoneID" : { "zoneName" : "Z" , "ownerRecordName" : null } , "records" : [ ] , "syncToken" : "t" , "moreComing" : false } "#,
             ZoneChanges(zoneID: ZoneID(zoneName: "Z"), records: [], syncToken: "t", moreComing: false)),
            (#"{"moreComing":false,"records":[{"recordName":"r","recordType":null,"zoneID":null,"fields":null,"created":null,"deleted":null}],"syncToken":"t","zoneID":{"zoneName":"Z"}}"#,
             ZoneChanges(zoneID: ZoneID(zoneName: "Z"), records: [Record(recordName: "r", recordType: "")], syncToken: "t", moreComing: false)),
            (#"{"moreComing":false,"records":[{"recordName":"first","recordName":"second"}],"syncToken":"t","zoneID":{"zoneName":"Z"},"syncToken":"u"}"#,
             ZoneChanges(zoneID: ZoneID(zoneName: "Z"), records: [Record(recordName: "second", recordType: "")], syncToken: "u", moreComing: false)),
        ]
        for (text, page) in changes { #expect(Self.read(text, as: ZoneChanges.self) == page, "\(text)") }
        let responses: [(String, RecordsResponse)] = [
            (#"{"records":[\#(record),{"recordName":"x","recordType":"T","deleted":true,"cascadedRecordNames":["a","b"]}],"includedRecords":[\#(record)]}"#,
             RecordsResponse(records: [.success(expected), .success(Record(recordName: "x", recordType: "T", deleted: true), cascadedRecordNames: ["a", "b"])],
                             includedRecords: [expected])),
            (#"{"records":[{"recordName":"x","cascadedRecordNames":null}],"includedRecords":null}"#,
             RecordsResponse(records: [.success(Record(recordName: "x", recordType: ""))])),
        ]
        for (text, response) in responses { #expect(Self.read(text, as: RecordsResponse.self) == response, "\(text)") }
        let requests: [(String, ModifyRecordsRequest)] = [
            (#"{"operations":[{"operationType":"forceReplace","record":{"recordName":"w1","recordType":"Artwork","fields":{"title":{"value":"x"},"n":{"value":null},"y":{"type":"INT64","value":3}}},"desiredKeys":["title"]},"#
                + #"{"operationType":"delete","record":{"recordName":"w2","recordChangeTag":"1","fields":null}}],"zoneID":{"zoneName":"Z"},"atomic":false,"desiredKeys":null}"#,
             ModifyRecordsRequest(operations: [
                RecordOperation(.forceReplace, RecordPayload(recordName: "w1", recordType: "Artwork", fields: [
                    "title": RawFieldValue(value: .string("x")), "n": RawFieldValue(value: .null), "y": RawFieldValue(value: .int(3), type: FieldType(.int64))]),
                    desiredKeys: ["title"]),
                RecordOperation(.delete, RecordPayload(recordName: "w2", recordChangeTag: "1")),
             ], zoneID: ZoneID(zoneName: "Z"), atomic: false)),
            (#"{"operations":[],"atomic":null,"zoneID":null}"#, ModifyRecordsRequest(operations: [])),
        ]
        for (text, request) in requests { #expect(Self.read(text, as: ModifyRecordsRequest.self) == request, "\(text)") }
        var stored = #"{"b":{"type":"INT64","value":2},"a":{"type":"STRING","value":"x"}}"#
        #expect(stored.withUTF8 { try? JSONWire.decode(StoredFields.self, from: $0) }?.fields == ["a": .string("x"), "b": .int64(2)])
        // An error result is read as the error.
        let response = try #require(Self.read(#"{"records":[{"recordName":"x","serverErrorCode":"CONFLICT","reason":"stale","uuid":"u"}]}"#, as: RecordsResponse.self))
        #expect(response.records.first?.error?.code == .conflict)
    }

    /// A field's value is what ``FieldValue/init(json:type:numbersMayBeStrings:)`` makes of
    /// its `value` member given its `type`; what that refuses, the reader refuses.
    @Test func fieldValuesAreReadByTheirType() throws {
        let accepted = [
            #"{"type":"STRING","value":"x"}"#, #"{"value":"x \u00e9","type":"STRING"}"#, #"{"value":"x"}"#, #"{"type":null,"value":"x"}"#,
            #"{"type":"INT64","value":-3}"#, #"{"type":"INT64","value":3.0}"#, #"{"value":7}"#, #"{"type":"INT64","value":"7"}"#,
            #"{"type":"DOUBLE","value":2}"#, #"{"type":"DOUBLE","value":2.5e3}"#, #"{"value":2.5}"#, #"{"type":"DOUBLE","value":"2.5"}"#,
            #"{"type":"TIMESTAMP","value":1700000000000}"#, #"{"type":"TIMESTAMP","value":1.5}"#,
            #"{"type":"BOOLEAN","value":true}"#, #"{"type":"BOOLEAN","value":1}"#, #"{"value":false}"#,
            #"{"type":"INT64","recordSyncType":"BOOLEAN","value":1}"#, #"{"type":"STRING","recordSyncType":"FUTURE","value":"x"}"#,
            #"{"type":"BYTES","value":"AAEC"}"#,
            #"{"type":"REFERENCE","value":{"recordName":"a","action":"DELETE_SELF"}}"#,
            #"{"value":{"action":null,"recordName":"a","zoneID":{"zoneName":"Z","ownerRecordName":"_o"}}}"#,
            #"{"type":"REFERENCE","value":{"recordName":"a","extra":1,"action":"VALIDATE"}}"#,
            #"{"type":"REFERENCE","value":{"recordName":"a","zoneID":{"zoneName":"Z","ownerRecordName":5}}}"#,
            #"{"type":"ASSETID","value":{"recordName":"a"}}"#, #"{"type":"ASSETID","value":{"recordName":"a","action":null}}"#,
            #"{"type":"LOCATION","value":{"latitude":1,"longitude":2}}"#,
            #"{"type":"REFERENCE_LIST","value":[{"recordName":"a"}]}"#, #"{"type":"STRING_LIST","value":["a","b"]}"#,
            #"{"type":"STRING","value":"x","value":"y","extra":[1]}"#,
        ]
        let refused = [
            #"{"type":"INT64","value":3.5}"#, #"{"type":"BOOLEAN","value":"yes"}"#, #"{"type":"STRING","value":5}"#,
            #"{"type":"REFERENCE","value":{"recordName":"a","action":"NOPE"}}"#, #"{"type":"REFERENCE","value":{"recordName":""}}"#,
            #"{"type":"REFERENCE","value":"a"}"#, #"{"type":"INT64"}"#, #"{"value":null}"#, #"{"type":"NOPE","value":1}"#,
            #"{"value":"7","type":"STRING","value":8}"#, #"{"type":5,"value":1}"#, #"[]"#, #"null"#,
        ]
        for field in accepted + refused {
            let read = Self.read(field, as: FieldValue.self)
            let tree = try JSONValue.parse(field)
            var type: FieldType?
            if case .string(let name)? = tree["type"] { type = FieldType(rawValue: name) }
            if case .string(let name)? = tree["recordSyncType"], let finer = FieldType(rawValue: name) { type = WireForm.type(type: type, extensionType: finer) }
            let byRule = try? FieldValue(json: tree["value"] ?? .null, type: type, numbersMayBeStrings: type != nil)
            #expect(read == byRule || (read == nil && refused.contains(field)), "\(field)")
            #expect((read != nil) == accepted.contains(field), "\(field)")
        }
    }

    /// Decoding errors have the kinds and coding paths `Codable` gives (the server turns them
    /// into reasons such as "operations[1].operationType: unknown value 'x'"), whichever
    /// decoder runs the reader; text that is not JSON is refused as such, whatever else is wrong.
    @Test(arguments: [
        (#"{"operations": [{"operationType": "create", "record": {}}, {"operationType": "x", "record": {}}]}"#, "dataCorrupted at operations.1.operationType"),
        (#"{"operations": [{"record": {}}]}"#, "keyNotFound operationType at operations.0"),
        (#"{"operations": [{"operationType": "create"}]}"#, "keyNotFound record at operations.0"),
        (#"{"operations": [{"operationType": "create", "record": null}]}"#, "valueNotFound at operations.0.record"),
        (#"{"operations": [{"operationType": null, "record": {}}]}"#, "valueNotFound at operations.0.operationType"),
        (#"{"operations": [{"operationType": 5, "record": {}}]}"#, "typeMismatch at operations.0.operationType"),
        (#"{"operations": [{"operationType": "create", "record": {"fields": {"a": {"value": 1, "type": "NOPE"}}}}]}"#, "dataCorrupted at operations.0.record.fields.a.type"),
        (#"{"operations": [{"operationType": "create", "record": {"fields": {"a": 5}}}]}"#, "typeMismatch at operations.0.record.fields.a"),
        (#"{"operations": [{"operationType": "create", "record": {"recordName": 7}}]}"#, "typeMismatch at operations.0.record.recordName"),
        (#"{"operations": [{"operationType": "create", "record": {}, "desiredKeys": [1]}]}"#, "typeMismatch at operations.0.desiredKeys.0"),
        (#"{"operations": null}"#, "valueNotFound at operations"),
        (#"{"operations": {}}"#, "typeMismatch at operations"),
        (#"{}"#, "keyNotFound operations at "),
        (#"[]"#, "typeMismatch at "),
        (#"{"operations": [], "atomic": "yes"}"#, "typeMismatch at atomic"),
        (#"{"operations": [], "zoneID": {"ownerRecordName": "x"}}"#, "keyNotFound zoneName at zoneID"),
        (#"{"operations": [], "zoneID": {"zoneName": null}}"#, "valueNotFound at zoneID.zoneName"),
        // A repeated key's last value counts, a refused one included.
        (#"{"operations": [], "atomic": "yes", "atomic": true}"#, "no error"),
        (#"{"operations": [], "atomic": true, "atomic": "yes"}"#, "typeMismatch at atomic"),
        // Not JSON: refused as such, even after another error.
        (#"{"operations": [{"operationType": "x"}], "#, "dataCorrupted at "),
        (#"{"operations": []} trailing"#, "dataCorrupted at "),
        (#"{"operations": [{"operationType": "create", "record": {"recordName": "\ud800"}}]}"#, "dataCorrupted at "),
    ])
    func decodingErrorsNameTheOffendingPart(body: String, expected: String) {
        func describe(_ error: any Error) -> String {
            guard let error = error as? DecodingError else { return "not a DecodingError: \(error)" }
            func path(_ keys: [any CodingKey]) -> String { keys.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".") }
            switch error {
            case .keyNotFound(let key, let context): return "keyNotFound \(key.stringValue) at \(path(context.codingPath))"
            case .valueNotFound(_, let context): return "valueNotFound at \(path(context.codingPath))"
            case .typeMismatch(_, let context): return "typeMismatch at \(path(context.codingPath))"
            case .dataCorrupted(let context): return "dataCorrupted at \(path(context.codingPath))"
            @unknown default: return "unknown"
            }
        }
        var read = "no error"
        do { _ = try JSONValueDecoder().decode(ModifyRecordsRequest.self, from: Data(body.utf8)) } catch { read = describe(error) }
        #expect(read == expected, "\(body)")
        // Nested in another type, through the tree and through Foundation's decoder: the same path.
        struct Wrapper: Decodable { var body: ModifyRecordsRequest }
        guard expected != "no error", let tree = try? JSONValue.parse(body), let wrapped = try? JSONValue.object(["body": tree]).serialized() else { return }
        var want = expected.replacingOccurrences(of: " at ", with: " at body.")
        if want.hasSuffix(".") { want.removeLast() }
        for decode in [{ try JSONValueDecoder().decode(Wrapper.self, from: wrapped) }, { try JSONDecoder().decode(Wrapper.self, from: wrapped) }] as [() throws -> Wrapper] {
            var nested = "no error"
            do { _ = try decode() } catch { nested = describe(error) }
            #expect(nested == want, "\(body) nested")
        }
    }

    /// Read by a client, a change page keeps each record's fields decoded and as the exact
    /// text they arrived in.
    @Test func aClientKeepsTheTextFieldsArrivedIn() throws {
        let fields = #"{ "title" : {"type":"STRING","value":"Lilies \u00e9"}, "year":{"type":"INT64","value":1906} }"#
        let text = #"{"moreComing":false,"records":[{"recordName":"w1","recordType":"Artwork","fields":\#(fields)},"#
            + #"{"recordName":"gone","deleted":true}],"syncToken":"t","zoneID":{"zoneName":"Z"}}"#
        let page = try StoredZoneChanges.decode(Data(text.utf8))
        #expect(page.entries.map(\.fieldsJSON) == [fields, nil])
        #expect(page.entries[0].record.fields == ["title": .string("Lilies é"), "year": .int64(1906)])
        #expect(try Record.fields(fromJSON: try #require(page.entries[0].fieldsJSON)) == page.entries[0].record.fields)
        #expect(try page.decoded() == JSONValueDecoder().decode(ZoneChanges.self, from: Data(text.utf8)))
        // Fields naming a field twice decode to the last value; their text is not kept (SQLite
        // would read the first).
        let twice = try StoredZoneChanges.decode(Data(#"{"moreComing":false,"records":[{"recordName":"w","fields":{"a":{"type":"INT64","value":1},"a":{"type":"INT64","value":2}}}],"syncToken":"t","zoneID":{"zoneName":"Z"}}"#.utf8))
        #expect(twice.entries[0].record.fields == ["a": .int64(2)] && twice.entries[0].fieldsJSON == nil)
        // A record without a name is refused.
        #expect(throws: DecodingError.self) { try StoredZoneChanges.decode(Data(#"{"moreComing":false,"records":[{}],"syncToken":"t","zoneID":{"zoneName":"Z"}}"#.utf8)) }
    }

    /// The token and `moreComing` of a change page are found without decoding its records,
    /// whatever the records hold; what is not such a page gives nothing.
    @Test func aPagesContinuationIsReadWithoutItsRecords() throws {
        let tricky = #"{"recordName":"w]}\"{[","recordType":"T","fields":{"s":{"type":"STRING","value":"}]\\\"x, :"},"n":{"type":"DOUBLE","value":-1.5e3},"l":{"type":"STRING_LIST","value":["a]", "{b",  "c\\\"}"]},"b":{"value":true}}}"#
        let pages = [
            #"{"moreComing":true,"records":[\#(tricky),{"recordName":"gone","deleted":true}],"syncToken":"tok1","zoneID":{"zoneName":"Z"}}"#,
            #"{ "zoneID" : { "zoneName" : "Z" } , "records" : [ ] , "syncToken" : "tok2" , "moreComing" : false }"#,
            #"{"syncToken":"tok3","records":[\#(tricky)],"moreComing":true,"zoneID":{"zoneName":"Z"},"extra":[{"a":"}"},3,false]}"#,
        ]
        for text in pages {
            let continuation = try #require(StoredZoneChanges.continuation(of: Data(text.utf8)), "\(text)")
            let page = try JSONValueDecoder().decode(ZoneChanges.self, from: Data(text.utf8))
            #expect(continuation.syncToken == page.syncToken && continuation.moreComing == page.moreComing, "\(text)")
        }
        // RecordSync writes both before the records, and reading stops once it has them.
        let written = String(decoding: try JSONValueEncoder().encode(ZoneChanges(zoneID: ZoneID(zoneName: "Z"), records: [Record(recordName: "w", recordType: "T")],
                                                                                 syncToken: "tok4", moreComing: true)), as: UTF8.self)
        #expect(written.hasPrefix(#"{"moreComing":true,"syncToken":"tok4","#), "\(written)")
        let cut = try #require(StoredZoneChanges.continuation(of: Data(written.prefix(written.count - 20).utf8)))
        #expect(cut.syncToken == "tok4" && cut.moreComing)
        for text in ["", "[]", "{", #"{"records":[{"a":"unterminated}]}"#, #"{"moreComing":true,"records":[]}"#,
                     #"{"syncToken":"t","records":[}"#, #"{"syncToken":"t","moreComing":"yes"}"#] {
            #expect(StoredZoneChanges.continuation(of: Data(text.utf8)) == nil, "\(text)")
        }
    }

    /// A modify body built from operations encoded one at a time is the request's own JSON.
    @Test func aBodyOfPreEncodedOperationsIsTheRequestsJSON() throws {
        let operations = [
            RecordOperation(.forceReplace, RecordPayload(recordName: "w1", recordType: "Artwork", fields: ["title": RawFieldValue(FieldValue.string("x")), "n": RawFieldValue(value: .null)]), desiredKeys: ["title"]),
            RecordOperation(.delete, RecordPayload(recordName: "w2", recordChangeTag: "1")),
        ]
        for (zoneID, atomic) in [(ZoneID(zoneName: "Z", ownerRecordName: "_o"), false), (nil, nil)] as [(ZoneID?, Bool?)] {
            let encoded = EncodedModifyRecordsRequest(operations: operations.map(EncodedOperation.init), zoneID: zoneID, atomic: atomic)
            #expect(try JSONValueEncoder().encode(encoded) == JSONValueEncoder().encode(ModifyRecordsRequest(operations: operations, zoneID: zoneID, atomic: atomic)))
            #expect(try JSONValueEncoder().encodeTree(encoded) == JSONValueEncoder().encodeTree(encoded.request))
            let sorted = JSONEncoder()
            sorted.outputFormatting = .sortedKeys
            #expect(try sorted.encode(encoded) == sorted.encode(encoded.request))
        }
    }

    /// A change page whose records keep their fields as stored text is written byte for byte
    /// as the page with decoded fields, and decodes back to it.
    @Test func storedFieldTextIsCopiedToTheWireUnchanged() throws {
        let record = Record(recordName: "w1", recordType: "Artwork", zoneID: ZoneID(zoneName: "Z"), recordChangeTag: "3b",
                            fields: ["title": .string("Lilies \u{1F338} \"quoted\""), "year": .int64(1906), "price": .double(2.5),
                                     "artist": .reference(Reference(recordName: "monet", action: .deleteSelf))],
                            created: Stamp(timestamp: 1, userRecordName: "_u"), modified: Stamp(timestamp: 2, userRecordName: "_u", deviceID: "d"))
        let tombstone = Record(recordName: "gone", recordType: "Artwork", zoneID: ZoneID(zoneName: "Z"), deleted: true)
        let page = ZoneChanges(zoneID: ZoneID(zoneName: "Z"), records: [record, tombstone], syncToken: "t", moreComing: true)
        var bare = record
        bare.fields = [:]
        let stored = StoredZoneChanges(zoneID: page.zoneID, entries: [
            .init(record: bare, fieldsJSON: try JSONValueEncoder().encodeFieldsText(record.fields)), .init(record: tombstone),
        ], syncToken: "t", moreComing: true)
        #expect(try JSONValueEncoder().encode(stored) == JSONValueEncoder().encode(page))
        #expect(try stored.decoded() == page)
        #expect(try JSONValueDecoder().decode(ZoneChanges.self, from: JSONValueEncoder().encode(stored)) == page)
    }

    /// Decoding errors have the kinds and coding paths `JSONDecoder` gives, which the server
    /// turns into reasons such as "operations[1].operationType: unknown value 'x'".
    @Test(arguments: [
        #"{"operations": [{"operationType": "create", "record": {}}, {"operationType": "x", "record": {}}]}"#,
        #"{"operations": [{"record": {}}]}"#,
        #"{"operations": [{"operationType": "create"}]}"#,
        #"{"operations": [{"operationType": 5, "record": {}}]}"#,
        #"{"operations": [{"operationType": "create", "record": {"fields": {"a": {"value": 1, "type": "NOPE"}}}}]}"#,
        #"{"operations": [{"operationType": "create", "record": {"recordName": 7}}]}"#,
        #"{"operations": null}"#,
        #"{"operations": {}}"#,
        #"{}"#,
        #"{"operations": [], "atomic": "yes"}"#,
        #"{"operations": [], "zoneID": {"ownerRecordName": "x"}}"#,
    ])
    func decodingErrorsMatchJSONDecoder(body: String) {
        func describe(_ error: any Error) -> String {
            guard let error = error as? DecodingError else { return "not a DecodingError: \(error)" }
            func path(_ keys: [any CodingKey]) -> String { keys.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".") }
            switch error {
            case .keyNotFound(let key, let context): return "keyNotFound \(key.stringValue) at \(path(context.codingPath))"
            case .valueNotFound(_, let context): return "valueNotFound at \(path(context.codingPath))"
            case .typeMismatch(_, let context): return "typeMismatch at \(path(context.codingPath))"
            case .dataCorrupted(let context): return "dataCorrupted at \(path(context.codingPath))"
            @unknown default: return "unknown"
            }
        }
        var foundation = "no error", tree = "no error"
        do { _ = try JSONDecoder().decode(ModifyRecordsRequest.self, from: Data(body.utf8)) } catch { foundation = describe(error) }
        do { _ = try JSONValueDecoder().decode(ModifyRecordsRequest.self, from: Data(body.utf8)) } catch { tree = describe(error) }
        #expect(tree == foundation)
    }
}

/// The compact form of a change page (`recordSyncCompact`) as the server writes it.
@Suite struct CompactPageTests {
    static func page(_ fields: [String?]) -> StoredZoneChanges {
        var page = StoredZoneChanges(zoneID: ZoneID(zoneName: "Z", ownerRecordName: "_owner"), entries: fields.enumerated().map { index, text in
            StoredZoneChanges.Entry(record: Record(recordName: "r\(index)", recordType: "T", zoneID: ZoneID(zoneName: "Z", ownerRecordName: "_owner"),
                                                   recordChangeTag: "\(index)", created: Stamp(timestamp: 1, userRecordName: "_owner"),
                                                   modified: index % 2 == 1 ? Stamp(timestamp: 3, userRecordName: "_other", deviceID: "phone")
                                                       : Stamp(timestamp: 2, userRecordName: "_owner")), fieldsJSON: text)
        }, syncToken: "token", moreComing: false)
        page.compact = true
        return page
    }

    /// A compact record's parts.
    static func parts(_ record: JSONValue) -> [JSONValue] {
        if case .array(let parts) = record { return parts }
        return []
    }

    static func written(_ page: StoredZoneChanges) throws -> JSONValue {
        try JSONValue.parse(JSONValueEncoder().encode(page))
    }

    @Test func fieldsLoseTheirTypesToThePage() throws {
        let json = try Self.written(Self.page([
            #"{"f":{"type":"STRING","value":"x \"y\""},"g":{"recordSyncType":"BOOLEAN","type":"INT64","value":1},"h":{"type":"STRING"}}"#,
            #"{"f":{"type":"STRING","value":"z"}}"#,
        ]))
        #expect(json["recordSyncFieldTypes"] == .object(["T": .object([
            "f": .object(["type": .string("STRING")]),
            "g": .object(["recordSyncType": .string("BOOLEAN"), "type": .string("INT64")]),
            "h": .object(["type": .string("STRING")]),
        ])]))
        guard case .array(let records)? = json["records"] else { Issue.record("no records"); return }
        #expect(records.map { Self.parts($0).last } == [
            .object(["f": .string(#"x "y""#), "g": .int(1), "h": .null]),
            .object(["f": .string("z")]),
        ])
        #expect(records.map { Self.parts($0).first } == [.string("r0"), .string("r1")])
    }

    @Test func stampsNameTheirUsersByPosition() throws {
        var page = Self.page([#"{"f":{"type":"STRING","value":"x"}}"#, nil, #"{"f":{"type":"STRING","value":"y"}}"#])
        page.entries.append(StoredZoneChanges.Entry(record: Record(recordName: "gone", recordType: "T", zoneID: page.zoneID, deleted: true)))
        let json = try Self.written(page)
        #expect(json["recordSyncUsers"] == .array([.string("_owner"), .string("_other")]))
        guard case .array(let records)? = json["records"] else { Issue.record("no records"); return }
        // [recordName, recordType, recordChangeTag, created, modified, fields]; a deleted record [recordName, recordType].
        #expect(records.map { Array(Self.parts($0).prefix(5)) } == [
            [.string("r0"), .string("T"), .string("0"), .array([.int(1), .int(0)]), .array([.int(2), .int(0)])],
            [.string("r1"), .string("T"), .string("1"), .array([.int(1), .int(0)]), .array([.int(3), .int(1), .string("phone")])],
            [.string("r2"), .string("T"), .string("2"), .array([.int(1), .int(0)]), .array([.int(2), .int(0)])],
            [.string("gone"), .string("T")],
        ])
        // Put back, it is CloudKit's page.
        page.compact = false
        #expect(ZoneChanges.expandingCompactPage(json) == (try Self.written(page)))
        #expect(ZoneChanges.expandingCompactPage(try Self.written(page)) == (try Self.written(page)))
    }

    /// Compact pages that are not well formed.
    static let malformed = [
        #"{"recordSyncFieldTypes":{},"recordSyncUsers":["u"],"zoneID":{"zoneName":"Z"},"records":[["r","T","1",[1,1],[1,0],{}]]}"#,
        #"{"recordSyncFieldTypes":{},"recordSyncUsers":["u"],"zoneID":{"zoneName":"Z"},"records":[["r","T","1",{"timestamp":1},[1,0],{}]]}"#,
        #"{"recordSyncFieldTypes":{},"recordSyncUsers":["u"],"zoneID":{"zoneName":"Z"},"records":[{"recordName":"r","recordType":"T"}]}"#,
        #"{"recordSyncFieldTypes":{},"recordSyncUsers":["u"],"zoneID":{"zoneName":"Z"},"records":[["r","T","1"]]}"#,
        #"{"recordSyncFieldTypes":{},"zoneID":{"zoneName":"Z"},"records":[]}"#,
        #"{"recordSyncFieldTypes":{},"recordSyncUsers":[],"zoneID":{"zoneName":"Z"},"records":[["r","T",null,null,null,{"f":1}]]}"#,
    ]

    /// What is not a compact page is not expanded.
    @Test(arguments: malformed)
    func aMalformedCompactPageIsNotExpanded(_ text: String) throws {
        #expect(ZoneChanges.expandingCompactPage(try JSONValue.parse(text)) == nil)
    }

    /// Nor is it read as a page (with the members a page needs besides), nor are these.
    @Test(arguments: malformed + [
        #"{"recordSyncUsers":[],"zoneID":{"zoneName":"Z"},"records":[["r","T",null,null,null,{}]]}"#,
        #"{"recordSyncFieldTypes":{"T":{"f":{"type":"STRING"}}},"recordSyncUsers":[],"zoneID":{"zoneName":"Z"},"records":[["r","T",null,null,null,{"f":"x}]]}"#,
        #"{"recordSyncFieldTypes":{"T":{"f":{"type":"STRING"}}},"recordSyncUsers":[],"zoneID":{"zoneName":"Z"},"records":[["r","T",null,null,null,{"f":}]]}"#,
        #"{"recordSyncFieldTypes":{"T":{"f":{"type":"STRING"}}},"recordSyncUsers":[],"zoneID":{"zoneName":"Z"},"records":[["r","T",null,null,null,{"f":[1}]]}"#,
        #"{"recordSyncFieldTypes":{},"recordSyncUsers":["u"],"zoneID":{"zoneName":"Z"},"records":[["r","T","1",[1,-1],null,{}]]}"#,
        #"{"recordSyncFieldTypes":{},"recordSyncUsers":["u"],"zoneID":{"zoneName":"Z"},"records":[["r","T","1",[1,99999999999999999999],null,{}]]}"#,
        #"{"recordSyncFieldTypes":{},"recordSyncUsers":["u"],"zoneID":{"zoneName":"Z"},"records":[["r","T","1",[1,0,7],null,{}]]}"#,
        #"{"recordSyncFieldTypes":{},"recordSyncUsers":["u"],"zoneID":{"zoneName":"Z"},"records":[["r","T","1",[1,0,"d",4],null,{}]]}"#,
        #"{"recordSyncFieldTypes":{"U":{}},"recordSyncUsers":["u"],"zoneID":{"zoneName":"Z"},"records":[["r","T","1",null,null,{}]]}"#,
    ])
    func aMalformedCompactPageIsNotRead(_ text: String) throws {
        let page = #"{"moreComing":false,"syncToken":"t","# + text.dropFirst()
        for skimming in [false, true] {
            #expect(throws: DecodingError.self, "\(page)") { try StoredZoneChanges.decode(Data(page.utf8), skimmingFields: skimming) }
        }
    }

    /// A compact page is read whatever the order of its members, and its records get its zone.
    @Test func aCompactPageIsReadInAnyOrder() throws {
        let members = [#""records":[["r","T","7",[1,0],[2,1,"phone"],{"f":"x","g":1}],["gone","T"]]"#,
                       #""recordSyncUsers":["_owner","_other"]"#, #""zoneID":{"zoneName":"Z","ownerRecordName":"_owner"}"#,
                       #""recordSyncFieldTypes":{"T":{"f":{"type":"STRING"},"g":{"recordSyncType":"BOOLEAN","type":"INT64"}}}"#,
                       #""syncToken":"t""#, #""moreComing":true"#]
        let zone = ZoneID(zoneName: "Z", ownerRecordName: "_owner")
        let expected = [
            Record(recordName: "r", recordType: "T", zoneID: zone, recordChangeTag: "7", fields: ["f": .string("x"), "g": .boolean(true)],
                   created: Stamp(timestamp: 1, userRecordName: "_owner"), modified: Stamp(timestamp: 2, userRecordName: "_other", deviceID: "phone")),
            Record(recordName: "gone", recordType: "T", zoneID: zone, deleted: true),
        ]
        for order in [members, members.reversed(), Array(members[2...] + members[..<2])] {
            let page = try StoredZoneChanges.decode(Data("{\(order.joined(separator: ","))}".utf8))
            #expect(try page.decoded().records == expected)
            #expect(page.entries.first?.fieldsJSON == #"{"f":{"type":"STRING","value":"x"},"g":{"recordSyncType":"BOOLEAN","type":"INT64","value":1}}"#)
            #expect(page.syncToken == "t" && page.moreComing)
        }
    }

    /// Types the compact form cannot share (a schema never allows them) or text that is not
    /// the wire form of fields: the page is written in CloudKit's form.
    @Test(arguments: [
        [#"{"f":{"type":"STRING","value":"x"}}"#, #"{"f":{"type":"INT64","value":1}}"#],
        [#"{"f":"x"}"#],
        [#"{"f":[1]}"#],
    ])
    func aPageTheCompactFormCannotHoldIsWrittenInCloudKitsForm(_ fields: [String]) throws {
        let json = try Self.written(Self.page(fields))
        #expect(json["recordSyncFieldTypes"] == nil)
        guard case .array(let records)? = json["records"] else { Issue.record("no records"); return }
        #expect(records.allSatisfy { $0["zoneID"] != nil })
    }
}
