import RecordModel
import RecordStorage
import Synchronization

/// Who may do what with the records of a request's database: the one authorization check
/// (docs/architecture.md, "The one check"; the rules: docs/protocol.md, "Security roles").
///
/// Every path that reads, writes or announces a record asks it: lookups, queries (their
/// results, includes and key paths), change feeds, backlinks, the records `CONFLICT` and
/// `EXISTS` carry, cascades, `VALIDATE` references, asset rereferences and subscriptions'
/// notifications. It is loaded once per request (``load(_:containerKey:kept:in:)``) inside
/// the request's transaction.
///
/// - A **private database** is its owner's alone: the request's user is its owner (a database
///   is addressed by its owner), who may do everything.
/// - In the **public database** a record type's grants (the deployed schema's `GRANT` lines;
///   CloudKit's defaults for a type a save created) give `CREATE`, `READ` and `WRITE` to
///   `_world` (anyone, a signed-out visitor too), `_icloud` (any signed-in user), `_creator`
///   (the record's creator) and to roles operators give users. `WRITE` includes `READ` (a
///   writer sees what it changes); `CREATE` concerns records not yet stored, so `_creator` is
///   never given it. A type that grants nothing at all (a schema file written without `GRANT`
///   lines) has the defaults too, so that stored schemas without grants serve as they did.
struct Access: Sendable {
    /// Who may read a record type's records, as this caller sees it.
    enum Readers: Sendable, Equatable {
        case all, creator, none
    }

    /// What this caller may do with one type's records: with any record, and with those it
    /// created.
    private struct TypePermissions: Sendable {
        var any: Set<SchemaPermission> = []
        var asCreator: Set<SchemaPermission> = []
    }

    /// Per record type that grants something; `nil` when the caller reads every record (its
    /// own private database, or a zone shared with it).
    private let types: [String: TypePermissions]?
    /// For a zone shared with the caller: how it takes part (its permission, and the share; a
    /// batch adds the records a participant creates in a record share).
    var participation: Participation?

    /// A participant's part in the shares of the zone a request addresses: the zone's share,
    /// or one or more record shares, each reaching the records of its root's hierarchy.
    struct Participation: Sendable {
        /// One share the participant takes part in.
        struct Part: Sendable {
            /// The share's key.
            var key: Int64
            var share: String
            /// The share's root record; `nil` for the zone's share.
            var root: String?
            var permission: SharePermission
        }

        var parts: [Part]
        /// For record shares: each record the participant reaches, with the part reaching it
        /// (an index of ``parts``); `nil` when the zone's share reaches every record.
        var members: [String: Int]?
        /// The zone's key (for the hierarchy a query compiles: ``QueryReaders/shareRoots``).
        var zoneKey: Int64

        /// The participation in a zone's share.
        init(permission: SharePermission, share: String, shareKey: Int64, zoneKey: Int64) {
            self.init(parts: [Part(key: shareKey, share: share, root: nil, permission: permission)], members: nil, zoneKey: zoneKey)
        }

        init(parts: [Part], members: [String: Int]?, zoneKey: Int64) {
            self.parts = parts
            self.members = members
            self.zoneKey = zoneKey
        }

        /// The part that reaches record `name` (`nil`: none; any part, for a name not stored yet
        /// in a zone share).
        func part(reaching name: String?) -> Part? {
            guard let members else { return parts.first }
            return name.flatMap { members[$0] }.map { parts[$0] }
        }

        /// The part whose root is `name`, if `name` is a record share's root.
        func part(rootedAt name: String) -> Part? {
            parts.first { $0.root == name }
        }
    }
    /// For a type the schema lacks (a save creates it with CloudKit's default grants) or that
    /// grants nothing.
    private let defaults: TypePermissions
    /// The caller's user record name.
    private let caller: String
    /// Whether the caller is a signed-in user (not a visitor with an API token alone).
    private let signedIn: Bool
    /// The caller, as a refusal names it.
    private let callerDescription: String
    /// A participant's user name (``RecordSyncError/participantRefused(_:recordName:user:share:sharePermission:)``).
    private var participantName = ""

    /// Whether the caller reads every record (its own private database, or a zone shared with it
    /// as a whole).
    var readsEverything: Bool { types == nil && participation?.members == nil }

    /// Whether the caller owns the database.
    var isOwner: Bool { types == nil && participation == nil }

    /// The access of the owner of a database.
    static func owner(_ user: User) -> Access {
        Access(types: nil, defaults: TypePermissions(), caller: user.userRecordName, signedIn: true, callerDescription: user.name)
    }

    /// The access of a participant of the share `participation` names, to the zone it shares.
    static func participant(_ user: User, _ participation: Participation) -> Access {
        var access = Access(types: nil, defaults: TypePermissions(), caller: user.userRecordName, signedIn: true,
                            callerDescription: "user \(NameRules.quoted(user.name))", participation: participation)
        access.participantName = user.name
        return access
    }

