import Foundation
import RecordModel
import Testing

private func filters(_ format: String, _ arguments: any Sendable...) throws -> [QueryFilter] {
    try RecordPredicate(format: format, argumentArray: arguments).filters
}

private func int(_ number: Int64) -> RawFieldValue { RawFieldValue(value: .int(number), type: FieldType(.int64)) }
private func string(_ text: String) -> RawFieldValue { RawFieldValue(value: .string(text), type: FieldType(.string)) }
private func list(_ scalar: ScalarType, _ elements: [JSONValue]) -> RawFieldValue {
    RawFieldValue(value: .array(elements), type: FieldType(scalar, isList: true))
}
private func reference(_ name: String, zone: String? = "_defaultZone") -> JSONValue {
    var members: [String: JSONValue] = ["recordName": .string(name), "action": .string("NONE")]
    if let zone { members["zoneID"] = .object(["zoneName": .string(zone)]) }
    return .object(members)
}

@Suite struct PredicateComparisonTests {
    @Test(arguments: [
        ("year == 5", QueryComparator.equals), ("year = 5", .equals), ("year != 5", .notEquals), ("year <> 5", .notEquals),
        ("year < 5", .lessThan), ("year <= 5", .lessThanOrEquals), ("year =< 5", .lessThanOrEquals),
        ("year > 5", .greaterThan), ("year >= 5", .greaterThanOrEquals), ("year => 5", .greaterThanOrEquals),
    ])
    func eachComparisonOperatorCompilesToItsComparator(format: String, comparator: QueryComparator) throws {
        #expect(try filters(format) == [QueryFilter("year", comparator, int(5))])
    }

    @Test(arguments: [
        ("5 == year", QueryComparator.equals), ("5 != year", .notEquals), ("5 < year", .greaterThan),
        ("5 <= year", .greaterThanOrEquals), ("5 > year", .lessThan), ("5 >= year", .lessThanOrEquals),
    ])
    func aValueBeforeTheKeyFlipsTheComparison(format: String, comparator: QueryComparator) throws {
        #expect(try filters(format) == [QueryFilter("year", comparator, int(5))])
    }

    @Test func beginsWithComparesAStringPrefix() throws {
        #expect(try filters("name BEGINSWITH 'Van'") == [QueryFilter("name", .beginsWith, string("Van"))])
    }

    @Test func inTakesAnArrayArgumentOrLiteral() throws {
        let expected = [QueryFilter("year", .in, list(.int64, [.int(1880), .int(1890)]))]
        #expect(try filters("year IN %@", [1880, 1890]) == expected)
        #expect(try filters("year IN {1880, 1890}") == expected)
        #expect(try filters("name IN {'a', \"b\"}") == [QueryFilter("name", .in, list(.string, [.string("a"), .string("b")]))])
        #expect(try filters("price IN {1, 2.5}") == [QueryFilter("price", .in, list(.double, [.double(1), .double(2.5)]))])
    }

    @Test func containsTestsListMembership() throws {
        let expected = [QueryFilter("tags", .listContains, string("oil"))]
        // A string: the server reads CONTAINS as membership in a list field, a substring of a
        // STRING field (QueryCompilerTests checks both).
        #expect(try filters("tags CONTAINS 'oil'") == [QueryFilter("tags", .contains, string("oil"))])
        #expect(try filters("tags CONTAINS 5") == [QueryFilter("tags", .listContains, int(5))])
        #expect(try filters("'oil' IN tags") == expected)
        #expect(try filters("ANY tags == 'oil'") == expected)
        #expect(try filters("{1, 2} CONTAINS year") == [QueryFilter("year", .in, list(.int64, [.int(1), .int(2)]))])
    }

    @Test func quantifiedComparisonsUseTheListComparators() throws {
        let tags = list(.string, [.string("oil"), .string("ink")])
        #expect(try filters("ANY tags BEGINSWITH 'o'") == [QueryFilter("tags", .listMemberBeginsWith, string("o"))])
        #expect(try filters("ANY tags IN %@", ["oil", "ink"]) == [QueryFilter("tags", .listContainsAny, tags)])
        #expect(try filters("SOME tags IN %@", ["oil", "ink"]) == [QueryFilter("tags", .listContainsAny, tags)])
        #expect(try filters("ANY %@ IN tags", ["oil", "ink"]) == [QueryFilter("tags", .listContainsAny, tags)])
        #expect(try filters("ALL %@ IN tags", ["oil", "ink"]) == [QueryFilter("tags", .listContainsAll, tags)])
    }

