import Foundation

/// The key side of a comparison: a record field or a system field.
enum PredicateKey: Hashable {
    case field(String)
    case system(SystemFieldName)

    /// The key named `name`: a system field under its wire or CloudKit name
    /// (`creationDate`, `modificationDate`), else a record field.
    init(name: String) {
        switch name {
        case "creationDate": self = .system(.createdTimestamp)
        case "modificationDate": self = .system(.modifiedTimestamp)
        default: self = SystemFieldName(rawValue: name).map(Self.system) ?? .field(name)
        }
    }
}

/// One side of a comparison.
enum PredicateOperand {
    case key(PredicateKey, PredicateToken)
    case value(PredicateValue, PredicateToken)
}

/// A comparison operator as written, before the sides are sorted out.
enum PredicateOperator {
    case equals, notEquals, lessThan, lessThanOrEquals, greaterThan, greaterThanOrEquals
    case beginsWith, `in`, contains, between
}

/// Parses a predicate format into ANDed comparisons (see ``RecordPredicate``).
///
/// Grammar, keywords case-insensitive:
///
///     predicate  := conjunction END
///     conjunction:= unary ((AND | &&) unary)*
///     unary      := (NOT | !) unary | '(' conjunction ')' | TRUEPREDICATE | comparison
///     comparison := [ANY | SOME | ALL | NONE] operand operator operand
///     operand    := identifier | #identifier | %K | %@ | string | number | TRUE | FALSE | '{' values '}'
struct PredicateParser {
    private var tokens: [PredicateToken]
    private var index = 0
    private let arguments: [Any]

    /// Tokenises `format`; the arguments are substituted for its placeholders in order.
    init(format: String, arguments: [Any]) {
        tokens = PredicateLexer.tokens(of: format)
        self.arguments = arguments
    }

    /// Parses the whole format.
    ///
    /// - Returns: the comparisons, to be ANDed; none for `TRUEPREDICATE`.
    /// - Throws: ``RecordSyncError`` (`BAD_REQUEST`) naming the first token that does not parse
    ///   or that the server cannot run, or a placeholder without an argument; or naming the
    ///   first surplus argument.
    mutating func parse() throws -> [PredicateTerm] {
        let terms = try conjunction()
        guard case .end = current.kind else { throw unexpected(current, expected: "AND or the end of the format") }
        let used = tokens.count { token in
            switch token.kind {
            case .valueArgument, .keyArgument: true
            default: false
            }
        }
        if used < arguments.count {
            throw RecordSyncError(.badRequest, "\(arguments.count) arguments given but the format has \(used) placeholders; argument \(used + 1) (\(type(of: arguments[used]))) is surplus")
        }
        return terms
    }

    // MARK: Structure

    private var current: PredicateToken { tokens[index] }

    private mutating func advance() -> PredicateToken {
        let token = tokens[index]
        if index < tokens.count - 1 { index += 1 }
        return token
    }

    private mutating func conjunction() throws -> [PredicateTerm] {
        var terms = try unary()
        while current.is(.and) || current.is("&&") {
            _ = advance()
            terms += try unary()
        }
        return terms
    }

    private mutating func unary() throws -> [PredicateTerm] {
        let token = current
        if token.is(.not) || token.is("!") {
            _ = advance()
            let operand = try unary()
            guard operand.count == 1 else {
                throw token.error(operand.isEmpty
                    ? "NOT TRUEPREDICATE matches nothing, which the server cannot run"
                    : "NOT over several conditions would need OR, which the server cannot run; negate a single comparison")
            }
            return [operand[0].negated(by: token)]
        }
        if token.is("(") {
            _ = advance()
            let terms = try conjunction()
            guard current.is(")") else { throw unexpected(current, expected: "AND or ')' closing the '(' at column \(token.column)") }
            _ = advance()
            return terms
        }
        if token.is(.truePredicate) {
            _ = advance()
            return []
        }
        if token.is(.falsePredicate) { throw token.error("FALSEPREDICATE matches nothing, which the server cannot run") }
        return try comparison()
    }

    private mutating func comparison() throws -> [PredicateTerm] {
        var quantifier: PredicateToken?
        if ([.any, .some, .all, .none] as [PredicateKeyword]).contains(where: current.is) { quantifier = advance() }
        let left = try operand()
        let (comparisonOperator, operatorToken) = try self.comparisonOperator()
        let right = try operand()
        return try PredicateComparison(
            quantifier: quantifier, left: left, comparisonOperator: comparisonOperator, operatorToken: operatorToken, right: right
        ).terms()
    }

    // MARK: Operators and operands

