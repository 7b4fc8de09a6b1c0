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
    /// In the shared database, the owner of the zone the request addresses, whose private
    /// database holds it (``RecordStore/sharedZoneScope(_:zoneID:)``); `nil` for a request
    /// about the shared database as a whole.
    public var owner: User?

    /// Creates a scope.
    public init(container: String, environment: String, kind: DatabaseKind, user: User, owner: User? = nil) {
        self.container = container
        self.environment = environment
        self.kind = kind
        self.user = user
        self.owner = owner
    }

    /// The owner record name a zone ID of this database carries.
    public var ownerRecordName: String {
        switch kind {
        case .public: "__defaultOwner__"
        case .private: user.userRecordName
        case .shared: owner?.userRecordName ?? user.userRecordName
        }
    }
}

extension DatabaseAddress {
    /// The address of the database `scope` names: for a zone in the shared database, its
    /// owner's private database.
    public init(_ scope: DatabaseScope) {
        switch (scope.kind, scope.owner) {
        case (.public, _): self.init(container: scope.container, environment: scope.environment, kind: .public, ownerKey: 0)
        case (.private, _): self.init(container: scope.container, environment: scope.environment, kind: .private, ownerKey: scope.user.id)
        case (.shared, let owner?): self.init(container: scope.container, environment: scope.environment, kind: .private, ownerKey: owner.id)
        case (.shared, nil): self.init(container: scope.container, environment: scope.environment, kind: .shared, ownerKey: scope.user.id)
        }
    }
}

extension ChangeAnnouncement {
    /// An announcement of `zones` of the database of `scope`.
    public init(zones: [ZoneID], in scope: DatabaseScope) {
        self.init(zones: zones, in: DatabaseAddress(scope))
    }
}
