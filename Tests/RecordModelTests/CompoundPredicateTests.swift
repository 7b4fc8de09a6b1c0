import Foundation
import RecordModel
import Testing

private func filters(_ format: String, _ arguments: any Sendable...) throws -> [QueryFilter] {
    try RecordPredicate(format: format, argumentArray: arguments).filters
}

private func int(_ number: Int64) -> RawFieldValue { RawFieldValue(value: .int(number), type: FieldType(.int64)) }
private func string(_ text: String) -> RawFieldValue { RawFieldValue(value: .string(text), type: FieldType(.string)) }

@Suite struct CompoundPredicateTests {
    let a1 = QueryFilter("a", .equals, int(1))
    let b2 = QueryFilter("b", .equals, int(2))
    let c3 = QueryFilter("c", .equals, int(3))

    @Test func orJoinsItsSidesAndAndBindsTighter() throws {
        #expect(try filters("a == 1 OR b == 2") == [.or([a1, b2])])
        #expect(try filters("a == 1 || b == 2 OR c == 3") == [.or([a1, b2, c3])])
        #expect(try filters("a == 1 AND b == 2 OR c == 3") == [.or([.and([a1, b2]), c3])])
        #expect(try filters("a == 1 AND (b == 2 OR c == 3)") == [a1, .or([b2, c3])])
    }

    @Test func notOverSeveralConditionsIsACompoundNot() throws {
        #expect(try filters("NOT (a == 1 AND b == 2)") == [.not(.and([a1, b2]))])
        #expect(try filters("NOT (a == 1 OR b == 2)") == [.not(.or([a1, b2]))])
        #expect(try filters("NOT NOT (a == 1 OR b == 2)") == [.or([a1, b2])])
        #expect(try filters("NOT a BETWEEN {1, 2}") == [.not(.and([QueryFilter("a", .greaterThanOrEquals, int(1)), QueryFilter("a", .lessThanOrEquals, int(2))]))])
    }

    @Test func truePredicateAndFalsePredicateAreEmptyAndAndOr() throws {
        #expect(try filters("TRUEPREDICATE") == [])
        #expect(try filters("FALSEPREDICATE") == [.or([])])
        #expect(try filters("NOT TRUEPREDICATE") == [.not(.and([]))])
        #expect(try filters("a == 1 OR FALSEPREDICATE") == [.or([a1])])
    }

    @Test func stringComparisonsTakeOptions() throws {
        #expect(try filters("name ==[c] 'x'") == [QueryFilter("name", .equals, string("x"), options: "c")])
        #expect(try filters("name CONTAINS[cd] 'x'") == [QueryFilter("name", .contains, string("x"), options: "cd")])
        #expect(try filters("name ENDSWITH[d] 'x'") == [QueryFilter("name", .endsWith, string("x"), options: "d")])
        #expect(try filters("name LIKE[c] 'x*'") == [QueryFilter("name", .like, string("x*"), options: "c")])
        #expect(try filters("name MATCHES 'x.*'") == [QueryFilter("name", .matches, string("x.*"))])
        #expect(try filters("ANY tags LIKE 'o?l'") == [QueryFilter("tags", .like, string("o?l"))])
        #expect(try filters("NOT name ENDSWITH 'x'") == [.not(QueryFilter("name", .endsWith, string("x")))])
        #expect(try filters("NOT name ==[c] 'x'") == [QueryFilter("name", .notEquals, string("x"), options: "c")])
        #expect(try filters("recordName CONTAINS 'x'") == [QueryFilter(system: .recordName, .contains, string("x"))])
    }

    @Test func keyPathsNameFieldsOfReferencedRecords() throws {
        #expect(try filters("artist.name == 'Monet'") == [QueryFilter("artist.name", .equals, string("Monet"))])
        #expect(try filters("ANY works.artist.born < 1850") == [QueryFilter("works.artist.born", .lessThan, int(1850))])
        #expect(try filters("%K BEGINSWITH 'Mo'", "artist.name") == [QueryFilter("artist.name", .beginsWith, string("Mo"))])
    }

    @Test func compoundFiltersTravelAsExtensionKeys() throws {
        let data = try JSONEncoder().encode(QueryFilter.or([a1, .not(QueryFilter("name", .like, string("x*"), options: "c"))]))
        let json = try JSONDecoder().decode(JSONValue.self, from: data)
        #expect(json["recordSyncOperator"] == .string("OR"))
        #expect(json["comparator"] == nil)
        guard case .array(let inner)? = json["recordSyncFilters"], case .array(let negated)? = inner[1]["recordSyncFilters"] else {
            Issue.record("no recordSyncFilters in \(json)")
            return
        }
        #expect(inner[1]["recordSyncOperator"] == .string("NOT"))
        #expect(negated[0]["recordSyncOptions"] == .string("c"))
        #expect(try JSONDecoder().decode(QueryFilter.self, from: data) == .or([a1, .not(QueryFilter("name", .like, string("x*"), options: "c"))]))
    }
}
