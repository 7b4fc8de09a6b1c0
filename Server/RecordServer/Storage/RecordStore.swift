import Foundation
import RecordModel

/// A signed-in user.
public struct User: Sendable, Hashable {
    /// The storage key of the user.
    public var id: Int64
    /// The name given to `recordserver user add`.
    public var name: String
    /// The user's record name (`_` and 32 hex digits), as it appears in `created`/`modified`.
    public var userRecordName: String

    /// Creates a user value.
    public init(id: Int64, name: String, userRecordName: String) {
        self.id = id
        self.name = name
        self.userRecordName = userRecordName
    }
}

/// Which of a container's databases a request addresses.
public enum DatabaseKind: String, Sendable, Hashable, CaseIterable {
    /// Readable by every signed-in user; records writable by their creator.
    case `public`
    /// One per user, theirs alone.
    case `private`
}

/// A database as a request addresses it: container, environment, kind, and the user asking.
public struct DatabaseScope: Sendable, Hashable {
    /// The container identifier, such as `iCloud.com.example.Gallery`.
    public var container: String
    /// `development` or `production`; each has its own data and schema.
    public var environment: String
    /// Public or private.
    public var kind: DatabaseKind
    /// The user making the request (and, for ``DatabaseKind/private``, the database's owner).
    public var user: User

    /// Creates a scope.
    public init(container: String, environment: String, kind: DatabaseKind, user: User) {
        self.container = container
        self.environment = environment
        self.kind = kind
        self.user = user
    }

    /// The owner record name a zone ID of this database carries.
    public var ownerRecordName: String {
        kind == .private ? user.userRecordName : "__defaultOwner__"
    }
}

/// Where records live: the storage protocol every backend (SQLite now, PostgreSQL later)
/// conforms to, and which the conformance test suite checks.
///
/// Every method either succeeds or throws ``RecordSyncError``; a throwing call changes
/// nothing. Per-record and per-zone failures are reported in the results, not thrown.
public protocol RecordStore: Sendable {
    /// Creates a user holding one token.
    ///
    /// - Parameter tokenHash: SHA-256 of the bearer token (tokens are never stored).
    /// - Throws: `EXISTS` if the name is taken; `BAD_REQUEST` for a bad name.
    func createUser(named name: String, tokenHash: Data) async throws -> User

    /// Adds another token to an existing user. Throws `NOT_FOUND` if there is no such user.
    func addToken(forUserNamed name: String, tokenHash: Data) async throws -> User

    /// The user holding the token with this hash, or `nil`.
    func user(forTokenHash tokenHash: Data) async throws -> User?

    /// `records/modify`: saves and deletes, targets before sources, with cascades.
    func modifyRecords(_ request: ModifyRecordsRequest, in scope: DatabaseScope) async throws -> RecordsResponse

    /// `records/lookup`: one result per requested name, in request order.
    func lookupRecords(_ request: LookupRecordsRequest, in scope: DatabaseScope) async throws -> RecordsResponse

    /// `records/query`.
    func queryRecords(_ request: QueryRecordsRequest, in scope: DatabaseScope) async throws -> QueryRecordsResponse

    /// `records/changes` (and each zone of `changes/zone`): one page of a zone's change feed.
    func recordChanges(_ request: RecordChangesRequest, in scope: DatabaseScope) async throws -> ZoneChanges

    /// `changes/database`: zones changed or deleted since a token.
    func databaseChanges(_ request: DatabaseChangesRequest, in scope: DatabaseScope) async throws -> DatabaseChanges

    /// `zones/list`: every zone of the database.
    func listZones(in scope: DatabaseScope) async throws -> [Zone]

    /// `zones/lookup`: one result per zone ID.
    func lookupZones(_ zoneIDs: [ZoneID], in scope: DatabaseScope) async throws -> [ZoneResult]

    /// `zones/modify`: creates (idempotently) and deletes zones.
    func modifyZones(_ request: ModifyZonesRequest, in scope: DatabaseScope) async throws -> [ZoneResult]
}

/// Where a zone's change feed stood when it was read: the zone's incarnation and its last
/// change. While a zone's mark stays the same, nothing in the zone changed, so a page read
/// again would read the same.
package struct ChangeFeedMark: Sendable, Hashable {
    package var zoneUID: UUID
    package var sequence: Int64

    package init(zoneUID: UUID, sequence: Int64) {
        self.zoneUID = zoneUID
        self.sequence = sequence
    }
}

/// A store that can read a change page without decoding records' fields: it leaves them as
/// the JSON text it keeps (the wire form), which the answer then copies as is.
package protocol StoredChangePages: RecordStore {
    /// The page ``RecordStore/recordChanges(_:in:)`` returns, fields left as stored text, and
    /// the mark of the feed it was read at (read in the same transaction).
    func recordChangesPage(_ request: RecordChangesRequest, in scope: DatabaseScope) async throws -> (page: StoredZoneChanges, mark: ChangeFeedMark)

    /// The mark of a zone's feed now.
    ///
    /// - Throws: what reading the zone throws (`ZONE_NOT_FOUND`, say).
    func changeFeedMark(of zoneID: ZoneID?, in scope: DatabaseScope) async throws -> ChangeFeedMark
}

extension RecordStore {
    /// One page of a zone's change feed, for writing to the wire: with stored field text when
    /// the store offers it (``StoredChangePages``), else ``recordChanges(_:in:)``'s page.
    package func changesPage(_ request: RecordChangesRequest, in scope: DatabaseScope) async throws -> StoredZoneChanges {
        if let stored = self as? any StoredChangePages { return try await stored.recordChangesPage(request, in: scope).page }
        return StoredZoneChanges(try await recordChanges(request, in: scope))
    }
}
