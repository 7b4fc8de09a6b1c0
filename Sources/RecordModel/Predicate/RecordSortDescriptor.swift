import Foundation

/// One key of a query's sort order (CloudKit's `NSSortDescriptor`).
public struct RecordSortDescriptor: Sendable, Hashable {
    /// The field sorted by, or a system field: `recordName`, `createdTimestamp` (or
    /// `creationDate`), `modifiedTimestamp` (or `modificationDate`), `createdUserRecordName`,
    /// `modifiedUserRecordName`.
    public var key: String
    /// Whether smaller values come first.
    public var ascending: Bool

    /// Creates a sort key on `key`, ascending unless told otherwise.
    public init(key: String, ascending: Bool = true) {
        self.key = key
        self.ascending = ascending
    }

    /// The wire sort key. The key is not checked here; the server answers `BAD_REQUEST` for a
    /// key it cannot sort by.
    public var wire: QuerySort {
        switch PredicateKey(name: key) {
        case .field(let name): QuerySort(name, ascending: ascending)
        case .system(let system): QuerySort(system: system, ascending: ascending)
        }
    }
}
