import Foundation
import GRDB
import RecordModel

/// Compiles a ``Query`` into one SQL statement over the `records` and `refs` tables (see
/// <doc:TableShape>), the same statement for the server's engines and the client's cache (but
/// for how a reference's field is matched: by its key in the store, by its name in the cache),
/// in the ``SQLDialect`` of the database that runs it. What a query means is decided here once;
/// the dialect only spells it.
///
/// Field filters read the stored JSON (`json_extract`, PostgreSQL's `jsonb` operators); filters on a reference field go
/// through the `refs_by_target` index, so "children of X" is an index search, not a scan.
/// Paging is keyset-based: the statement selects the sort-key values, and a continuation
/// marker carries the last row's values.
public struct QueryCompiler: Sendable {
    /// A compiled statement: its SQL, its arguments, and how many sort-key columns follow the
    /// record columns.
    public struct Statement: Sendable {
        /// The SQL text, with the dialect's placeholders.
        public var sql: String
        /// Its arguments, in placeholder order.
        public var values: [SQLValue]
        /// How many sort-key columns follow the zone key and the record columns.
        public var sortKeyCount: Int
        /// How many flag columns (``FilterPlan/flagFilters``' truth: true, false or null) follow
        /// the sort keys.
        public var flagCount: Int = 0

        /// The arguments for GRDB.
        public var arguments: StatementArguments { StatementArguments(values.map(\.databaseValue)) }
    }

    /// The most comparisons a query may have, in all its compound filters.
    public static let maximumFilters = FilterPlan.maximumComparisons
    /// The most sort keys a query may have.
    public static let maximumSortKeys = 16
    /// The most values a list comparator (`IN`, `LIST_CONTAINS_ANY`, …) may compare against.
    public static let maximumListValues = 10_000
    /// The most values `LIST_CONTAINS_ALL`/`NOT_LIST_CONTAINS_ALL` may require (one sub-query each).
    public static let maximumAllValues = 64

    /// The zones queried (one, or all of a database for `zoneWide`).
    public let zoneKeys: [Int64]
    /// The field types of the queried record type, and of the types key paths step into.
    public let schema: QuerySchema
    /// The alias of the records a condition tests: `r` for the queried records, `t1`, `t2`, …
    /// for those a key path reaches.
    private var alias = "r"
    /// Whether the records tested are the targets of a key path in a query over several zones,
    /// whose zone is the enclosing `refs` row's.
    private var zoneOfEnclosingReference = false

    /// Whether `refs.field` holds a key of the `ref_fields` table (the server's store, since
    /// its migration `v5-reference-field-keys`) rather than the field's name (the client's cache).
    public let keyedReferenceFields: Bool

    /// Creates a compiler for the zones `zoneKeys` (the `zone_id` values of `records`) and the
    /// schema of the queried record type; `keyedReferenceFields` when `refs.field` holds keys
    /// of `ref_fields`;
    /// and `wordBlocks` when words are also stored in word blocks (`search_blocks`,
    /// `search_postings`, `search_members`: the server's stores). (No defaults: a store's
    /// integer column never equals a name, and a store with blocks searched without them,
    /// so the wrong choice would quietly match nothing, or less.)
    public init(zoneKeys: [Int64], schema: QuerySchema, keyedReferenceFields: Bool, wordBlocks: Bool, dialect: SQLDialect = .sqlite) {
        self.zoneKeys = zoneKeys
        self.schema = schema
        self.keyedReferenceFields = keyedReferenceFields
        self.wordBlocks = wordBlocks
        self.dialect = dialect
    }

    /// Whether words are also stored in word blocks (``init(zoneKeys:schema:keyedReferenceFields:wordBlocks:dialect:)``).
    public let wordBlocks: Bool

    /// The SQL the statement is written in.
    public let dialect: SQLDialect

    private var zoneCondition: (sql: String, arguments: [SQLValue]) {
        if zoneOfEnclosingReference { return ("= refs.zone_id", []) }
        if zoneKeys.count == 1 { return ("= ?", [zoneKeys[0].sqlValue]) }
        return ("IN (\(zoneKeys.map { _ in "?" }.joined(separator: ", ")))", zoneKeys.map(\.sqlValue))
    }

    /// Records whose reference `field` points at one of the targets `targets` (SQL placeholders).
    ///
    /// In one zone this is `r.name IN (SELECT source …)`, which SQLite answers by looking each
    /// source up in the records index. The row-value form `(r.zone_id, r.name) IN (…)` (needed
    /// across zones) cannot drive the index that way: SQLite then walks every record of the type
    /// in name order and probes the list, which took 290 ms for 100 children in a zone of
    /// 1,000,000 (recordbench `query-by-reference`).
    private func referencedBy(_ field: String, targets: String, _ targetArguments: [SQLValue]) -> (String, [SQLValue]) {
        let zone = zoneCondition
        // A field name the store has no key for matches nothing, like a name no reference holds.
        let fieldSQL = keyedReferenceFields ? "field = (SELECT id FROM ref_fields WHERE name = ?)" : "field = ?"
        if zoneKeys.count == 1 {
            let sources = "SELECT source FROM refs WHERE zone_id = ? AND target IN (\(targets)) AND \(fieldSQL)"
            return (dialect.nameIn(sources, alias: alias), zone.arguments + targetArguments + [field.sqlValue])
        }
        // A key path's targets (alias t1, …) are in the zone of their own record.
        let sourceZone: (sql: String, arguments: [SQLValue]) = alias == "r" ? zone : ("= \(alias).zone_id", [])
        return ("(\(alias).zone_id, \(alias).name) IN (SELECT zone_id, source FROM refs WHERE zone_id \(sourceZone.sql) AND target IN (\(targets)) AND \(fieldSQL))",
                sourceZone.arguments + targetArguments + [field.sqlValue])
    }