    @Test func betweenBecomesTwoBounds() throws {
        let expected = [QueryFilter("year", .greaterThanOrEquals, int(1880)), QueryFilter("year", .lessThanOrEquals, int(1890))]
        #expect(try filters("year BETWEEN {1880, 1890}") == expected)
        #expect(try filters("year BETWEEN %@", [1880, 1890]) == expected)
    }

    @Test(arguments: [
        ("NOT (year IN {1})", QueryComparator.notIn), ("NOT name BEGINSWITH 'a'", .notBeginsWith),
        ("NOT (tags CONTAINS 5)", .notListContains), ("NOT (ANY tags BEGINSWITH 'a')", .notListMemberBeginsWith),
        ("NOT (ALL {'a'} IN tags)", .notListContainsAll), ("NONE tags == 'a'", .notListContains),
        ("NONE tags BEGINSWITH 'a'", .notListMemberBeginsWith),
        ("NOT (ANY tags IN {'a'})", .notListContainsAny), ("NONE tags IN {'a'}", .notListContainsAny),
        ("NOT year == 1", .notEquals), ("NOT year != 1", .equals), ("!(year == 1)", .notEquals),
        ("NOT year < 1", .greaterThanOrEquals), ("NOT year <= 1", .greaterThan),
        ("NOT year > 1", .lessThanOrEquals), ("NOT year >= 1", .lessThan),
        ("NOT NOT year < 1", .lessThan), ("NOT (NOT (year IN {1}))", .in), ("NOT 1 < year", .lessThanOrEquals),
    ])
    func notNegatesOneComparisonIntoTheOppositeComparator(format: String, comparator: QueryComparator) throws {
        let compiled = try filters(format)
        #expect(compiled.map(\.comparator) == [comparator])
    }

    @Test func notBindsTighterThanAnd() throws {
        #expect(try filters("NOT a == 1 AND b == 2") == [QueryFilter("a", .notEquals, int(1)), QueryFilter("b", .equals, int(2))])
    }

    @Test func keywordsAreCaseInsensitive() throws {
        #expect(try filters("any tags beginswith 'o' and not (year in {1}) && name BeginsWith 'x'").map(\.comparator)
            == [.listMemberBeginsWith, .notIn, .beginsWith])
        #expect(try filters("flag == yes AND other == False").map(\.fieldValue?.value) == [.bool(true), .bool(false)])
    }
}

@Suite struct PredicateStructureTests {
    @Test func andChainsAndParenthesesKeepTheirOrder() throws {
        let expected = [QueryFilter("a", .equals, int(1)), QueryFilter("b", .equals, int(2)), QueryFilter("c", .equals, int(3))]
        #expect(try filters("a == 1 AND (b == 2 && c == 3)") == expected)
        #expect(try filters("((a == 1)) AND ((b == 2) AND (c == 3))") == expected)
    }

    @Test func truePredicateHasNoFilters() throws {
        #expect(RecordPredicate.all.filters.isEmpty)
        #expect(try RecordPredicate(format: "truepredicate") == .all)
        #expect(try filters("TRUEPREDICATE AND a == 1 AND (TRUEPREDICATE)") == [QueryFilter("a", .equals, int(1))])
    }

    @Test func variadicAndArrayArgumentsAgree() throws {
        let variadic = try RecordPredicate(format: "a == %@ AND b IN %@", "x", [1, 2])
        let array = try RecordPredicate(format: "a == %@ AND b IN %@", argumentArray: ["x", [1, 2]])
        #expect(variadic == array)
        #expect(variadic.filters == [QueryFilter("a", .equals, string("x")), QueryFilter("b", .in, list(.int64, [.int(1), .int(2)]))])
    }

