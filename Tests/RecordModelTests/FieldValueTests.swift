import Foundation
import RecordModel
import Testing

@Suite struct FieldValueTests {
    @Test func inferredTypesFollowTheJSONKind() throws {
        #expect(try FieldValue(json: .string("x"), type: nil) == .string("x"))
        #expect(try FieldValue(json: .int(5), type: nil) == .int64(5))
        #expect(try FieldValue(json: .double(1.5), type: nil) == .double(1.5))
        #expect(try FieldValue(json: .bool(true), type: nil) == .boolean(true))
        #expect(try FieldValue(json: .object(["recordName": .string("a")]), type: nil) == .reference(Reference(recordName: "a")))
        #expect(try FieldValue(json: .array([.int(1), .double(2.5)]), type: nil) == .list(.double, [.double(1), .double(2.5)]))
        #expect(try FieldValue(json: .object(["latitude": .int(1), "longitude": .int(2)]), type: nil).type == FieldType(.location))
    }

    @Test func aGivenTypeReadsTheValueThatWay() throws {
        #expect(try FieldValue(json: .int(1_700_000_000_000), type: FieldType(.timestamp)) == .timestamp(1_700_000_000_000))
        #expect(try FieldValue(json: .string("aGk="), type: FieldType(.bytes)) == .bytes(Data("hi".utf8)))
        #expect(try FieldValue(json: .int(3), type: FieldType(.double)) == .double(3))
        #expect(try FieldValue(json: .array([]), type: FieldType(.string, isList: true)) == .list(.string, []))
    }

    @Test func int64SurvivesBeyondDoublePrecision() throws {
        let big = Int64.max - 1
        let data = try JSONEncoder().encode(FieldValue.int64(big))
        #expect(try JSONDecoder().decode(FieldValue.self, from: data) == .int64(big))
    }

    @Test func mismatchesNameWhatWasExpected() {
        #expect { try FieldValue(json: .string("x"), type: FieldType(.int64)) } throws: { error in
            (error as? RecordSyncError)?.reason == "expected an integer for INT64, got a string"
        }
        #expect { try FieldValue(json: .array([.int(1), .string("a")]), type: FieldType(.int64, isList: true)) } throws: { error in
            (error as? RecordSyncError)?.reason.hasPrefix("element 1:") == true
        }
        #expect(throws: RecordSyncError.self) { try FieldValue(json: .string("%%%"), type: FieldType(.bytes)) }
        #expect(throws: RecordSyncError.self) { try FieldValue(json: .object(["recordName": .string("a"), "action": .string("CASCADE")]), type: nil) }
        #expect(throws: RecordSyncError.self) { try FieldValue(json: .array([]), type: nil) }
        #expect(throws: RecordSyncError.self) { try FieldValue(json: .double(1.5), type: FieldType(.int64)) }
    }

    @Test func everyTypeRoundTripsThroughTheWireForm() throws {
        let record = Record(recordName: "r", recordType: "T", fields: [
            "s": .string("é"), "i": .int64(-4), "d": .double(0.25), "t": .timestamp(12), "b": .bytes(Data([0, 255])),
            "r": .reference(Reference(recordName: "x", zoneID: ZoneID(zoneName: "Z"), action: .validate)),
            "l": .location(Location(latitude: 1, longitude: 2, altitude: 3, timestamp: 4)),
            "a": .asset(.object(["fileChecksum": .string("abc")])), "f": .boolean(false),
            "sl": .list(.string, [.string("a")]), "rl": .list(.reference, [.reference(Reference(recordName: "y", action: .deleteSelf))]),
        ])
        let decoded = try JSONDecoder().decode(Record.self, from: JSONEncoder().encode(record))
        #expect(decoded == record)
        #expect(decoded.references.map(\.reference.recordName) == ["x", "y"])
    }

    /// Fields are written straight to bytes for the common types; the text is exactly the
    /// serialisation of their JSON tree, for every type.
    @Test func fieldsTextIsTheirTreesSerialisation() throws {
        let fields: [String: FieldValue] = [
            "s": .string("é \"q\"\n"), "i": .int64(Int64.min), "j": .int64(42), "d": .double(0.1), "w": .double(3), "e": .double(-2.5e-300),
            "t": .timestamp(1_700_000_000_000), "b": .bytes(Data([0, 255])), "f": .boolean(true),
            "r": .reference(Reference(recordName: "x", action: .deleteSelf)),
            "z": .reference(Reference(recordName: "x", zoneID: ZoneID(zoneName: "Z", ownerRecordName: "_o"), action: .validate)),
            "l": .location(Location(latitude: 1, longitude: 2, altitude: 3, timestamp: 4)), "a": .asset(.object(["fileChecksum": .string("abc")])),
            "sl": .list(.string, [.string("a"), .string("\u{1}")]), "il": .list(.int64, []), "dl": .list(.double, [.double(1), .double(0.5)]),
            "rl": .list(.reference, [.reference(Reference(recordName: "y", action: .deleteSelf)), .reference(Reference(recordName: "q"))]),
        ]
        let tree = JSONValue.object(fields.mapValues { value in
            let wire = WireForm.type(value.type)
            var members: [String: JSONValue] = ["type": .string(wire.type.rawValue), "value": value.json]
            if let extensionType = wire.extensionType { members[WireForm.typeExtensionKey] = .string(extensionType.rawValue) }
            return .object(members)
        })
        #expect(try JSONValueEncoder().encodeFieldsText(fields) == tree.serializedString())
    }

    @Test func referencesComeByFieldNameWithListsInTheirOrder() {
        let record = Record(recordName: "r", recordType: "T", fields: [
            "owner": .reference(Reference(recordName: "o")), "title": .string("t"), "count": .int64(2),
            "authors": .list(.reference, [.reference(Reference(recordName: "b")), .reference(Reference(recordName: "a"))]),
            "zeta": .reference(Reference(recordName: "z")), "tags": .list(.string, [.string("x")]),
        ])
        #expect(record.references.map { "\($0.field)=\($0.reference.recordName)" } == ["authors=b", "authors=a", "owner=o", "zeta=z"])
        #expect(Record(recordName: "s", recordType: "T", fields: ["title": .string("t")]).references.isEmpty)
    }

    @Test func namesWithControlCharactersAreRefused() {
        for name in ["a\u{0}b", "tab\there", "\u{1F}", "del\u{7F}", "é\u{85}", "😀\u{9F}x", "line\n"] {
            #expect(NameRules.problem(withName: name, kind: "recordName") == "recordName contains a control character", "\(name.unicodeScalars.map(\.value))")
        }
        for name in ["plain-name_1", "é", "😀 emoji", "space ok", "\u{A0}nbsp", "zero\u{200B}width"] {
            #expect(NameRules.problem(withName: name, kind: "recordName") == nil, "\(name)")
        }
    }

    @Test func fieldNamesFollowCloudKitRules() {
        #expect(NameRules.problem(withFieldName: "title_2") == nil)
        #expect(NameRules.problem(withFieldName: "2title") != nil)
        #expect(NameRules.problem(withFieldName: "a.b") != nil)
        #expect(NameRules.problem(withFieldName: "a'b") != nil)
        #expect(NameRules.problem(withFieldName: String(repeating: "a", count: 256)) != nil)
        #expect(NameRules.problem(withName: "ok", kind: "recordName") == nil)
        #expect(NameRules.problem(withName: "bad\u{0}", kind: "recordName") != nil)
    }
}
