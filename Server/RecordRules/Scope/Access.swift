import RecordModel
import RecordStorage

/// Who may do what with the records of a request's database: the one authorization check
/// (docs/architecture.md, "The one check"; the rules: docs/protocol.md, "Security roles").
///
/// Every path that reads, writes or announces a record asks it: lookups, queries (their
/// results, includes and key paths), change feeds, backlinks, the records `CONFLICT` and
/// `EXISTS` carry, cascades, `VALIDATE` references, asset rereferences and subscriptions'
/// notifications. It is loaded once per request (``load(_:containerKey:in:)``) inside the
/// request's transaction.
///
/// - A **private database** is its owner's alone: the request's user is its owner (a database
///   is addressed by its owner), who may do everything.
/// - In the **public database** a record type's grants (the deployed schema's `GRANT` lines;
///   CloudKit's defaults for a type a save created) give `CREATE`, `READ` and `WRITE` to
///   `_world` (anyone, a signed-out visitor too), `_icloud` (any signed-in user), `_creator`
///   (the record's creator) and to roles operators give users. `WRITE` includes `READ` (a
///   writer sees what it changes); `CREATE` concerns records not yet stored, so `_creator` is
///   never given it. A type that grants nothing at all (a schema written without `GRANT`
///   lines, as the schema lifecycle stored them before this check) has the defaults too: what
///   such a data directory served, it serves.
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

    /// Per record type that grants something; `nil` when the caller owns the database.
    private let types: [String: TypePermissions]?
    /// For a type the schema lacks (a save creates it with CloudKit's default grants) or that
    /// grants nothing.
    private let defaults: TypePermissions
    /// The caller's user record name.
    private let caller: String
    /// Whether the caller is a signed-in user (not a visitor with an API token alone).
    private let signedIn: Bool
    /// The caller, as a refusal names it.
    private let callerDescription: String

    /// Whether the caller may do everything (its own private database).
    var isOwner: Bool { types == nil }

    /// The access of the owner of a database.
    static func owner(_ user: User) -> Access {
        Access(types: nil, defaults: TypePermissions(), caller: user.userRecordName, signedIn: true, callerDescription: user.name)
    }

    /// The access of the caller of a request in `scope` (the database of container `containerKey`).
    static func load(_ scope: DatabaseScope, containerKey: Int64, in transaction: any StorageTransaction) throws -> Access {
        guard scope.kind == .public else { return .owner(scope.user) }
        let grants = try transaction.grants(inContainer: containerKey)
        let roles = scope.user == .visitor ? [] : try transaction.usersWithRoles([scope.user.id], inContainer: containerKey).first?.roles ?? []
        return Access(user: scope.user, roles: roles, grants: grants)
    }

    /// The access of each of the users `keys` (those that exist) to the public database of
    /// container `containerKey`, by key (one read of the grants for all).
    static func load(publicDatabaseFor keys: [Int64], containerKey: Int64, in transaction: any StorageTransaction) throws -> [Int64: Access] {
        guard !keys.isEmpty else { return [:] }
        let grants = try transaction.grants(inContainer: containerKey)
        return Dictionary(try transaction.usersWithRoles(keys, inContainer: containerKey).map { ($0.user.id, Access(user: $0.user, roles: $0.roles, grants: grants)) }) { first, _ in first }
    }

    private init(types: [String: TypePermissions]?, defaults: TypePermissions, caller: String, signedIn: Bool, callerDescription: String) {
        self.types = types
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
    /// `CREATE`, a record not stored yet: `nil`).
    func may(_ permission: SchemaPermission, _ recordType: String, createdBy creator: String?) -> Bool {
        guard types != nil else { return true }
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
        guard types != nil else { return true }
        if record.deleted { return readers(of: record.recordType) != .none }
        return may(.read, record.recordType, createdBy: record.created?.userRecordName)
    }

    /// The records of `records` the caller may read, in order.
    func readable(_ records: [Record]) -> [Record] {
        isOwner ? records : records.filter(mayRead)
    }

    /// What a query may see (``QuerySchema/readers``): `nil` when every record.
    var queryReaders: QueryReaders? {
        guard let types else { return nil }
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
        guard !may(permission, recordType, createdBy: creator) else { return }
        let whose = permission == .create ? "" : " (record \(NameRules.quoted(recordName))" + (creator == caller ? ", which they created)" : ", created by another user)")
        throw RecordSyncError(.accessDenied, "\(permission.rawValue) permission on record type \(recordType) is not granted to \(callerDescription) in the public database\(whose)",
                              recordName: recordName)
    }
}
