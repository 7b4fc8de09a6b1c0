import Foundation
import GRDB
import RecordModel

extension SQLiteRecordStore {
    public func listZones(in scope: DatabaseScope) async throws -> [Zone] {
        try await read(scope) { db, databaseID, _ in
            try Row.fetchAll(db, sql: "SELECT name, uid, seq FROM zones WHERE database_id = ? AND deleted = 0 ORDER BY name",
                             arguments: [databaseID]).map { row in
                Self.describe(name: row[0], uid: UUID(data: row[1]), sequence: row[2], scope: scope)
            }
        }
    }

    public func lookupZones(_ zoneIDs: [ZoneID], in scope: DatabaseScope) async throws -> [ZoneResult] {
        try limits.checkCount(zoneIDs.count, of: "zones")
        return try await read(scope) { db, databaseID, _ in
            zoneIDs.map { zoneID in
                do {
                    let zone = try self.zone(zoneID, databaseID: databaseID, scope: scope, in: db)
                    return .success(Self.describe(name: zone.name, uid: zone.uid, sequence: zone.sequence, scope: scope))
                } catch let error as RecordSyncError {
                    return .failure(error)
                } catch {
                    return .failure(RecordSyncError(.internalError, "storage error", zoneID: zoneID))
                }
            }
        }
    }

    public func modifyZones(_ request: ModifyZonesRequest, in scope: DatabaseScope) async throws -> [ZoneResult] {
        try limits.checkCount(request.operations.count, of: "operations")
        guard scope.kind == .private else {
            throw RecordSyncError(.badRequest, "the public database has only _defaultZone; custom zones live in private databases")
        }
        return try await write { db in
            let (databaseID, _) = try self.database(scope, in: db)
            var results: [ZoneResult] = []
            try db.inTransaction(.immediate) {
                for operation in request.operations {
                    results.append(try self.apply(operation, databaseID: databaseID, scope: scope, in: db))
                }
                return .commit
            }
            return results
        }
    }

    private func apply(_ operation: ModifyZonesRequest.Operation, databaseID: Int64, scope: DatabaseScope, in db: Database) throws -> ZoneResult {
        let zoneID = operation.zone.zoneID
        let name = zoneID.zoneName
        if let problem = NameRules.problem(withName: name, kind: "zoneName") {
            return .failure(RecordSyncError(.badRequest, problem, zoneID: zoneID))
        }
        if name == ZoneID.defaultZoneName {
            return .failure(RecordSyncError(.badRequest, "_defaultZone cannot be created or deleted", zoneID: zoneID))
        }
        switch operation.operationType {
        case .create:
            _ = try createOrReviveZone(named: name, databaseID: databaseID, in: db)
            let zone = try self.zone(zoneID, databaseID: databaseID, scope: scope, in: db)
            return .success(Self.describe(name: zone.name, uid: zone.uid, sequence: zone.sequence, scope: scope))
        case .delete:
            let zone: ZoneRow
            do {
                zone = try self.zone(zoneID, databaseID: databaseID, scope: scope, in: db)
            } catch let error as RecordSyncError {
                return .failure(error)
            }
            for sql in Self.deleteZoneContentsSQL {
                try db.execute(sql: sql, arguments: [zone.id])
            }
            let databaseSequence = try Self.nextDatabaseSequence(databaseID, in: db)
            try db.execute(sql: "UPDATE zones SET deleted = 1, db_seq = ? WHERE id = ?", arguments: [databaseSequence, zone.id])
            return .success(Zone(zoneID: zone.zoneID, syncToken: nil, atomic: nil, deleted: true))
        }
    }

    /// The statements that delete a zone's (each one's argument) records, references and
    /// tombstones. The references go first, found through their sources' names (the `refs` key
    /// leads with the source, and a record's references live and die with its row); the rows
    /// and tombstones through their zone's sequence indexes. None of them walks another zone.
    static let deleteZoneContentsSQL = [
        "DELETE FROM refs WHERE zone_id = ?1 AND source IN (SELECT name FROM records WHERE zone_id = ?1)",
        "DELETE FROM records WHERE zone_id = ?",
        "DELETE FROM tombstones WHERE zone_id = ?",
    ]

    static func describe(name: String, uid: UUID, sequence: Int64, scope: DatabaseScope) -> Zone {
        Zone(zoneID: ZoneID(zoneName: name, ownerRecordName: scope.ownerRecordName),
             syncToken: ZoneChangeToken(zoneUID: uid, sequence: sequence, tombstoneFloor: sequence).string)
    }
}
