import Foundation
import RecordModel

/// A live zone as a request addresses it, read inside the request's transaction.
struct ZoneContext: Sendable {
    var key: Int64
    var databaseKey: Int64
    var name: String
    var uid: UUID
    /// The last number of the zone's feed when it was read.
    var sequence: Int64
    /// The zone's ID as answers carry it (with its owner's record name).
    var zoneID: ZoneID
    /// In the shared database: the caller's part in the zone's share.
    var participation: Access.Participation?
}

/// Thrown inside a read transaction when the database does not exist yet; the caller retries
/// in a write transaction, which creates it.
struct MissingDatabase: Error {}

extension RecordStore {
    /// The database of `scope`, created with its `_defaultZone` on first use (unless `create`
    /// is false: then ``MissingDatabase``; in the shared database, `ZONE_NOT_FOUND`). A
    /// database always has `_defaultZone`.
    static func database(_ scope: DatabaseScope, in transaction: any StorageTransaction, create: Bool = true) throws -> StoredDatabase {
        let address = DatabaseAddress(scope)
        if let database = try transaction.database(at: address) { return database }
        guard create else { throw MissingDatabase() }
        // A participant's request never makes its owner's database: a zone of one that does not
        // exist is not shared with anyone.
        guard scope.kind != .shared else {
            throw RecordSyncError(.zoneNotFound, "\(NameRules.quoted(scope.ownerRecordName)) has shared no zone with you in \(scope.container) (\(scope.environment))")
        }
        var database = try transaction.insertDatabase(at: address, uid: UUID())
        _ = try createOrReviveZone(named: ZoneID.defaultZoneName, database: database.key, in: transaction)
        // Creating `_defaultZone` took the database feed's first number.
        database.sequence = try transaction.database(at: address)?.sequence ?? database.sequence
        return database
    }

    /// Runs `body` in a read transaction with the database of `scope`, or in a write
    /// transaction when the database must first be created.
    func read<T: Sendable>(_ scope: DatabaseScope, _ body: @escaping @Sendable (any StorageTransaction, StoredDatabase) throws -> T) async throws -> T {
        do {
            return try await engine.read { transaction in
                try body(transaction, try Self.database(scope, in: transaction, create: false))
            }
        } catch is MissingDatabase {
            return try await engine.write { transaction in
                .commit(try body(transaction, try Self.database(scope, in: transaction)))
            }
        }
    }

    /// Runs `body` in a read transaction with the database of `scope` and its live zone
    /// `zoneID`, read together (``StorageTransaction/database(at:withZoneNamed:)``), or in a
    /// write transaction when the database must first be created.
    ///
    /// A read whose size the request bounds (`bounded`) is ``StorageEngine/boundedRead(_:)``.
    ///
    /// - Throws: as ``zone(_:database:scope:in:)``, before reading anything for a bad name.
    func read<T: Sendable>(_ scope: DatabaseScope, zone zoneID: ZoneID?, bounded: Bool = false,
                           _ body: @escaping @Sendable (any StorageTransaction, StoredDatabase, ZoneContext) throws -> T) async throws -> T {
        let zoneID = try Self.addressable(zoneID, in: scope)
        do {
            let read: @Sendable (any StorageTransaction) throws -> T = { transaction in
                guard let (database, stored) = try transaction.database(at: DatabaseAddress(scope), withZoneNamed: zoneID.zoneName) else {
                    throw MissingDatabase()
                }
                return try body(transaction, database, try Self.zone(zoneID, stored: stored, database: database.key, scope: scope, in: transaction))
            }
            return try await bounded ? engine.boundedRead(read) : engine.read(read)
        } catch is MissingDatabase {
            return try await engine.write { transaction in
                let database = try Self.database(scope, in: transaction)
                return .commit(try body(transaction, database, try Self.zone(zoneID, database: database.key, scope: scope, in: transaction)))
            }
        }
    }

    /// The live zone `zoneID` of a database, or `ZONE_NOT_FOUND` (`BAD_REQUEST` for a bad name).
    static func zone(_ zoneID: ZoneID?, database: Int64, scope: DatabaseScope, in transaction: any StorageTransaction) throws -> ZoneContext {
        let zoneID = try addressable(zoneID, in: scope)
        return try zone(zoneID, stored: try transaction.zone(named: zoneID.zoneName, in: database), database: database, scope: scope, in: transaction)
    }

