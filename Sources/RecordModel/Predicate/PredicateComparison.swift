import Foundation

/// One comparison the server runs, with the tokens to blame when it cannot.
struct PredicateTerm {
    var key: PredicateKey
    var comparator: QueryComparator
    var value: PredicateValue
    /// The `NOT` (or `NONE`) that negates the comparison, when an odd number of them do.
    var negation: PredicateToken?
    /// The operator, named when the comparator does not fit.
    var operatorToken: PredicateToken
    /// The comparison options (`c`, `d`, `cd`), when given.
    var options: String?
    /// For `NEAR`: the radius in metres.
    var distance: Double?

    /// The comparison negated by `token`; two negations cancel.
    func negated(by token: PredicateToken) -> PredicateTerm {
        var copy = self
        copy.negation = negation == nil ? token : nil
        return copy
    }

    /// The wire filter: the comparison, or its negated comparator, or (when the wire has no
    /// negated form) a compound `NOT` of it.
    func filter() -> QueryFilter {
        var comparator = comparator
        var negate = false
        if negation != nil {
            // Through a key path, NOT is "no record reached passes", never the negated
            // comparator's "some record reached fails".
            if let negated = comparator.negated, !key.isKeyPath { comparator = negated } else { negate = true }
        }
        var filter = switch key {
        case .field(let name): QueryFilter(name, comparator, value.raw)
        case .system(let system): QueryFilter(system: system, comparator, value.raw)
        }
        filter.recordSyncOptions = options
        filter.distance = distance
        return negate ? .not(filter) : filter
    }
}

extension QueryComparator {
    /// The comparator matching exactly what this one does not (for a record holding the
    /// field), or `nil` when the wire has none.
    var negated: QueryComparator? {
        switch self {
        case .equals: .notEquals
        case .notEquals: .equals
        case .lessThan: .greaterThanOrEquals
        case .greaterThanOrEquals: .lessThan
        case .lessThanOrEquals: .greaterThan
        case .greaterThan: .lessThanOrEquals
        case .in: .notIn
        case .notIn: .in
        case .beginsWith: .notBeginsWith
        case .notBeginsWith: .beginsWith
        case .listContains: .notListContains
        case .notListContains: .listContains
        case .listContainsAll: .notListContainsAll
        case .notListContainsAll: .listContainsAll
        case .listMemberBeginsWith: .notListMemberBeginsWith
        case .notListMemberBeginsWith: .listMemberBeginsWith
        case .listContainsAny: .notListContainsAny
        case .notListContainsAny: .listContainsAny
        case .containsAllTokens, .containsAnyTokens, .near, .contains, .endsWith, .like, .matches: nil
        }
    }
}

/// A parsed comparison, turned into wire comparators.
///
/// `key OP value` and `value OP key` (flipped), `ANY key BEGINSWITH|IN|== value`,
/// `ANY|ALL value IN key`, `NONE …` (a negated `ANY`), and `key BETWEEN {low, high}`.
struct PredicateComparison {
    var quantifier: PredicateToken?
    var left: PredicateOperand
    var comparisonOperator: PredicateOperator
    var operatorToken: PredicateToken
    var options: String?
    var right: PredicateOperand

    /// The comparisons to AND: one, or two for `BETWEEN`.
    ///
    /// - Throws: ``RecordSyncError`` (`BAD_REQUEST`) naming the token at fault.
    func terms() throws -> [PredicateTerm] {
        switch (left, right) {
        case (.key, .key): throw operatorToken.error("compares two keys; the server compares a field with a value")
        case (.value, .value): throw operatorToken.error("compares two values; one side must be a key")
        case (.key(let key, let keyToken), .value(let value, let valueToken)):
            if let quantifier { return [try quantified(quantifier, key: key, keyToken, value: value, valueToken, keyFirst: true)] }
            return try keyFirst(key, keyToken, value: value, valueToken)
        case (.value(let value, let valueToken), .key(let key, let keyToken)):
            if let quantifier { return [try quantified(quantifier, key: key, keyToken, value: value, valueToken, keyFirst: false)] }
            return [try valueFirst(key, keyToken, value: value, valueToken)]
        }
    }

