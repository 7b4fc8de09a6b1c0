import Foundation
import RecordModel
import Testing

// MARK: - The gallery example

private enum Style: String, Codable { case impressionism, cubism, baroque }
private enum Rating: Int, Codable { case unrated = 0, good = 3, masterpiece = 5 }

private struct Artwork: Codable, Equatable {
    var title: String
    var year: Int
    var price: Double?
    var artist: Record.Reference
    var tags: [String]
    var created: Date
    var thumbnail: Data?
    var framed: Bool
    var style: Style
    var rating: Rating
}

private let artworkID = Record.ID(recordName: "guernica", zoneID: ZoneID(zoneName: "Gallery"))
private let picasso = Record.Reference(recordName: "picasso", zoneID: ZoneID(zoneName: "Gallery"), action: .deleteSelf)

private let guernica = Artwork(
    title: "Guernica", year: 1937, price: 2_000_000.5, artist: picasso, tags: ["war", "mural"],
    created: Date(timeIntervalSince1970: 1_700_000_000.123), thumbnail: Data([0xFF, 0xD8, 0x00]),
    framed: true, style: .cubism, rating: .masterpiece
)

/// The reason of the `RecordSyncError` that `body` throws, checking it is a bad request.
private func badRequestReason(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> String {
    let error = #expect(throws: RecordSyncError.self, sourceLocation: sourceLocation) { try body() }
    #expect(error?.code == .badRequest, sourceLocation: sourceLocation)
    return error?.reason ?? ""
}

@Suite struct RecordCodableTests {
    @Test func anArtworkEncodesAsTypedFields() throws {
        let record = try Record(encoding: guernica, recordType: "Artwork", recordID: artworkID)
        #expect(record.recordName == "guernica")
        #expect(record.recordType == "Artwork")
        #expect(record.zoneID == ZoneID(zoneName: "Gallery"))
        #expect(record.fields == [
            "title": .string("Guernica"),
            "year": .int64(1937),
            "price": .double(2_000_000.5),
            "artist": .reference(picasso),
            "tags": .list(.string, [.string("war"), .string("mural")]),
            "created": .timestamp(1_700_000_000_123),
            "thumbnail": .bytes(Data([0xFF, 0xD8, 0x00])),
            "framed": .boolean(true),
            "style": .string("cubism"),
            "rating": .int64(5),
        ])
    }

    @Test func anArtworkRoundTripsThroughARecord() throws {
        let record = try RecordEncoder().encode(guernica, recordType: "Artwork", recordID: artworkID)
        #expect(try RecordDecoder().decode(Artwork.self, from: record) == guernica)
        #expect(try record.decode(Artwork.self) == guernica)
    }

    @Test func anArtworkRoundTripsThroughTheWireForm() throws {
        let record = try Record(encoding: guernica, recordType: "Artwork", recordID: artworkID)
        let json = try JSONEncoder().encode(record)
        let text = String(decoding: json, as: UTF8.self)
        #expect(text.contains(#""type":"TIMESTAMP""#))
        #expect(text.contains(#""type":"STRING_LIST""#))
        let received = try JSONDecoder().decode(Record.self, from: json)
        #expect(received == record)
        #expect(try received.decode(Artwork.self) == guernica)
    }

    @Test func aRecordAsCloudKitSendsItDecodes() throws {
        // CloudKit stores booleans and whole-number prices as INT64.
        let json = #"""
        {"recordName": "guernica", "recordType": "Artwork", "recordChangeTag": "7",
         "fields": {
           "title": {"value": "Guernica", "type": "STRING"}, "year": {"value": 1937, "type": "INT64"},
           "price": {"value": 2000000, "type": "INT64"},
           "artist": {"value": {"recordName": "picasso", "action": "DELETE_SELF"}, "type": "REFERENCE"},
           "tags": {"value": ["war"], "type": "STRING_LIST"},
           "created": {"value": 1700000000123, "type": "TIMESTAMP"},
           "framed": {"value": 1, "type": "INT64"},
           "style": {"value": "baroque", "type": "STRING"}, "rating": {"value": 3, "type": "INT64"}
         }}
        """#
        let record = try JSONDecoder().decode(Record.self, from: Data(json.utf8))
        let artwork = try record.decode(Artwork.self)
        #expect(artwork.price == 2_000_000)
        #expect(artwork.framed == true)
        #expect(artwork.thumbnail == nil)
        #expect(artwork.artist == Record.Reference(recordName: "picasso", action: .deleteSelf))
        #expect(artwork.created == Date(timeIntervalSince1970: 1_700_000_000.123))
        #expect(artwork.style == .baroque)
        #expect(artwork.rating == .good)
    }

    @Test func datesRoundToTheNearestMillisecond() throws {
        struct Event: Codable { var at: Date }
        let record = try Record(encoding: Event(at: Date(timeIntervalSince1970: 1.0006)), recordType: "E", recordID: RecordID(recordName: "e"))
        #expect(record["at"] == .timestamp(1001))
    }

    // MARK: Optionals

    @Test func nilOptionalsLeaveTheFieldOut() throws {
        var unpriced = guernica
        unpriced.price = nil
        unpriced.thumbnail = nil
        let record = try Record(encoding: unpriced, recordType: "Artwork", recordID: artworkID)
        #expect(record["price"] == nil)
        #expect(record["thumbnail"] == nil)
        #expect(record.fields.count == 8)
        let decoded = try record.decode(Artwork.self)
        #expect(decoded.price == nil)
        #expect(decoded.thumbnail == nil)
        #expect(decoded == unpriced)
    }

    @Test func anExplicitNilLeavesTheFieldOut() throws {
        struct Note: Encodable {
            var text: String?
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encodeNil(forKey: .text)
            }
            enum CodingKeys: String, CodingKey { case text }
        }
        var record = Record(recordName: "n", recordType: "Note", fields: ["text": .string("old")])
        try RecordEncoder().encode(Note(text: "ignored"), into: &record)
        #expect(record.fields.isEmpty)
    }

    @Test func aMissingFieldReadsAsNilInACustomDecoder() throws {
        struct Probe: Decodable {
            var missingIsNil: Bool
            var presentIsNil: Bool
            enum CodingKeys: String, CodingKey { case missing, present }
            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                missingIsNil = try container.decodeNil(forKey: .missing)
                presentIsNil = try container.decodeNil(forKey: .present)
            }
        }
        let probe = try Record(recordName: "p", recordType: "P", fields: ["present": .int64(1)]).decode(Probe.self)
        #expect(probe.missingIsNil)
        #expect(!probe.presentIsNil)
    }

    @Test func reencodingKeepsSystemFieldsAndRemovesNilProperties() throws {
        let stamp = Stamp(timestamp: 5, userRecordName: "_owner")
        var record = try Record(encoding: guernica, recordType: "Artwork", recordID: artworkID)
        record.recordChangeTag = "tag-1"
        record.created = stamp
        record["notes"] = .string("kept: no property names it")
        var edited = guernica
        edited.title = "Guernica (1937)"
        edited.price = nil
        try RecordEncoder().encode(edited, into: &record)
        #expect(record.recordChangeTag == "tag-1")
        #expect(record.created == stamp)
        #expect(record.recordType == "Artwork")
        #expect(record.recordID == artworkID)
        #expect(record["title"] == .string("Guernica (1937)"))
        #expect(record["price"] == nil)
        #expect(record["notes"] == .string("kept: no property names it"))
    }

    @Test func aFailedReencodingLeavesTheRecordUnchanged() throws {
        struct Partial: Encodable { var title: String; var big: UInt64 }
        var record = try Record(encoding: guernica, recordType: "Artwork", recordID: artworkID)
        let before = record
        #expect(throws: RecordSyncError.self) { try RecordEncoder().encode(Partial(title: "x", big: .max), into: &record) }
        #expect(record == before)
    }

    // MARK: Keys and types

    @Test func codingKeysRenameFields() throws {
        struct Artist: Codable, Equatable {
            var name: String
            var bornIn: Int
            enum CodingKeys: String, CodingKey { case name = "fullName", bornIn = "birth_year" }
        }
        let record = try Record(encoding: Artist(name: "Pablo Picasso", bornIn: 1881), recordType: "Artist", recordID: RecordID(recordName: "picasso"))
        #expect(record.fields == ["fullName": .string("Pablo Picasso"), "birth_year": .int64(1881)])
        #expect(try record.decode(Artist.self) == Artist(name: "Pablo Picasso", bornIn: 1881))
    }

    @Test func int64DecodesIntoDoubleFloatAndBool() throws {
        struct Numbers: Decodable { var price: Double; var ratio: Float; var framed: Bool; var glazed: Bool }
        let record = Record(recordName: "n", recordType: "N", fields: [
            "price": .int64(1200), "ratio": .double(0.25), "framed": .int64(1), "glazed": .int64(0),
        ])
        let numbers = try record.decode(Numbers.self)
        #expect(numbers.price == 1200)
        #expect(numbers.ratio == 0.25)
        #expect(numbers.framed == true)
        #expect(numbers.glazed == false)
    }

    @Test func integersOfEveryWidthAreInt64Fields() throws {
        struct Widths: Codable, Equatable { var a: Int8; var b: Int16; var c: Int32; var d: Int64; var e: UInt8; var f: UInt16; var g: UInt32; var h: UInt64 }
        let widths = Widths(a: -8, b: -16, c: -32, d: .min, e: 8, f: 16, g: .max, h: UInt64(Int64.max))
        let record = try Record(encoding: widths, recordType: "W", recordID: RecordID(recordName: "w"))
        #expect(record["g"] == .int64(Int64(UInt32.max)))
        #expect(record["h"] == .int64(.max))
        #expect(record.fields.values.allSatisfy { $0.type == FieldType(.int64) })
        #expect(try record.decode(Widths.self) == widths)
    }

    @Test func emptyArraysTakeTheirListTypeFromTheElementType() throws {
        struct Empties: Encodable {
            var counts: [Int] = []
            var styles: [Style] = []
            var ratings: [Rating] = []
            var links: [Record.Reference] = []
            var days: Set<Date> = []
            var anything: [FieldValue] = []
        }
        let record = try Record(encoding: Empties(), recordType: "E", recordID: RecordID(recordName: "e"))
        #expect(record.fields == [
            "counts": .list(.int64, []), "styles": .list(.string, []), "ratings": .list(.int64, []),
            "links": .list(.reference, []), "days": .list(.timestamp, []), "anything": .list(.string, []),
        ])
    }

    @Test func referencesRecordIDsAndSetsBecomeLists() throws {
        struct Exhibition: Codable, Equatable {
            var works: [Record.Reference]
            var venue: Record.ID
            var rooms: Set<Int>
            var styles: [Style]
        }
        let exhibition = Exhibition(
            works: [Record.Reference(recordName: "a"), Record.Reference(recordName: "b", action: .validate)],
            venue: RecordID(recordName: "prado"), rooms: [3], styles: [.baroque, .cubism]
        )
        let record = try Record(encoding: exhibition, recordType: "Exhibition", recordID: RecordID(recordName: "x"))
        #expect(record["works"]?.type == FieldType(.reference, isList: true))
        #expect(record["venue"] == .reference(Record.Reference(recordName: "prado", zoneID: .defaultZone, action: .none)))
        #expect(record["rooms"] == .list(.int64, [.int64(3)]))
        #expect(record["styles"] == .list(.string, [.string("baroque"), .string("cubism")]))
        #expect(try record.decode(Exhibition.self) == exhibition)
    }

    @Test func urlsLocationsAndFieldValuesRoundTrip() throws {
        struct Museum: Codable, Equatable { var site: URL; var place: Location; var extra: FieldValue }
        let museum = Museum(
            site: try #require(URL(string: "https://www.museoreinasofia.es/en")),
            place: Location(latitude: 40.408, longitude: -3.694), extra: .list(.double, [.double(1.5)])
        )
        let record = try Record(encoding: museum, recordType: "Museum", recordID: RecordID(recordName: "m"))
        #expect(record["site"] == .string("https://www.museoreinasofia.es/en"))
        #expect(record["place"] == .location(museum.place))
        #expect(record["extra"] == .list(.double, [.double(1.5)]))
        #expect(try record.decode(Museum.self) == museum)
    }

    @Test func aSubclassWritesItsSuperclassFieldsIntoTheSameRecord() throws {
        class Item: Codable { var name = "vase" }
        final class Sculpture: Item {
            var material = "bronze"
            enum CodingKeys: String, CodingKey { case material }
            override init() { super.init() }
            required init(from decoder: any Decoder) throws {
                material = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .material)
                try super.init(from: decoder.container(keyedBy: CodingKeys.self).superDecoder())
            }
            override func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(material, forKey: .material)
                try super.encode(to: container.superEncoder())
            }
        }
        let record = try Record(encoding: Sculpture(), recordType: "Sculpture", recordID: RecordID(recordName: "s"))
        #expect(record.fields == ["material": .string("bronze"), "name": .string("vase")])
        let decoded = try record.decode(Sculpture.self)
        #expect(decoded.name == "vase")
        #expect(decoded.material == "bronze")
    }
}

// MARK: - Nested values

@Suite struct NestedValueTests {
    struct Dimensions: Codable, Equatable { var width: Double; var height: Double }
    /// Looks like a location: it must stay a nested value.
    struct Spot: Codable, Equatable { var latitude: Double; var longitude: Double }
    struct Framed: Codable, Equatable {
        var title = "t"
        var dimensions = Dimensions(width: 349, height: 776)
        var spot = Spot(latitude: 48.86, longitude: 2.34)
        var labels: [String: Int] = ["a": 1, "b": 2]
        var frames = [Dimensions(width: 1, height: 2)]
        var owner: Spot? = nil
    }

    @Test func nestedStructsDictionariesAndListsOfThemAreNestedFields() throws {
        let record = try Record(encoding: Framed(), recordType: "F", recordID: RecordID(recordName: "f"))
        #expect(record.fields["dimensions"]?.type == FieldType(.nested))
        #expect(record.fields["labels"]?.type == FieldType(.nested))
        #expect(record.fields["frames"]?.type == FieldType(.nested))
        #expect(record.fields["spot"]?.type == FieldType(.nested), "a dictionary that looks like a location stays nested")
        #expect(record.fields["owner"] == nil)
        #expect(try record.decode(Framed.self) == Framed())
    }

    /// On the wire a nested value is Apple's STRING holding the JSON, with recordSyncType
    /// NESTED beside: a client knowing only Apple's types reads a string; RecordSync's reads it back.
    @Test func aNestedValueTravelsAsAStringHoldingItsJSON() throws {
        let record = try Record(encoding: Framed(), recordType: "F", recordID: RecordID(recordName: "f"))
        let wire = try JSONDecoder().decode(JSONValue.self, from: JSONValueEncoder().encode(record))
        let spot = wire["fields"]?["spot"]
        #expect(spot?["type"] == .string("STRING") && spot?["recordSyncType"] == .string("NESTED"), "\(String(describing: spot))")
        guard case .string(let text)? = spot?["value"] else { Issue.record("no string value: \(String(describing: spot))"); return }
        #expect(text == #"{"latitude":48.86,"longitude":2.34}"#)
        let back = try JSONValueDecoder().decode(Record.self, from: JSONValueEncoder().encode(record))
        #expect(back.fields["spot"] == record.fields["spot"])
        #expect(throws: RecordSyncError.self) { try FieldValue(json: .string("not json"), type: FieldType(.nested)) }
        #expect(throws: RecordSyncError.self) { try FieldValue(json: .string("5"), type: FieldType(.nested)) }
        #expect(try FieldValue(json: .object(["a": .int(1)]), type: FieldType(.nested)) == .nested(.object(["a": .int(1)])))
    }
}

// MARK: - Values that cannot be fields

@Suite struct RecordCodableErrorTests {
    private struct Dimensions: Codable { var width: Double; var height: Double }
    private let id = RecordID(recordName: "r")

    @Test func anArrayOfArraysIsRejectedNamingTheProperty() {
        struct Grid: Encodable { var grid: [[Int]] = [[1, 2], [3]] }
        let reason = badRequestReason { _ = try Record(encoding: Grid(), recordType: "A", recordID: id) }
        #expect(reason.hasPrefix("property 'grid': a list of lists"))
        struct EmptyGrid: Encodable { var grid: [[Int]] = [] }
        #expect(badRequestReason { _ = try Record(encoding: EmptyGrid(), recordType: "A", recordID: id) }.contains("'grid'"))
    }

    @Test func anArrayOfOptionalsIsRejectedEvenWithoutNils() {
        struct Scores: Encodable { var scores: [Int?] = [1, 2] }
        let reason = badRequestReason { _ = try Record(encoding: Scores(), recordType: "A", recordID: id) }
        #expect(reason.hasPrefix("property 'scores': a list of optionals"))
    }

    @Test func aMixedArrayIsRejectedNamingTheElement() {
        struct Mixed: Encodable { var mixed: [FieldValue] = [.string("a"), .int64(1)] }
        let reason = badRequestReason { _ = try Record(encoding: Mixed(), recordType: "A", recordID: id) }
        #expect(reason == "property 'mixed[1]': a list cannot mix STRING and INT64 elements")
    }

    @Test func aBadFieldNameIsRejected() {
        struct Spaced: Encodable {
            var firstName = "Pablo"
            enum CodingKeys: String, CodingKey { case firstName = "first name" }
        }
        let reason = badRequestReason { _ = try Record(encoding: Spaced(), recordType: "A", recordID: id) }
        #expect(reason.hasPrefix("property 'first name': field name 'first name'"))
        struct Underscored: Encodable {
            var hidden: String? = nil
            enum CodingKeys: String, CodingKey { case hidden = "_hidden" }
        }
        let nilReason = badRequestReason { _ = try Record(encoding: Underscored(), recordType: "A", recordID: id) }
        #expect(nilReason.contains("'_hidden'"))
    }

    @Test func anUnsignedIntegerBeyondInt64IsRejected() {
        struct Huge: Encodable { var count: UInt64 = UInt64(Int64.max) + 1 }
        let reason = badRequestReason { _ = try Record(encoding: Huge(), recordType: "A", recordID: id) }
        #expect(reason == "property 'count': 9223372036854775808 does not fit in INT64")
    }

    @Test func aTopLevelValueMustBeAStructOrClass() {
        #expect(badRequestReason { _ = try Record(encoding: ["a"], recordType: "A", recordID: id) }.contains("struct or class"))
        #expect(badRequestReason { _ = try Record(encoding: Style.cubism, recordType: "A", recordID: id) }.contains("struct or class"))
        let record = Record(recordName: "r", recordType: "A", fields: ["a": .string("x")])
        #expect(badRequestReason { _ = try record.decode([String: String].self) }.contains("struct or class"))
    }

    @Test func aMissingNonOptionalFieldNamesTheField() throws {
        var record = try Record(encoding: guernica, recordType: "Artwork", recordID: artworkID)
        record["title"] = nil
        let reason = badRequestReason { _ = try record.decode(Artwork.self) }
        #expect(reason == "field 'title' is missing, and its property is not optional")
    }

    @Test func aTypeMismatchNamesTheFieldAndBothTypes() throws {
        var record = try Record(encoding: guernica, recordType: "Artwork", recordID: artworkID)
        record["year"] = .string("1937")
        let reason = badRequestReason { _ = try record.decode(Artwork.self) }
        #expect(reason == "field 'year': expected INT64 for Int, got STRING")
    }

    @Test func aListElementMismatchNamesTheElement() throws {
        var record = try Record(encoding: guernica, recordType: "Artwork", recordID: artworkID)
        record["tags"] = .list(.int64, [.int64(1)])
        let reason = badRequestReason { _ = try record.decode(Artwork.self) }
        #expect(reason == "field 'tags[0]': expected STRING for String, got INT64")
        record["tags"] = .string("war")
        #expect(badRequestReason { _ = try record.decode(Artwork.self) } == "field 'tags': expected a list, got STRING")
    }

    @Test func valuesOutOfRangeOrUnknownAreRejectedNamingTheField() throws {
        var record = try Record(encoding: guernica, recordType: "Artwork", recordID: artworkID)
        record["style"] = .string("fauvism")
        #expect(badRequestReason { _ = try record.decode(Artwork.self) }.hasPrefix("field 'style':"))
        record = try Record(encoding: guernica, recordType: "Artwork", recordID: artworkID)
        record["framed"] = .int64(2)
        #expect(badRequestReason { _ = try record.decode(Artwork.self) } == "field 'framed': expected INT64 0 or 1 for Bool, got 2")
        struct Small: Decodable { var level: Int8 }
        let small = Record(recordName: "s", recordType: "S", fields: ["level": .int64(300)])
        #expect(badRequestReason { _ = try small.decode(Small.self) } == "field 'level': INT64 value 300 does not fit in Int8")
    }

    @Test func aFieldCannotDecodeIntoANestedStruct() {
        struct Framed: Decodable { var dimensions: Dimensions }
        let record = Record(recordName: "f", recordType: "F", fields: ["dimensions": .string("349x776")])
        let reason = badRequestReason { _ = try record.decode(Framed.self) }
        #expect(reason == "field 'dimensions': a nested struct or dictionary cannot be a record field")
    }
}
