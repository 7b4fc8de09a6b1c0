import Foundation
import RecordModel
import Testing

@Suite struct StringPatternTests {
    func matches(_ pattern: String, _ text: String) throws -> Bool {
        var budget = MatchBudget()
        return try StringPattern(pattern).matches(text, budget: &budget)
    }

    @Test func wholeStringMatchesAsSwiftsRegexDoes() throws {
        let cases: [(String, String)] = [
            ("a+b", "aab"), ("a+b", "ab c"), ("(a|b)*c", "ababc"), ("[^ ]+", "a b"), ("\\d{2,3}", "123"), ("\\d{2,3}", "1234"),
            ("x?y?.*e", "monet"), ("(?:blue|sky).*", "sky high"), ("^.*$", ""), ("\\w+ \\w+", "blue sky"), ("[A-Z].*", "monet"),
        ]
        for (pattern, text) in cases {
            let swift = ((try? Regex(pattern).matchingSemantics(.unicodeScalar).wholeMatch(in: text)) ?? nil) != nil
            #expect(try matches(pattern, text) == swift, "\(pattern) on \(text)")
        }
    }

    /// Nothing repeated is nothing: nested repetitions of an empty group compile at once
    /// (they used to be emitted 100⁶ times, hanging the request that sent them).
    @Test func repeatedEmptyGroupsCompileAtOnce() throws {
        let started = ContinuousClock.now
        let pattern = "(?:(?:(?:(?:(?:(?:){100}){100}){100}){100}){100}){100}"
        #expect(try matches(pattern, ""))
        #expect(try matches(pattern + "a", "a"))
        #expect(try !matches(pattern, "a"))
        #expect(try matches("(?:a{0}){100}b", "b"))
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    @Test func hostilePatternsAreRefusedOrBounded() throws {
        #expect(throws: RecordSyncError.self) { try StringPattern("((a{100}){100}){100}") }
        #expect(throws: RecordSyncError.self) { try StringPattern(String(repeating: "a", count: 1_001)) }
        var budget = MatchBudget(steps: 1_000)
        #expect(throws: RecordSyncError.self) { _ = try StringPattern("(?:.*a){20}b").matches(String(repeating: "a", count: 500), budget: &budget) }
    }
}
