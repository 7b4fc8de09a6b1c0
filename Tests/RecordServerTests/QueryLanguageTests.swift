import Foundation
import RecordModel
import Testing

/// The query language beyond CloudKit's, through real HTTP: compound filters, string matching
/// with options, and what stays refused. (`QueryOracleTests` checks the answers at random.)
@Suite struct QueryLanguageTests {
    static func query(_ filters: String) -> String {
        #"{"query": {"recordType": "Artwork", "filterBy": \#(filters)}}"#
    }

    static func names(_ reply: Reply) throws -> [String] {
        try reply.decode(QueryRecordsResponse.self).records.map(\.recordName)
    }

    @Test func compoundFiltersTravelAsExtensionKeys() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await QueryTests.seed(alice)
            let either = try await alice.post("records/query", Self.query(#"""
                [{"recordSyncOperator": "OR", "recordSyncFilters": [
                    {"comparator": "EQUALS", "fieldName": "year", "fieldValue": {"value": 1901}},
                    {"recordSyncOperator": "AND", "recordSyncFilters": [
                        {"comparator": "LIST_CONTAINS", "fieldName": "tags", "fieldValue": {"value": "oil"}},
                        {"recordSyncOperator": "NOT", "recordSyncFilters": [
                            {"comparator": "LESS_THAN", "fieldName": "year", "fieldValue": {"value": 1905}}]}]}]}]
                """#))
            #expect(either.status == 200, "\(either.reason)")
            #expect(try Self.names(either) == ["w1", "w6", "w9"])
            // An empty OR is false and an empty AND true.
            #expect(try Self.names(try await alice.post("records/query", Self.query(#"[{"recordSyncOperator": "OR", "recordSyncFilters": []}]"#))) == [])
            #expect(try Self.names(try await alice.post("records/query", Self.query(#"[{"recordSyncOperator": "AND", "recordSyncFilters": []}]"#))).count == 10)
        }
    }

    /// `query.recordSyncPredicate`: the predicate language on the wire, compiled by the server
    /// to the filters the same format gives the client library, ANDed after `filterBy`'s.
    @Test func aQueryMaySayItsFiltersInThePredicateLanguage() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await QueryTests.seed(alice)
            let format = "year == 1901 OR (tags CONTAINS 'oil' AND NOT year < 1905)"
            let byPredicate = try await alice.post("records/query", #"{"query": {"recordType": "Artwork", "recordSyncPredicate": "\#(format)"}}"#)
            #expect(byPredicate.status == 200, "\(byPredicate.reason)")
            let byFilters = try await alice.post("records/query", QueryRecordsRequest(query: Query(recordType: "Artwork", filterBy: try RecordPredicate(format: format).filters)))
            #expect(try Self.names(byPredicate) == Self.names(byFilters) && Self.names(byFilters) == ["w1", "w6", "w9"])
            // Beside filterBy, ANDed.
            let both = try await alice.post("records/query", Self.query(##"[{"comparator": "EQUALS", "fieldName": "year", "fieldValue": {"value": 1901}}], "recordSyncPredicate": "year > 1900""##))
            #expect(both.status == 200, "\(both.reason)")
            #expect(try Self.names(both) == ["w1"])
            // One that does not parse is named, with its token.
            let bad = try await alice.post("records/query", #"{"query": {"recordType": "Artwork", "recordSyncPredicate": "year >> 3"}}"#)
            #expect(bad.code == "BAD_REQUEST" && bad.reason.hasPrefix("query.recordSyncPredicate: "), "\(bad.reason)")
            let placeholder = try await alice.post("records/query", #"{"query": {"recordType": "Artwork", "recordSyncPredicate": "year == %@"}}"#)
            #expect(placeholder.code == "BAD_REQUEST" && placeholder.reason.contains("query.recordSyncPredicate"), "\(placeholder.reason)")
        }
    }

    /// Clients that use the schema's names send system fields as `fieldName` (`___createTime`,
    /// `___modTime`, `___createdBy`, `___modifiedBy`, `___recordID`, the last three compared as
    /// references): the same answers as `systemFieldName`.
    @Test func systemFieldsByTheSchemasNamesFilterAndSortAsSystemFieldNames() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await QueryTests.seed(alice)
            func names(_ filters: String, sort: String = "[]") async throws -> [String] {
                let reply = try await alice.post("records/query", #"{"query": {"recordType": "Artwork", "filterBy": \#(filters), "sortBy": \#(sort)}}"#)
                #expect(reply.status == 200, "\(filters) \(sort): \(reply.reason)")
                return try Self.names(reply)
            }
            let reference = { (name: String) in #"{"recordName": "\#(name)", "action": "NONE"}"# }
            #expect(try await names(#"[{"comparator": "EQUALS", "fieldName": "___recordID", "fieldValue": {"value": \#(reference("w3")), "type": "REFERENCE"}}]"#) == ["w3"])
            #expect(try await names(#"[{"comparator": "IN", "fieldName": "___recordID", "fieldValue": {"value": [\#(reference("w1")), \#(reference("w4"))], "type": "REFERENCE_LIST"}}]"#,
                                    sort: #"[{"fieldName": "___recordID", "ascending": false}]"#) == ["w4", "w1"])
            let mine = #"[{"comparator": "EQUALS", "fieldName": "___createdBy", "fieldValue": {"value": \#(reference(alice.userRecordName)), "type": "REFERENCE"}}, {"comparator": "EQUALS", "fieldName": "___modifiedBy", "fieldValue": {"value": \#(reference(alice.userRecordName)), "type": "REFERENCE"}}]"#
            #expect(try await names(mine).count == 10)
            for (schemaName, system) in [("___createTime", "createdTimestamp"), ("___modTime", "modifiedTimestamp")] {
                let bySchema = try await names(#"[{"comparator": "GREATER_THAN", "fieldName": "\#(schemaName)", "fieldValue": {"value": 0, "type": "TIMESTAMP"}}]"#,
                                               sort: #"[{"fieldName": "\#(schemaName)", "ascending": false}, {"systemFieldName": "recordName"}]"#)
                let bySystem = try await names(#"[{"comparator": "GREATER_THAN", "systemFieldName": "\#(system)", "fieldValue": {"value": 0, "type": "TIMESTAMP"}}]"#,
                                               sort: #"[{"systemFieldName": "\#(system)", "ascending": false}, {"systemFieldName": "recordName"}]"#)
                #expect(bySchema.count == 10 && bySchema == bySystem, "\(schemaName)")
            }
            // Both names at once is still refused as both.
            let both = try await alice.post("records/query", Self.query(#"[{"comparator": "EQUALS", "fieldName": "___recordID", "systemFieldName": "recordName", "fieldValue": {"value": "w1"}}]"#))
            #expect(both.code == "BAD_REQUEST" && both.reason.contains("not both"), "\(both.reason)")
        }
    }

    /// A comparison with a field the record lacks is unknown, and so is its NOT: neither matches.
    @Test func notOfAMissingFieldMatchesNeither() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            var bare = Record.artwork("bare", by: "a", action: .none)
            bare.fields["year"] = nil
            bare.fields["artist"] = nil
            try await alice.save([.artist("a"), .artwork("dated", by: "a", action: .none, year: 1900), bare])
            for (field, value) in [("year", #"1900"#), ("artist", #""a""#)] {
                let plain = #"{"comparator": "EQUALS", "fieldName": "\#(field)", "fieldValue": {"value": \#(value)}}"#
                #expect(try Self.names(try await alice.post("records/query", Self.query("[\(plain)]"))) == ["dated"])
                let negated = try await alice.post("records/query", Self.query(#"[{"recordSyncOperator": "NOT", "recordSyncFilters": [\#(plain)]}]"#))
                #expect(try Self.names(negated) == [], "NOT \(field)")
                let orMissing = try await alice.post("records/query", Self.query(#"[{"recordSyncOperator": "OR", "recordSyncFilters": [{"recordSyncOperator": "NOT", "recordSyncFilters": [\#(plain)]}, {"comparator": "EQUALS", "systemFieldName": "recordName", "fieldValue": {"value": "bare"}}]}]"#))
                #expect(try Self.names(orMissing) == ["bare"], "NOT \(field) OR recordName == bare")
            }
        }
    }

    @Test func stringComparisonsFoldCaseAndDiacriticsTheSameWayEverywhere() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let titles = ["Straße", "STRASSE", "Café Monet", "cafe\u{301} monet", "Ǆemal", "naïve art", "x*y"]
            try await alice.save(titles.enumerated().map { index, title in
                var work = Record.artwork("t\(index)", by: "a", action: .none)
                work["title"] = .string(title)
                return work
            })
            func matching(_ format: String) async throws -> [String] {
                let predicate = try RecordPredicate(format: format)
                return try await alice.queryNames(Query(recordType: "Artwork", filterBy: predicate.filters))
            }
            #expect(try await matching("title ==[c] 'strasse'") == ["t0", "t1"])
            #expect(try await matching("title == 'strasse'") == [])
            #expect(try await matching("title CONTAINS[cd] 'CAFE'") == ["t2", "t3"])
            #expect(try await matching("title CONTAINS[c] 'CAFE'") == [])
            #expect(try await matching("title CONTAINS 'é'") == ["t2"])  // code points: t3's é is e and a combining mark
            #expect(try await matching("title BEGINSWITH[c] 'ǆ'") == ["t4"])
            #expect(try await matching("title ENDSWITH[d] 'monet'") == ["t3"])
            #expect(try await matching("title LIKE[cd] 'naive*'") == ["t5"])
            #expect(try await matching("title LIKE 'x\\\\*?'") == ["t6"])
            #expect(try await matching("title MATCHES[c] 'str(?:a|ä)(ss|ß)e'") == ["t0", "t1"])
            #expect(try await matching("title MATCHES '.*(?:Monet|monet)' AND NOT title BEGINSWITH 'C'") == ["t3"])
            #expect(try await matching("title CONTAINS 'a' OR title ENDSWITH 'y'") == ["t0", "t2", "t3", "t4", "t5", "t6"])
        }
    }

    /// A hostile pattern runs in linear time (no backtracking), and a query whose matching would
    /// pass its budget is refused clearly, quickly.
    @Test func matchingWorkIsBounded() async throws {
        try await withServer(configure: { $0.limits.maximumMatchSteps = 5_000_000 }) { server in
            let alice = try await server.user("alice")
            let long = String(repeating: "a", count: 50_000)
            try await alice.save((0..<4).map { index in
                var work = Record.artwork("long\(index)", by: "a", action: .none)
                work["title"] = .string(long)
                return work
            })
            let started = ContinuousClock.now
            // Exponential for a backtracking engine; 4 × 50,000 × a few steps here.
            let catastrophic = try await alice.post("records/query", Self.query(#"[{"comparator": "MATCHES", "fieldName": "title", "fieldValue": {"value": "(a*)*b"}}]"#))
            #expect(catastrophic.status == 200, "\(catastrophic.reason)")
            #expect(try Self.names(catastrophic) == [])
            let costly = try await alice.post("records/query", Self.query(#"[{"comparator": "MATCHES", "fieldName": "title", "fieldValue": {"value": "(?:.*a){50}c"}}]"#))
            #expect(costly.status == 400)
            #expect(costly.code == "LIMIT_EXCEEDED")
            #expect(costly.reason.contains("more than 5000000 steps"), "\(costly.reason)")
            #expect(ContinuousClock.now - started < .seconds(20))
        }
    }

    /// A filter Swift finishes examines a bounded number of records per request: a page may end
    /// early, with a marker, and the pages together hold every match once.
    @Test func pagesEndEarlyAfterTheRecordsExamined() async throws {
        try await withServer(configure: { $0.limits.maximumRecordsExamined = 30 }) { server in
            let alice = try await server.user("alice")
            try await alice.save((0..<100).map { index in
                var work = Record.artwork(String(format: "w%03d", index), by: "a", action: .none)
                work["title"] = .string(index % 25 == 24 ? "Needle \(index)" : "hay \(index)")
                return work
            })
            let query = Query(recordType: "Artwork", filterBy: [QueryFilter("title", .contains, RawFieldValue(value: .string("needle")), options: "c")])
            var pages: [[String]] = []
            var marker: String?
            repeat {
                let page = try await alice.post("records/query", QueryRecordsRequest(query: query, resultsLimit: 3, continuationMarker: marker)).decode(QueryRecordsResponse.self)
                pages.append(page.records.map(\.recordName))
                marker = page.continuationMarker
            } while marker != nil && pages.count < 20
            #expect(pages.joined().sorted() == ["w024", "w049", "w074", "w099"])
            #expect(pages.count >= 4, "\(pages)")
            #expect(pages.contains { $0.isEmpty || $0.count < 3 })
        }
    }

    /// Artists with labels, artworks by them, and exhibitions listing artworks.
    static func seedGallery(_ session: Session, zone: String? = nil) async throws {
        var records: [Record] = [
            Record(recordName: "durand", recordType: "Label", fields: ["city": .string("Paris")]),
            Record(recordName: "ruel", recordType: "Label", fields: ["city": .string("Arles")]),
        ]
        for (name, display, born, label) in [("monet", "Claude Monet", 1840, "durand"), ("manet", "Édouard Manet", 1832, "ruel"), ("morisot", "Berthe Morisot", 1841, nil)] {
            var artist = Record.artist(name, display)
            artist["born"] = .int64(Int64(born))
            if let label { artist["label"] = .reference(Reference(recordName: label, action: .none)) }
            records.append(artist)
        }
        records += [
            .artwork("lilies", by: "monet", action: .none), .artwork("sunrise", by: "monet", action: .none),
            .artwork("olympia", by: "manet", action: .none), .artwork("cradle", by: "morisot", action: .none),
        ]
        var untitled = Record.artwork("untitled", by: "nobody", action: .none)
        untitled.fields["artist"] = nil
        records.append(untitled)
        records.append(Record(recordName: "show", recordType: "Exhibition", fields: ["works": .list(.reference, ["lilies", "olympia"].map { .reference(Reference(recordName: $0, action: .none)) })]))
        records.append(Record(recordName: "solo", recordType: "Exhibition", fields: ["works": .list(.reference, [.reference(Reference(recordName: "cradle", action: .none))])]))
        try await session.save(records, zone: zone)
    }

    @Test func keyPathsFollowReferencesAndReferenceLists() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await Self.seedGallery(alice)
            func matching(_ type: String, _ format: String, _ arguments: any Sendable...) async throws -> [String] {
                let predicate = try RecordPredicate(format: format, argumentArray: arguments)
                return try await alice.queryNames(Query(recordType: type, filterBy: predicate.filters))
            }
            #expect(try await matching("Artwork", "artist.name == 'Claude Monet'") == ["lilies", "sunrise"])
            #expect(try await matching("Artwork", "artist.born < 1840") == ["olympia"])
            #expect(try await matching("Artwork", "artist.label.city == 'Paris'") == ["lilies", "sunrise"])
            #expect(try await matching("Artwork", "artist.label.city BEGINSWITH %@ OR artist.born > 1840", "Ar") == ["cradle", "olympia"])
            // NOT through a key path: no record reached passes (so the untitled work matches).
            #expect(try await matching("Artwork", "NOT artist.name == 'Claude Monet'") == ["cradle", "olympia", "untitled"])
            #expect(try await matching("Exhibition", "ANY works.artist.born < 1835") == ["show"])
            #expect(try await matching("Exhibition", "works.artist.name == 'Berthe Morisot'") == ["solo"])
            #expect(try await matching("Exhibition", "NONE works.artist == 'manet'") == ["solo"])
            #expect(try await matching("Exhibition", "ANY works.title IN {'cradle', 'x'}") == ["solo"])
            #expect(try await matching("Artwork", "artist.nickname == 'x'") == [])
        }
    }

    /// Across zones, a key path reaches only records of the source's own zone.
    @Test func aZoneWideKeyPathStaysInEachRecordsZone() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("Other")
            try await alice.save([.artist("monet", "Claude Monet"), .artwork("lilies", by: "monet", action: .none)])
            try await alice.save([.artist("monet", "Someone Else"), .artwork("fake", by: "monet", action: .none)], zone: "Other")
            let query = Query(recordType: "Artwork", filterBy: [QueryFilter("artist.name", .equals, RawFieldValue(value: .string("Claude Monet")))])
            let reply = try await alice.post("records/query", QueryRecordsRequest(query: query, zoneWide: true))
            #expect(try Self.names(reply) == ["lilies"])
        }
    }

    /// NESTED values: saved as Apple's STRING holding JSON (or as the JSON itself), answered as
    /// the string with recordSyncType beside, and queried by key path inside.
    @Test func nestedValuesTravelAsStringsAndAreQueriedByKeyPath() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let saved = try await alice.post("records/modify", #"""
                {"operations": [
                  {"operationType": "forceReplace", "record": {"recordName": "p", "recordType": "Place", "fields": {"address": {"type": "STRING", "recordSyncType": "NESTED", "value": "{\"city\":\"Paris\",\"zip\":75001,\"geo\":{\"latitude\":48.86,\"longitude\":2.34}}"}}}},
                  {"operationType": "forceReplace", "record": {"recordName": "a", "recordType": "Place", "fields": {"address": {"type": "NESTED", "value": {"city": "Arles", "zip": 13200, "open": true}}}}},
                  {"operationType": "forceReplace", "record": {"recordName": "z", "recordType": "Place", "fields": {"address": {"type": "NESTED", "value": {"city": 7, "big": 9007199254740993}}}}},
                  {"operationType": "forceReplace", "record": {"recordName": "y", "recordType": "Place", "fields": {"address": {"type": "NESTED", "value": {"big": 9007199254740992}}}}},
                  {"operationType": "forceReplace", "record": {"recordName": "n", "recordType": "Place", "fields": {"name": {"value": "no address"}}}}]}
                """#)
            #expect(saved.status == 200, "\(saved.reason)")
            let address = saved.json["records"]?[0]?["fields"]?["address"]
            #expect(address?["type"] == .string("STRING") && address?["recordSyncType"] == .string("NESTED"), "\(saved.json)")
            #expect(address?["value"] == .string(#"{"city":"Paris","geo":{"latitude":48.86,"longitude":2.34},"zip":75001}"#))
            func matching(_ format: String) async throws -> [String] {
                try await alice.queryNames(Query(recordType: "Place", filterBy: try RecordPredicate(format: format).filters))
            }
            #expect(try await matching("address.city == 'Paris'") == ["p"])
            #expect(try await matching("address.zip > 20000") == ["p"])
            #expect(try await matching("address.zip IN {13200, 1}") == ["a"])
            #expect(try await matching("address.geo.latitude < 49") == ["p"])
            #expect(try await matching("address.city BEGINSWITH 'A' OR address.open == TRUE") == ["a"])
            #expect(try await matching("address.city CONTAINS[c] 'RI'") == ["p"])
            // A value of another kind, or none, is unknown: neither the comparison nor its NOT.
            #expect(try await matching("address.city == 7") == ["z"])
            // Integers beyond 2^53 compare exactly on both engines.
            #expect(try await matching("address.big == 9007199254740993") == ["z"])
            #expect(try await matching("address.big < 9007199254740993") == ["y"])
            #expect(try await matching("address.big IN {9007199254740992, 1}") == ["y"])
            #expect(try await matching("NOT address.city == 'Paris'") == ["a"])
            #expect(try await matching("address.zip >= 13200.5") == ["p"])
            // Through a reference, then inside the NESTED field of the record reached.
            try await alice.save([Record(recordName: "visit", recordType: "Visit", fields: ["place": .reference(Reference(recordName: "p", action: .none))])])
            #expect(try await alice.queryNames(Query(recordType: "Visit", filterBy: try RecordPredicate(format: "place.address.city == 'Paris'").filters)) == ["visit"])
            #expect(try await alice.queryNames(Query(recordType: "Visit", filterBy: try RecordPredicate(format: "place.address.zip < 100").filters)) == [])
            let listInside = try await alice.post("records/query", #"{"query": {"recordType": "Place", "filterBy": [{"comparator": "LIST_CONTAINS", "fieldName": "address.city", "fieldValue": {"value": "x"}}]}}"#)
            #expect(listInside.code == "BAD_REQUEST" && listInside.reason.contains("does not apply inside a NESTED field"), "\(listInside.reason)")
            let bad = try await alice.post("records/modify", #"{"operations": [{"operationType": "forceReplace", "record": {"recordName": "b", "recordType": "Place", "fields": {"address": {"type": "STRING", "recordSyncType": "NESTED", "value": "not json"}}}}]}"#)
            #expect(bad.json["records"]?[0]?["serverErrorCode"]?.stringValue == "BAD_REQUEST", "\(bad.json)")
        }
    }

    @Test(arguments: [
        (#"[{"recordSyncOperator": "NOT", "recordSyncFilters": []}]"#, "filterBy[0]: NOT takes one filter in recordSyncFilters, not 0"),
        (#"[{"recordSyncOperator": "XOR", "recordSyncFilters": []}]"#, "query.filterBy[0].recordSyncOperator"),
        (#"[{"recordSyncFilters": []}]"#, "filterBy[0]: recordSyncFilters needs recordSyncOperator"),
        (#"[{"recordSyncOperator": "OR"}]"#, "filterBy[0]: OR needs recordSyncFilters"),
        (#"[{"recordSyncOperator": "OR", "comparator": "EQUALS", "recordSyncFilters": []}]"#, "filterBy[0]: a compound filter (recordSyncOperator) has no comparator"),
        (#"[{"fieldName": "year", "fieldValue": {"value": 1}}]"#, "filterBy[0]: a filter needs a comparator"),
        (#"[{"comparator": "EQUALS", "fieldName": "title", "recordSyncOptions": "x", "fieldValue": {"value": "a"}}]"#, "string option 'x' is unknown"),
        (#"[{"comparator": "LESS_THAN", "fieldName": "year", "recordSyncOptions": "c", "fieldValue": {"value": 1}}]"#, "recordSyncOptions apply to string comparisons, not LESS_THAN"),
        (#"[{"comparator": "LIKE", "fieldName": "year", "fieldValue": {"value": 1}}]"#, "filterBy[0]: LIKE compares with a STRING fieldValue"),
        (#"[{"comparator": "ENDS_WITH", "fieldName": "year", "fieldValue": {"value": "1"}}]"#, "filterBy[0]: ENDS_WITH compares strings, and 'year' is INT64"),
        (#"[{"comparator": "MATCHES", "fieldName": "title", "fieldValue": {"value": "(a"}}]"#, "filterBy[0]: MATCHES pattern at character 3: expected ')'"),
        (#"[{"comparator": "MATCHES", "fieldName": "title", "fieldValue": {"value": "(a)\\1"}}]"#, "back-references"),
        (#"[{"comparator": "MATCHES", "fieldName": "title", "fieldValue": {"value": "(?=a)"}}]"#, "no look-around"),
        (#"[{"comparator": "MATCHES", "fieldName": "title", "fieldValue": {"value": "a{1000}"}}]"#, "above 100"),
        (#"[{"comparator": "MATCHES", "fieldName": "title", "fieldValue": {"value": "((a{100}){100}){100}"}}]"#, "too large once its repetitions are expanded"),
        (#"[{"comparator": "CONTAINS", "fieldName": "artist.name", "recordSyncOptions": "c", "fieldValue": {"value": "a"}}]"#, "not key paths through references"),
        (#"[{"comparator": "LIST_CONTAINS", "fieldName": "title", "recordSyncOptions": "c", "fieldValue": {"value": "a"}}]"#, "LIST_CONTAINS needs a list field"),
        (#"[{"comparator": "EQUALS", "fieldName": "artist.label.city.name.x", "fieldValue": {"value": "a"}}]"#, "has 5 names; the limit is 4"),
        (#"[{"comparator": "EQUALS", "fieldName": "title.x", "fieldValue": {"value": "a"}}]"#, "steps through 'title', which is STRING; a key path follows REFERENCE"),
        (#"[{"comparator": "EQUALS", "fieldName": "artist._x", "fieldValue": {"value": "a"}}]"#, "key path 'artist._x'"),
        (#"[{"comparator": "LIKE", "fieldName": "artist.name", "fieldValue": {"value": "a*"}}]"#, "not key paths through references"),
    ])
    func aMalformedFilterIsRefusedNamingItsPart(filters: String, reason: String) async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await QueryTests.seed(alice)
            let reply = try await alice.post("records/query", Self.query(filters))
            #expect(reply.status == 400)
            #expect(reply.code == "BAD_REQUEST")
            #expect(reply.reason.contains(reason), "\(reply.reason)")
        }
    }

    @Test func nestingAndSizeHaveStatedLimits() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await QueryTests.seed(alice)
            let leaf = #"{"comparator": "EQUALS", "fieldName": "year", "fieldValue": {"value": 1901}}"#
            func nested(_ depth: Int) -> String {
                depth == 0 ? leaf : #"{"recordSyncOperator": "NOT", "recordSyncFilters": [\#(nested(depth - 1))]}"#
            }
            let deepest = try await alice.post("records/query", Self.query("[\(nested(8))]"))
            #expect(deepest.status == 200)
            #expect(try Self.names(deepest) == ["w1"])
            let tooDeep = try await alice.post("records/query", Self.query("[\(nested(9))]"))
            #expect(tooDeep.code == "BAD_REQUEST")
            #expect(tooDeep.reason.contains("compound filters nest more than 8 deep"), "\(tooDeep.reason)")
            let many = "[" + #"{"recordSyncOperator": "OR", "recordSyncFilters": ["# + Array(repeating: leaf, count: 65).joined(separator: ",") + "]}]"
            let tooMany = try await alice.post("records/query", Self.query(many))
            #expect(tooMany.code == "BAD_REQUEST")
            #expect(tooMany.reason.contains("65 comparisons; the limit is 64"), "\(tooMany.reason)")
        }
    }
}