    @Test func percentKNamesTheKey() throws {
        #expect(try filters("%K == %@", "year", 5) == [QueryFilter("year", .equals, int(5))])
        #expect(try filters("%@ IN %K", "oil", "tags") == [QueryFilter("tags", .listContains, string("oil"))])
        #expect(try filters("%K < %@", "creationDate", Date(timeIntervalSince1970: 2))
            == [QueryFilter(system: .createdTimestamp, .lessThan, RawFieldValue(value: .int(2000), type: FieldType(.timestamp)))])
    }

    @Test func hashEscapesAReservedWord() throws {
        #expect(try filters("#in == 1 AND #Yes == 2") == [QueryFilter("in", .equals, int(1)), QueryFilter("Yes", .equals, int(2))])
    }

    @Test(arguments: [
        ("recordName", SystemFieldName.recordName), ("createdTimestamp", .createdTimestamp), ("creationDate", .createdTimestamp),
        ("modifiedTimestamp", .modifiedTimestamp), ("modificationDate", .modifiedTimestamp),
        ("createdUserRecordName", .createdUserRecordName), ("modifiedUserRecordName", .modifiedUserRecordName),
    ])
    func systemKeysBecomeSystemFieldFilters(key: String, system: SystemFieldName) throws {
        let value: any Sendable = system.type.scalar == .timestamp ? Date(timeIntervalSince1970: 1) : "_alice"
        let compiled = try filters("\(key) == %@", value)
        #expect(compiled.count == 1)
        #expect(compiled.first?.systemFieldName == system)
        #expect(compiled.first?.fieldName == nil)
        #expect(compiled.first?.fieldValue?.type == system.type)
    }

    @Test func systemFieldValuesTakeTheSystemFieldType() throws {
        #expect(try filters("recordName == %@", RecordID(recordName: "r1"))
            == [QueryFilter(system: .recordName, .equals, string("r1"))])
        #expect(try filters("recordName IN %@", [RecordID(recordName: "r1"), RecordID(recordName: "r2")])
            == [QueryFilter(system: .recordName, .in, list(.string, [.string("r1"), .string("r2")]))])
        #expect(try filters("modifiedTimestamp > 1700000000000")
            == [QueryFilter(system: .modifiedTimestamp, .greaterThan, RawFieldValue(value: .int(1_700_000_000_000), type: FieldType(.timestamp)))])
    }
}

@Suite struct PredicateValueTests {
    static let recordID = RecordID(recordName: "van-gogh", zoneID: ZoneID(zoneName: "Art"))

    @Test(arguments: [
        ("String", "x" as any Sendable, RawFieldValue(value: .string("x"), type: FieldType(.string))),
        ("Substring", "xyz".prefix(2), RawFieldValue(value: .string("xy"), type: FieldType(.string))),
        ("Int", 7, int(7)), ("Int64", Int64.max, int(.max)), ("Int32", Int32(-3), int(-3)), ("UInt8", UInt8(9), int(9)),
        ("Double", 2.5, RawFieldValue(value: .double(2.5), type: FieldType(.double))),
        ("Float", Float(0.5), RawFieldValue(value: .double(0.5), type: FieldType(.double))),
        ("Bool", true, RawFieldValue(value: .bool(true), type: FieldType(.boolean))),
        ("Date", Date(timeIntervalSince1970: 1_700_000_000.0006), RawFieldValue(value: .int(1_700_000_000_001), type: FieldType(.timestamp))),
        ("Data", Data("hi".utf8), RawFieldValue(value: .string("aGk="), type: FieldType(.bytes))),
        ("Reference", Reference(recordName: "van-gogh", action: .deleteSelf),
         RawFieldValue(value: .object(["recordName": .string("van-gogh"), "action": .string("DELETE_SELF")]), type: FieldType(.reference))),
        ("RecordID", recordID, RawFieldValue(value: reference("van-gogh", zone: "Art"), type: FieldType(.reference))),
        ("Record", Record(recordType: "Artist", recordID: recordID), RawFieldValue(value: reference("van-gogh", zone: "Art"), type: FieldType(.reference))),
        ("FieldValue", FieldValue.timestamp(42), RawFieldValue(value: .int(42), type: FieldType(.timestamp))),
    ])
    func eachArgumentTypeBecomesItsWireValue(name: String, argument: any Sendable, expected: RawFieldValue) throws {
        #expect(try filters("f == %@", argument) == [QueryFilter("f", .equals, expected)], "\(name)")
    }

