import Foundation

/// The reserved words of the predicate format, matched case-insensitively.
///
/// Some are accepted; the rest are recognised only to be refused with a clear reason.
enum PredicateKeyword: String, CaseIterable {
    case and = "AND", or = "OR", not = "NOT"
    case `in` = "IN", contains = "CONTAINS", beginsWith = "BEGINSWITH", between = "BETWEEN"
    case endsWith = "ENDSWITH", like = "LIKE", matches = "MATCHES", tokenMatches = "TOKENMATCHES"
    case any = "ANY", some = "SOME", all = "ALL", none = "NONE"
    case truePredicate = "TRUEPREDICATE", falsePredicate = "FALSEPREDICATE"
    case `true` = "TRUE", yes = "YES", `false` = "FALSE", no = "NO"
    case null = "NULL", `nil` = "NIL", `self` = "SELF", subquery = "SUBQUERY"
}

/// One token of a predicate format, with where it starts.
struct PredicateToken {
    enum Kind: Equatable {
        /// A field name as written (`#name` escapes a reserved word).
        case identifier(String)
        case keyword(PredicateKeyword)
        /// `%@`, `%d`, …: the argument with this index is a value.
        case valueArgument(Int)
        /// `%K`: the argument with this index is a key.
        case keyArgument(Int)
        case string(String)
        case integer(Int64)
        case decimal(Double)
        /// `==`, `<=`, `&&`, `(`, `{`, `,`, …
        case symbol(String)
        /// Comparison options such as `[c]` or `[cd]`.
        case options(String)
        /// Text that is not a token; the parser throws `message` when it reaches it.
        case invalid(String)
        case end
    }

    var kind: Kind
    /// The token as written in the format.
    var text: String
    /// The 1-based column of its first character.
    var column: Int

    /// A bad-request error naming this token and its column.
    func error(_ message: String) -> RecordSyncError {
        let shown = kind == .end ? "the end of the format" : NameRules.quoted(text)
        return RecordSyncError(.badRequest, "\(shown) at column \(column): \(message)")
    }

    /// Whether the token is `keyword`.
    func `is`(_ keyword: PredicateKeyword) -> Bool { kind == .keyword(keyword) }

    /// Whether the token is the symbol `symbol`.
    func `is`(_ symbol: String) -> Bool { kind == .symbol(symbol) }
}

/// Splits a predicate format into tokens, numbering its argument placeholders in order.
struct PredicateLexer {
    private let characters: [Character]
    private var index = 0
    private var argumentCount = 0

    /// The symbols, longest first so that `<=` wins over `<`.
    private static let symbols = ["==", "!=", "<>", "<=", "=<", ">=", "=>", "&&", "||", "=", "<", ">", "!", "(", ")", "{", "}", ","]
    /// The printf-style specifiers taken like `%@`.
    private static let valueSpecifiers = ["@", "d", "i", "ld", "lld", "f", "lf"]

    /// Tokenises `format`, ending with `.end`.
    ///
    /// An unknown character or specifier, an unterminated string or option list, a bad escape
    /// or an integer beyond 64 bits becomes an `.invalid` token, the last before `.end`, so that
    /// the parser reports problems in the order they appear.
    static func tokens(of format: String) -> [PredicateToken] {
        var lexer = PredicateLexer(characters: Array(format))
        var tokens: [PredicateToken] = []
        do {
            while let token = try lexer.next() { tokens.append(token) }
        } catch {
            tokens.append(error.token)
        }
        tokens.append(PredicateToken(kind: .end, text: "", column: lexer.characters.count + 1))
        return tokens
    }

    private init(characters: [Character]) { self.characters = characters }

    private func peek(_ offset: Int = 0) -> Character? {
        index + offset < characters.count ? characters[index + offset] : nil
    }