    private mutating func comparisonOperator() throws -> (PredicateOperator, PredicateToken) {
        let token = advance()
        let result: PredicateOperator
        switch token.kind {
        case .symbol("=="), .symbol("="): result = .equals
        case .symbol("!="), .symbol("<>"): result = .notEquals
        case .symbol("<"): result = .lessThan
        case .symbol("<="), .symbol("=<"): result = .lessThanOrEquals
        case .symbol(">"): result = .greaterThan
        case .symbol(">="), .symbol("=>"): result = .greaterThanOrEquals
        case .keyword(.beginsWith): result = .beginsWith
        case .keyword(.in): result = .in
        case .keyword(.contains): result = .contains
        case .keyword(.between): result = .between
        case .keyword(.like), .keyword(.matches), .keyword(.endsWith):
            throw token.error("the server cannot run \(token.text.uppercased()); BEGINSWITH is the only string match")
        default:
            throw unexpected(token, expected: "a comparison operator (==, !=, <, <=, >, >=, BEGINSWITH, IN, CONTAINS, BETWEEN)")
        }
        if case .options = current.kind {
            throw current.error("comparison options are not supported; the server compares strings exactly (case- and diacritic-sensitive)")
        }
        return (result, token)
    }

    private mutating func operand() throws -> PredicateOperand {
        let token = advance()
        switch token.kind {
        case .identifier(let name):
            if current.is("(") { throw token.error("functions cannot be run by the server") }
            return .key(try key(named: name, at: token), token)
        case .keyArgument(let argumentIndex):
            let argument = try self.argument(argumentIndex, for: token)
            guard let name = argument as? String else {
                throw token.error("%K needs a String argument naming a key, got \(type(of: argument))")
            }
            return .key(try key(named: name, at: token), token)
        case .valueArgument(let argumentIndex):
            let argument = try self.argument(argumentIndex, for: token)
            do {
                return .value(try PredicateValue(argument: argument), token)
            } catch {
                throw token.error(error.message)
            }
        case .string(let string): return .value(PredicateValue(json: .string(string), scalar: .string), token)
        case .integer(let number): return .value(PredicateValue(json: .int(number), scalar: .int64), token)
        case .decimal(let number): return .value(PredicateValue(json: .double(number), scalar: .double), token)
        case .keyword(.true), .keyword(.yes): return .value(PredicateValue(json: .bool(true), scalar: .boolean), token)
        case .keyword(.false), .keyword(.no): return .value(PredicateValue(json: .bool(false), scalar: .boolean), token)
        case .symbol("{"): return try arrayLiteral(opening: token)
        case .keyword(.null), .keyword(.nil):
            throw token.error("nil cannot be compared; a record lacking a field matches no comparison")
        case .keyword(.self):
            throw token.error("SELF (full-text search) is not supported; compare a field")
        case .keyword(.subquery):
            throw token.error("the server cannot run SUBQUERY")
        default:
            throw unexpected(token, expected: "a key or a value")
        }
    }

    private mutating func arrayLiteral(opening: PredicateToken) throws -> PredicateOperand {
        var elements: [PredicateValue] = []
        while !current.is("}") {
            if !elements.isEmpty {
                guard current.is(",") else { throw unexpected(current, expected: "',' or '}' closing the '{' at column \(opening.column)") }
                _ = advance()
            }
            let element = try operand()
            switch element {
            case .key(_, let token): throw token.error("an array literal holds values, not keys")
            case .value(let value, let token):
                if value.isList { throw token.error("an array cannot hold arrays") }
                elements.append(value)
            }
        }
        _ = advance()
        do {
            return .value(try PredicateValue.list(elements, elementType: nil), opening)
        } catch {
            throw opening.error(error.message)
        }
    }

    private func argument(_ argumentIndex: Int, for token: PredicateToken) throws -> Any {
        guard argumentIndex < arguments.count else {
            throw token.error("no argument is left for this placeholder (\(arguments.count) given)")
        }
        return arguments[argumentIndex]
    }

    private func key(named name: String, at token: PredicateToken) throws -> PredicateKey {
        if name.contains(".") || name.contains("@") {
            throw token.error("key paths cannot be run; the server compares a record's own fields")
        }
        let key = PredicateKey(name: name)
        if case .field = key, let problem = NameRules.problem(withFieldName: name) { throw token.error(problem) }
        return key
    }

    /// An error for a token where something else was expected, naming why it cannot be run
    /// when it is a known but unsupported construct.
    private func unexpected(_ token: PredicateToken, expected: String) -> RecordSyncError {
        switch token.kind {
        case .keyword(.or), .symbol("||"):
            token.error("the server ANDs its filters and cannot run OR; run one query per alternative")
        case .options:
            token.error("comparison options are not supported; the server compares strings exactly (case- and diacritic-sensitive)")
        case .invalid(let message):
            token.error(message)
        case .end:
            token.error("the format ends early; expected \(expected)")
        default:
            token.error("expected \(expected)")
        }
    }
}
