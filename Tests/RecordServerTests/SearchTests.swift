import Foundation
import RecordModel
import Testing

/// Full-text search (`CONTAINS_ALL_TOKENS`, `CONTAINS_ANY_TOKENS`) and `NEAR` with sorting by
/// distance, through real HTTP on each engine: the words and places a record's writes leave
/// in the search index, and what stays refused. (`QueryOracleTests` checks answers at random.)
@Suite struct SearchTests {
    static func query(_ filters: String, type: String = "Artwork", sort: String = "[]", limit: Int? = nil, marker: String? = nil) -> String {
        var body = #"{"query": {"recordType": "\#(type)", "filterBy": \#(filters), "sortBy": \#(sort)}"#
        if let limit { body += #", "resultsLimit": \#(limit)"# }
        if let marker { body += #", "continuationMarker": "\#(marker)""# }
        return body + "}"
    }

    static func words(_ comparator: String, _ words: String, field: String? = nil) -> String {
        let name = field.map { #""fieldName": "\#($0)", "# } ?? ""
        return #"[{"comparator": "\#(comparator)", \#(name)"fieldValue": {"value": "\#(words)"}}]"#
    }

    static func near(_ latitude: Double, _ longitude: Double, _ metres: Double, field: String = "place") -> String {
        #"[{"comparator": "NEAR", "fieldName": "\#(field)", "fieldValue": {"value": {"latitude": \#(latitude), "longitude": \#(longitude)}, "type": "LOCATION"}, "distance": \#(metres)}]"#
    }

    static func names(_ reply: Reply) throws -> [String] {
        try reply.decode(QueryRecordsResponse.self).records.map(\.recordName)
    }

    static func work(_ name: String, title: String? = nil, note: String? = nil, tags: [String]? = nil, at place: (Double, Double)? = nil) -> Record {
        var record = Record(recordName: name, recordType: "Artwork", fields: [:])
        if let title { record.fields["title"] = .string(title) }
        if let note { record.fields["note"] = .string(note) }
        if let tags { record.fields["tags"] = .list(.string, tags.map(FieldValue.string)) }
        if let place { record.fields["place"] = .location(Location(latitude: place.0, longitude: place.1)) }
        return record
    }

    @Test func wordsAreFoldedAndSearchedInEveryTextFieldOrOne() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([
                Self.work("lilies", title: "Water Lilies", note: "Painted at Giverny, in the garden.", tags: ["oil", "Nymphéas"]),
                Self.work("street", title: "Rue de la STRASSE", note: "a café"),
                Self.work("strasse", title: "Große Straße"),
                Self.work("bare", at: (48.0, 2.0)),
                Record(recordName: "monet", recordType: "Artist", fields: ["name": .string("Claude Monet"), "born": .int64(1840)]),
            ])
            func search(_ comparator: String, _ words: String, field: String? = nil, type: String = "Artwork") async throws -> [String] {
                let reply = try await alice.post("records/query", Self.query(Self.words(comparator, words, field: field), type: type))
                #expect(reply.status == 200, "\(reply.reason)")
                return try Self.names(reply)
            }
            // Every word, in any text field (a list's elements too), folded: case, marks, ß.
            #expect(try await search("CONTAINS_ALL_TOKENS", "GIVERNY nympheas") == ["lilies"])
            #expect(try await search("CONTAINS_ALL_TOKENS", "water giverny", field: "allTokens") == ["lilies"])
            #expect(try await search("CONTAINS_ALL_TOKENS", "strasse") == ["strasse", "street"])
            #expect(try await search("CONTAINS_ALL_TOKENS", "CAFE") == ["street"])
            #expect(try await search("CONTAINS_ALL_TOKENS", "water café") == [])
            #expect(try await search("CONTAINS_ANY_TOKENS", "water café") == ["lilies", "street"])
            // One field only.
            #expect(try await search("CONTAINS_ALL_TOKENS", "strasse", field: "title") == ["strasse", "street"])
            #expect(try await search("CONTAINS_ALL_TOKENS", "garden", field: "title") == [])
            #expect(try await search("CONTAINS_ANY_TOKENS", "oil", field: "tags") == ["lilies"])
            // Whole words: a piece of one is not a word of the text.
            #expect(try await search("CONTAINS_ALL_TOKENS", "lili") == [])
            #expect(try await search("CONTAINS_ALL_TOKENS", "monet", type: "Artist") == ["monet"])
        }
    }

    @Test func theIndexFollowsUpdatesDeletesCascadesAndZoneDeletion() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("Gallery")
            var lilies = Self.work("lilies", title: "Water Lilies", at: (49.0756, 1.5337))
            lilies.fields["artist"] = .reference(Reference(recordName: "monet", action: .deleteSelf))
            try await alice.save([Record(recordName: "monet", recordType: "Artist", fields: ["name": .string("Claude Monet")]), lilies], zone: "Gallery")
            func found(_ filters: String) async throws -> [String] {
                let reply = try await alice.post("records/query", #"{"zoneID": {"zoneName": "Gallery"}, "query": {"recordType": "Artwork", "filterBy": \#(filters)}}"#)
                #expect(reply.status == 200, "\(reply.reason)")
                return try Self.names(reply)
            }
            #expect(try await found(Self.words("CONTAINS_ALL_TOKENS", "lilies")) == ["lilies"])
            #expect(try await found(Self.near(49.0756, 1.5337, 10)) == ["lilies"])
            // An update replaces the words and the place; one that leaves them keeps them.
            let update = #"{"zoneID": {"zoneName": "Gallery"}, "operations": [{"operationType": "forceUpdate", "record": {"recordName": "lilies", "recordType": "Artwork", "fields": {"title": {"value": "Nymphéas"}, "place": {"value": {"latitude": 48.8606, "longitude": 2.3376}, "type": "LOCATION"}}}}]}"#
            #expect(try await alice.post("records/modify", update).status == 200)
            #expect(try await found(Self.words("CONTAINS_ALL_TOKENS", "lilies")) == [])
            #expect(try await found(Self.words("CONTAINS_ALL_TOKENS", "nympheas")) == ["lilies"])
            #expect(try await found(Self.near(49.0756, 1.5337, 10)) == [])
            #expect(try await found(Self.near(48.8606, 2.3376, 10)) == ["lilies"])
            let other = #"{"zoneID": {"zoneName": "Gallery"}, "operations": [{"operationType": "forceUpdate", "record": {"recordName": "lilies", "recordType": "Artwork", "fields": {"year": {"value": 1916}}}}]}"#
            #expect(try await alice.post("records/modify", other).status == 200)
            #expect(try await found(Self.words("CONTAINS_ALL_TOKENS", "nympheas")) == ["lilies"])
            #expect(try await found(Self.near(48.8606, 2.3376, 10)) == ["lilies"])
            // Through a key path: words of the artist.
            #expect(try await found(Self.words("CONTAINS_ALL_TOKENS", "claude", field: "artist.allTokens")) == ["lilies"])
            #expect(try await found(Self.words("CONTAINS_ALL_TOKENS", "claude", field: "artist.name")) == ["lilies"])
            // A cascade takes the work's rows with it; a record saved again under the name starts afresh.
            let delete = #"{"zoneID": {"zoneName": "Gallery"}, "operations": [{"operationType": "forceDelete", "record": {"recordName": "monet"}}]}"#
            #expect(try await alice.post("records/modify", delete).status == 200)
            #expect(try await found(Self.words("CONTAINS_ALL_TOKENS", "nympheas")) == [])
            #expect(try await found(Self.near(48.8606, 2.3376, 10)) == [])
            try await alice.save([Self.work("lilies", title: "Bridge")], zone: "Gallery")
            #expect(try await found(Self.words("CONTAINS_ANY_TOKENS", "nympheas bridge")) == ["lilies"])
            #expect(try await found(Self.near(48.8606, 2.3376, 10)) == [])
            // A deleted zone recreated holds nothing.
            #expect(try await alice.post("zones/modify", #"{"operations": [{"operationType": "delete", "zone": {"zoneID": {"zoneName": "Gallery"}}}]}"#).status == 200)
            try await alice.createZones("Gallery")
            try await alice.save([Self.work("other", title: "Other")], zone: "Gallery")
            #expect(try await found(Self.words("CONTAINS_ANY_TOKENS", "bridge other")) == ["other"])
        }
    }