    /// Compiles `query`.
    ///
    /// - Parameters:
    ///   - marker: where the previous page ended, or `nil` for the first page.
    ///   - limit: rows to fetch (the caller asks one more than it returns, to know if more remain).
    /// - Throws: ``RecordSyncError`` with `BAD_REQUEST` naming the filter or sort key at fault.
    public func compile(_ query: Query, after marker: ContinuationMarker?, limit: Int) throws -> Statement {
        let filters = query.filterBy ?? []
        let sorts = query.sortBy ?? []
        let plan = try FilterPlan(filters, schema: schema)
        guard sorts.count <= Self.maximumSortKeys else {
            throw RecordSyncError(.badRequest, "query.sortBy has \(sorts.count) keys; the limit is \(Self.maximumSortKeys)")
        }
        var conditions: [String] = []
        var arguments: [SQLValue] = []
        let zone = zoneCondition
        conditions.append("r.zone_id \(zone.sql)")
        arguments += zone.arguments
        conditions.append("r.type = ?")
        arguments += [query.recordType.sqlValue]
        if let readers = schema.readers {
            if readers.hidden.contains(query.recordType) {
                conditions.append(dialect.constant(false))
            } else if readers.creatorOnly.contains(query.recordType) {
                conditions.append("r.created_by = ?")
                arguments.append(readers.creator.sqlValue)
            }
            if let roots = readers.shareRoots {
                conditions.append("r.name IN (\(ShareHierarchy.belowSQL(rootCount: roots.count)))")
                arguments += ShareHierarchy.arguments(zone: readers.shareZone, roots: roots)
            }
        }

        for (index, filter) in filters.enumerated() {
            do {
                let (sql, filterArguments) = try condition(for: filter, .positive)
                conditions.append(sql)
                arguments += filterArguments
            } catch let error as RecordSyncError {
                throw RecordSyncError(.badRequest, "filterBy[\(index)]: \(error.reason)")
            }
        }
        // The truth of each part SQL answers in a filter Swift finishes (see FilterPlan).
        var flagColumns = ""
        var flagArguments: [SQLValue] = []
        for (index, filter) in plan.flagFilters.enumerated() {
            let (sql, filterArguments) = try condition(for: filter, .exact)
            flagColumns += ", (\(sql)) AS f\(index)"
            flagArguments += filterArguments
        }

        var sortKeys: [(sql: String, ascending: Bool)] = []
        for (index, sort) in sorts.enumerated() {
            do {
                sortKeys.append((try sortExpression(for: sort), sort.ascending ?? true))
            } catch let error as RecordSyncError {
                throw RecordSyncError(.badRequest, "sortBy[\(index)]: \(error.reason)")
            }
        }

        if let marker {
            guard marker.values.count == sortKeys.count else {
                throw RecordSyncError(.badRequest, "continuationMarker does not belong to this query")
            }
            let (sql, markerArguments) = keysetCondition(sortKeys: sortKeys, marker: marker)
            conditions.append(sql)
            arguments += markerArguments
        }

        let keyColumns = sortKeys.enumerated().map { ", \($1.sql) AS k\($0)" }.joined()
        let order = (sortKeys.map { dialect.orderTerm($0.sql, ascending: $0.ascending) } + ["r.zone_id ASC", "r.name ASC"]).joined(separator: ", ")
        let sql = """
            SELECT r.zone_id, \(RecordRow.columns(alias: "r"))\(keyColumns)\(flagColumns)
            FROM records r
            WHERE \(conditions.joined(separator: " AND "))
            ORDER BY \(order)
            LIMIT \(limit)
            """
        return Statement(sql: dialect.numbered(sql), values: flagArguments + arguments, sortKeyCount: sortKeys.count, flagCount: plan.flagFilters.count)
    }

    // MARK: Filters

    /// Where a condition stands: in the WHERE clause under an even (`positive`) or odd
    /// (`negative`) number of `NOT`s, or selected as a flag column, whose value must be exact.
    enum Polarity {
        case positive, negative, exact

        var flipped: Polarity {
            switch self {
            case .positive: .negative
            case .negative: .positive
            case .exact: .exact
            }
        }
    }

