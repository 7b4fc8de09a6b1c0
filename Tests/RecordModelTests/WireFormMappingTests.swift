import Foundation
@testable import RecordModel
import Testing

/// Every internal code and type goes through ``WireForm`` to one Apple documents, and comes back.
@Suite struct WireFormMappingTests {
    @Test(arguments: ServerErrorCode.allKnown)
    func everyCodeTravelsAsAnAppleCode(_ code: ServerErrorCode) throws {
        let wire = WireForm.error(code)
        #expect(WireForm.appleErrorCodes[wire.code] != nil, "\(code) travels as \(wire.code)")
        #expect(wire.extensionCode == (WireForm.appleErrorCodes[code] == nil ? code : nil))
        #expect(code.httpStatus == WireForm.appleErrorCodes[wire.code])
        let body = try JSONValueEncoder().encode(ErrorBody(RecordSyncError(code, "why", recordName: "r")))
        let json = try JSONValue.parse(body)
        #expect(json["serverErrorCode"] == .string(wire.code.rawValue))
        #expect(json[WireForm.errorExtensionKey] == wire.extensionCode.map { .string($0.rawValue) })
        #expect(try JSONValueDecoder().decode(ErrorBody.self, from: body).error.code == code)
        #expect(try JSONDecoder().decode(ErrorBody.self, from: body).error.code == code)
    }

    static let samples: [FieldValue] = [
        .string("s"), .int64(-3), .double(0.5), .timestamp(1_700_000_000_000), .bytes(Data([1, 2])),
        .reference(Reference(recordName: "t", action: .validate)), .location(Location(latitude: 1, longitude: 2)),
        .asset(.object(["fileChecksum": .string("c"), "size": .int(3)])), .boolean(true), .boolean(false),
    ]

    @Test(arguments: samples + samples.map { .list($0.type.scalar, [$0, $0]) })
    func everyTypeTravelsAsAnAppleType(_ value: FieldValue) throws {
        let wire = WireForm.type(value.type)
        #expect(WireForm.appleScalarTypes.contains(wire.type.scalar) && wire.type.isList == value.type.isList)
        #expect(wire.extensionType == (WireForm.appleScalarTypes.contains(value.type.scalar) ? nil : value.type))
        let record = Record(recordName: "r", recordType: "T", fields: ["f": value])
        // Written by each of the three writers, the field is Apple's type with ours beside it.
        for (writer, data) in [("direct", try JSONValueEncoder().encode(record)), ("Codable", try JSONEncoder().encode(record)),
                               ("tree", try JSONValueEncoder().encodeTree(record).serialized())] {
            let field = try JSONValue.parse(data)["fields"]?["f"]
            #expect(field?["type"] == .string(wire.type.rawValue), "\(writer)")
            #expect(field?[WireForm.typeExtensionKey] == wire.extensionType.map { .string($0.rawValue) }, "\(writer)")
            // The value reads as the Apple type alone (what another client sees)…
            if let json = field?["value"] { #expect((try? FieldValue(json: json, type: wire.type)) != nil, "\(writer): \(json)") }
            // …and RecordSync's readers give back the value itself.
            #expect(try JSONValueDecoder().decode(Record.self, from: data).fields["f"] == value, "\(writer)")
            #expect(try JSONDecoder().decode(Record.self, from: data).fields["f"] == value, "\(writer)")
        }
        let request = ModifyRecordsRequest(operations: [RecordOperation(.create, RecordPayload(record))])
        let sent = try JSONValue.parse(try JSONValueEncoder().encode(request))
        guard case .array(let operations)? = sent["operations"] else { Issue.record("\(sent)"); return }
        #expect(operations.first?["record"]?["fields"]?["f"]?["type"] == .string(wire.type.rawValue))
        #expect(try JSONValueDecoder().decode(ModifyRecordsRequest.self, from: try sent.serialized()) == request)
    }

    @Test func storedTextOfEarlierReleasesIsRecognised() {
        #expect(WireForm.isBeforeWireForm(storedFields: #"{"done":{"type":"BOOLEAN","value":true}}"#))
        #expect(WireForm.isBeforeWireForm(storedFields: #"{"done":{"type":"BOOLEAN_LIST","value":[true]}}"#))
        #expect(!WireForm.isBeforeWireForm(storedFields: #"{"done":{"recordSyncType":"BOOLEAN","type":"INT64","value":1}}"#))
        #expect(!WireForm.isBeforeWireForm(storedFields: #"{"t":{"type":"STRING","value":"BOOLEAN"}}"#))
        #expect(!WireForm.isBeforeWireForm(storedFields: ""))
    }
}
