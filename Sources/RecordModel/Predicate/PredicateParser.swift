import Foundation

/// The key side of a comparison: a record field or a system field.
enum PredicateKey: Hashable {
    case field(String)
    case system(SystemFieldName)

    /// Whether the key is a key path through references (`artist.name`).
    var isKeyPath: Bool {
        if case .field(let name) = self { return name.contains(".") }
        return false
    }

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
    case beginsWith, endsWith, like, matches, `in`, contains, between
}

/// A parsed predicate: comparisons joined by AND, OR and NOT.
indirect enum PredicateNode {
    case term(PredicateTerm)
    /// All of the nodes; none is `TRUEPREDICATE`.
    case and([PredicateNode])
    /// Any of the nodes; none is `FALSEPREDICATE`.
    case or([PredicateNode])
    case not(PredicateNode)

    /// The node negated: a comparison into its negation, `NOT NOT x` into `x`.
    func negated(by token: PredicateToken) -> PredicateNode {
        switch self {
        case .term(let term): .term(term.negated(by: token))
        case .not(let inner): inner
        default: .not(self)
        }
    }

    /// The wire filter.
    var filter: QueryFilter {
        switch self {
        case .term(let term): term.filter()
        case .and(let nodes): .and(nodes.map(\.filter))
        case .or(let nodes): .or(nodes.map(\.filter))
        case .not(let node): .not(node.filter)
        }
    }

    /// The wire filters to AND: a top-level AND's parts, else the node alone.
    var filters: [QueryFilter] {
        if case .and(let nodes) = self { return nodes.map(\.filter) }
        return [filter]
    }
}

/// Parses a predicate format into comparisons joined by AND, OR and NOT (see ``RecordPredicate``).
///
/// Grammar, keywords case-insensitive:
///
///     predicate  := disjunction END
///     disjunction:= conjunction ((OR | ||) conjunction)*
///     conjunction:= unary ((AND | &&) unary)*
///     unary      := (NOT | !) unary | '(' disjunction ')' | TRUEPREDICATE | FALSEPREDICATE | comparison
///     comparison := [ANY | SOME | ALL | NONE] operand operator ['[' options ']'] operand
///     operand    := identifier | #identifier | %K | %@ | string | number | TRUE | FALSE | '{' values '}'
struct PredicateParser {
    private var tokens: [PredicateToken]
    private var index = 0
    private let arguments: [Any]
    private var depth = 0

    /// Tokenises `format`; the arguments are substituted for its placeholders in order.
    init(format: String, arguments: [Any]) {
        tokens = PredicateLexer.tokens(of: format)
        self.arguments = arguments
    }

    /// Parses the whole format.
    ///
    /// - Returns: the predicate; an empty AND for `TRUEPREDICATE`, an empty OR for `FALSEPREDICATE`.
    /// - Throws: ``RecordSyncError`` (`BAD_REQUEST`) naming the first token that does not parse
    ///   or that the server cannot run, or a placeholder without an argument; or naming the
    ///   first surplus argument.
    mutating func parse() throws -> PredicateNode {
        let node = try disjunction()
        guard case .end = current.kind else { throw unexpected(current, expected: "AND, OR or the end of the format") }
        let used = tokens.count { token in
            switch token.kind {
            case .valueArgument, .keyArgument: true
            default: false
            }
        }
        if used < arguments.count {
            throw RecordSyncError(.badRequest, "\(arguments.count) arguments given but the format has \(used) placeholders; argument \(used + 1) (\(type(of: arguments[used]))) is surplus")
        }
        return node
    }

    // MARK: Structure

    private var current: PredicateToken { tokens[index] }

    private mutating func advance() -> PredicateToken {
        let token = tokens[index]
        if index < tokens.count - 1 { index += 1 }
        return token
    }

    private mutating func disjunction() throws -> PredicateNode {
        var nodes = [try conjunction()]
        while current.is(.or) || current.is("||") {
            _ = advance()
            nodes.append(try conjunction())
        }
        if nodes.count == 1 { return nodes[0] }
        // OR's parts, flattened; FALSEPREDICATE (an empty OR) drops out.
        return .or(nodes.flatMap { node -> [PredicateNode] in
            if case .or(let inner) = node { return inner }
            return [node]
        })
    }

