import Foundation

/// A regular expression for `MATCHES`, compiled once and run in time linear in the text.
///
/// RecordSync runs its own small engine (a Pike virtual machine over the text's code points)
/// rather than a backtracking one, so that no pattern, however hostile, can take more than
/// `instructions × characters` steps, and every step is counted against a ``MatchBudget``.
/// The server and the client's cache run this one engine, so they agree on every match.
///
/// The syntax is the common core of ICU's (NSPredicate's `MATCHES`) and Swift's regular
/// expressions; the pattern must match the whole string:
///
/// | syntax | meaning |
/// |---|---|
/// | `a`, `\.`, `\\`, `\n`, `\t` | the character |
/// | `.` | any code point but a line break |
/// | `[abc]`, `[a-z]`, `[^…]` | one code point of (or not of) the set |
/// | `\d` `\w` `\s`, `\D` `\W` `\S` | a decimal digit, word character, white space, or not |
/// | `x*` `x+` `x?` `x{n}` `x{n,}` `x{n,m}` (and lazy `*?` …) | repetition (`m` ≤ 100) |
/// | `x|y`, `(x)`, `(?:x)` | alternatives and groups |
/// | `^`, `$` | the start and end of the text |
///
/// Back-references, look-around, possessive quantifiers and named groups are refused: they
/// either cannot run in linear time or mean nothing for a whole-string yes/no match.
public struct StringPattern: Sendable, Hashable {
    /// The most code points a pattern may have.
    public static let maximumLength = 1_000
    /// The most instructions a compiled pattern may have (repetitions are expanded).
    public static let maximumInstructions = 10_000
    /// The largest bound of a counted repetition `{n,m}`.
    public static let maximumRepetition = 100

    /// The pattern as written.
    public let source: String
    private let program: [Instruction]
    /// Whether literal letters and sets match either case (the `[c]` option).
    private let caseInsensitive: Bool

    /// Compiles `source`.
    ///
    /// - Parameters:
    ///   - fold: applied to each literal character of the pattern (the `[d]` and `[c]` options
    ///     fold the pattern's literals as they fold the text).
    ///   - caseInsensitive: sets also match a character whose other case they hold.
    /// - Throws: ``RecordSyncError`` (`BAD_REQUEST`) naming the place in the pattern at fault.
    public init(_ source: String, caseInsensitive: Bool = false, fold: @escaping (String) -> String = { $0 }) throws {
        guard source.unicodeScalars.count <= Self.maximumLength else {
            throw RecordSyncError(.badRequest, "MATCHES pattern has \(source.unicodeScalars.count) characters; the limit is \(Self.maximumLength)")
        }
        self.source = source
        self.caseInsensitive = caseInsensitive
        var parser = Parser(characters: Array(source.unicodeScalars), fold: fold)
        let tree = try parser.parse()
        var compiler = Compiler()
        try compiler.emit(tree)
        compiler.program.append(.match)
        program = compiler.program
    }

    public static func == (lhs: StringPattern, rhs: StringPattern) -> Bool {
        lhs.source == rhs.source && lhs.caseInsensitive == rhs.caseInsensitive && lhs.program == rhs.program
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(source)
        hasher.combine(caseInsensitive)
    }

    /// Whether the pattern matches all of `text`.
    ///
    /// - Throws: ``RecordSyncError`` (`LIMIT_EXCEEDED`) when the budget runs out.
    public func matches(_ text: String, budget: inout MatchBudget) throws -> Bool {
        let characters = Array(text.unicodeScalars)
        var current = ThreadList(capacity: program.count)
        var next = ThreadList(capacity: program.count)
        try addThread(&current, 0, at: 0, count: characters.count, budget: &budget)
        for (position, character) in characters.enumerated() {
            guard !current.isEmpty else { return false }
            next.clear()
            for pc in current.members {
                try budget.spend(1)
                let matched: Bool
                switch program[pc] {
                case .character(let expected): matched = character == expected
                case .any: matched = !Self.lineBreaks.contains(character)
                case .set(let set):
                    matched = set.contains(character) || (caseInsensitive && (set.contains(Self.upper(character)) || set.contains(Self.lower(character))))
                default: matched = false
                }
                if matched { try addThread(&next, pc + 1, at: position + 1, count: characters.count, budget: &budget) }
            }
            swap(&current, &next)
        }
        return current.contains(program.count - 1)
    }