    @Test func arrayArgumentsBecomeTypedLists() throws {
        #expect(try filters("f IN %@", ["a", "b"]).first?.fieldValue == list(.string, [.string("a"), .string("b")]))
        #expect(try filters("f IN %@", [Int]()).first?.fieldValue == list(.int64, []))
        #expect(try filters("f IN %@", [Date(timeIntervalSince1970: 1)]).first?.fieldValue == list(.timestamp, [.int(1000)]))
        #expect(try filters("f IN %@", [Self.recordID]).first?.fieldValue == list(.reference, [reference("van-gogh", zone: "Art")]))
        let mixed: [any Sendable] = [1, 2.5]
        #expect(try RecordPredicate(format: "f IN %@", argumentArray: [mixed]).filters.first?.fieldValue == list(.double, [.double(1), .double(2.5)]))
        #expect(try filters("ANY f IN %@", FieldValue.list(.int64, [.int64(3)])).first?.fieldValue == list(.int64, [.int(3)]))
    }

    @Test func literalsAreTyped() throws {
        let values = try filters("a == 'it\\'s' AND b == \"say \\\"hi\\\"\\n\" AND c == -12 AND d == 2.5 AND e == 1e3 AND f == TRUE AND g == NO AND h == '\\u00e9'")
            .map(\.fieldValue)
        #expect(values == [
            string("it's"), string("say \"hi\"\n"), int(-12),
            RawFieldValue(value: .double(2.5), type: FieldType(.double)), RawFieldValue(value: .double(1000), type: FieldType(.double)),
            RawFieldValue(value: .bool(true), type: FieldType(.boolean)), RawFieldValue(value: .bool(false), type: FieldType(.boolean)),
            string("é"),
        ])
    }

    @Test func compiledValuesReadBackAsTheirDeclaredType() throws {
        let predicate = try RecordPredicate(
            format: "a IN %@ AND ANY b IN %@ AND c == %@ AND d == %@ AND e IN {1, 2.5}",
            [Self.recordID], ["x"], Date(timeIntervalSince1970: 3), Data([1, 2])
        )
        for filter in predicate.filters {
            #expect(throws: Never.self) { try FieldValue(json: filter.fieldValue!.value, type: filter.fieldValue!.type) }
        }
    }
}

@Suite struct RecordQueryTests {
    @Test(arguments: [
        ("year", nil, "year"), ("recordName", SystemFieldName?.some(.recordName), String?.none), ("creationDate", .createdTimestamp, nil),
        ("createdTimestamp", .createdTimestamp, nil), ("modificationDate", .modifiedTimestamp, nil),
        ("modifiedTimestamp", .modifiedTimestamp, nil), ("createdUserRecordName", .createdUserRecordName, nil),
        ("modifiedUserRecordName", .modifiedUserRecordName, nil),
    ])
    func sortDescriptorsNameAFieldOrASystemField(key: String, system: SystemFieldName?, field: String?) {
        let wire = RecordSortDescriptor(key: key, ascending: false).wire
        #expect(wire.systemFieldName == system)
        #expect(wire.fieldName == field)
        #expect(wire.ascending == false)
        #expect(RecordSortDescriptor(key: key).wire.ascending == true)
    }

    @Test func anEmptyQueryOmitsFiltersAndSorts() {
        #expect(RecordQuery(recordType: "Artwork").wire == Query(recordType: "Artwork"))
    }