    private func condition(for filter: QueryFilter, _ polarity: Polarity) throws -> (String, [SQLValue]) {
        if let logical = filter.recordSyncOperator {
            let filters = filter.recordSyncFilters ?? []
            var parts: [String] = []
            var arguments: [SQLValue] = []
            for (index, inner) in filters.enumerated() {
                do {
                    let (sql, innerArguments) = try condition(for: inner, logical == .not ? polarity.flipped : polarity)
                    parts.append(sql)
                    arguments += innerArguments
                } catch let error as RecordSyncError {
                    throw RecordSyncError(.badRequest, "recordSyncFilters[\(index)]: \(error.reason)")
                }
            }
            switch logical {
            case .and: return parts.isEmpty ? (dialect.constant(true), []) : ("(\(parts.joined(separator: " AND ")))", arguments)
            case .or: return parts.isEmpty ? (dialect.constant(false), []) : ("(\(parts.joined(separator: " OR ")))", arguments)
            case .not: return ("(NOT \(parts[0]))", arguments)
            }
        }
        if FilterPlan.isSwiftComparison(filter, schema: schema) {
            // Swift decides (FilterPlan); here the database keeps every record that might pass.
            // (Never reached for flags: they are the parts without such comparisons.)
            return (dialect.constant(polarity != .negative), [])
        }
        guard var comparator = filter.comparator, let fieldValue = filter.fieldValue else {
            throw RecordSyncError(.badRequest, "a filter needs a comparator and a fieldValue")
        }
        switch comparator {
        case .containsAllTokens, .containsAnyTokens:
            if !(filter.fieldName ?? "").contains(".") { return try tokenCondition(filter, comparator, fieldValue) }
        case .near:
            if !(filter.fieldName ?? "").contains(".") { return try nearCondition(filter, fieldValue, polarity) }
        case .contains:
            comparator = .listContains  // on a list field (else Swift's): membership
        default: break
        }
        if let system = filter.systemFieldName {
            guard filter.fieldName == nil else { throw RecordSyncError(.badRequest, "give fieldName or systemFieldName, not both") }
            guard !comparator.appliesToListElements else {
                throw RecordSyncError(.badRequest, "\(comparator.rawValue) needs a list field, and \(system.rawValue) is not one")
            }
            return try scalarCondition(column(for: system), comparator, fieldValue, type: system.type.scalar)
        }
        guard let field = filter.fieldName else { throw RecordSyncError(.badRequest, "a filter needs fieldName or systemFieldName") }
        if field.contains(".") {
            let first = String(field.prefix { $0 != "." })
            if schema.fields[first]?.scalar == .nested { return try nestedCondition(field, comparator, fieldValue) }
            return try keyPathCondition(filter, field, comparator)
        }
        if let problem = NameRules.problem(withFieldName: field) { throw RecordSyncError(.badRequest, problem) }

        let type = try fieldType(field, given: fieldValue, comparator: comparator)
        if comparator.appliesToListElements {
            guard type.isList else {
                throw RecordSyncError(.badRequest, "\(comparator.rawValue) needs a list field, and \(NameRules.quoted(field)) is \(type)")
            }
            return try listCondition(field, comparator, fieldValue, scalar: type.scalar)
        }
        guard !type.isList else {
            throw RecordSyncError(.badRequest, "\(NameRules.quoted(field)) is \(type); compare its elements with LIST_CONTAINS and friends")
        }
        if type.scalar == .reference {
            let (sql, arguments) = try referenceCondition(field, comparator, fieldValue)
            // Unknown, not false, for a record lacking the field, as any comparison with a
            // missing value (it matters only under NOT).
            if polarity == .positive { return (sql, arguments) }
            return ("(CASE WHEN \(dialect.fieldPresent(field, alias: alias)) THEN \(sql) END)", arguments)
        }
        return try scalarCondition(dialect.fieldValue(field, type.scalar, alias: alias), comparator, fieldValue, type: type.scalar)
    }

    // MARK: Search tables

    /// The names of records (of `alias`) that a sub-query over a search table selects. The
    /// sub-query is given the condition on its `zone_id`: one zone's key (uncorrelated, so the
    /// database reads the search index first and then the records by name), or the zone of
    /// the record tested (over several zones), with the record's alias (`tested`).
    private func namesFromSearch(_ subquery: (_ zone: (sql: String, arguments: [SQLValue]), _ tested: String?) -> (String, [SQLValue])) -> (String, [SQLValue]) {
        if zoneKeys.count == 1 && !zoneOfEnclosingReference {
            let (sql, arguments) = subquery(zoneCondition, nil)
            return (dialect.nameIn(sql, alias: alias), arguments)
        }
        let (sql, arguments) = subquery(("= \(alias).zone_id", []), alias)
        return ("\(alias).name IN (\(sql))", arguments)
    }

    /// The condition on a search table's `field` column (the field's name, in every store).
    private func searchField(_ field: String) -> (String, [SQLValue]) {
        ("field = ?", [field.sqlValue])
    }

