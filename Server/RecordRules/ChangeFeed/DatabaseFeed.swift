import Foundation
import RecordModel

/// A database's feed of zone changes (`changes/database`): every zone carries its place in it
/// (`db_seq`), moved to the database's next number whenever the zone is created, deleted or
/// written.
enum DatabaseFeed {
    /// Takes the database's next number, inside the writing transaction.
    static func take(_ database: Int64, in transaction: any StorageTransaction) throws -> Int64 {
        try transaction.advanceDatabaseSequence(database)
    }
}

extension RecordStore {
    /// `changes/database`: zones changed or deleted since a token, in the order of their last
    /// change (in the shared database, ``sharedDatabaseChanges(after:in:)``). A token is (database, last number delivered, deletion floor): a client starting
    /// from scratch is not told of zones deleted before it started.
    public func databaseChanges(_ request: DatabaseChangesRequest, in scope: DatabaseScope) async throws -> DatabaseChanges {
        if scope.kind == .shared {
            let (zones, token) = try await sharedDatabaseChanges(after: request.syncToken, in: scope)
            return DatabaseChanges(zones: zones.map { ChangedZone(zoneID: $0.zone.zoneID, deleted: $0.deleted ? true : nil) }, syncToken: token, moreComing: false)
        }
        return try await databaseChanges(request, in: scope) { _, zones, token, more in
            DatabaseChanges(zones: zones.map { ChangedZone(zoneID: $0.zoneID, deleted: $0.deleted) }, syncToken: token, moreComing: more)
        }
    }

    /// `zones/changes`: the same feed as `changes/database`, each live zone described as
    /// `zones/list` does (with its current token), a deleted one as `{zoneID, deleted: true}`.
    public func zonesChanges(_ request: ZonesChangesRequest, in scope: DatabaseScope) async throws -> ZonesChangesResponse {
        if let meta = request.metaSyncToken, let sync = request.syncToken, meta != sync {
            throw RecordSyncError(.badRequest, "metaSyncToken and syncToken differ; send one of them")
        }
        if scope.kind == .shared {
            let (zones, token) = try await sharedDatabaseChanges(after: request.metaSyncToken ?? request.syncToken, in: scope)
            return ZonesChangesResponse(zones: zones.map(\.zone), token: token, moreComing: false)
        }
        let feed = DatabaseChangesRequest(syncToken: request.metaSyncToken ?? request.syncToken, resultsLimit: request.resultsLimit)
        return try await databaseChanges(feed, in: scope) { transaction, zones, token, more in
            let described = try zones.map { changed -> Zone in
                if changed.deleted == true { return Zone(zoneID: changed.zoneID, atomic: nil, deleted: true) }
                guard let zone = try transaction.zone(named: changed.zoneID.zoneName, in: changed.database) else {
                    throw RecordSyncError(.internalError, "zone \(NameRules.quoted(changed.zoneID.zoneName)) is in the feed but not stored")
                }
                return Self.describe(name: zone.name, uid: zone.uid, sequence: zone.sequence, scope: scope)
            }
            return ZonesChangesResponse(zones: described, token: token, moreComing: more)
        }
    }

    /// A zone of a database-feed page.
    struct FeedZone {
        var zoneID: ZoneID
        var deleted: Bool?
        var database: Int64
    }

    /// A page of the database feed after the request's token, shaped by `answer` inside the
    /// same read.
    private func databaseChanges<Answer: Sendable>(
        _ request: DatabaseChangesRequest, in scope: DatabaseScope,
        _ answer: @escaping @Sendable (any StorageTransaction, [FeedZone], String, Bool) throws -> Answer
    ) async throws -> Answer {
        let limit = try limits.resultsLimit(request.resultsLimit)
        let given = try request.syncToken.map { try DatabaseChangeToken(string: $0) }
        return try await read(scope) { transaction, database in
            if let given {
                guard given.databaseUID == database.uid else { throw RecordSyncError(.badRequest, "syncToken belongs to another database") }
                guard given.sequence <= database.sequence else { throw RecordSyncError(.badRequest, "syncToken is ahead of this database") }
            }
            let token = given ?? DatabaseChangeToken(databaseUID: database.uid, sequence: 0, deletionFloor: database.sequence)
            let rows = try transaction.zoneChanges(in: database.key, after: token.sequence, deletionFloor: token.deletionFloor, limit: limit + 1)
            let more = rows.count > limit
            let page = rows.prefix(limit)
            let zones = page.map { row in
                FeedZone(zoneID: ZoneID(zoneName: row.name, ownerRecordName: scope.ownerRecordName), deleted: row.deleted ? true : nil, database: database.key)
            }
            let next = DatabaseChangeToken(databaseUID: database.uid, sequence: more ? (page.last?.sequence ?? token.sequence) : database.sequence,
                                           deletionFloor: token.deletionFloor)
            return try answer(transaction, zones, next.string, more)
        }
    }
}
