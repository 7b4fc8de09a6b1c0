import Foundation

/// A query comparator, as named on the wire.
public enum QueryComparator: String, Sendable, Hashable, Codable, CaseIterable {
    case equals = "EQUALS"
    case notEquals = "NOT_EQUALS"
    case lessThan = "LESS_THAN"
    case lessThanOrEquals = "LESS_THAN_OR_EQUALS"
    case greaterThan = "GREATER_THAN"
    case greaterThanOrEquals = "GREATER_THAN_OR_EQUALS"
    case `in` = "IN"
    case notIn = "NOT_IN"
    case beginsWith = "BEGINS_WITH"
    case notBeginsWith = "NOT_BEGINS_WITH"
    case listContains = "LIST_CONTAINS"
    case notListContains = "NOT_LIST_CONTAINS"
    case listContainsAny = "LIST_CONTAINS_ANY"
    /// A list holding none of the values (CloudKit JS sends it; Apple's reference omits it).
    case notListContainsAny = "NOT_LIST_CONTAINS_ANY"
    case listContainsAll = "LIST_CONTAINS_ALL"
    case notListContainsAll = "NOT_LIST_CONTAINS_ALL"
    case listMemberBeginsWith = "LIST_MEMBER_BEGINS_WITH"
    case notListMemberBeginsWith = "NOT_LIST_MEMBER_BEGINS_WITH"
    case containsAllTokens = "CONTAINS_ALL_TOKENS"
    case containsAnyTokens = "CONTAINS_ANY_TOKENS"
    case near = "NEAR"
    /// Extension: a string holding the value as a substring (`CONTAINS` in a predicate format).
    case contains = "CONTAINS"
    /// Extension: a string ending with the value.
    case endsWith = "ENDS_WITH"
    /// Extension: a string matching a wildcard pattern, `*` any run of characters and `?` one.
    case like = "LIKE"
    /// Extension: a string wholly matching a regular expression (``StringPattern``).
    case matches = "MATCHES"

    /// Whether the comparator matches strings by pattern and takes ``QueryFilter/recordSyncOptions``.
    public var isStringMatch: Bool {
        switch self {
        case .equals, .notEquals, .beginsWith, .notBeginsWith, .contains, .endsWith, .like, .matches: true
        default: false
        }
    }

    /// Whether the comparator's `fieldValue` is a list of values to compare against.
    public var takesList: Bool {
        switch self {
        case .in, .notIn, .listContainsAny, .notListContainsAny, .listContainsAll, .notListContainsAll: true
        default: false
        }
    }

    /// Whether the comparator applies to the elements of a list field.
    public var appliesToListElements: Bool {
        switch self {
        case .listContains, .notListContains, .listContainsAny, .notListContainsAny, .listContainsAll, .notListContainsAll,
             .listMemberBeginsWith, .notListMemberBeginsWith: true
        default: false
        }
    }
}

/// A system field a query can filter or sort on.
public enum SystemFieldName: String, Sendable, Hashable, Codable, CaseIterable {
    case recordName
    case createdTimestamp
    case modifiedTimestamp
    case createdUserRecordName
    case modifiedUserRecordName

    /// The field's type.
    public var type: FieldType {
        switch self {
        case .createdTimestamp, .modifiedTimestamp: FieldType(.timestamp)
        default: FieldType(.string)
        }
    }

    /// The system field CloudKit's schema names `name` (`___createTime`, `___modTime`,
    /// `___createdBy`, `___modifiedBy`, `___recordID`; ``SchemaField/systemFields``), as clients
    /// that use the schema's names send it in `fieldName`; `nil` for any other name.
    public init?(schemaName name: String) {
        switch name {
        case "___createTime": self = .createdTimestamp
        case "___modTime": self = .modifiedTimestamp
        case "___createdBy": self = .createdUserRecordName
        case "___modifiedBy": self = .modifiedUserRecordName
        case "___recordID": self = .recordName
        default: return nil
        }
    }

    /// `value` as this field compares it: the schema types `___recordID`, `___createdBy` and
    /// `___modifiedBy` as references, so a reference (or a list of them) stands for its record
    /// name here.
    func compared(_ value: RawFieldValue?) -> RawFieldValue? {
        guard let value, type.scalar == .string else { return value }
        func name(_ element: JSONValue) -> JSONValue {
            if case .string(let recordName)? = element["recordName"] { return .string(recordName) }
            return element
        }
        let type = value.type.map { $0.scalar == .reference ? FieldType(.string, isList: $0.isList) : $0 }
        switch value.value {
        case .object: return RawFieldValue(value: name(value.value), type: type)
        case .array(let elements): return RawFieldValue(value: .array(elements.map(name)), type: type)
        default: return RawFieldValue(value: value.value, type: type)
        }
    }
}