    /// `CONTAINS_ALL_TOKENS` / `CONTAINS_ANY_TOKENS`: the tokens of the value (``TextTokens``)
    /// among the tokens of one text field, or of all of them (`allTokens`, or no field), from
    /// the `search_tokens` index. A record without the field has no tokens: never unknown.
    private func tokenCondition(_ filter: QueryFilter, _ comparator: QueryComparator, _ value: RawFieldValue) throws -> (String, [SQLValue]) {
        guard filter.systemFieldName == nil else {
            throw RecordSyncError(.badRequest, "\(comparator.rawValue) searches the words of text fields; give fieldName: a STRING or STRING_LIST field, or \(QueryFilter.allTokensField) for all of them")
        }
        let field = filter.fieldName == QueryFilter.allTokensField ? nil : filter.fieldName
        if let field {
            if let problem = NameRules.problem(withFieldName: field) { throw RecordSyncError(.badRequest, problem) }
            if let known = schema.fields[field], known.scalar != .string {
                throw RecordSyncError(.badRequest, "\(comparator.rawValue) searches the words of STRING and STRING_LIST fields, and \(NameRules.quoted(field)) is \(known)")
            }
        }
        guard case .string(let text) = value.value else {
            throw RecordSyncError(.badRequest, "\(comparator.rawValue) needs a STRING fieldValue: the words to search for")
        }
        let tokens = TextTokens.tokens(of: text)
        guard !tokens.isEmpty else {
            throw RecordSyncError(.badRequest, "\(comparator.rawValue): \(NameRules.quoted(text)) holds no word to search for (words are runs of letters and digits)")
        }
        guard tokens.count <= Self.maximumAllValues else {
            throw RecordSyncError(.badRequest, "\(comparator.rawValue) searches for \(tokens.count) words; the limit is \(Self.maximumAllValues)")
        }
        let fieldCondition: (String, [SQLValue])? = field.map(searchField)
        return namesFromSearch { zone, tested in
            // The names of the records holding the words: in rows, and (in a store with word
            // blocks) in blocks of records a search index build indexed.
            func select(_ tokenSQL: String, _ tokenArguments: [SQLValue]) -> (String, [SQLValue]) {
                var conditions = tokenSQL
                var arguments = tokenArguments
                if let (fieldSQL, fieldArguments) = fieldCondition {
                    conditions += " AND \(fieldSQL)"
                    arguments += fieldArguments
                }
                let rows = "SELECT name FROM search_tokens WHERE zone_id \(zone.sql) AND \(conditions)"
                guard wordBlocks else { return (rows, zone.arguments + arguments) }
                return ("\(rows) UNION ALL \(dialect.wordBlockNames(zone: zone.sql, conditions: conditions, tested: tested))",
                        zone.arguments + arguments + zone.arguments + arguments)
            }
            if comparator == .containsAnyTokens {
                return select("token IN (\(tokens.map { _ in "?" }.joined(separator: ", ")))", tokens.map(\.sqlValue))
            }
            let parts = tokens.map { select("token = ?", [$0.sqlValue]) }
            guard parts.count > 1 else { return parts[0] }
            return (parts.map { "SELECT name FROM (\($0.0)) AS w" }.joined(separator: " INTERSECT "), parts.flatMap(\.1))
        }
    }

    /// `NEAR`: a `LOCATION` field within `distance` metres of the value, from the
    /// `search_locations` index: the cells of the circle's bounding box by range scans
    /// (``GeoPoint/cover(center:distance:)``), then the exact chord. A record without the field
    /// is unknown, as with any comparison.
    private func nearCondition(_ filter: QueryFilter, _ value: RawFieldValue, _ polarity: Polarity) throws -> (String, [SQLValue]) {
        guard filter.systemFieldName == nil, let field = filter.fieldName else {
            throw RecordSyncError(.badRequest, "NEAR compares a LOCATION field; give its fieldName")
        }
        if let problem = NameRules.problem(withFieldName: field) { throw RecordSyncError(.badRequest, problem) }
        if let known = schema.fields[field], known != FieldType(.location) {
            throw RecordSyncError(.badRequest, "NEAR compares a LOCATION field, and \(NameRules.quoted(field)) is \(known)")
        }
        let center = try Self.location(value.value, of: "NEAR")
        guard let distance = filter.distance else {
            throw RecordSyncError(.badRequest, "NEAR needs distance: the radius in metres")
        }
        guard distance.isFinite, distance >= 0 else {
            throw RecordSyncError(.badRequest, "NEAR's distance is \(distance); it is a radius in metres, 0 or more")
        }
        let point = GeoPoint(center)
        let chord = GeoPoint.chordSquared(ofDistance: distance)
        let cells = GeoPoint.cover(center: center, distance: distance)
        let (fieldSQL, fieldArguments) = searchField(field)
        let (sql, arguments) = namesFromSearch { zone, _ in
            let within = "(x - ?) * (x - ?) + (y - ?) * (y - ?) + (z - ?) * (z - ?) <= ?"
            let withinArguments: [SQLValue] = [point.x, point.x, point.y, point.y, point.z, point.z, chord].map(\.sqlValue)
            let select = "SELECT name FROM search_locations WHERE zone_id \(zone.sql) AND \(fieldSQL)"
            guard let cells else {
                return ("\(select) AND \(within)", zone.arguments + fieldArguments + withinArguments)
            }
            var parts: [String] = []
            var arguments: [SQLValue] = []
            for range in cells {
                parts.append("\(select) AND cell BETWEEN ? AND ? AND \(within)")
                arguments += zone.arguments + fieldArguments + [range.lowerBound.sqlValue, range.upperBound.sqlValue] + withinArguments
            }
            return (parts.joined(separator: " UNION ALL "), arguments)
        }
        if polarity == .positive { return (sql, arguments) }
        return ("(CASE WHEN \(dialect.fieldPresent(field, alias: alias)) THEN \(sql) END)", arguments)
    }

