import Foundation

/// One key of a query's sort order (CloudKit's `NSSortDescriptor`).
public struct RecordSortDescriptor: Sendable, Hashable {
    /// The field sorted by, or a system field: `recordName`, `createdTimestamp` (or
    /// `creationDate`), `modifiedTimestamp` (or `modificationDate`), `createdUserRecordName`,
    /// `modifiedUserRecordName`.
    public var key: String
    /// Whether smaller values come first.
    public var ascending: Bool

    /// For a `LOCATION` field: sort by the distance from this place, nearest first when
    /// ascending (CloudKit's `CKLocationSortDescriptor`).
    public var relativeLocation: Location?

    /// Creates a sort key on `key`, ascending unless told otherwise.
    public init(key: String, ascending: Bool = true) {
        self.key = key
        self.ascending = ascending
    }

    /// Creates a sort key on the distance of the `LOCATION` field `key` from `relativeLocation`,
    /// nearest first (CloudKit's `CKLocationSortDescriptor(key:relativeLocation:)`).
    public init(key: String, relativeLocation: Location, ascending: Bool = true) {
        self.key = key
        self.relativeLocation = relativeLocation
        self.ascending = ascending
    }

    /// The wire sort key. The key is not checked here; the server answers `BAD_REQUEST` for a
    /// key it cannot sort by.
    public var wire: QuerySort {
        var sort = switch PredicateKey(name: key) {
        case .field(let name): QuerySort(name, ascending: ascending)
        case .system(let system): QuerySort(system: system, ascending: ascending)
        }
        sort.relativeLocation = relativeLocation
        return sort
    }
}