    @Test func nearFindsRecordsWithinADistanceAndSortsByIt() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            // Metres from the Louvre (48.8606, 2.3376): 0, 807, 1,234, 17,062 and 63,365.
            try await alice.save([
                Self.work("louvre", at: (48.8606, 2.3376)),
                Self.work("orsay", at: (48.8600, 2.3266)),
                Self.work("notre-dame", at: (48.8530, 2.3499)),
                Self.work("versailles", at: (48.8049, 2.1204)),
                Self.work("giverny", at: (49.0756, 1.5337)),
                Self.work("nowhere", title: "no place"),
                // Both sides of the ±180° meridian, 4.3 km apart, and 16,544 km from the Louvre.
                Self.work("fiji-east", at: (-17.7, 179.98)), Self.work("fiji-west", at: (-17.7, -179.979)),
            ])
            func found(_ filters: String, sort: String = "[]") async throws -> [String] {
                let reply = try await alice.post("records/query", Self.query(filters, sort: sort))
                #expect(reply.status == 200, "\(reply.reason)")
                return try Self.names(reply)
            }
            #expect(try await found(Self.near(48.8606, 2.3376, 0)) == ["louvre"])
            #expect(try await found(Self.near(48.8606, 2.3376, 1_000)) == ["louvre", "orsay"])
            #expect(try await found(Self.near(48.8606, 2.3376, 2_000)) == ["louvre", "notre-dame", "orsay"])
            #expect(try await found(Self.near(48.8606, 2.3376, 60_000)) == ["louvre", "notre-dame", "orsay", "versailles"])
            #expect(try await found(Self.near(48.8606, 2.3376, 64_000)).count == 5)
            #expect(try await found(Self.near(-17.7, 179.99, 5_000)) == ["fiji-east", "fiji-west"])
            #expect(try await found(Self.near(-17.7, -179.99, 3_500)) == ["fiji-east", "fiji-west"])
            #expect(try await found(Self.near(-17.7, -179.99, 3_000)) == ["fiji-west"])
            // NOT NEAR: a record without the place is unknown, and neither matches.
            let notNear = #"[{"recordSyncOperator": "NOT", "recordSyncFilters": \#(Self.near(48.8606, 2.3376, 2_000))}]"#
            #expect(try await found(notNear) == ["fiji-east", "fiji-west", "giverny", "versailles"])