    /// The location a query gives (`{"latitude": …, "longitude": …}`), in range.
    private static func location(_ json: JSONValue, of what: String) throws -> Location {
        guard case .location(let location) = try? FieldValue(json: json, type: FieldType(.location)) else {
            throw RecordSyncError(.badRequest, "\(what) needs a location: {\"latitude\": …, \"longitude\": …} in degrees")
        }
        return try place(location, of: what)
    }

    /// `location`, if its latitude and longitude are in range.
    private static func place(_ location: Location, of what: String) throws -> Location {
        guard location.latitude.isFinite, location.longitude.isFinite, abs(location.latitude) <= 90, abs(location.longitude) <= 180 else {
            throw RecordSyncError(.badRequest, "\(what): latitude \(location.latitude), longitude \(location.longitude) is not a place (latitude -90…90, longitude -180…180)")
        }
        return location
    }

    /// A comparison of a value inside a nested field (`address.city == 'Paris'`), as the kind
    /// of the value given: a string, a number or a boolean. A path that leads nowhere, or to a
    /// value of another kind, is unknown, like a missing field.
    private func nestedCondition(_ path: String, _ comparator: QueryComparator, _ value: RawFieldValue) throws -> (String, [SQLValue]) {
        let names = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard names.count <= QuerySchema.maximumKeyPathLength else {
            throw RecordSyncError(.badRequest, "key path \(NameRules.quoted(path)) has \(names.count) names; the limit is \(QuerySchema.maximumKeyPathLength)")
        }
        for name in names {
            if let problem = NameRules.problem(withFieldName: name) { throw RecordSyncError(.badRequest, "key path \(NameRules.quoted(path)): \(problem)") }
        }
        guard !comparator.appliesToListElements else {
            throw RecordSyncError(.badRequest, "\(comparator.rawValue) does not apply inside a NESTED field; compare its single values (==, <, IN, BEGINS_WITH, …)")
        }
        let samples: [JSONValue] = if comparator.takesList, case .array(let elements) = value.value { elements } else { [value.value] }
        let sample = samples.first ?? .null
        // Integers compare exactly (beyond 2^53 too) when every value given is one.
        let integers = samples.allSatisfy { if case .int = $0 { true } else { false } }
        let scalar: ScalarType
        switch value.type?.scalar ?? FieldValue.inferredType(of: sample)?.scalar ?? (comparator.takesList ? .string : nil) {
        case .string?: scalar = .string
        case .int64? where integers: scalar = .int64
        case .int64?, .double?: scalar = .double
        case .boolean?: scalar = .boolean
        default: throw RecordSyncError(.badRequest, "a value inside a NESTED field compares with a string, a number or a boolean")
        }
        let kind: SQLDialect.NestedKind = scalar == .string ? .text : scalar == .boolean ? .boolean : .number
        return try scalarCondition(dialect.nestedValue(names[0], path: Array(names.dropFirst()), kind, alias: alias), comparator, value, type: scalar)
    }

    /// A comparison through a key path (`artist.name == 'Monet'`): true when a record the
    /// reference (or an element of the reference list) points at passes the rest of the path.
    /// Never unknown: no such record is false.
    ///
    /// The referenced side is narrowed first (records of the types that have the next field,
    /// by the `(zone, type)` index, tested by the rest), then the sources are found through the
    /// `refs` index by target, so the queried type is never scanned.
    private func keyPathCondition(_ filter: QueryFilter, _ path: String, _ comparator: QueryComparator) throws -> (String, [SQLValue]) {
        let step = try schema.step(path)
        guard !step.targetTypes.isEmpty else { return (dialect.constant(false), []) }
        var inner = filter
        inner.fieldName = step.rest
        inner.comparator = comparator
        if !step.rest.contains("."), let last = step.targetSchema.fields[step.rest], !last.isList {
            // `ANY works.title == x` travels as LIST_CONTAINS: the list is of the records
            // reached, whose single field is compared.
            switch comparator {
            case .listContains: inner.comparator = .equals
            case .listMemberBeginsWith: inner.comparator = .beginsWith
            case .listContainsAny: inner.comparator = .in
            default: break
            }
        }
        var compiler = QueryCompiler(zoneKeys: zoneKeys, schema: step.targetSchema, keyedReferenceFields: keyedReferenceFields, wordBlocks: wordBlocks, dialect: dialect)
        compiler.alias = "t\(alias == "r" ? 1 : (Int(alias.dropFirst()) ?? 0) + 1)"
        compiler.zoneOfEnclosingReference = zoneKeys.count > 1
        let target = compiler.alias
        let (test, testArguments) = try compiler.condition(for: inner, .positive)
        let zone = compiler.zoneCondition
        let types = step.targetTypes.map { _ in "?" }.joined(separator: ", ")
        // Of the types the caller may read only as their creator, only the records they created.
        var seen = "", seenArguments: [SQLValue] = []
        if let readers = schema.readers {
            let creatorOnly = step.targetTypes.filter(readers.creatorOnly.contains)
            if !creatorOnly.isEmpty {
                seen = " AND (\(target).type NOT IN (\(creatorOnly.map { _ in "?" }.joined(separator: ", "))) OR \(target).created_by = ?)"
                seenArguments = creatorOnly.map(\.sqlValue) + [readers.creator.sqlValue]
            }
            // A record share's participant reaches only its hierarchies' records.
            if let roots = readers.shareRoots {
                seen += " AND \(target).name IN (\(ShareHierarchy.belowSQL(rootCount: roots.count)))"
                seenArguments += ShareHierarchy.arguments(zone: readers.shareZone, roots: roots)
            }
        }
        let targets = "SELECT \(target).name FROM records \(target) WHERE \(target).zone_id \(zone.sql) AND \(target).type IN (\(types))\(seen) AND \(test)"
        return referencedBy(step.field, targets: targets, zone.arguments + step.targetTypes.map(\.sqlValue) + seenArguments + testArguments)
    }