/// How a compound filter joins its filters (an extension of `filterBy`).
public enum LogicalOperator: String, Sendable, Hashable, Codable, CaseIterable {
    case and = "AND"
    case or = "OR"
    /// The negation of its one filter.
    case not = "NOT"
}

/// One condition of a query; the conditions of `filterBy` are ANDed.
///
/// A comparison has a `comparator`, a field (`fieldName` or `systemFieldName`) and a
/// `fieldValue`. As an extension, a filter may instead join others: `recordSyncOperator`
/// (`AND`, `OR` or `NOT`) over `recordSyncFilters` (one, for `NOT`), nested up to
/// ``maximumDepth``.
public struct QueryFilter: Sendable, Hashable {
    /// The comparison's comparator; `nil` in a compound filter.
    public var comparator: QueryComparator?
    /// The record field compared; exactly one of `fieldName` and `systemFieldName` is given.
    /// As an extension, a key path through references and nested values (`artist.name`).
    public var fieldName: String?
    public var systemFieldName: SystemFieldName?
    /// The value compared against (a list for `IN`, `NOT_IN`, `LIST_CONTAINS_ANY`, …).
    public var fieldValue: RawFieldValue?
    /// For `NEAR`: the distance in metres.
    public var distance: Double?

    /// The field name that, in a token comparison (`CONTAINS_ALL_TOKENS`,
    /// `CONTAINS_ANY_TOKENS`), stands for every text field of the record (CloudKit's name for
    /// them); a token comparison without a field means the same.
    public static let allTokensField = "allTokens"

    /// Creates a `NEAR` filter: `fieldName`, a location, within `metres` of `location`.
    public init(_ fieldName: String, near location: Location, within metres: Double) {
        self.comparator = .near
        self.fieldName = fieldName
        self.fieldValue = RawFieldValue(FieldValue.location(location))
        self.distance = metres
    }
    /// Extension: string comparison options, `c` (case-insensitive), `d`
    /// (diacritic-insensitive) or `cd`, for the comparators that match strings.
    public var recordSyncOptions: String?
    /// Extension: how `recordSyncFilters` are joined, for a compound filter.
    public var recordSyncOperator: LogicalOperator?
    /// Extension: the filters a compound filter joins.
    public var recordSyncFilters: [QueryFilter]?

    /// How deep compound filters may nest: a filter inside this many compound filters is refused.
    public static let maximumDepth = 8

    /// Creates a filter on a record field (a system field under its schema name, `___createTime`,
    /// is that system field).
    public init(_ fieldName: String, _ comparator: QueryComparator, _ value: RawFieldValue, options: String? = nil) {
        self.comparator = comparator
        self.fieldName = fieldName
        self.fieldValue = value
        self.recordSyncOptions = options
        readSchemaName()
    }

    /// A `fieldName` that is a system field's schema name (`___modTime`) becomes that
    /// ``systemFieldName`` (unless a `systemFieldName` is given too, which is refused as both);
    /// a system field's value is read as the system field compares it (a reference's record
    /// name).
    mutating func readSchemaName() {
        if systemFieldName == nil, let name = fieldName, let system = SystemFieldName(schemaName: name) {
            systemFieldName = system
            fieldName = nil
        }
        if let system = systemFieldName, fieldName == nil { fieldValue = system.compared(fieldValue) }
    }

    /// Creates a filter on a system field.
    public init(system: SystemFieldName, _ comparator: QueryComparator, _ value: RawFieldValue, options: String? = nil) {
        self.comparator = comparator
        self.systemFieldName = system
        self.fieldValue = system.compared(value)
        self.recordSyncOptions = options
    }

    /// Creates a compound filter: `filters` joined by `logicalOperator` (one filter for `NOT`).
    public init(_ logicalOperator: LogicalOperator, _ filters: [QueryFilter]) {
        recordSyncOperator = logicalOperator
        recordSyncFilters = filters
    }

    /// Any of `filters` (extension).
    public static func or(_ filters: [QueryFilter]) -> QueryFilter { QueryFilter(.or, filters) }
    /// All of `filters` (extension; the same as listing them in `filterBy`).
    public static func and(_ filters: [QueryFilter]) -> QueryFilter { QueryFilter(.and, filters) }
    /// Not `filter` (extension).
    public static func not(_ filter: QueryFilter) -> QueryFilter { QueryFilter(.not, [filter]) }