    /// Follows jumps, splits and assertions from `pc`, adding the threads that wait on a character.
    private func addThread(_ list: inout ThreadList, _ pc: Int, at position: Int, count: Int, budget: inout MatchBudget) throws {
        var stack = [pc]
        while let pc = stack.popLast() {
            guard list.insert(pc) else { continue }
            try budget.spend(1)
            switch program[pc] {
            case .jump(let target): stack.append(target)
            case .split(let first, let second): stack.append(second); stack.append(first)
            case .start: if position == 0 { stack.append(pc + 1) }
            case .end: if position == count { stack.append(pc + 1) }
            default: break
            }
        }
    }

    private static func upper(_ scalar: Unicode.Scalar) -> Unicode.Scalar { scalar.properties.uppercaseMapping.unicodeScalars.first ?? scalar }
    private static func lower(_ scalar: Unicode.Scalar) -> Unicode.Scalar { scalar.properties.lowercaseMapping.unicodeScalars.first ?? scalar }
    private static let lineBreaks: Set<Unicode.Scalar> = ["\n", "\u{0B}", "\u{0C}", "\r", "\u{85}", "\u{2028}", "\u{2029}"]

    // MARK: Program

    fileprivate enum Instruction: Hashable, Sendable {
        case character(Unicode.Scalar)
        case any
        case set(CharacterSet_)
        case split(Int, Int)
        case jump(Int)
        case start
        case end
        case match
    }

    /// A set of characters: items and ranges, possibly negated.
    fileprivate struct CharacterSet_: Hashable, Sendable {
        enum Item: Hashable, Sendable {
            case character(Unicode.Scalar)
            case range(Unicode.Scalar, Unicode.Scalar)
            case digit(Bool), word(Bool), space(Bool)
        }
        var items: [Item]
        var negated: Bool

        func contains(_ character: Unicode.Scalar) -> Bool {
            let found = items.contains { item in
                switch item {
                case .character(let c): c == character
                case .range(let low, let high): low <= character && character <= high
                case .digit(let positive): StringPattern.isDigit(character) == positive
                case .word(let positive): StringPattern.isWord(character) == positive
                case .space(let positive): character.properties.isWhitespace == positive
                }
            }
            return found != negated
        }
    }

    static func isDigit(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.numericType == .decimal
    }