    /// The type a filter compares a field as: the schema's, else the given or inferred one.
    private func fieldType(_ field: String, given value: RawFieldValue, comparator: QueryComparator) throws -> FieldType {
        if let known = schema.fields[field] {
            if let given = value.type {
                // An integer may stand for a DOUBLE or a TIMESTAMP (`price > 5`), and a string for
                // the name of a referenced record (`artist == 'monet'`).
                let widened = (given.scalar == .int64 && (known.scalar == .double || known.scalar == .timestamp))
                    || (given.scalar == .string && known.scalar == .reference)
                let compatible = WireForm.reads(given, as: known) || ((given.scalar == known.scalar || widened) && (comparator.takesList || comparator.appliesToListElements))
                    || (widened && given.isList == known.isList)
                if !compatible {
                    throw RecordSyncError(.badRequest, "field \(NameRules.quoted(field)) is \(known) in the schema, but the filter gives \(given)")
                }
            }
            return known
        }
        if let given = value.type {
            return comparator.appliesToListElements ? FieldType(given.scalar, isList: true) : FieldType(given.scalar)
        }
        guard let inferred = FieldValue.inferredType(of: value.value) else {
            throw RecordSyncError(.badRequest, "cannot tell the type of field \(NameRules.quoted(field)); give fieldValue.type")
        }
        return comparator.appliesToListElements ? FieldType(inferred.scalar, isList: true) : FieldType(inferred.scalar)
    }

    private func scalarCondition(_ expression: String, _ comparator: QueryComparator, _ value: RawFieldValue, type: ScalarType) throws -> (String, [SQLValue]) {
        if comparator.takesList {
            let values = try bindings(value.value, scalar: type, list: true)
            if values.isEmpty {
                // In no values: false, and NOT_IN true, for a record holding the field.
                return ("(CASE WHEN \(expression) IS NOT NULL THEN \(dialect.constant(comparator == .notIn)) END)", [])
            }
            let placeholders = values.map { _ in "?" }.joined(separator: ", ")
            return ("\(expression) \(comparator == .in ? "IN" : "NOT IN") (\(placeholders))", values)
        }
        let bound = try bindings(value.value, scalar: type, list: false)[0]
        switch comparator {
        case .equals: return ("\(expression) = ?", [bound])
        case .notEquals: return ("\(expression) <> ?", [bound])
        case .lessThan: return ("\(expression) < ?", [bound])
        case .lessThanOrEquals: return ("\(expression) <= ?", [bound])
        case .greaterThan: return ("\(expression) > ?", [bound])
        case .greaterThanOrEquals: return ("\(expression) >= ?", [bound])
        case .beginsWith, .notBeginsWith:
            guard type == .string, case .text(let prefix) = bound else {
                throw RecordSyncError(.badRequest, "\(comparator.rawValue) compares strings")
            }
            let (sql, prefixArguments) = dialect.beginsWith(expression, prefix)
            return (comparator == .beginsWith ? sql : "NOT (\(sql))", prefixArguments)
        default:
            throw RecordSyncError(.badRequest, "\(comparator.rawValue) does not apply to a single value")
        }
    }

