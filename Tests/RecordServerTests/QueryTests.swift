import Foundation
import RecordModel
import Testing

/// Item 6: comparators, system fields, sorting, paging, desiredKeys, zoneWide.
@Suite struct QueryTests {
    /// Ten artworks: years 1900…1909, tags, titles "w0"…"w9", artist "a" for even, "b" for odd.
    static func seed(_ session: Session, zone: String? = nil) async throws {
        var records: [Record] = [.artist("a"), .artist("b")]
        for i in 0..<10 {
            var work = Record.artwork("w\(i)", by: i % 2 == 0 ? "a" : "b", action: .none, year: Int64(1900 + i))
            work["tags"] = .list(.string, (i % 3 == 0 ? ["oil", "canvas"] : ["ink"]).map { .string($0) })
            work["price"] = .double(Double(i) * 1.5)
            work["framed"] = .boolean(i < 5)
            records.append(work)
        }
        try await session.save(records, zone: zone)
    }

    static func filter(_ field: String, _ comparator: QueryComparator, _ value: JSONValue) -> QueryFilter {
        QueryFilter(field, comparator, RawFieldValue(value: value))
    }

    @Test(arguments: [
        (filter("year", .equals, .int(1903)), ["w3"]),
        (filter("year", .notEquals, .int(1903)), ["w0", "w1", "w2", "w4", "w5", "w6", "w7", "w8", "w9"]),
        (filter("year", .lessThan, .int(1902)), ["w0", "w1"]),
        (filter("year", .lessThanOrEquals, .int(1902)), ["w0", "w1", "w2"]),
        (filter("year", .greaterThan, .int(1907)), ["w8", "w9"]),
        (filter("year", .greaterThanOrEquals, .int(1907)), ["w7", "w8", "w9"]),
        (filter("price", .greaterThan, .double(12)), ["w9"]),
        (filter("year", .in, .array([.int(1901), .int(1905)])), ["w1", "w5"]),
        (filter("year", .notIn, .array([.int(1901), .int(1905), .int(1900), .int(1902), .int(1903), .int(1904), .int(1906)])), ["w7", "w8", "w9"]),
        (filter("title", .beginsWith, .string("w1")), ["w1"]),
        (filter("title", .notBeginsWith, .string("w")), []),
        (filter("tags", .listContains, .string("oil")), ["w0", "w3", "w6", "w9"]),
        (filter("tags", .notListContains, .string("oil")), ["w1", "w2", "w4", "w5", "w7", "w8"]),
        (filter("tags", .listContainsAny, .array([.string("canvas"), .string("nothing")])), ["w0", "w3", "w6", "w9"]),
        (filter("tags", .listContainsAll, .array([.string("oil"), .string("canvas")])), ["w0", "w3", "w6", "w9"]),
        (filter("tags", .notListContainsAll, .array([.string("oil"), .string("canvas")])), ["w1", "w2", "w4", "w5", "w7", "w8"]),
        (filter("tags", .listMemberBeginsWith, .string("in")), ["w1", "w2", "w4", "w5", "w7", "w8"]),
        (filter("tags", .notListMemberBeginsWith, .string("in")), ["w0", "w3", "w6", "w9"]),
        (filter("framed", .equals, .bool(true)), ["w0", "w1", "w2", "w3", "w4"]),
        (filter("artist", .equals, .object(["recordName": .string("b")])), ["w1", "w3", "w5", "w7", "w9"]),
        (filter("artist", .notEquals, .object(["recordName": .string("b")])), ["w0", "w2", "w4", "w6", "w8"]),
        (filter("artist", .in, .array([.object(["recordName": .string("a")])])), ["w0", "w2", "w4", "w6", "w8"]),
        (QueryFilter(system: .recordName, .equals, RawFieldValue(value: .string("w4"))), ["w4"]),
        (QueryFilter(system: .recordName, .beginsWith, RawFieldValue(value: .string("w"))), ["w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8", "w9"]),
    ] as [(QueryFilter, [String])])
    func eachComparatorSelectsTheRightRecords(filter: QueryFilter, expected: [String]) async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await Self.seed(alice)
            let names = try await alice.queryNames(Query(recordType: "Artwork", filterBy: [filter]))
            #expect(names == expected)
        }
    }

    @Test func filtersAreAndedAndSystemTimestampsWork() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await Self.seed(alice)
            let names = try await alice.queryNames(Query(recordType: "Artwork", filterBy: [
                Self.filter("year", .greaterThan, .int(1903)),
                Self.filter("artist", .equals, .object(["recordName": .string("a")])),
                QueryFilter(system: .createdTimestamp, .greaterThan, RawFieldValue(value: .int(0))),
                QueryFilter(system: .createdUserRecordName, .equals, RawFieldValue(value: .string(alice.userRecordName))),
            ]))
            #expect(names == ["w4", "w6", "w8"])
        }
    }

    @Test func sortingUsesEveryKeyInTurn() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await Self.seed(alice)
            let query = Query(recordType: "Artwork", sortBy: [QuerySort("framed", ascending: true), QuerySort("year", ascending: false)])
            #expect(try await alice.queryNames(query) == ["w9", "w8", "w7", "w6", "w5", "w4", "w3", "w2", "w1", "w0"])
            let byArtist = Query(recordType: "Artwork", sortBy: [QuerySort("artist"), QuerySort(system: .recordName, ascending: false)])
            #expect(try await alice.queryNames(byArtist) == ["w8", "w6", "w4", "w2", "w0", "w9", "w7", "w5", "w3", "w1"])
        }
    }

    @Test func pagesWithContinuationMarkersCoverEveryRecordOnce() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await Self.seed(alice)
            let query = Query(recordType: "Artwork", sortBy: [QuerySort("framed"), QuerySort("price", ascending: false)])
            let whole = try await alice.queryNames(query)
            #expect(try await alice.queryNames(query, pageSize: 3) == whole)
            #expect(try await alice.queryNames(query, pageSize: 1) == whole)
        }
    }

    /// Strings compare and sort in byte order on every engine (upper case before lower case,
    /// accented letters last), whatever the database's own collation: queries, sorts and
    /// markers give the same answers everywhere.
    @Test func stringsSortAndCompareInByteOrder() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let names = ["apple", "Banana", "cherry", "Zebra", "éclair", "Apple", "banana"]
            try await alice.save(names.enumerated().map { Record.artist("n\($0.offset)-\($0.element)", $0.element) })
            let byteOrder = names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            #expect(byteOrder == ["Apple", "Banana", "Zebra", "apple", "banana", "cherry", "éclair"])
            let byField = try await alice.queryNames(Query(recordType: "Artist", sortBy: [QuerySort("name")]), pageSize: 2)
            #expect(byField.map { String($0.split(separator: "-")[1]) } == byteOrder)
            let byName = try await alice.queryNames(Query(recordType: "Artist", sortBy: [QuerySort(system: .recordName, ascending: false)]), pageSize: 3)
            #expect(byName == names.enumerated().map { "n\($0.offset)-\($0.element)" }.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }.reversed())
            let after = Query(recordType: "Artist", filterBy: [QueryFilter("name", .greaterThan, RawFieldValue(FieldValue.string("Zebra")))], sortBy: [QuerySort("name")])
            #expect(try await alice.queryNames(after).map { String($0.split(separator: "-")[1]) } == ["apple", "banana", "cherry", "éclair"])
            let prefixed = Query(recordType: "Artist", filterBy: [QueryFilter("name", .beginsWith, RawFieldValue(FieldValue.string("B")))])
            #expect(try await alice.queryNames(prefixed) == ["n1-Banana"])
        }
    }

    @Test func aMarkerStaysValidWhileRecordsChange() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await Self.seed(alice)
            let query = Query(recordType: "Artwork", sortBy: [QuerySort("year")])
            let first = try await alice.post("records/query", QueryRecordsRequest(query: query, resultsLimit: 4)).decode(QueryRecordsResponse.self)
            #expect(first.records.map(\.recordName) == ["w0", "w1", "w2", "w3"])
            // Delete a record already returned and add one before the marker: the next page is unaffected.
            _ = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "w1"))])
            try await alice.save([.artwork("early", by: "a", action: .none, year: 1800)])
            let second = try await alice.post("records/query", QueryRecordsRequest(query: query, resultsLimit: 4, continuationMarker: first.continuationMarker)).decode(QueryRecordsResponse.self)
            #expect(second.records.map(\.recordName) == ["w4", "w5", "w6", "w7"])
            // A marker cannot be used with another query.
            let other = try await alice.post("records/query", QueryRecordsRequest(query: Query(recordType: "Artist"), continuationMarker: first.continuationMarker))
            #expect(other.code == "BAD_REQUEST")
        }
    }

    @Test func desiredKeysAndZoneWideQueries() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("Other")
            try await alice.save([.artwork("here", by: "a", action: .none)])
            try await alice.save([.artwork("there", by: "a", action: .none)], zone: "Other")
            let reply = try await alice.post("records/query", QueryRecordsRequest(query: Query(recordType: "Artwork"), desiredKeys: ["year"], zoneWide: true))
            let records = try reply.decode(QueryRecordsResponse.self).records
            #expect(Set(records.map(\.recordName)) == ["here", "there"])
            #expect(records.allSatisfy { $0.fields.keys.sorted() == ["year"] })
            #expect(Set(records.compactMap { $0.zoneID?.zoneName }) == ["_defaultZone", "Other"])
            #expect(try await alice.queryNames(Query(recordType: "Artwork"), zone: "Other") == ["there"])
        }
    }

    @Test func unsupportedAndInvalidFiltersAreClearErrors() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await Self.seed(alice)
            let cases: [(QueryFilter, String)] = [
                (Self.filter("title", .near, .string("x")), "NEAR"),
                (Self.filter("year", .equals, .string("1900")), "filterBy[0]"),
                (Self.filter("year", .listContains, .int(1)), "list"),
                (Self.filter("bad-name", .equals, .int(1)), "bad-name"),
            ]
            for (filter, fragment) in cases {
                let reply = try await alice.post("records/query", QueryRecordsRequest(query: Query(recordType: "Artwork", filterBy: [filter])))
                #expect(reply.code == "BAD_REQUEST", "\(filter)")
                #expect(reply.reason.contains(fragment), "\(reply.reason)")
            }
            let sortByList = try await alice.post("records/query", QueryRecordsRequest(query: Query(recordType: "Artwork", sortBy: [QuerySort("tags")])))
            #expect(sortByList.code == "BAD_REQUEST")
        }
    }
}