    @Test func aQueryEncodesAsTheProtocolSays() throws {
        let query = RecordQuery(
            recordType: "Artwork",
            predicate: try RecordPredicate(format: "artist == %@", RecordID(recordName: "van-gogh")),
            sortDescriptors: [RecordSortDescriptor(key: "year", ascending: false), RecordSortDescriptor(key: "creationDate")]
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(query.wire), as: UTF8.self)
        #expect(json == """
            {"filterBy":[{"comparator":"EQUALS","fieldName":"artist","fieldValue":{"type":"REFERENCE","value":\
            {"action":"NONE","recordName":"van-gogh","zoneID":{"zoneName":"_defaultZone"}}}}],"recordType":"Artwork",\
            "sortBy":[{"ascending":false,"fieldName":"year"},{"ascending":true,"systemFieldName":"createdTimestamp"}]}
            """)
    }
}

/// A format the parser must refuse, and the text its reason must hold: the offending token and
/// its column.
struct BadFormat: Sendable, CustomTestStringConvertible {
    var format: String
    var arguments: [any Sendable]
    var blame: String
    init(_ format: String, _ arguments: [any Sendable] = [], blames blame: String) {
        self.format = format
        self.arguments = arguments
        self.blame = blame
    }
    var testDescription: String { format }
}

@Suite struct PredicateErrorTests {
    static let badFormats: [BadFormat] = [
        BadFormat("SUBQUERY(tags, $t, $t == 'x').@count > 0", blames: "'SUBQUERY' at column 1"),
        BadFormat("name ==[x] 'a'", blames: "'[x]' at column 8"),
        BadFormat("year ==[c] 5", blames: "'==' at column 6: comparison options"),
        BadFormat("year IN[c] {'a'}", blames: "'IN' at column 6: comparison options"),
        BadFormat("name LIKE 5", blames: "'5' at column 11: LIKE compares strings"),
        BadFormat("ANY tags CONTAINS 'x'", blames: "'ANY' at column 1"),
        BadFormat("a == 1 OR", blames: "the end of the format at column 10"),
        BadFormat("(a == 1 OR b == 2", blames: "the end of the format at column 18"),
        BadFormat(String(repeating: "NOT (", count: 40) + "a == 1" + String(repeating: ")", count: 40), blames: "nests too deep"),
        BadFormat("author..name == 'x'", blames: "'author..name' at column 1"),
        BadFormat("a.b.c.d.e == 'x'", blames: "'a.b.c.d.e' at column 1: a key path has at most 4 names"),
        BadFormat("tags.@count > 2", blames: "'tags.@count' at column 1"),
        BadFormat("lowercase(name) == 'x'", blames: "'lowercase' at column 1"),
        BadFormat("SELF == 'x'", blames: "'==' at column 6: SELF is compared only by CONTAINS"),
        BadFormat("SELF CONTAINS 5", blames: "'5' at column 15: the words to search for are a string"),
        BadFormat("title TOKENMATCHES[cx] 'x'", blames: "'[cx]' at column 19"),
        BadFormat("NONE tokenize('x', 'Cdl') IN allTokens", blames: "'NONE' at column 1"),
        BadFormat("ALL tokenize('x', 'Cdl') IN 'title'", blames: "needs a text field"),
        BadFormat("distanceToLocation:fromLocation:(place, {1, 2}) > 5", blames: "'>' at column 49"),
        BadFormat("distanceToLocation:fromLocation:(place, 'Paris') < 5", blames: "''Paris'' at column 41: is not a location"),
        BadFormat("distanceToLocation:fromLocation:(place, {1, 2}) < -1", blames: "0 or more"),
        BadFormat("_hidden == 1", blames: "'_hidden' at column 1"),
        BadFormat("a == $x", blames: "'$' at column 6"),
        BadFormat("a == 1 & b == 2", blames: "'&' at column 8"),
        BadFormat("a == %s", blames: "'%s' at column 6"),
        BadFormat("a == 'open", blames: "''open' at column 6"),
        BadFormat("a == 'x\\q'", blames: "'\\q' at column 8"),
        BadFormat("a == 99999999999999999999", blames: "'99999999999999999999' at column 6"),
        BadFormat("a == 1 AND", blames: "the end of the format at column 11"),
        BadFormat("", blames: "the end of the format at column 1"),
        BadFormat("(a == 1", blames: "the end of the format at column 8"),
        BadFormat("a == 1)", blames: "')' at column 7"),
        BadFormat("a == 1 b == 2", blames: "'b' at column 8"),
        BadFormat("a == nil", blames: "'nil' at column 6"),
        BadFormat("a == b", blames: "'==' at column 3"),
        BadFormat("1 == 2", blames: "'==' at column 3"),
        BadFormat("a == %@ AND b == %@", ["x"], blames: "'%@' at column 18"),
        BadFormat("a == %@", ["x", 2], blames: "argument 2 (Int) is surplus"),
        BadFormat("a == 1", [2], blames: "argument 1 (Int) is surplus"),
        BadFormat("a == %@", [[1, 2]], blames: "'%@' at column 6: is an array; use IN"),
        BadFormat("a == %@", [URL(fileURLWithPath: "/")], blames: "'%@' at column 6: an argument of type URL"),
        BadFormat("a == %@", [Double.nan], blames: "'%@' at column 6"),
        BadFormat("a IN %@", [["x", 1] as [any Sendable]], blames: "'%@' at column 6: an array mixes STRING and INT64"),
        BadFormat("%K == 1", [5], blames: "'%K' at column 1"),
        BadFormat("%K == 1", ["a._b"], blames: "'%K' at column 1"),
        BadFormat("a BEGINSWITH 5", blames: "'5' at column 14"),
        BadFormat("'x' BEGINSWITH a", blames: "'BEGINSWITH' at column 5"),
        BadFormat("a IN 5", blames: "'5' at column 6"),
        BadFormat("tags CONTAINS %@", [["a", "b"]], blames: "'%@' at column 15"),
        BadFormat("a < %@", [Reference(recordName: "r")], blames: "'%@' at column 5"),
        BadFormat("a BETWEEN {1}", blames: "'{' at column 11"),
        BadFormat("a IN {1, {2}}", blames: "'{' at column 10"),
        BadFormat("ANY tags != 'x'", blames: "'ANY' at column 1"),
        BadFormat("ALL tags BEGINSWITH 'x'", blames: "'ALL' at column 1"),
        BadFormat("creationDate > 'yesterday'", blames: "''yesterday'' at column 16"),
    ]

    @Test(arguments: badFormats)
    func formatsTheServerCannotRunAreBadRequestsNamingTheToken(_ bad: BadFormat) {
        let error = #expect(throws: RecordSyncError.self) {
            try RecordPredicate(format: bad.format, argumentArray: bad.arguments)
        }
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains(bad.blame) == true, "reason: \(error?.reason ?? "none")")
    }

    @Test func anOptionOnAComparisonThatTakesNoneIsNamed() {
        let error = #expect(throws: RecordSyncError.self) { try RecordPredicate(format: "year >[c] 5") }
        #expect(error?.reason == "'>' at column 6: comparison options ([c], [d], [cd]) apply to string comparisons")
    }
}

@Suite struct SearchPredicateTests {
    private func words(_ text: String) -> RawFieldValue { RawFieldValue(value: .string(text), type: FieldType(.string)) }

    @Test func cloudKitsWordSearchFormsCompileToTokenComparators() throws {
        let all = QueryFilter("allTokens", .containsAllTokens, words("water lilies"))
        #expect(try filters("SELF CONTAINS 'water lilies'") == [all])
        #expect(try filters("self contains %@", "water lilies") == [all])
        #expect(try filters("allTokens TOKENMATCHES[cdl] %@", "water lilies") == [all])
        #expect(try filters("ALL tokenize(%@, 'Cdl') IN allTokens", "water lilies") == [all])
        #expect(try filters("ANY tokenize('water lilies', 'Cdl') IN allTokens") == [QueryFilter("allTokens", .containsAnyTokens, words("water lilies"))])
        #expect(try filters("title TOKENMATCHES 'water'") == [QueryFilter("title", .containsAllTokens, words("water"))])
        #expect(try filters("NOT SELF CONTAINS 'x'") == [.not(QueryFilter("allTokens", .containsAllTokens, words("x")))])
    }

    @Test func cloudKitsDistanceFunctionIsNearInMetres() throws {
        let paris = Location(latitude: 48.8606, longitude: 2.3376)
        let near = QueryFilter("place", near: paris, within: 1_500)
        #expect(try filters("distanceToLocation:fromLocation:(place, %@) < 1.5", paris) == [near])
        #expect(try filters("distanceToLocation:fromLocation:(place, {48.8606, 2.3376}) <= %@", 1.5) == [near])
        #expect(try filters("distanceToLocation:fromLocation:(%K, %@) < 1.5", "place", paris) == [near])
        #expect(try filters("year > 5 AND NOT distanceToLocation:fromLocation:(place, %@) < 1.5", paris) == [QueryFilter("year", .greaterThan, int(5)), .not(near)])
    }

    @Test func aLocationSortDescriptorTravelsAsRelativeLocation() {
        let paris = Location(latitude: 48.8606, longitude: 2.3376)
        #expect(RecordSortDescriptor(key: "place", relativeLocation: paris).wire == QuerySort("place", distanceFrom: paris))
        #expect(RecordSortDescriptor(key: "place", relativeLocation: paris, ascending: false).wire.ascending == false)
    }
}
