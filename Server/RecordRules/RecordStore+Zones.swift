import Foundation
import RecordModel

extension RecordStore {
    /// `zones/list`: every live zone of the database, by name.
    public func listZones(in scope: DatabaseScope) async throws -> [Zone] {
        if scope.kind == .shared { return try await listSharedZones(in: scope) }
        return try await read(scope) { transaction, database in
            try transaction.liveZones(in: database.key).map { zone in
                Self.describe(name: zone.name, uid: zone.uid, sequence: zone.sequence, scope: scope)
            }
        }
    }

    /// `zones/lookup`: one result per zone ID.
    public func lookupZones(_ zoneIDs: [ZoneID], in scope: DatabaseScope) async throws -> [ZoneResult] {
        try limits.checkCount(zoneIDs.count, of: "zones")
        if scope.kind == .shared { return try await lookupSharedZones(zoneIDs, in: scope) }
        return try await read(scope) { transaction, database in
            zoneIDs.map { zoneID in
                do {
                    let zone = try Self.zone(zoneID, database: database.key, scope: scope, in: transaction)
                    return .success(Self.describe(name: zone.name, uid: zone.uid, sequence: zone.sequence, scope: scope))
                } catch let error as RecordSyncError {
                    return .failure(error)
                } catch {
                    return .failure(RecordSyncError(.internalError, "storage error", zoneID: zoneID))
                }
            }
        }
    }

    /// `zones/modify`: creates (idempotently) and deletes zones, in one transaction. The
    /// notifier is told of every zone answered.
    public func modifyZones(_ request: ModifyZonesRequest, in scope: DatabaseScope) async throws -> [ZoneResult] {
        try limits.checkCount(request.operations.count, of: "operations")
        guard scope.kind == .private else {
            throw RecordSyncError(.badRequest, scope.kind == .public ? "the public database has only _defaultZone; custom zones live in private databases"
                                  : "the shared database holds the zones others share with you: its owner creates and deletes a zone, and you leave one by deleting its share record")
        }
        let (results, lost) = try await engine.write { transaction in
            let database = try Self.database(scope, in: transaction)
            var lost: [(zone: String, participants: [User])] = []
            let results = try request.operations.map { try Self.apply($0, database: database, scope: scope, lost: &lost, in: transaction) }
            return .commit((results, lost))
        }
        await notifier.publish(results.compactMap { $0.zone?.zoneID }, in: scope)
        for (zone, participants) in lost {
            await announce(zone, toParticipants: participants, in: scope)
        }
        return results
    }

    /// Applies one operation; a deleted zone that was shared adds its name and the participants
    /// who lost it to `lost`.
    private static func apply(_ operation: ModifyZonesRequest.Operation, database stored: StoredDatabase, scope: DatabaseScope,
                              lost: inout [(zone: String, participants: [User])], in transaction: any StorageTransaction) throws -> ZoneResult {
        let database = stored.key
        let zoneID = operation.zone.zoneID
        let name = zoneID.zoneName
        do {
            _ = try addressable(zoneID, in: scope)
        } catch let error as RecordSyncError {
            return .failure(error)
        }
        if name == ZoneID.defaultZoneName {
            return .failure(RecordSyncError(.badRequest, "_defaultZone cannot be created or deleted", zoneID: zoneID))
        }
        switch operation.operationType {
        case .create:
            _ = try createOrReviveZone(named: name, database: database, in: transaction)
            let zone = try self.zone(zoneID, database: database, scope: scope, in: transaction)
            return .success(describe(name: zone.name, uid: zone.uid, sequence: zone.sequence, scope: scope))
        case .delete:
            let zone: ZoneContext
            do {
                zone = try self.zone(zoneID, database: database, scope: scope, in: transaction)
            } catch let error as RecordSyncError {
                return .failure(error)
            }
            // A shared zone leaves its participants' shared databases: their database
            // subscriptions fire (the owner's too, as for any change of the database).
            let audience = try ShareAudience.load(zone: zone, scope: scope, in: transaction)
            let participants = ShareAudience.reached(audience) { _ in true }
            try SubscriptionFiring.load(scope: scope, zone: zone, audience: audience, containerKey: stored.containerKey, in: transaction)?
                .notify([], changed: true, participants: Set(participants.map(\.id)), now: now(), in: transaction)
            if !participants.isEmpty { lost.append((zone.name, participants)) }
            try transaction.deleteZoneContents(zone.key)
            try transaction.markZoneDeleted(zone.key, databaseSequence: try DatabaseFeed.take(database, in: transaction))
            return .success(Zone(zoneID: zone.zoneID, syncToken: nil, atomic: nil, deleted: true))
        }
    }

    /// A zone as answers describe it, with a token at the end of its feed.
    static func describe(name: String, uid: UUID, sequence: Int64, scope: DatabaseScope) -> Zone {
        Zone(zoneID: ZoneID(zoneName: name, ownerRecordName: scope.ownerRecordName),
             syncToken: ZoneChangeToken(zoneUID: uid, sequence: sequence, tombstoneFloor: sequence).string)
    }
}
