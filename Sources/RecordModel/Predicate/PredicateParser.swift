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

    /// The key named `name`: a system field under its wire, CloudKit or schema name
    /// (`creationDate`, `modificationDate`, `___createTime`), else a record field.
    init(name: String) {
        switch name {
        case "creationDate": self = .system(.createdTimestamp)
        case "modificationDate": self = .system(.modifiedTimestamp)
        default: self = (SystemFieldName(rawValue: name) ?? SystemFieldName(schemaName: name)).map(Self.system) ?? .field(name)
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
    /// `TOKENMATCHES`: every word of the value among the key's words.
    case tokenMatches
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
///                 | SELF CONTAINS ['[' options ']'] operand
///                 | (ANY | ALL) tokenize '(' operand ',' string ')' IN operand
///                 | distanceToLocation:fromLocation: '(' operand ',' operand ')' (< | <=) operand
///     operand    := identifier | #identifier | %K | %@ | string | number | TRUE | FALSE | '{' values '}'
///
/// Full-text search (CloudKit's forms): `SELF CONTAINS 'word'`, `allTokens TOKENMATCHES[cdl]
/// 'words'` and `ALL tokenize('words', 'Cdl') IN allTokens` need every word,
/// `ANY tokenize(…) IN allTokens` any of them; a field's name in place of `allTokens` searches
/// that field alone. Location: `distanceToLocation:fromLocation:(location, %@) < 1.5` (a
/// ``Location`` or `{latitude, longitude}`; the radius in kilometres, as CloudKit's
/// documentation writes it) is `NEAR`.
struct PredicateParser {
    /// The name CloudKit's distance function lexes as.
    static let distanceFunction = "distanceToLocation:fromLocation:"

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
        if current.is(.self) { return try selfContains() }
        if case .identifier(Self.distanceFunction) = current.kind { return try distance() }
        var quantifier: PredicateToken?
        if ([.any, .some, .all, .none] as [PredicateKeyword]).contains(where: current.is) { quantifier = advance() }
        if let quantifier, case .identifier(let name) = current.kind, name.lowercased() == "tokenize", tokens[index + 1].is("(") {
            return try tokenized(quantifier)
        }
        let left = try operand()
        let (comparisonOperator, operatorToken) = try self.comparisonOperator()
        var options: String?
        if case .options(let letters) = current.kind {
            let token = advance()
            if comparisonOperator == .tokenMatches {
                // Words are always compared folded: [c], [d] and CloudKit's [l] add nothing.
                try Self.checkTokenOptions(letters, at: token)
            } else {
                do { _ = try StringOptions(letters: letters) } catch let error as RecordSyncError { throw token.error(error.reason) }
                options = letters.lowercased()
            }
        }
        let right = try operand()
        let terms = try PredicateComparison(
            quantifier: quantifier, left: left, comparisonOperator: comparisonOperator, operatorToken: operatorToken, options: options, right: right
        ).terms()
        return terms.count == 1 ? .term(terms[0]) : .and(terms.map(PredicateNode.term))
    }

    // MARK: Full-text search and distance

    /// Options of a token comparison: any of `c`, `d` and `l` (words are always folded).
    private static func checkTokenOptions(_ letters: String, at token: PredicateToken) throws {
        guard letters.allSatisfy({ "cdlCDL".contains($0) }) else {
            throw token.error("a word search takes the options c, d and l (words are always compared folded)")
        }
    }

    /// A string value operand (the words of a full-text search).
    private mutating func words() throws -> PredicateValue {
        let operand = try self.operand()
        guard case .value(let value, let token) = operand else {
            throw tokens[index - 1].error("expected the words to search for, a string")
        }
        guard value.scalar == .string, !value.isList else { throw token.error("the words to search for are a string") }
        return value
    }

    /// `SELF CONTAINS 'word'`: the words in any text field.
    private mutating func selfContains() throws -> PredicateNode {
        let selfToken = advance()
        guard current.is(.contains) else {
            throw current.error("SELF is compared only by CONTAINS (a word search of every text field): SELF CONTAINS 'word'")
        }
        let operatorToken = advance()
        if case .options(let letters) = current.kind { try Self.checkTokenOptions(letters, at: advance()) }
        let value = try words()
        _ = selfToken
        return .term(PredicateTerm(key: .field(QueryFilter.allTokensField), comparator: .containsAllTokens, value: value, operatorToken: operatorToken))
    }

    /// `ALL|ANY tokenize('words', 'Cdl') IN key`.
    private mutating func tokenized(_ quantifier: PredicateToken) throws -> PredicateNode {
        let function = advance()
        _ = advance()  // (
        let value = try words()
        guard current.is(",") else { throw unexpected(current, expected: "',' and the tokenize options, as in tokenize(%@, 'Cdl')") }
        _ = advance()
        let optionsToken = advance()
        guard case .string(let letters) = optionsToken.kind else { throw optionsToken.error("tokenize's options are a string, such as 'Cdl'") }
        try Self.checkTokenOptions(letters, at: optionsToken)
        guard current.is(")") else { throw unexpected(current, expected: "')' closing tokenize(") }
        _ = advance()
        guard current.is(.in) else { throw unexpected(current, expected: "IN and the key searched, as in tokenize(%@, 'Cdl') IN allTokens") }
        let operatorToken = advance()
        guard case .key(let key, let keyToken) = try operand(), case .field = key else {
            throw tokens[index - 1].error("tokenize(…) IN needs a text field, or allTokens for all of them")
        }
        _ = keyToken
        let comparator: QueryComparator
        if quantifier.is(.all) {
            comparator = .containsAllTokens
        } else if quantifier.is(.any) || quantifier.is(.some) {
            comparator = .containsAnyTokens
        } else {
            throw quantifier.error("\(function.text)(…) is quantified by ALL (every word) or ANY (any word)")
        }
        return .term(PredicateTerm(key: key, comparator: comparator, value: value, operatorToken: operatorToken))
    }

    private static func number(_ json: JSONValue) -> Double? {
        switch json {
        case .int(let number): Double(number)
        case .double(let number): number
        default: nil
        }
    }

    /// `distanceToLocation:fromLocation:(key, location) < kilometres`: `NEAR`.
    private mutating func distance() throws -> PredicateNode {
        let function = advance()
        guard current.is("(") else { throw unexpected(current, expected: "'(' after \(Self.distanceFunction)") }
        _ = advance()
        guard case .key(let key, let keyToken) = try operand() else {
            throw tokens[index - 1].error("\(Self.distanceFunction) takes the LOCATION field first")
        }
        guard case .field = key else { throw keyToken.error("\(keyToken.text) is not a LOCATION field") }
        guard current.is(",") else { throw unexpected(current, expected: "',' and a location") }
        _ = advance()
        guard case .value(let place, let placeToken) = try operand() else {
            throw tokens[index - 1].error("\(Self.distanceFunction) takes a location second: %@ bound to a Location, or {latitude, longitude}")
        }
        let location: JSONValue
        if place.scalar == .location {
            location = place.json
        } else if place.isList, case .array(let parts) = place.json, parts.count == 2, let latitude = Self.number(parts[0]), let longitude = Self.number(parts[1]) {
            location = FieldValue.location(Location(latitude: latitude, longitude: longitude)).json
        } else {
            throw placeToken.error("is not a location: bind a Location to %@, or write {latitude, longitude}")
        }
        guard current.is(")") else { throw unexpected(current, expected: "')' closing \(Self.distanceFunction)(") }
        _ = advance()
        let operatorToken = advance()
        guard operatorToken.is("<") || operatorToken.is("<=") else {
            throw operatorToken.error("a distance is compared by < or <= (records within the distance)")
        }
        guard case .value(let radius, let radiusToken) = try operand(), !radius.isList, let kilometres = Self.number(radius.json) else {
            throw tokens[index - 1].error("the distance is a number of kilometres")
        }
        guard kilometres.isFinite, kilometres >= 0 else { throw radiusToken.error("the distance is a number of kilometres, 0 or more") }
        _ = function
        var term = PredicateTerm(key: key, comparator: .near, value: PredicateValue(json: location, scalar: .location), operatorToken: operatorToken)
        term.distance = kilometres * 1000
        return .term(term)
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
        case .keyword(.tokenMatches): result = .tokenMatches
        default:
            throw unexpected(token, expected: "a comparison operator (==, !=, <, <=, >, >=, BEGINSWITH, ENDSWITH, CONTAINS, LIKE, MATCHES, IN, BETWEEN, TOKENMATCHES)")
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
            throw token.error("SELF is compared only as SELF CONTAINS 'word' (a word search of every text field)")
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