    static func isWord(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .connectorPunctuation, .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber: return true
        default: return scalar.properties.isAlphabetic
        }
    }

    /// The set of threads at one position, in priority order, without duplicates.
    private struct ThreadList {
        private var seen: [Int]
        private var generation = 1
        private(set) var members: [Int] = []

        init(capacity: Int) { seen = Array(repeating: 0, count: capacity) }

        var isEmpty: Bool { members.isEmpty }

        mutating func insert(_ pc: Int) -> Bool {
            if seen[pc] == generation { return false }
            seen[pc] = generation
            members.append(pc)
            return true
        }

        func contains(_ pc: Int) -> Bool { seen[pc] == generation }

        mutating func clear() {
            generation += 1
            members.removeAll(keepingCapacity: true)
        }
    }

    // MARK: Parsing

    fileprivate indirect enum Node {
        case empty
        case character(Unicode.Scalar)
        case any
        case set(CharacterSet_)
        case start, end
        case sequence([Node])
        case alternation([Node])
        case repeated(Node, min: Int, max: Int?)
    }

    private struct Parser {
        let characters: [Unicode.Scalar]
        let fold: (String) -> String
        var index = 0
        var depth = 0

        mutating func parse() throws -> Node {
            let node = try alternation()
            if index < characters.count { throw error("unbalanced ')'") }
            return node
        }

        func error(_ message: String) -> RecordSyncError {
            RecordSyncError(.badRequest, "MATCHES pattern at character \(index + 1): \(message)")
        }

        var current: Unicode.Scalar? { index < characters.count ? characters[index] : nil }

        mutating func alternation() throws -> Node {
            var branches = [try sequence()]
            while current == "|" {
                index += 1
                branches.append(try sequence())
            }
            return branches.count == 1 ? branches[0] : .alternation(branches)
        }

        mutating func sequence() throws -> Node {
            var items: [Node] = []
            while let character = current, character != "|", character != ")" {
                var atom = try self.atom()
                while let quantifier = current, "*+?{".unicodeScalars.contains(quantifier) {
                    atom = try quantified(atom)
                }
                items.append(atom)
            }
            return items.count == 1 ? items[0] : .sequence(items)
        }

        mutating func quantified(_ atom: Node) throws -> Node {
            if case .start = atom { throw error("nothing to repeat") }
            if case .end = atom { throw error("nothing to repeat") }
            if case .repeated = atom { throw error("a repetition cannot repeat directly; group it with (?:…)") }
            let quantifier = characters[index]
            index += 1
            var node: Node
            switch quantifier {
            case "*": node = .repeated(atom, min: 0, max: nil)
            case "+": node = .repeated(atom, min: 1, max: nil)
            case "?": node = .repeated(atom, min: 0, max: 1)
            default:
                let low = try number() ?? { throw error("a counted repetition needs a number") }()
                var high: Int? = low
                if current == "," {
                    index += 1
                    high = try number()
                }
                guard current == "}" else { throw error("expected '}' closing the repetition") }
                index += 1
                if let high, high < low { throw error("repetition {\(low),\(high)} has its bounds reversed") }
                guard low <= StringPattern.maximumRepetition, (high ?? 0) <= StringPattern.maximumRepetition else {
                    throw error("a repetition bound is above \(StringPattern.maximumRepetition)")
                }
                node = .repeated(atom, min: low, max: high)
            }
            if current == "?" { index += 1 }  // lazy: the same yes/no answer for a whole match
            else if current == "+" { throw error("possessive quantifiers are not supported") }
            return node
        }

        mutating func number() throws -> Int? {
            var digits = ""
            while let character = current, ("0"..."9").contains(character) {
                digits.unicodeScalars.append(character)
                index += 1
                if digits.count > 4 { throw error("a repetition bound is above \(StringPattern.maximumRepetition)") }
            }
            return Int(digits)
        }

        mutating func atom() throws -> Node {
            let character = characters[index]
            index += 1
            switch character {
            case ".": return .any
            case "^": return .start
            case "$": return .end
            case "[": return .set(try set())
            case "(":
                depth += 1
                guard depth <= 64 else { throw error("groups nest more than 64 deep") }
                defer { depth -= 1 }
                if current == "?" {
                    guard index + 1 < characters.count, characters[index + 1] == ":" else {
                        throw error("only (?:…) groups are supported (no look-around, named groups or flags)")
                    }
                    index += 2
                }
                let inner = try alternation()
                guard current == ")" else { throw error("expected ')'") }
                index += 1
                return .sequence([inner])  // a group, which may repeat whatever it holds
            case ")": throw error("unbalanced ')'")
            case "*", "+", "?", "{": throw error("nothing to repeat")
            case "\\":
                let escaped = try escape()
                switch escaped {
                case .character(let c): return literal(c)
                case let item: return .set(CharacterSet_(items: [item], negated: false))
                }
            default: return literal(character)
            }
        }

        func literal(_ character: Unicode.Scalar) -> Node {
            let folded = Array(fold(String(character)).unicodeScalars)
            if folded.count == 1 { return .character(folded[0]) }
            return .sequence(folded.map(Node.character))
        }

        mutating func escape() throws -> CharacterSet_.Item {
            guard let character = current else { throw error("the pattern ends with '\\'") }
            index += 1
            switch character {
            case "d": return .digit(true)
            case "D": return .digit(false)
            case "w": return .word(true)
            case "W": return .word(false)
            case "s": return .space(true)
            case "S": return .space(false)
            case "n": return .character("\n")
            case "t": return .character("\t")
            case "r": return .character("\r")
            default:
                if character.properties.isAlphabetic || character.properties.numericType != nil {
                    throw error("'\\\(character)' is not supported (back-references, \\b, \\p{…} and the like are not)")
                }
                return .character(character)
            }
        }

        mutating func set() throws -> CharacterSet_ {
            var items: [CharacterSet_.Item] = []
            var negated = false
            if current == "^" { negated = true; index += 1 }
            var first = true
            while let character = current, character != "]" || first {
                first = false
                index += 1
                var item: CharacterSet_.Item
                if character == "\\" { item = try escape() }
                else if character == "[" { throw error("nested sets and set operations are not supported") }
                else { item = .character(foldOne(character)) }
                if current == "-", index + 1 < characters.count, characters[index + 1] != "]", case .character(let low) = item {
                    index += 1
                    var high = characters[index]
                    index += 1
                    if high == "\\" {
                        guard case .character(let escaped) = try escape() else { throw error("a range cannot end with a class") }
                        high = escaped
                    } else {
                        high = foldOne(high)
                    }
                    guard low <= high else { throw error("range \(low)-\(high) is reversed") }
                    item = .range(low, high)
                }
                items.append(item)
            }
            guard current == "]" else { throw error("expected ']' closing the set") }
            index += 1
            return CharacterSet_(items: items, negated: negated)
        }

        func foldOne(_ character: Unicode.Scalar) -> Unicode.Scalar {
            let folded = Array(fold(String(character)).unicodeScalars)
            return folded.count == 1 ? folded[0] : character
        }
    }

    // MARK: Compiling

    private struct Compiler {
        var program: [Instruction] = []

        mutating func append(_ instruction: Instruction) throws {
            guard program.count < StringPattern.maximumInstructions else {
                throw RecordSyncError(.badRequest, "MATCHES pattern is too large once its repetitions are expanded (over \(StringPattern.maximumInstructions) steps)")
            }
            program.append(instruction)
        }

        mutating func emit(_ node: Node) throws {
            switch node {
            case .empty: break
            case .character(let c): try append(.character(c))
            case .any: try append(.any)
            case .set(let set): try append(.set(set))
            case .start: try append(.start)
            case .end: try append(.end)
            case .sequence(let nodes): for node in nodes { try emit(node) }
            case .alternation(let branches):
                var jumps: [Int] = []
                for (offset, branch) in branches.enumerated() {
                    if offset < branches.count - 1 {
                        let split = program.count
                        try append(.split(split + 1, -1))
                        try emit(branch)
                        jumps.append(program.count)
                        try append(.jump(-1))
                        program[split] = .split(split + 1, program.count)
                    } else {
                        try emit(branch)
                    }
                }
                for jump in jumps { program[jump] = .jump(program.count) }
            case .repeated(let inner, let min, let max):
                // Something that emits nothing (`(?:)`, `(?:a{0})`, a mark folded away)
                // repeated is still nothing: emitted once to see, never looped over.
                let before = program.count
                try emit(inner)
                if program.count == before { return }
                program.removeSubrange(before...)
                for _ in 0..<min { try emit(inner) }
                if let max {
                    // Each optional copy may be skipped to the end.
                    var splits: [Int] = []
                    for _ in min..<max {
                        splits.append(program.count)
                        try append(.split(program.count + 1, -1))
                        try emit(inner)
                    }
                    for split in splits { program[split] = .split(split + 1, program.count) }
                } else {
                    let loop = program.count
                    try append(.split(loop + 1, -1))
                    try emit(inner)
                    try append(.jump(loop))
                    program[loop] = .split(loop + 1, program.count)
                }
            }
        }
    }
}

/// How much matching work a query may do, shared by every record it examines.
public struct MatchBudget: Sendable {
    /// The steps left.
    public private(set) var remaining: Int
    /// The steps there were.
    public let steps: Int

    /// The default per request: enough for a pattern of a few dozen steps over some megabytes.
    public static let defaultSteps = 50_000_000

    public init(steps: Int = MatchBudget.defaultSteps) {
        remaining = steps
        self.steps = steps
    }

    /// Spends `steps`.
    ///
    /// - Throws: ``RecordSyncError`` (`LIMIT_EXCEEDED`) once none are left.
    public mutating func spend(_ steps: Int) throws {
        remaining -= steps
        if remaining < 0 {
            throw RecordSyncError(.limitExceeded, "string matching (CONTAINS, LIKE, MATCHES) would take more than \(self.steps) steps for this request; narrow the query with other conditions or simplify the pattern")
        }
    }
}