    private mutating func next() throws(LexFailure) -> PredicateToken? {
        while let character = peek(), character.isWhitespace { index += 1 }
        guard let character = peek() else { return nil }
        let start = index
        func token(_ kind: PredicateToken.Kind) -> PredicateToken {
            PredicateToken(kind: kind, text: String(characters[start..<index]), column: start + 1)
        }
        func failure(_ message: String) -> LexFailure {
            LexFailure(text: String(characters[start..<index]), column: start + 1, message: message)
        }
        if character.isLetter || character == "_" || character == "#" {
            if character == "#" { index += 1 }
            while let next = peek(), next.isLetter || next.isNumber || next == "_" || next == "." || next == "@" { index += 1 }
            // CloudKit's distance function is one name with colons.
            let selectorTail = Array(":fromLocation:")
            if String(characters[start..<index]) == "distanceToLocation", characters[index...].starts(with: selectorTail) {
                index += selectorTail.count
                return token(.identifier(PredicateParser.distanceFunction))
            }
            let word = String(characters[start..<index])
            if character == "#" { return token(.identifier(String(word.dropFirst()))) }
            if let keyword = PredicateKeyword(rawValue: word.uppercased()) { return token(.keyword(keyword)) }
            return token(.identifier(word))
        }
        if character.isASCIIDigit || (character == "-" && peek(1)?.isASCIIDigit == true) || (character == "." && peek(1)?.isASCIIDigit == true) {
            return try number(start: start)
        }
        if character == "\"" || character == "'" {
            let value = try string(quote: character, start: start)
            return token(.string(value))
        }
        if character == "%" {
            index += 1
            if peek() == "K" {
                index += 1
                argumentCount += 1
                return token(.keyArgument(argumentCount - 1))
            }
            for specifier in Self.valueSpecifiers.sorted(by: { $0.count > $1.count })
            where characters[index...].starts(with: specifier) {
                index += specifier.count
                argumentCount += 1
                return token(.valueArgument(argumentCount - 1))
            }
            if peek() != nil { index += 1 }
            throw failure("unsupported format specifier; use %@ for a value or %K for a key")
        }
        if character == "[" {
            while let next = peek(), next != "]" { index += 1 }
            guard peek() == "]" else { throw failure("comparison options are not closed with ']'") }
            index += 1
            return token(.options(String(characters[(start + 1)..<(index - 1)])))
        }
        for symbol in Self.symbols where characters[index...].starts(with: symbol) {
            index += symbol.count
            return token(.symbol(symbol))
        }
        index += 1
        throw failure("unexpected character")
    }

    private mutating func number(start: Int) throws(LexFailure) -> PredicateToken {
        var isDecimal = false
        if peek() == "-" { index += 1 }
        func digits() { while peek()?.isASCIIDigit == true { index += 1 } }
        digits()
        if peek() == ".", peek(1)?.isASCIIDigit == true {
            isDecimal = true
            index += 1
            digits()
        }
        if peek() == "e" || peek() == "E" {
            let sign = peek(1) == "+" || peek(1) == "-" ? 1 : 0
            if peek(1 + sign)?.isASCIIDigit == true {
                isDecimal = true
                index += 1 + sign
                digits()
            }
        }
        let text = String(characters[start..<index])
        if isDecimal {
            guard let value = Double(text), value.isFinite else {
                throw LexFailure(text: text, column: start + 1, message: "is not a finite number")
            }
            return PredicateToken(kind: .decimal(value), text: text, column: start + 1)
        }
        guard let value = Int64(text) else {
            throw LexFailure(text: text, column: start + 1, message: "does not fit in a 64-bit integer")
        }
        return PredicateToken(kind: .integer(value), text: text, column: start + 1)
    }

    private mutating func string(quote: Character, start: Int) throws(LexFailure) -> String {
        index += 1
        var value = ""
        while let character = peek() {
            index += 1
            if character == quote { return value }
            guard character == "\\" else {
                value.append(character)
                continue
            }
            guard let escaped = peek() else { break }
            index += 1
            switch escaped {
            case "n": value.append("\n")
            case "t": value.append("\t")
            case "r": value.append("\r")
            case "0": value.append("\0")
            case "\\", "\"", "'": value.append(escaped)
            case "u":
                let hex = String(characters[index..<min(index + 4, characters.count)])
                guard hex.count == 4, let code = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(code) else {
                    throw LexFailure(text: "\\u" + hex, column: index - 1, message: "expects four hex digits naming a character")
                }
                index += 4
                value.unicodeScalars.append(scalar)
            default:
                throw LexFailure(text: "\\\(escaped)", column: index - 1, message: "unknown escape; use \\n, \\t, \\r, \\0, \\\\, \\\", \\' or \\uXXXX")
            }
        }
        let text = String(characters[start..<min(start + 16, characters.count)])
        throw LexFailure(text: text, column: start + 1, message: "the string is not closed with \(quote)")
    }
}

/// Text the lexer could not read, and why.
private struct LexFailure: Error {
    var text: String
    var column: Int
    var message: String

    var token: PredicateToken { PredicateToken(kind: .invalid(message), text: text, column: column) }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