    private var ordering: QueryComparator? {
        switch comparisonOperator {
        case .equals: .equals
        case .notEquals: .notEquals
        case .lessThan: .lessThan
        case .lessThanOrEquals: .lessThanOrEquals
        case .greaterThan: .greaterThan
        case .greaterThanOrEquals: .greaterThanOrEquals
        default: nil
        }
    }

    private func keyFirst(_ key: PredicateKey, _ keyToken: PredicateToken, value: PredicateValue, _ valueToken: PredicateToken) throws -> [PredicateTerm] {
        func term(_ comparator: QueryComparator, _ value: PredicateValue = value) throws -> PredicateTerm {
            try makeTerm(key, keyToken, comparator, value, valueToken)
        }
        if let ordering { return [try term(ordering)] }
        switch comparisonOperator {
        case .beginsWith: return [try term(.beginsWith)]
        case .endsWith: return [try term(.endsWith)]
        case .like: return [try term(.like)]
        case .matches: return [try term(.matches)]
        case .in: return [try term(.in)]
        // A string: a substring of a STRING field, or an element of a list; the server tells
        // which from the schema, as NSPredicate does from the value.
        case .contains: return [try term(value.scalar == .string && !value.isList ? .contains : .listContains)]
        case .tokenMatches: return [try term(.containsAllTokens)]
        case .between:
            guard value.isList, case .array(let bounds) = value.json, bounds.count == 2, let scalar = value.scalar else {
                throw valueToken.error("BETWEEN needs an array of two values, the lower and upper bound")
            }
            return [
                try term(.greaterThanOrEquals, PredicateValue(json: bounds[0], scalar: scalar)),
                try term(.lessThanOrEquals, PredicateValue(json: bounds[1], scalar: scalar)),
            ]
        default: throw operatorToken.error("cannot compare a key this way")
        }
    }

    private func valueFirst(_ key: PredicateKey, _ keyToken: PredicateToken, value: PredicateValue, _ valueToken: PredicateToken) throws -> PredicateTerm {
        let flipped: [QueryComparator: QueryComparator] = [
            .lessThan: .greaterThan, .lessThanOrEquals: .greaterThanOrEquals,
            .greaterThan: .lessThan, .greaterThanOrEquals: .lessThanOrEquals,
        ]
        if let ordering { return try makeTerm(key, keyToken, flipped[ordering] ?? ordering, value, valueToken) }
        switch comparisonOperator {
        case .in: return try makeTerm(key, keyToken, .listContains, value, valueToken)
        case .contains: return try makeTerm(key, keyToken, .in, value, valueToken)
        default: throw operatorToken.error("cannot be run with the value first; write the key first")
        }
    }

    private func quantified(
        _ quantifier: PredicateToken, key: PredicateKey, _ keyToken: PredicateToken, value: PredicateValue, _ valueToken: PredicateToken, keyFirst: Bool
    ) throws -> PredicateTerm {
        let isAll = quantifier.is(.all)
        let comparator: QueryComparator? = switch (isAll, keyFirst, comparisonOperator) {
        case (false, true, .beginsWith): .listMemberBeginsWith
        case (false, true, .in), (false, false, .in): .listContainsAny
        case (false, true, .equals): .listContains
        case (false, true, .endsWith): .endsWith
        case (false, true, .like): .like
        case (false, true, .matches): .matches
        case (true, false, .in): .listContainsAll
        default: nil
        }
        if comparator == nil, key.isKeyPath, !isAll {
            // ANY through a key path: a comparison through references is true when any record
            // reached passes, so the quantifier adds nothing.
            let terms = try keyFirst ? self.keyFirst(key, keyToken, value: value, valueToken) : [valueFirst(key, keyToken, value: value, valueToken)]
            guard terms.count == 1 else { throw quantifier.error("cannot be run with \(operatorToken.text) through a key path") }
            return quantifier.is(.none) ? terms[0].negated(by: quantifier) : terms[0]
        }
        guard let comparator else {
            throw quantifier.error(
                "cannot be run with \(operatorToken.text); the server runs ANY key BEGINSWITH|ENDSWITH|LIKE|MATCHES|== value, ANY key IN array, ANY array IN key and ALL array IN key (for a substring of a list's elements, ANY key LIKE '*text*')"
            )
        }
        let term = try makeTerm(key, keyToken, comparator, value, valueToken)
        return quantifier.is(.none) ? term.negated(by: quantifier) : term
    }