    /// `zoneID` (the default zone if `nil`) if a request in `scope` may name it: an
    /// `ownerRecordName`, when given, is the caller's own or `__defaultOwner__` (CloudKit's
    /// name for the current user, and the public database's zones' owner). A zone ID naming
    /// another user is refused, never read as the caller's own zone of that name.
    ///
    /// - Throws: `BAD_REQUEST` for a bad name; `ZONE_NOT_FOUND` for a zone ID naming another
    ///   user as its owner.
    static func addressable(_ zoneID: ZoneID?, in scope: DatabaseScope) throws -> ZoneID {
        let zoneID = zoneID ?? .defaultZone
        if let problem = NameRules.problem(withName: zoneID.zoneName, kind: "zoneName") {
            throw RecordSyncError(.badRequest, problem, zoneID: zoneID)
        }
        if scope.kind == .shared && scope.owner == nil {
            throw RecordSyncError(.badRequest, "a zone of the shared database is named with its owner: give zoneID.ownerRecordName", zoneID: zoneID)
        }
        if let owner = zoneID.ownerRecordName, !Self.isOwner(owner, ofZonesIn: scope) {
            let database = switch scope.kind {
            case .private: "your private database"
            case .public: "the public database, whose zones no user owns"
            case .shared: "your shared database"
            }
            throw RecordSyncError(.zoneNotFound, "zone \(NameRules.quoted(zoneID.zoneName)) of owner \(NameRules.quoted(owner)) is not in \(database)", zoneID: zoneID)
        }
        return zoneID
    }

    /// Whether a zone ID's `ownerRecordName` may name a zone of `scope`'s database: the
    /// caller's own record name, or `__defaultOwner__` (CloudKit's name for the current user,
    /// and the public database's zones' owner).
    static func isOwner(_ owner: String, ofZonesIn scope: DatabaseScope) -> Bool {
        guard scope.kind == .shared else { return owner == scope.user.userRecordName || owner == "__defaultOwner__" }
        return owner == scope.owner?.userRecordName
    }

    /// The zone `stored` (the zone named as `zoneID`) if it is live (and, in the shared
    /// database, shared with the caller, who has accepted), else `ZONE_NOT_FOUND`.
    static func zone(_ zoneID: ZoneID, stored: StoredZone?, database: Int64, scope: DatabaseScope, in transaction: any StorageTransaction) throws -> ZoneContext {
        guard let stored, !stored.deleted else {
            throw RecordSyncError(.zoneNotFound, "zone \(NameRules.quoted(zoneID.zoneName)) does not exist", zoneID: zoneID)
        }
        var zone = ZoneContext(key: stored.key, databaseKey: database, name: zoneID.zoneName, uid: stored.uid, sequence: stored.sequence,
                               zoneID: ZoneID(zoneName: zoneID.zoneName, ownerRecordName: scope.ownerRecordName))
        if scope.kind == .shared {
            guard let participation = try participation(ofUser: scope.user.id, inZone: stored.key, in: transaction) else {
                throw RecordSyncError(.zoneNotFound, "zone \(NameRules.quoted(zoneID.zoneName)) of \(NameRules.quoted(scope.ownerRecordName)) is not shared with you (or you have not accepted its share)", zoneID: zoneID)
            }
            zone.participation = participation
        }
        return zone
    }

    /// `scope`, and for a request in the shared database, with the owner of the zone
    /// `zoneID` names (``DatabaseScope/owner``): the request then reads and writes that
    /// zone in its owner's private database, as a participant.
    ///
    /// - Throws: `BAD_REQUEST` without an owner; `ZONE_NOT_FOUND` for an owner that is not a
    ///   user or is the caller (whose zones are in their private database).
    func sharedZoneScope(_ scope: DatabaseScope, zoneID: ZoneID?) async throws -> DatabaseScope {
        guard scope.kind == .shared else { return scope }
        let zoneName = zoneID?.zoneName ?? ZoneID.defaultZoneName
        guard let ownerName = zoneID?.ownerRecordName, ownerName != "__defaultOwner__" else {
            throw RecordSyncError(.badRequest, "a zone of the shared database is named with its owner: give zoneID.ownerRecordName", zoneID: zoneID)
        }
        guard ownerName != scope.user.userRecordName else {
            throw RecordSyncError(.zoneNotFound, "zone \(NameRules.quoted(zoneName)) is yours: it is in your private database, not your shared one", zoneID: zoneID)
        }
        guard let owner = try await engine.read({ try $0.users(withRecordNames: [ownerName]) }).first?.user else {
            throw RecordSyncError(.zoneNotFound, "zone \(NameRules.quoted(zoneName)) of \(NameRules.quoted(ownerName)) is not shared with you", zoneID: zoneID)
        }
        var scope = scope
        scope.owner = owner
        return scope
    }

    /// Creates a zone, or brings a deleted one back as a new incarnation (a new UID, so tokens
    /// of the old one expire; its feed numbers go on, so change tags stay unique). Returns
    /// `nil` when the zone already exists.
    static func createOrReviveZone(named name: String, database: Int64, in transaction: any StorageTransaction) throws -> Int64? {
        let uid = UUID()
        if let existing = try transaction.zone(named: name, in: database) {
            guard existing.deleted else { return nil }
            try transaction.reviveZone(existing.key, uid: uid, databaseSequence: try DatabaseFeed.take(database, in: transaction))
            try transaction.insertIncarnation(uid, of: existing.key)
            return existing.key
        }
        let key = try transaction.insertZone(named: name, in: database, uid: uid, databaseSequence: try DatabaseFeed.take(database, in: transaction))
        try transaction.insertIncarnation(uid, of: key)
        return key
    }
}
