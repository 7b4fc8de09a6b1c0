import Foundation

/// How a query's filters are run: which parts the database answers and which Swift does.
///
/// Most comparisons compile to SQL (``RecordSQL/QueryCompiler``). String comparisons with
/// options, `CONTAINS`, `ENDS_WITH`, `LIKE` and `MATCHES` run here instead, on the records the
/// database returns (``StringMatch``), so that folding and pattern matching are the same on
/// every engine and in the client's cache. For a query holding such a comparison:
///
/// - the database gets a looser condition: each Swift comparison replaced by `TRUE` (or by
///   `FALSE` under an odd number of `NOT`s), so it returns every record that might match;
/// - each largest part of a compound filter that SQL can answer alone is selected as a column
///   (its truth: true, false or unknown), a *flag*, in the order of ``flagFilters``;
/// - ``matches(_:flags:budget:)`` combines the flags and the Swift comparisons as the filters do.
///
/// Logic is SQL's three-valued logic: a comparison with a field the record lacks is unknown,
/// so neither it nor its `NOT` matches; `OR` with a true side is true, `AND` with a false side
/// false. A list field the record lacks is an empty list.
///
/// Making a plan also checks the filters' structure: a compound filter has an operator and
/// filters (one for `NOT`), nests at most ``QueryFilter/maximumDepth`` deep, and a query holds
/// at most ``maximumComparisons`` comparisons.
public struct FilterPlan: Sendable {
    /// A part of a filter answered in Swift.
    public indirect enum Node: Sendable {
        /// The truth of ``FilterPlan/flagFilters``[index], selected by the database.
        case flag(Int)
        case leaf(Leaf)
        case and([Node])
        case or([Node])
        case not(Node)
    }

    /// A string comparison run in Swift.
    public struct Leaf: Sendable {
        /// How the comparison applies to a field.
        public enum Quantifier: Sendable { case value, anyElement, noElement }
        public var field: String?
        public var system: SystemFieldName?
        public var quantifier: Quantifier
        public var match: StringMatch
        /// Inside a NESTED field: the keys leading to the string compared.
        public var nestedPath: [String] = []
    }

    /// The most comparisons a query may hold, in all its compound filters.
    public static let maximumComparisons = 64

    /// The filters of `filterBy` that hold a Swift comparison, by index, with their plan.
    public let residual: [Int: Node]
    /// The parts answered by SQL whose truth the database selects as columns, in order.
    public let flagFilters: [QueryFilter]

    /// Whether every filter compiles to SQL alone.
    public var isSQLOnly: Bool { residual.isEmpty }

    /// Plans `filters` (a query's `filterBy`) against the schema of the queried type.
    ///
    /// - Throws: ``RecordSyncError`` (`BAD_REQUEST`) naming the filter at fault
    ///   (`filterBy[1].recordSyncFilters[0]: …`).
    public init(_ filters: [QueryFilter], schema: QuerySchema) throws {
        let count = filters.reduce(0) { $0 + $1.comparisonCount }
        guard count <= Self.maximumComparisons else {
            throw RecordSyncError(.badRequest, "query.filterBy has \(count) comparisons; the limit is \(Self.maximumComparisons)")
        }
        var builder = Builder(schema: schema)
        var residual: [Int: Node] = [:]
        for (index, filter) in filters.enumerated() {
            let path = "filterBy[\(index)]"
            try Self.check(filter, path: path, depth: 0)
            if Self.holdsSwift(filter, schema: schema) { residual[index] = try builder.node(filter, path: path) }
        }
        self.residual = residual
        flagFilters = builder.flags
    }

    /// Whether `filter` is a comparison run in Swift, given the schema: a string comparison
    /// with options, or `CONTAINS` (but on a list field, where it tests membership like
    /// `LIST_CONTAINS`), `ENDS_WITH`, `LIKE` or `MATCHES`.
    public static func isSwiftComparison(_ filter: QueryFilter, schema: QuerySchema) -> Bool {
        guard filter.recordSyncOperator == nil, let comparator = filter.comparator else { return false }
        let hasOptions = !(filter.recordSyncOptions ?? "").isEmpty
        switch comparator {
        case .contains:
            return hasOptions || filter.fieldName.flatMap { try? schema.type(of: $0) }?.isList != true
        case .endsWith, .like, .matches: return true
        case .equals, .notEquals, .beginsWith, .notBeginsWith, .listContains, .notListContains, .listMemberBeginsWith, .notListMemberBeginsWith:
            return hasOptions
        default:
            return false
        }
    }