    private mutating func conjunction() throws -> PredicateNode {
        var nodes = [try unary()]
        while current.is(.and) || current.is("&&") {
            _ = advance()
            nodes.append(try unary())
        }
        if nodes.count == 1 { return nodes[0] }
        // AND's parts, flattened (BETWEEN's two bounds too); TRUEPREDICATE drops out.
        return .and(nodes.flatMap { node -> [PredicateNode] in
            if case .and(let inner) = node { return inner }
            return [node]
        })
    }

    private mutating func unary() throws -> PredicateNode {
        let token = current
        if token.is(.not) || token.is("!") {
            _ = advance()
            return try nested(at: token) { try $0.unary() }.negated(by: token)
        }
        if token.is("(") {
            _ = advance()
            let node = try nested(at: token) { try $0.disjunction() }
            guard current.is(")") else { throw unexpected(current, expected: "AND, OR or ')' closing the '(' at column \(token.column)") }
            _ = advance()
            return node
        }
        if token.is(.truePredicate) {
            _ = advance()
            return .and([])
        }
        if token.is(.falsePredicate) {
            _ = advance()
            return .or([])
        }
        return try comparison()
    }

    /// Parses a nested part, refusing nesting deeper than the wire allows.
    private mutating func nested(at token: PredicateToken, _ parse: (inout PredicateParser) throws -> PredicateNode) throws -> PredicateNode {
        depth += 1
        defer { depth -= 1 }
        guard depth <= 4 * QueryFilter.maximumDepth else {
            throw token.error("nests too deep; compound filters nest at most \(QueryFilter.maximumDepth) deep")
        }
        return try parse(&self)
    }

    private mutating func comparison() throws -> PredicateNode {
        var quantifier: PredicateToken?
        if ([.any, .some, .all, .none] as [PredicateKeyword]).contains(where: current.is) { quantifier = advance() }
        let left = try operand()
        let (comparisonOperator, operatorToken) = try self.comparisonOperator()
        var options: String?
        if case .options(let letters) = current.kind {
            let token = advance()
            do { _ = try StringOptions(letters: letters) } catch let error as RecordSyncError { throw token.error(error.reason) }
            options = letters.lowercased()
        }
        let right = try operand()
        let terms = try PredicateComparison(
            quantifier: quantifier, left: left, comparisonOperator: comparisonOperator, operatorToken: operatorToken, options: options, right: right
        ).terms()
        return terms.count == 1 ? .term(terms[0]) : .and(terms.map(PredicateNode.term))
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
        case .keyword(.endsWith): result = .endsWith
        case .keyword(.like): result = .like
        case .keyword(.matches): result = .matches
        case .keyword(.in): result = .in
        case .keyword(.contains): result = .contains
        case .keyword(.between): result = .between
        default:
            throw unexpected(token, expected: "a comparison operator (==, !=, <, <=, >, >=, BEGINSWITH, ENDSWITH, CONTAINS, LIKE, MATCHES, IN, BETWEEN)")
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
        if name.contains("@") {
            throw token.error("collection operators such as @count cannot be run")
        }
        if name.contains(".") {
            // A key path through references: `artist.name`.
            let names = name.split(separator: ".", omittingEmptySubsequences: false)
            guard names.count <= QuerySchema.maximumKeyPathLength else {
                throw token.error("a key path has at most \(QuerySchema.maximumKeyPathLength) names")
            }
            for part in names {
                if let problem = NameRules.problem(withFieldName: String(part)) { throw token.error(problem) }
            }
            return .field(name)
        }
        let key = PredicateKey(name: name)
        if case .field = key, let problem = NameRules.problem(withFieldName: name) { throw token.error(problem) }
        return key
    }

    /// An error for a token where something else was expected, naming why it cannot be run
    /// when it is a known but unsupported construct.
    private func unexpected(_ token: PredicateToken, expected: String) -> RecordSyncError {
        switch token.kind {
        case .options:
            token.error("comparison options follow a string comparison's operator, as in name ==[c] 'x'")
        case .invalid(let message):
            token.error(message)
        case .end:
            token.error("the format ends early; expected \(expected)")
        default:
            token.error("expected \(expected)")
        }
    }
}