    /// The record types whose words `filters` (a query of `recordType`) search: the queried
    /// type for a word search of its own fields, the types a key path reaches for one through
    /// references (every type for `….allTokens`). Their words must be indexed
    /// (``SearchIndex``) before the query runs.
    public static func wordSearchTypes(_ filters: [QueryFilter], recordType: String, schema: QuerySchema) throws -> Set<String> {
        var types: Set<String> = []
        func visit(_ filter: QueryFilter) throws {
            if let inner = filter.recordSyncFilters { try inner.forEach(visit); return }
            guard filter.comparator == .containsAllTokens || filter.comparator == .containsAnyTokens else { return }
            guard let path = filter.fieldName, path.contains(".") else { types.insert(recordType); return }
            var schema = schema, rest = path
            while rest.contains(".") {
                let step = try schema.step(rest)
                if !step.rest.contains(".") { types.formUnion(step.targetTypes); return }
                schema = step.targetSchema
                rest = step.rest
            }
        }
        try filters.forEach(visit)
        return types
    }

    /// Whether `filters` hold a word search.
    public static func searchWords(_ filters: [QueryFilter]) -> Bool {
        filters.contains { filter in
            filter.comparator == .containsAllTokens || filter.comparator == .containsAnyTokens || searchWords(filter.recordSyncFilters ?? [])
        }
    }

    /// The number of comparisons in the filter, compound filters counted by their comparisons.
    public var comparisonCount: Int {
        recordSyncFilters.map { $0.reduce(0) { $0 + $1.comparisonCount } } ?? 1
    }
}

extension QueryFilter: Codable {
    enum CodingKeys: String, CodingKey {
        case comparator, fieldName, systemFieldName, fieldValue, distance, recordSyncOptions, recordSyncOperator, recordSyncFilters
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        comparator = try container.decodeIfPresent(QueryComparator.self, forKey: .comparator)
        fieldName = try container.decodeIfPresent(String.self, forKey: .fieldName)
        systemFieldName = try container.decodeIfPresent(SystemFieldName.self, forKey: .systemFieldName)
        fieldValue = try container.decodeIfPresent(RawFieldValue.self, forKey: .fieldValue)
        distance = try container.decodeIfPresent(Double.self, forKey: .distance)
        recordSyncOptions = try container.decodeIfPresent(String.self, forKey: .recordSyncOptions)
        recordSyncOperator = try container.decodeIfPresent(LogicalOperator.self, forKey: .recordSyncOperator)
        // Nesting is bounded by the decoder's own depth limit; the compiler refuses what is
        // deeper than ``maximumDepth``.
        recordSyncFilters = try container.decodeIfPresent([QueryFilter].self, forKey: .recordSyncFilters)
        readSchemaName()
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(comparator, forKey: .comparator)
        try container.encodeIfPresent(fieldName, forKey: .fieldName)
        try container.encodeIfPresent(systemFieldName, forKey: .systemFieldName)
        try container.encodeIfPresent(fieldValue, forKey: .fieldValue)
        try container.encodeIfPresent(distance, forKey: .distance)
        try container.encodeIfPresent(recordSyncOptions, forKey: .recordSyncOptions)
        try container.encodeIfPresent(recordSyncOperator, forKey: .recordSyncOperator)
        try container.encodeIfPresent(recordSyncFilters, forKey: .recordSyncFilters)
    }
}

/// One key of a query's sort order; later keys break ties of earlier ones.
public struct QuerySort: Sendable, Hashable, Codable {
    public var fieldName: String?
    public var systemFieldName: SystemFieldName?
    /// Ascending unless `false`.
    public var ascending: Bool?
    /// For a `LOCATION` field: sort by the distance from this location (nearest first when
    /// ascending), rather than by the field's value.
    public var relativeLocation: Location?

    enum CodingKeys: String, CodingKey {
        case fieldName, systemFieldName, ascending, relativeLocation
    }

    /// A sort key as sent; a system field under its schema name (`___modTime`) is that system
    /// field.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        fieldName = try container.decodeIfPresent(String.self, forKey: .fieldName)
        systemFieldName = try container.decodeIfPresent(SystemFieldName.self, forKey: .systemFieldName)
        ascending = try container.decodeIfPresent(Bool.self, forKey: .ascending)
        relativeLocation = try container.decodeIfPresent(Location.self, forKey: .relativeLocation)
        readSchemaName()
    }

    /// Creates a sort key on a record field (a system field under its schema name,
    /// `___createTime`, is that system field).
    public init(_ fieldName: String, ascending: Bool = true) {
        self.fieldName = fieldName
        self.ascending = ascending
        readSchemaName()
    }

    mutating func readSchemaName() {
        guard systemFieldName == nil, let name = fieldName, let system = SystemFieldName(schemaName: name) else { return }
        systemFieldName = system
        fieldName = nil
    }

    /// Creates a sort key on the distance of a `LOCATION` field from `location`.
    public init(_ fieldName: String, distanceFrom location: Location, ascending: Bool = true) {
        self.fieldName = fieldName
        self.relativeLocation = location
        self.ascending = ascending
    }

    /// Creates a sort key on a system field.
    public init(system: SystemFieldName, ascending: Bool = true) {
        self.systemFieldName = system
        self.ascending = ascending
    }
}

