import Foundation

/// A query for records of one type (CloudKit's `CKQuery`): a predicate and a sort order.
///
/// ```swift
/// let query = RecordQuery(
///     recordType: "Artwork",
///     predicate: try RecordPredicate(format: "year >= %@", 1880),
///     sortDescriptors: [RecordSortDescriptor(key: "year", ascending: false)]
/// )
/// let request = QueryRecordsRequest(query: query.wire)
/// ```
public struct RecordQuery: Sendable, Hashable {
    /// The type of the records matched, such as `"Artwork"`.
    public var recordType: String
    /// Which records match; ``RecordPredicate/all`` by default.
    public var predicate: RecordPredicate
    /// The sort order; later descriptors break ties of earlier ones.
    public var sortDescriptors: [RecordSortDescriptor]

    /// Creates a query.
    public init(recordType: String, predicate: RecordPredicate = .all, sortDescriptors: [RecordSortDescriptor] = []) {
        self.recordType = recordType
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
    }

    /// The wire query, with `filterBy` and `sortBy` omitted when empty.
    public var wire: Query {
        Query(
            recordType: recordType,
            filterBy: predicate.filters.isEmpty ? nil : predicate.filters,
            sortBy: sortDescriptors.isEmpty ? nil : sortDescriptors.map(\.wire)
        )
    }
}