    /// Whether `filter` holds a comparison run in Swift.
    public static func holdsSwift(_ filter: QueryFilter, schema: QuerySchema) -> Bool {
        if let filters = filter.recordSyncFilters { return filters.contains { holdsSwift($0, schema: schema) } }
        return isSwiftComparison(filter, schema: schema)
    }

    private static func check(_ filter: QueryFilter, path: String, depth: Int) throws {
        guard let logical = filter.recordSyncOperator else {
            guard filter.recordSyncFilters == nil else {
                throw RecordSyncError(.badRequest, "\(path): recordSyncFilters needs recordSyncOperator (AND, OR or NOT)")
            }
            guard filter.comparator != nil else { throw RecordSyncError(.badRequest, "\(path): a filter needs a comparator (or recordSyncOperator)") }
            if let options = filter.recordSyncOptions, !options.isEmpty {
                _ = try StringOptions(letters: options)
                guard filter.comparator!.isStringMatch || [.listContains, .notListContains, .listMemberBeginsWith, .notListMemberBeginsWith].contains(filter.comparator!) else {
                    throw RecordSyncError(.badRequest, "\(path): recordSyncOptions apply to string comparisons, not \(filter.comparator!.rawValue)")
                }
            }
            return
        }
        guard depth < QueryFilter.maximumDepth else {
            throw RecordSyncError(.badRequest, "\(path): compound filters nest more than \(QueryFilter.maximumDepth) deep")
        }
        guard filter.comparator == nil, filter.fieldName == nil, filter.systemFieldName == nil, filter.fieldValue == nil else {
            throw RecordSyncError(.badRequest, "\(path): a compound filter (recordSyncOperator) has no comparator, field or fieldValue of its own")
        }
        // An empty AND is true, an empty OR false.
        guard let filters = filter.recordSyncFilters else {
            throw RecordSyncError(.badRequest, "\(path): \(logical.rawValue) needs recordSyncFilters")
        }
        if logical == .not, filters.count != 1 {
            throw RecordSyncError(.badRequest, "\(path): NOT takes one filter in recordSyncFilters, not \(filters.count)")
        }
        for (index, inner) in filters.enumerated() {
            try check(inner, path: "\(path).recordSyncFilters[\(index)]", depth: depth + 1)
        }
    }

    private struct Builder {
        let schema: QuerySchema
        var flags: [QueryFilter] = []

        mutating func node(_ filter: QueryFilter, path: String) throws -> Node {
            guard FilterPlan.holdsSwift(filter, schema: schema) else {
                flags.append(filter)
                return .flag(flags.count - 1)
            }
            guard let logical = filter.recordSyncOperator, let filters = filter.recordSyncFilters else {
                return .leaf(try leaf(filter, path: path))
            }
            let nodes = try filters.enumerated().map { try node($1, path: "\(path).recordSyncFilters[\($0)]") }
            switch logical {
            case .and: return .and(nodes)
            case .or: return .or(nodes)
            case .not: return .not(nodes[0])
            }
        }

