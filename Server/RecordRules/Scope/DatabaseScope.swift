import Foundation
import RecordModel

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

extension DatabaseAddress {
    /// The address of the database `scope` names.
    public init(_ scope: DatabaseScope) {
        self.init(container: scope.container, environment: scope.environment, kind: scope.kind,
                  ownerKey: scope.kind == .private ? scope.user.id : 0)
    }
}

extension ChangeAnnouncement {
    /// An announcement of `zones` of the database of `scope`.
    public init(zones: [ZoneID], in scope: DatabaseScope) {
        self.init(zones: zones, in: DatabaseAddress(scope))
    }
}
