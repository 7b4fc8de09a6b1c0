/// An index a query uses (docs/protocol.md, "Declared indexes"): a filter needs its field
/// `QUERYABLE` (`SEARCHABLE` for the token comparators), a sort needs it `SORTABLE`.
public struct SchemaIndexUse: Sendable, Hashable {
    public enum Index: String, Sendable, Hashable, CaseIterable {
        case queryable, sortable, searchable
    }

    /// The field, by its schema name (a system field as `___createTime`, …), or
    /// ``QueryFilter/allTokensField`` for a word search of every text field.
    public var field: String
    public var index: Index

    public init(_ field: String, _ index: Index) {
        self.field = field
        self.index = index
    }
}

extension SystemFieldName {
    /// The field's name in CloudKit's schema language (``init(schemaName:)``'s inverse).
    public var schemaName: String {
        switch self {
        case .recordName: "___recordID"
        case .createdTimestamp: "___createTime"
        case .modifiedTimestamp: "___modTime"
        case .createdUserRecordName: "___createdBy"
        case .modifiedUserRecordName: "___modifiedBy"
        }
    }
}

extension Query {
    /// The indexes of its own record type's fields the query uses, in the order it names them:
    /// a key path (`artist.name`) uses its first field's `QUERYABLE` index (the rest are other
    /// types' fields).
    public var indexUses: [SchemaIndexUse] {
        var uses: [SchemaIndexUse] = []
        func add(_ use: SchemaIndexUse) { if !uses.contains(use) { uses.append(use) } }
        func visit(_ filter: QueryFilter) {
            if let inner = filter.recordSyncFilters { inner.forEach(visit); return }
            let tokens = filter.comparator == .containsAllTokens || filter.comparator == .containsAnyTokens
            if let system = filter.systemFieldName {
                add(SchemaIndexUse(system.schemaName, .queryable))
            } else if let path = filter.fieldName, let first = path.split(separator: ".", maxSplits: 1).first.map(String.init) {
                add(SchemaIndexUse(first, tokens && !path.contains(".") ? .searchable : .queryable))
            } else if tokens {
                add(SchemaIndexUse(QueryFilter.allTokensField, .searchable))
            }
        }
        (filterBy ?? []).forEach(visit)
        for sort in sortBy ?? [] {
            if let system = sort.systemFieldName { add(SchemaIndexUse(system.schemaName, .sortable)) }
            else if let field = sort.fieldName { add(SchemaIndexUse(field, .sortable)) }
        }
        return uses
    }
}