        func leaf(_ filter: QueryFilter, path: String) throws -> Leaf {
            let comparator = filter.comparator!
            func fail(_ message: String) -> RecordSyncError { RecordSyncError(.badRequest, "\(path): \(message)") }
            let options = try StringOptions(letters: filter.recordSyncOptions ?? "")
            guard let value = filter.fieldValue, case .string(let text) = value.value else {
                throw fail("\(comparator.rawValue) compares with a STRING fieldValue")
            }
            if let given = value.type, given.scalar != .string {
                throw fail("\(comparator.rawValue) compares strings, and the filter gives \(given)")
            }
            let match: StringMatch
            // Element comparisons test the element; the quantifier says any or none.
            let compared: QueryComparator = switch comparator {
            case .listContains, .notListContains: .equals
            case .listMemberBeginsWith, .notListMemberBeginsWith: .beginsWith
            default: comparator
            }
            do { match = try StringMatch(compared, text, options: options) } catch let error as RecordSyncError {
                throw fail(error.reason)
            }
            let listComparators: [QueryComparator] = [.listContains, .notListContains, .listMemberBeginsWith, .notListMemberBeginsWith]
            if let system = filter.systemFieldName {
                guard filter.fieldName == nil else { throw fail("give fieldName or systemFieldName, not both") }
                guard system.type.scalar == .string, !listComparators.contains(comparator) else {
                    throw fail("\(comparator.rawValue) compares strings, and \(system.rawValue) is \(system.type)")
                }
                return Leaf(system: system, quantifier: .value, match: match)
            }
            guard let field = filter.fieldName else { throw fail("a filter needs fieldName or systemFieldName") }
            if field.contains(".") {
                let names = field.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                guard schema.fields[names[0]]?.scalar == .nested else {
                    throw fail("string matching (options, CONTAINS, ENDS_WITH, LIKE, MATCHES) applies to the record's own fields (and values inside its NESTED fields), not key paths through references")
                }
                for name in names { if let problem = NameRules.problem(withFieldName: name) { throw fail(problem) } }
                guard !listComparators.contains(comparator) else { throw fail("\(comparator.rawValue) does not apply inside a NESTED field") }
                return Leaf(field: names[0], quantifier: .value, match: match, nestedPath: Array(names.dropFirst()))
            }
            if let problem = NameRules.problem(withFieldName: field) { throw fail(problem) }
            let type = schema.fields[field] ?? FieldType(.string, isList: listComparators.contains(comparator))
            guard type.scalar == .string else {
                throw fail("\(comparator.rawValue) compares strings, and \(NameRules.quoted(field)) is \(type)")
            }
            let quantifier: Leaf.Quantifier
            switch (type.isList, comparator) {
            case (true, .notListContains), (true, .notListMemberBeginsWith): quantifier = .noElement
            case (true, .contains) where !options.isEmpty:
                // Membership, as without options: an element equal to the value once folded.
                return Leaf(field: field, quantifier: .anyElement, match: try StringMatch(.equals, text, options: options))
            case (true, .listContains): quantifier = .anyElement
            case (true, .equals), (true, .notEquals), (true, .beginsWith), (true, .notBeginsWith):
                throw fail("\(NameRules.quoted(field)) is \(type); compare its elements with LIST_CONTAINS or LIST_MEMBER_BEGINS_WITH")
            case (true, _): quantifier = .anyElement
            case (false, _) where listComparators.contains(comparator):
                throw fail("\(comparator.rawValue) needs a list field, and \(NameRules.quoted(field)) is \(type)")
            case (false, _): quantifier = .value
            }
            return Leaf(field: field, quantifier: quantifier, match: match)
        }
    }

    // MARK: Evaluating

    /// Whether `record` passes every filter of the residual, given the flags the database
    /// selected for it: `true`, or `false` for false and unknown alike.
    ///
    /// - Throws: ``RecordSyncError`` (`LIMIT_EXCEEDED`) when matching passes the budget.
    public func matches(_ record: Record, flags: [Bool?], budget: inout MatchBudget) throws -> Bool {
        for node in residual.values {
            guard try Self.evaluate(node, record, flags, &budget) == true else { return false }
        }
        return true
    }

    private static func evaluate(_ node: Node, _ record: Record, _ flags: [Bool?], _ budget: inout MatchBudget) throws -> Bool? {
        switch node {
        case .flag(let index): return index < flags.count ? flags[index] : nil
        case .leaf(let leaf): return try leaf.evaluate(record, &budget)
        case .not(let inner): return try evaluate(inner, record, flags, &budget).map { !$0 }
        case .and(let nodes):
            var unknown = false
            for node in nodes {
                switch try evaluate(node, record, flags, &budget) {
                case false?: return false
                case nil: unknown = true
                case true?: break
                }
            }
            return unknown ? nil : true
        case .or(let nodes):
            var unknown = false
            for node in nodes {
                switch try evaluate(node, record, flags, &budget) {
                case true?: return true
                case nil: unknown = true
                case false?: break
                }
            }
            return unknown ? nil : false
        }
    }
}

extension FilterPlan.Leaf {
    /// The comparison's truth for `record`: unknown when it lacks the (non-list) field.
    func evaluate(_ record: Record, _ budget: inout MatchBudget) throws -> Bool? {
        if let system {
            let text: String? = switch system {
            case .recordName: record.recordName
            case .createdUserRecordName: record.created?.userRecordName
            case .modifiedUserRecordName: record.modified?.userRecordName
            case .createdTimestamp, .modifiedTimestamp: nil
            }
            guard let text else { return nil }
            return try match.matches(text, budget: &budget)
        }
        var value = field.flatMap { record.fields[$0] }
        if !nestedPath.isEmpty {
            guard case .nested(var json)? = value else { return nil }
            for key in nestedPath {
                guard let inner = json[key] else { return nil }
                json = inner
            }
            guard case .string(let text) = json else { return nil }
            value = .string(text)
        }
        switch quantifier {
        case .value:
            guard case .string(let text)? = value else { return nil }
            return try match.matches(text, budget: &budget)
        case .anyElement, .noElement:
            var found = false
            if case .list(_, let elements)? = value {
                for case .string(let text) in elements where try match.matches(text, budget: &budget) {
                    found = true
                    break
                }
            }
            return quantifier == .anyElement ? found : !found
        }
    }
}