    /// The access of the caller of a request in `scope` (the database of container `containerKey`;
    /// in the shared database, to `zone`, as its participant):
    /// its grants and roles read in `transaction`, or, for a read, taken from `kept` when read
    /// there within its lifetime (writes pass `nil`: they are judged by what their transaction
    /// reads). The caller's roles are read only when a grant names a role.
    static func load(_ scope: DatabaseScope, zone: ZoneContext?, containerKey: Int64, kept: AccessInputs? = nil, in transaction: any StorageTransaction) throws -> Access {
        if let participation = zone?.participation { return .participant(scope.user, participation) }
        // A request in the shared database reaches records only through a zone it takes part in.
        guard scope.kind != .shared else {
            throw RecordSyncError(.zoneNotFound, "a request of the shared database names one zone shared with you (zoneID with its ownerRecordName)")
        }
        guard scope.kind == .public else { return .owner(scope.user) }
        let grants = try kept?.grants(inContainer: containerKey, in: transaction) ?? transaction.grants(inContainer: containerKey)
        guard scope.user != .visitor, grants.values.contains(where: { $0.contains { !builtInGrantees.contains($0.grantee) } }) else {
            return Access(user: scope.user, roles: [], grants: grants)
        }
        let roles = try kept?.roles(of: scope.user.id, inContainer: containerKey, in: transaction)
            ?? transaction.usersWithRoles([scope.user.id], inContainer: containerKey).first?.roles ?? []
        return Access(user: scope.user, roles: roles, grants: grants)
    }

    /// The grantees that are not roles.
    static let builtInGrantees: Set<String> = ["_world", "_icloud", "_creator"]

    /// The access of each of the users `keys` (those that exist) to the public database of
    /// container `containerKey`, by key (one read of the grants for all).
    static func load(publicDatabaseFor keys: [Int64], containerKey: Int64, in transaction: any StorageTransaction) throws -> [Int64: Access] {
        guard !keys.isEmpty else { return [:] }
        let grants = try transaction.grants(inContainer: containerKey)
        return Dictionary(try transaction.usersWithRoles(keys, inContainer: containerKey).map { ($0.user.id, Access(user: $0.user, roles: $0.roles, grants: grants)) }) { first, _ in first }
    }

    private init(types: [String: TypePermissions]?, defaults: TypePermissions, caller: String, signedIn: Bool, callerDescription: String,
                 participation: Participation? = nil) {
        self.types = types
        self.participation = participation
        self.defaults = defaults
        self.caller = caller
        self.signedIn = signedIn
        self.callerDescription = callerDescription
    }

    /// A public database's access for `user` holding `roles`, under `grants` (by type).
    init(user: User, roles: Set<String>, grants: [String: [SchemaGrant]]) {
        let signedIn = user != .visitor
        func permissions(_ grants: [SchemaGrant]) -> TypePermissions {
            var permissions = TypePermissions()
            for grant in grants {
                let given = Set(grant.permissions).union(grant.permissions.contains(.write) ? [.read] : [])
                switch grant.grantee {
                case "_world": permissions.any.formUnion(given)
                case "_icloud" where signedIn: permissions.any.formUnion(given)
                case "_creator" where signedIn: permissions.asCreator.formUnion(given.subtracting([.create]))
                case let role where signedIn && roles.contains(role): permissions.any.formUnion(given)
                default: break
                }
            }
            permissions.asCreator.formUnion(permissions.any)
            return permissions
        }
        self.init(types: grants.filter { !$0.value.isEmpty }.mapValues(permissions), defaults: permissions(SchemaRules.defaultGrants), caller: user.userRecordName, signedIn: signedIn,
                  callerDescription: signedIn ? "user \(NameRules.quoted(user.name))" + (roles.isEmpty ? "" : " (roles: \(roles.sorted().joined(separator: ", ")))")
                                              : "a signed-out visitor")
    }

    private func permissions(of recordType: String) -> TypePermissions {
        types?[recordType] ?? defaults
    }

    /// Whether the caller may `permission` a record of `recordType` created by `creator` (for
    /// `CREATE`, a record not stored yet: `nil`) named `recordName` (a participant of record
    /// shares reaches only their records; a new record joins by its parent: ``ModifyBatch``).
    func may(_ permission: SchemaPermission, _ recordType: String, createdBy creator: String?, recordName: String? = nil) -> Bool {
        guard types != nil else {
            guard let participation else { return true }
            if permission == .create { return recordType != ShareInfo.recordType && participation.parts.contains { $0.permission == .readWrite } }
            guard let part = participation.part(reaching: recordName) else { return false }
            return permission == .read || (part.permission == .readWrite && recordType != ShareInfo.recordType)
        }
        let permissions = permissions(of: recordType)
        if permissions.any.contains(permission) { return true }
        return signedIn && creator == caller && permissions.asCreator.contains(permission)
    }

    /// Who may read `recordType`'s records, as this caller sees it.
    func readers(of recordType: String) -> Readers {
        guard types != nil else { return .all }
        let permissions = permissions(of: recordType)
        if permissions.any.contains(.read) { return .all }
        return signedIn && permissions.asCreator.contains(.read) ? .creator : .none
    }