            // Nearest first, records without the place before (ascending) or after (descending);
            // paged by continuation markers.
            let fromLouvre = #"[{"fieldName": "place", "relativeLocation": {"latitude": 48.8606, "longitude": 2.3376}}]"#
            let nearest = ["nowhere", "louvre", "orsay", "notre-dame", "versailles", "giverny", "fiji-east", "fiji-west"]
            #expect(try await found("[]", sort: fromLouvre) == nearest)
            var paged: [String] = []
            var marker: String?
            repeat {
                let reply = try await alice.post("records/query", Self.query("[]", sort: fromLouvre, limit: 3, marker: marker))
                let page = try reply.decode(QueryRecordsResponse.self)
                paged += page.records.map(\.recordName)
                marker = page.continuationMarker
            } while marker != nil
            #expect(paged == nearest)
            let farthest = #"[{"fieldName": "place", "ascending": false, "relativeLocation": {"latitude": 48.8606, "longitude": 2.3376}}]"#
            #expect(try await found("[]", sort: farthest) == ["fiji-west", "fiji-east", "giverny", "versailles", "notre-dame", "orsay", "louvre", "nowhere"])
            #expect(try await found(Self.near(48.8606, 2.3376, 25_000), sort: fromLouvre) == ["louvre", "orsay", "notre-dame", "versailles"])
        }
    }

    @Test func badWordSearchesAndPlacesAreRefusedClearly() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save([Record(recordName: "w", recordType: "Artwork", fields: ["title": .string("x"), "year": .int64(1), "place": .location(Location(latitude: 1, longitude: 2))])])
            let cases: [(filters: String, sort: String, reason: String)] = [
                (Self.words("CONTAINS_ALL_TOKENS", "*** ..."), "[]", "holds no word"),
                (Self.words("CONTAINS_ALL_TOKENS", "x", field: "year"), "[]", "is INT64"),
                (#"[{"comparator": "CONTAINS_ANY_TOKENS", "fieldName": "title", "fieldValue": {"value": 3}}]"#, "[]", "needs a STRING fieldValue"),
                (#"[{"comparator": "CONTAINS_ALL_TOKENS", "systemFieldName": "recordName", "fieldValue": {"value": "x"}}]"#, "[]", "give fieldName"),
                (Self.words("CONTAINS_ALL_TOKENS", (0..<65).map { "w\($0)" }.joined(separator: " ")), "[]", "the limit is 64"),
                (#"[{"comparator": "NEAR", "fieldName": "place", "fieldValue": {"value": {"latitude": 1, "longitude": 2}}}]"#, "[]", "needs distance"),
                (Self.near(1, 2, -5), "[]", "0 or more"),
                (Self.near(91, 2, 5), "[]", "needs a location"),
                (Self.near(1, 2, 5, field: "title"), "[]", "is STRING"),
                (#"[{"comparator": "NEAR", "fieldName": "place", "fieldValue": {"value": "Paris"}, "distance": 5}]"#, "[]", "needs a location"),
                ("[]", #"[{"fieldName": "place"}]"#, "give relativeLocation"),
                ("[]", #"[{"fieldName": "title", "relativeLocation": {"latitude": 1, "longitude": 2}}]"#, "is STRING"),
                ("[]", #"[{"systemFieldName": "recordName", "relativeLocation": {"latitude": 1, "longitude": 2}}]"#, "not one"),
                ("[]", #"[{"fieldName": "place", "relativeLocation": {"latitude": 1, "longitude": 200}}]"#, "is not a place"),
                (#"[{"comparator": "CONTAINS_ALL_TOKENS", "fieldName": "title", "fieldValue": {"value": "x"}, "recordSyncOptions": "c"}]"#, "[]", "recordSyncOptions apply"),
            ]
            for (filters, sort, reason) in cases {
                let reply = try await alice.post("records/query", Self.query(filters, sort: sort))
                #expect(reply.status == 400, "\(filters) \(sort)")
                #expect(reply.json["serverErrorCode"]?.stringValue == "BAD_REQUEST")
                #expect(reply.reason.contains(reason), "\(filters) \(sort): \(reply.reason)")
            }
        }
    }
}