    /// A term, once the value fits the comparator and the key.
    private func makeTerm(
        _ key: PredicateKey, _ keyToken: PredicateToken, _ comparator: QueryComparator, _ value: PredicateValue, _ valueToken: PredicateToken
    ) throws -> PredicateTerm {
        if comparator.takesList && !value.isList {
            throw valueToken.error("\(operatorToken.text) needs an array, such as %@ bound to a Swift array or {1, 2}")
        }
        if !comparator.takesList && value.isList {
            let advice = switch comparator {
            case .equals: "use IN to match any of several values"
            case .notEquals: "use NOT (key IN …) to exclude several values"
            case .listContains: "use ANY key IN %@ to match any of them, or ALL %@ IN key to match all"
            default: "\(operatorToken.text) compares a single value"
            }
            throw valueToken.error("is an array; \(advice)")
        }
        let isStringMatch = [.beginsWith, .listMemberBeginsWith, .endsWith, .like, .matches, .containsAllTokens, .containsAnyTokens].contains(comparator)
        if isStringMatch, let scalar = value.scalar, scalar != .string {
            throw valueToken.error("\(operatorToken.text.uppercased()) compares strings, not \(scalar.rawValue)")
        }
        if comparator == .matches, case .string(let pattern) = value.json {
            do { _ = try StringPattern(pattern) } catch let error as RecordSyncError { throw valueToken.error(error.reason) }
        }
        if options != nil, !(comparator.isStringMatch || comparator == .listContains || comparator == .listMemberBeginsWith) || value.scalar != .string {
            throw operatorToken.error("comparison options ([c], [d], [cd]) apply to string comparisons")
        }
        if [.lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals].contains(comparator), value.scalar == .reference {
            throw valueToken.error("references compare only with ==, !=, IN and CONTAINS")
        }
        var value = value
        if case .system(let system) = key {
            if comparator.appliesToListElements {
                throw keyToken.error("\(system.rawValue) is not a list field; \(operatorToken.text) here needs one")
            }
            value = try Self.value(value, for: system, at: valueToken)
        }
        return PredicateTerm(key: key, comparator: comparator, value: value, operatorToken: operatorToken, options: options)
    }

    /// `value` typed as the system field's type; a reference stands for its record name, an
    /// integer for milliseconds since 1970.
    private static func value(_ value: PredicateValue, for system: SystemFieldName, at token: PredicateToken) throws -> PredicateValue {
        let target = system.type.scalar
        var typed = value
        typed.scalar = target
        switch (target, value.scalar) {
        case (_, nil), (.timestamp, .int64?): return typed
        case (let target, let scalar?) where target == scalar: return typed
        case (.string, .reference?):
            func name(_ json: JSONValue) -> JSONValue { json["recordName"] ?? json }
            if case .array(let elements) = value.json { typed.json = .array(elements.map(name)) } else { typed.json = name(value.json) }
            return typed
        case (_, let scalar?):
            let expected = target == .timestamp ? "TIMESTAMP values (pass a Date)" : "\(target.rawValue) values"
            throw token.error("\(system.rawValue) holds \(expected), not \(scalar.rawValue)")
        }
    }
}
