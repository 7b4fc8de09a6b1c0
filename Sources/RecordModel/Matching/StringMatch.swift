import Foundation

/// The string comparison options of a filter: `[c]`, `[d]`, `[cd]`.
public struct StringOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Case-insensitive: both sides full-Unicode case folded (`ß` matches `SS`).
    public static let caseInsensitive = StringOptions(rawValue: 1)
    /// Diacritic-insensitive: marks removed from both sides (`é` matches `e`).
    public static let diacriticInsensitive = StringOptions(rawValue: 2)

    /// Reads the letters of an options string (`c`, `d`, `cd`, `dc`; empty for none).
    ///
    /// - Throws: ``RecordSyncError`` (`BAD_REQUEST`) for any other letter.
    public init(letters: String) throws {
        var options: StringOptions = []
        for letter in letters {
            switch letter {
            case "c", "C": options.insert(.caseInsensitive)
            case "d", "D": options.insert(.diacriticInsensitive)
            default: throw RecordSyncError(.badRequest, "string option '\(letter)' is unknown; the options are c (case-insensitive) and d (diacritic-insensitive)")
            }
        }
        self = options
    }

    /// `text` folded as the options say, the same way on every server and cache: Foundation's
    /// locale-independent folding, then Unicode canonical composition.
    public func fold(_ text: String) -> String {
        guard !isEmpty else { return text }
        var folding: String.CompareOptions = []
        if contains(.caseInsensitive) { folding.insert(.caseInsensitive) }
        if contains(.diacriticInsensitive) { folding.insert(.diacriticInsensitive) }
        return text.folding(options: folding, locale: nil).precomposedStringWithCanonicalMapping
    }
}

/// A string comparison run in Swift rather than in SQL: every comparison with options, and
/// `CONTAINS`, `ENDS_WITH`, `LIKE` and `MATCHES`. Folding and matching are done here once, so
/// both storage engines and the client's cache give the same answers whatever their locale.
///
/// Strings are compared as sequences of Unicode code points, as SQL compares them: exactly as
/// stored without options; folded (``StringOptions/fold(_:)``) and canonically composed, on
/// both sides, with them. A `?` in `LIKE` and a `.` in `MATCHES` stand for one code point. An
/// empty value is contained in, begins and ends every string.
public struct StringMatch: Sendable, Hashable {
    /// What is compared.
    public enum Operation: Sendable, Hashable {
        case equals, notEquals, beginsWith, notBeginsWith, contains, endsWith
        case like([LikeToken])
        case matches(StringPattern)
    }

    /// One piece of a `LIKE` pattern.
    public enum LikeToken: Sendable, Hashable {
        case character(Unicode.Scalar)
        /// `?`: one code point.
        case one
        /// `*`: any run of code points.
        case run
    }

    /// The most code points a `LIKE` pattern may have.
    public static let maximumLikeLength = 1_000

    public let operation: Operation
    public let options: StringOptions
    /// The value compared against, folded.
    public let value: [Unicode.Scalar]

    /// Prepares `comparator` against `value` with `options`.
    ///
    /// - Throws: ``RecordSyncError`` (`BAD_REQUEST`) for a comparator that is not a string
    ///   match, or a pattern that does not compile.
    public init(_ comparator: QueryComparator, _ value: String, options: StringOptions) throws {
        self.options = options
        let folded = Array(options.fold(value).unicodeScalars)
        self.value = folded
        switch comparator {
        case .equals: operation = .equals
        case .notEquals: operation = .notEquals
        case .beginsWith, .listMemberBeginsWith: operation = .beginsWith
        case .notBeginsWith, .notListMemberBeginsWith: operation = .notBeginsWith
        case .contains: operation = .contains
        case .endsWith: operation = .endsWith
        case .like:
            guard folded.count <= Self.maximumLikeLength else {
                throw RecordSyncError(.badRequest, "LIKE pattern has \(folded.count) characters; the limit is \(Self.maximumLikeLength)")
            }
            operation = .like(Self.likeTokens(folded))
        case .matches:
            operation = .matches(try StringPattern(value, caseInsensitive: options.contains(.caseInsensitive), fold: options.fold))
        default:
            throw RecordSyncError(.badRequest, "\(comparator.rawValue) does not compare strings")
        }
    }

    /// Whether `text` passes.
    ///
    /// - Throws: ``RecordSyncError`` (`LIMIT_EXCEEDED`) when matching would pass the budget.
    public func matches(_ text: String, budget: inout MatchBudget) throws -> Bool {
        // Folding and reading the text cost with its length, whatever the comparison.
        try budget.spend(text.utf8.count / 8 + 1)
        let folded = options.fold(text)
        if case .matches(let pattern) = operation { return try pattern.matches(folded, budget: &budget) }
        let text = Array(folded.unicodeScalars)
        switch operation {
        case .equals: return text == value
        case .notEquals: return text != value
        case .beginsWith: return text.starts(with: value)
        case .notBeginsWith: return !text.starts(with: value)
        case .endsWith: return text.count >= value.count && text[(text.count - value.count)...].elementsEqual(value)
        case .contains: return try Self.contains(text, value, budget: &budget)
        case .like(let tokens): return try Self.like(tokens, text, budget: &budget)
        case .matches: return false
        }
    }

    private static func contains(_ text: [Unicode.Scalar], _ value: [Unicode.Scalar], budget: inout MatchBudget) throws -> Bool {
        guard let first = value.first else { return true }
        guard text.count >= value.count else { return false }
        for start in 0...(text.count - value.count) where text[start] == first {
            try budget.spend(value.count)
            if text[start..<(start + value.count)].elementsEqual(value) { return true }
        }
        return false
    }

    /// `\*` and `\?` stand for the characters themselves; `\\` for a backslash.
    private static func likeTokens(_ pattern: [Unicode.Scalar]) -> [LikeToken] {
        var tokens: [LikeToken] = []
        var escaped = false
        for character in pattern {
            if escaped {
                tokens.append(.character(character))
                escaped = false
                continue
            }
            switch character {
            case "\\": escaped = true
            case "*": if tokens.last != .run { tokens.append(.run) }
            case "?": tokens.append(.one)
            default: tokens.append(.character(character))
            }
        }
        if escaped { tokens.append(.character("\\")) }
        return tokens
    }

    /// Wildcard matching that remembers the last `*` (at most `pattern × text` steps, each
    /// counted against the budget).
    private static func like(_ pattern: [LikeToken], _ text: [Unicode.Scalar], budget: inout MatchBudget) throws -> Bool {
        var p = 0, t = 0
        var star: Int?
        var starText = 0
        while t < text.count {
            try budget.spend(1)
            if p < pattern.count, pattern[p] != .run, pattern[p] == .one || pattern[p] == .character(text[t]) {
                p += 1
                t += 1
            } else if p < pattern.count, pattern[p] == .run {
                star = p
                starText = t
                p += 1
            } else if let star {
                p = star + 1
                starText += 1
                t = starText
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == .run { p += 1 }
        return p == pattern.count
    }
}