    private func listCondition(_ field: String, _ comparator: QueryComparator, _ value: RawFieldValue, scalar: ScalarType) throws -> (String, [SQLValue]) {
        if comparator == .notListContainsAny {
            let (any, arguments) = try listCondition(field, .listContainsAny, value, scalar: scalar)
            return ("NOT (\(any))", arguments)
        }
        if scalar == .reference {
            let names = try bindings(value.value, scalar: .reference, list: comparator.takesList)
            if comparator == .listContainsAny {
                guard !names.isEmpty else { return (dialect.constant(false), []) }
                return referencedBy(field, targets: names.map { _ in "?" }.joined(separator: ", "), names)
            }
            let exists = { (name: SQLValue) -> (String, [SQLValue]) in
                self.referencedBy(field, targets: "?", [name])
            }
            return try combine(comparator, names.map(exists))
        }
        let (elements, element) = dialect.listElements(field, scalar, alias: alias)
        if comparator == .listMemberBeginsWith || comparator == .notListMemberBeginsWith {
            guard scalar == .string, case .text(let prefix) = try bindings(value.value, scalar: .string, list: false)[0] else {
                throw RecordSyncError(.badRequest, "\(comparator.rawValue) needs a STRING_LIST field")
            }
            let (begins, prefixArguments) = dialect.beginsWith(element, prefix)
            let sql = "EXISTS (SELECT 1 FROM \(elements) WHERE \(begins))"
            return (comparator == .listMemberBeginsWith ? sql : "NOT \(sql)", prefixArguments)
        }
        let values = try bindings(value.value, scalar: scalar, list: comparator.takesList)
        if comparator == .listContainsAny {
            guard !values.isEmpty else { return (dialect.constant(false), []) }
            return ("EXISTS (SELECT 1 FROM \(elements) WHERE \(element) IN (\(values.map { _ in "?" }.joined(separator: ", "))))", values)
        }
        return try combine(comparator, values.map { ("EXISTS (SELECT 1 FROM \(elements) WHERE \(element) = ?)", [$0]) })
    }

    /// Joins per-value "list contains v" conditions as the comparator asks.
    private func combine(_ comparator: QueryComparator, _ parts: [(String, [SQLValue])]) throws -> (String, [SQLValue]) {
        if comparator == .listContainsAll || comparator == .notListContainsAll, parts.count > Self.maximumAllValues {
            throw RecordSyncError(.badRequest, "\(comparator.rawValue) lists \(parts.count) values; the limit is \(Self.maximumAllValues)")
        }
        let arguments = parts.reduce(into: [SQLValue]()) { $0 += $1.1 }
        let sqls = parts.map(\.0)
        switch comparator {
        case .listContains: return (sqls[0], arguments)
        case .notListContains: return ("NOT \(sqls[0])", arguments)
        case .listContainsAny: return sqls.isEmpty ? (dialect.constant(false), []) : ("(\(sqls.joined(separator: " OR ")))", arguments)
        case .listContainsAll: return sqls.isEmpty ? (dialect.constant(true), []) : ("(\(sqls.joined(separator: " AND ")))", arguments)
        case .notListContainsAll: return sqls.isEmpty ? (dialect.constant(false), []) : ("NOT (\(sqls.joined(separator: " AND ")))", arguments)
        default: throw RecordSyncError(.badRequest, "\(comparator.rawValue) does not apply to a list")
        }
    }

    /// A filter on a single reference field, answered from the `refs` index.
    private func referenceCondition(_ field: String, _ comparator: QueryComparator, _ value: RawFieldValue) throws -> (String, [SQLValue]) {
        let names = try bindings(value.value, scalar: .reference, list: comparator.takesList)
        if names.isEmpty, comparator == .in || comparator == .notIn {
            return (comparator == .in ? dialect.constant(false) : dialect.fieldPresent(field), [])
        }
        let (sources, arguments) = referencedBy(field, targets: names.map { _ in "?" }.joined(separator: ", "), names)
        switch comparator {
        case .equals, .in:
            return (sources, arguments)
        case .notEquals, .notIn:
            // Records that hold the field but not pointing at any of the names.
            return ("(\(dialect.fieldPresent(field, alias: alias)) AND NOT \(sources))", arguments)
        default:
            throw RecordSyncError(.badRequest, "\(comparator.rawValue) does not apply to a REFERENCE field; use EQUALS, NOT_EQUALS, IN or NOT_IN")
        }
    }

    /// SQL values for a filter's value: one, or each element of a list.
    private func bindings(_ json: JSONValue, scalar: ScalarType, list: Bool) throws -> [SQLValue] {
        if list {
            guard case .array(let elements) = json else { throw RecordSyncError(.badRequest, "fieldValue must be a list of \(scalar.rawValue) values") }
            guard elements.count <= Self.maximumListValues else {
                throw RecordSyncError(.badRequest, "fieldValue lists \(elements.count) values; the limit is \(Self.maximumListValues)")
            }
            return try elements.flatMap { try bindings($0, scalar: scalar, list: false) }
        }
        if scalar == .reference, case .string(let name) = json { return [.text(name)] }
        let value = try FieldValue(json: json, type: FieldType(scalar))
        switch value {
        case .string(let string): return [.text(string)]
        case .int64(let number), .timestamp(let number): return [.integer(number)]
        case .double(let number): return [.real(number)]
        case .boolean(let flag): return [.integer(flag ? 1 : 0)]
        case .bytes(let data): return [.text(data.base64EncodedString())]
        case .reference(let reference): return [.text(reference.recordName)]
        case .location, .asset, .list, .nested:
            throw RecordSyncError(.badRequest, "\(scalar.rawValue) values cannot be compared (NEAR is not supported yet; compare a NESTED field's values by key path)")
        }
    }