    /// Whether the caller may read `record`. A deleted record (a change feed's tombstone)
    /// carries only its name and type: it is announced to callers who may read some records of
    /// its type.
    func mayRead(_ record: Record) -> Bool {
        guard types != nil else {
            // A record share's participant: its records (a tombstone says nothing of its share).
            guard let members = participation?.members else { return true }
            return !record.deleted && members[record.recordName] != nil
        }
        if record.deleted { return readers(of: record.recordType) != .none }
        return may(.read, record.recordType, createdBy: record.created?.userRecordName)
    }

    /// The records of `records` the caller may read, in order.
    func readable(_ records: [Record]) -> [Record] {
        readsEverything ? records : records.filter(mayRead)
    }

    /// What a query may see (``QuerySchema/readers``): `nil` when every record.
    var queryReaders: QueryReaders? {
        guard let types else {
            guard let participation, participation.members != nil else { return nil }
            return QueryReaders(hidden: [], creatorOnly: [], creator: caller,
                                shareRoots: participation.parts.compactMap(\.root), shareZone: participation.zoneKey)
        }
        var hidden: Set<String> = [], creatorOnly: Set<String> = []
        for type in types.keys {
            switch readers(of: type) {
            case .all: break
            case .creator: creatorOnly.insert(type)
            case .none: hidden.insert(type)
            }
        }
        return hidden.isEmpty && creatorOnly.isEmpty ? nil : QueryReaders(hidden: hidden, creatorOnly: creatorOnly, creator: caller)
    }

    /// Refuses `permission` on a record of `recordType` (named `recordName`, created by
    /// `creator`) unless the caller has it.
    ///
    /// - Throws: `ACCESS_DENIED` naming the permission, the type and the caller.
    func require(_ permission: SchemaPermission, _ recordType: String, createdBy creator: String?, recordName: String) throws {
        guard !may(permission, recordType, createdBy: creator, recordName: recordName) else { return }
        if let participation {
            let part = participation.part(reaching: recordName) ?? participation.parts[0]
            if recordType != ShareInfo.recordType, permission == .create || participation.part(reaching: recordName) != nil {
                throw RecordSyncError.participantRefused(permission, recordName: recordName, user: participantName, share: part.share, sharePermission: part.permission)
            }
            let why = recordType == ShareInfo.recordType ? "only the owner changes a share (a participant who deletes it leaves it)"
                : "it is not in a share \(callerDescription) takes part in"
            throw RecordSyncError(.accessDenied, "\(permission.rawValue) permission on record \(NameRules.quoted(recordName)) is not granted: \(why)", recordName: recordName)
        }
        let whose = permission == .create ? "" : " (record \(NameRules.quoted(recordName))" + (creator == caller ? ", which they created)" : ", created by another user)")
        throw RecordSyncError(.accessDenied, "\(permission.rawValue) permission on record type \(recordType) is not granted to \(callerDescription) in the public database\(whose)",
                              recordName: recordName)
    }
}

/// What ``Access`` is made of, kept by a server for reads: each container's grants and each
/// user's roles in it, read at most once per ``lifetime`` (a deploy or a role given on another
/// server is seen by this one's reads within it, as a revoked token is; this server's own
/// imports, deploys, resets and roles are seen at once: ``forgetAll()``).
public final class AccessInputs: Sendable {
    /// How long what was read is used.
    static let lifetime: Duration = .seconds(1)
    /// Past this many users' roles kept, the expired ones are dropped.
    static let capacity = 10_000

    private struct Kept<Value> {
        var value: Value
        var until: ContinuousClock.Instant
    }

    private struct RoleKey: Hashable {
        var container: Int64
        var user: Int64
    }

    private struct State {
        var grants: [Int64: Kept<[String: [SchemaGrant]]>] = [:]
        var roles: [RoleKey: Kept<Set<String>>] = [:]
    }

    private let state = Mutex(State())

    init() {}

    /// The grants of container `key`: kept, or read in `transaction` and kept.
    func grants(inContainer key: Int64, in transaction: any StorageTransaction) throws -> [String: [SchemaGrant]] {
        let now = ContinuousClock.now
        if let kept = state.withLock({ $0.grants[key] }), kept.until > now { return kept.value }
        let grants = try transaction.grants(inContainer: key)
        state.withLock { $0.grants[key] = Kept(value: grants, until: now + Self.lifetime) }
        return grants
    }

    /// The roles of user `user` in container `key`: kept, or read in `transaction` and kept.
    func roles(of user: Int64, inContainer key: Int64, in transaction: any StorageTransaction) throws -> Set<String> {
        let now = ContinuousClock.now
        let roleKey = RoleKey(container: key, user: user)
        if let kept = state.withLock({ $0.roles[roleKey] }), kept.until > now { return kept.value }
        let roles = try transaction.usersWithRoles([user], inContainer: key).first?.roles ?? []
        state.withLock { state in
            if state.roles.count >= Self.capacity { state.roles = state.roles.filter { $0.value.until > now } }
            state.roles[roleKey] = Kept(value: roles, until: now + Self.lifetime)
        }
        return roles
    }

    /// Drops everything kept (after this server changed a schema's grants or a user's roles).
    func forgetAll() {
        state.withLock { $0 = State() }
    }
}
