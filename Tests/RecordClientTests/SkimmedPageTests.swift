import Foundation
@testable import RecordClient
import RecordModel
import Testing

/// A change page read for the cache alone (its fields skimmed) gives the cache what a page
/// read in full gives it: the same records, fields text, references and field types.
@Suite struct SkimmedPageTests {
    static let answer = #"""
        {"zoneID":{"zoneName":"Z"},"syncToken":"t","moreComing":false,"records":[
         {"recordName":"a","recordType":"Artwork","recordChangeTag":"1","fields":{
           "title":{"value":"Water \"Lilies\"","type":"STRING"},
           "artist":{"value":{"recordName":"monet","action":"DELETE_SELF"},"type":"REFERENCE"},
           "year":{"value":1890},
           "tags":{"value":["a","b"],"type":"STRING_LIST"},
           "related":{"type":"REFERENCE_LIST","value":[{"recordName":"r2","action":"NONE"},{"recordName":"r1","action":"VALIDATE"}]},
           "price":{"type":"DOUBLE","value":2.5},
           "when":{"value":123,"type":"TIMESTAMP"},
           "where":{"value":{"latitude":48.8,"longitude":2.3},"type":"LOCATION"},
           "empty":{"value":[],"type":"INT64_LIST"}},
          "created":{"timestamp":5,"userRecordName":"_u"},"modified":{"timestamp":6,"userRecordName":"_u"}},
         {"recordName":"b","recordType":"Artist","recordChangeTag":"2","fields":{"name":{"value":"m","type":"STRING"},"name":{"value":"n","type":"STRING"}}},
         {"recordName":"c","recordType":"Artwork","deleted":true},
         {"recordName":"d","recordType":"Note","recordChangeTag":"3","fields":{"about":{"value":{"recordName":"a"}},"n":{"value":-1.5e3}}},
         {"recordName":"e","recordType":"Note","fields":{}}
        ]}
        """#

    static func summary(_ page: ZoneChangesPage) -> [String] {
        page.changes.map { "\($0.recordName) \($0.recordType) \($0.recordChangeTag ?? "-") \($0.deleted) \($0.created?.timestamp ?? 0)" }
            + page.fieldsText.map { $0 ?? "nil" }
            + page.references.map { $0.map { "\($0.field)→\($0.reference.recordName) \($0.reference.action.rawValue)" }.joined(separator: ",") }
            + (page.fieldTypes ?? [:]).sorted { $0.key < $1.key }.map { type, fields in
                type + ": " + fields.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.rawValue)" }.joined(separator: ", ")
            }
    }

    @Test func aSkimmedPageGivesTheCacheWhatAFullOneGives() throws {
        let data = Data(Self.answer.utf8)
        let full = try ZoneChangesPage(answer: data)
        let skimmed = try ZoneChangesPage(answer: data, skimmingFields: true)
        #expect(Self.summary(skimmed) == Self.summary(full))
        #expect(full.references.first?.map(\.field) == ["artist", "related", "related"])
        #expect(full.fieldTypes?["Artwork"]?["year"]?.rawValue == "INT64" && full.fieldTypes?["Note"]?["about"]?.rawValue == "REFERENCE")
        // Skimmed, a record keeps its fields only as text; one whose text repeats a name (and is
        // not kept) is decoded.
        #expect(skimmed.fieldsSkimmed && !full.fieldsSkimmed)
        #expect(skimmed.changes.map(\.fields.count) == [0, 1, 0, 0, 0])
        #expect(full.changes.map(\.fields.count) == [9, 1, 0, 2, 0])
        #expect(skimmed.fieldsText[1] == nil)
    }

    /// A field type the client does not know fails the direct reading either way, and the
    /// page is read through the tree (fields decoded, no text kept).
    @Test func anUnknownFieldTypeIsReadTheSlowWayEitherWay() throws {
        let data = Data(#"{"zoneID":{"zoneName":"Z"},"syncToken":"t","moreComing":false,"records":[{"recordName":"a","recordType":"T","recordChangeTag":"1","fields":{"x":{"value":1,"type":"INT64"}}}]}"#.utf8)
        let skimmed = try ZoneChangesPage(answer: data, skimmingFields: true)
        #expect(skimmed.fieldsText == [#"{"x":{"value":1,"type":"INT64"}}"#] && skimmed.changes[0].fields.isEmpty)
        let unknown = Data(String(decoding: data, as: UTF8.self).replacingOccurrences(of: "INT64", with: "COLOUR").utf8)
        #expect(throws: (any Error).self) { try ZoneChangesPage(answer: unknown, skimmingFields: true) }
        #expect(throws: (any Error).self) { try ZoneChangesPage(answer: unknown) }
    }
}