    // MARK: Sorting and paging

    private func sortExpression(for sort: QuerySort) throws -> String {
        if let system = sort.systemFieldName {
            guard sort.relativeLocation == nil else { throw RecordSyncError(.badRequest, "relativeLocation sorts by a LOCATION field, and \(system.rawValue) is not one") }
            return column(for: system)
        }
        guard let field = sort.fieldName else { throw RecordSyncError(.badRequest, "a sort key needs fieldName or systemFieldName") }
        if let problem = NameRules.problem(withFieldName: field) { throw RecordSyncError(.badRequest, problem) }
        if let relative = sort.relativeLocation {
            return try distanceExpression(field, from: relative)
        }
        switch schema.fields[field] {
        case let type? where type.scalar == .location && !type.isList:
            throw RecordSyncError(.badRequest, "cannot sort by \(NameRules.quoted(field)), a LOCATION field, by value; give relativeLocation to sort by distance from a place")
        case let type? where type.isList || type.scalar == .location || type.scalar == .asset:
            throw RecordSyncError(.badRequest, "cannot sort by \(NameRules.quoted(field)), a \(type) field")
        case let type? where type.scalar == .reference:
            return dialect.referenceName(field)
        case let type:
            return dialect.fieldValue(field, type?.scalar)
        }
    }

    /// The (squared chord) distance of a `LOCATION` field of `r` from `location`, from the
    /// `search_locations` table: it grows with the great-circle distance (``GeoPoint``), and is
    /// NULL for a record without the field. Written without placeholders (the keyset condition
    /// repeats sort expressions): the numbers as literals, the field name as a string (names
    /// are letters, digits and underscores).
    private func distanceExpression(_ field: String, from location: Location) throws -> String {
        if let known = schema.fields[field], known != FieldType(.location) {
            throw RecordSyncError(.badRequest, "relativeLocation sorts by a LOCATION field, and \(NameRules.quoted(field)) is \(known)")
        }
        let point = GeoPoint(try Self.place(location, of: "relativeLocation"))
        let terms = [("x", point.x), ("y", point.y), ("z", point.z)].map { column, value in
            let literal = dialect.real(value)
            return "(l.\(column) - \(literal)) * (l.\(column) - \(literal))"
        }
        return "(SELECT \(terms.joined(separator: " + ")) FROM search_locations l WHERE l.zone_id = r.zone_id AND l.name = r.name AND l.field = '\(field)')"
    }

    /// Rows strictly after the marker in the query's order.
    private func keysetCondition(sortKeys: [(sql: String, ascending: Bool)], marker: ContinuationMarker) -> (String, [SQLValue]) {
        var alternatives: [String] = []
        var arguments = [SQLValue]()
        var equalities: [String] = []
        var equalityArguments = [SQLValue]()
        for (key, value) in zip(sortKeys, marker.values) {
            let bound = Self.binding(value)
            let after: String
            var afterArguments = [SQLValue]()
            switch (key.ascending, bound) {
            case (true, nil): after = "\(key.sql) IS NOT NULL"
            case (true, let v?): after = "\(key.sql) > ?"; afterArguments = [v]
            case (false, nil): after = dialect.constant(false)
            case (false, let v?): after = "(\(key.sql) < ? OR \(key.sql) IS NULL)"; afterArguments = [v]
            }
            alternatives.append((equalities + [after]).joined(separator: " AND "))
            arguments += equalityArguments
            arguments += afterArguments
            if let bound {
                equalities.append("\(key.sql) = ?")
                equalityArguments += [bound]
            } else {
                equalities.append("\(key.sql) IS NULL")
            }
        }
        alternatives.append((equalities + ["(r.zone_id > ? OR (r.zone_id = ? AND r.name > ?))"]).joined(separator: " AND "))
        arguments += equalityArguments
        arguments += [.integer(marker.zone), .integer(marker.zone), .text(marker.name)]
        return ("(" + alternatives.map { "(\($0))" }.joined(separator: " OR ") + ")", arguments)
    }

    private static func binding(_ value: JSONValue) -> SQLValue? {
        switch value {
        case .int(let number): .integer(number)
        case .double(let number): .real(number)
        case .string(let string): .text(string)
        case .bool(let flag): .integer(flag ? 1 : 0)
        default: nil
        }
    }

    /// The JSON value of a sort-key column, for a continuation marker.
    public static func markerValue(_ value: SQLValue) -> JSONValue {
        switch value {
        case .integer(let number): .int(number)
        case .real(let number): .double(number)
        case .text(let string): .string(string)
        case .null, .blob: .null
        }
    }

    private func column(for system: SystemFieldName) -> String {
        switch system {
        case .recordName: "\(alias).name"
        case .createdTimestamp: "\(alias).created_at"
        case .modifiedTimestamp: "\(alias).modified_at"
        case .createdUserRecordName: "\(alias).created_by"
        case .modifiedUserRecordName: "\(alias).modified_by"
        }
    }

}