/// What a query asks for: records of one type that pass every filter, in the given order.
///
/// Extension: a query read from JSON may say its filters in the predicate language instead
/// of (or beside) `filterBy`, as `recordSyncPredicate` (`"year > 1900 AND artist.name ==
/// 'Monet'"`, ``RecordPredicate``'s format without placeholders); its filters are ANDed after
/// `filterBy`'s, so the query holds them as if sent in `filterBy`.
public struct Query: Sendable, Hashable, Codable {
    public var recordType: String
    public var filterBy: [QueryFilter]?
    public var sortBy: [QuerySort]?

    /// Creates a query.
    public init(recordType: String, filterBy: [QueryFilter]? = nil, sortBy: [QuerySort]? = nil) {
        self.recordType = recordType
        self.filterBy = filterBy
        self.sortBy = sortBy
    }

    private enum CodingKeys: String, CodingKey {
        case recordType, filterBy, sortBy, recordSyncPredicate
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        recordType = try container.decode(String.self, forKey: .recordType)
        filterBy = try container.decodeIfPresent([QueryFilter].self, forKey: .filterBy)
        sortBy = try container.decodeIfPresent([QuerySort].self, forKey: .sortBy)
        if let format = try container.decodeIfPresent(String.self, forKey: .recordSyncPredicate) {
            let predicate: RecordPredicate
            do {
                predicate = try RecordPredicate(format: format, argumentArray: [])
            } catch let error as RecordSyncError {
                throw DecodingError.dataCorruptedError(forKey: .recordSyncPredicate, in: container, debugDescription: error.reason)
            }
            if !predicate.filters.isEmpty { filterBy = (filterBy ?? []) + predicate.filters }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(recordType, forKey: .recordType)
        try container.encodeIfPresent(filterBy, forKey: .filterBy)
        try container.encodeIfPresent(sortBy, forKey: .sortBy)
    }
}

/// The body of `records/query`.
public struct QueryRecordsRequest: Sendable, Hashable, Codable {
    public var zoneID: ZoneID?
    public var query: Query
    /// At most this many records per response (default 200; capped at the server's limit).
    public var resultsLimit: Int?
    /// Where the previous page ended.
    public var continuationMarker: String?
    public var desiredKeys: [String]?
    /// Query every zone of the database (ignored when `zoneID` is given).
    public var zoneWide: Bool?
    /// CloudKit JS's option: `INT64` and `DOUBLE` values in the answer's fields are written as
    /// strings (``WireForm/numbersAsStrings``).
    public var numbersAsStrings: Bool?
    /// Extension (as `records/lookup` has it): reference fields to follow; the records they
    /// point at come back in `includedRecords`, targets first.
    public var include: [String]?
    /// How many hops `include` follows (default 1).
    public var includeDepth: Int?

    /// Creates a request.
    public init(query: Query, zoneID: ZoneID? = nil, resultsLimit: Int? = nil, continuationMarker: String? = nil, desiredKeys: [String]? = nil, zoneWide: Bool? = nil,
                include: [String]? = nil, includeDepth: Int? = nil) {
        self.zoneID = zoneID
        self.query = query
        self.resultsLimit = resultsLimit
        self.continuationMarker = continuationMarker
        self.desiredKeys = desiredKeys
        self.zoneWide = zoneWide
        self.include = include
        self.includeDepth = includeDepth
    }
}

/// The answer to `records/query`.
public struct QueryRecordsResponse: Sendable, Hashable {
    public var records: [Record]
    /// Present when more records remain; send it back to get them.
    public var continuationMarker: String?
    /// Extension: the records the request's `include` reaches from `records`, targets first.
    public var includedRecords: [Record]?

    /// Creates a response.
    public init(records: [Record], continuationMarker: String? = nil, includedRecords: [Record]? = nil) {
        self.records = records
        self.continuationMarker = continuationMarker
        self.includedRecords = includedRecords
    }
}
