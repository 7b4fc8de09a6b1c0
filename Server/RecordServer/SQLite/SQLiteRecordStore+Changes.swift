import Foundation
import GRDB
import RecordModel
import RecordSQL

extension SQLiteRecordStore: StoredChangePages {
    public func recordChanges(_ request: RecordChangesRequest, in scope: DatabaseScope) async throws -> ZoneChanges {
        try await recordChangesPage(request, in: scope).page.decoded()
    }

    package func changeFeedMark(of zoneID: ZoneID?, in scope: DatabaseScope) async throws -> ChangeFeedMark {
        try await read(scope) { db, databaseID, _ in
            let zone = try self.zone(zoneID, databaseID: databaseID, scope: scope, in: db)
            return ChangeFeedMark(zoneUID: zone.uid, sequence: zone.sequence)
        }
    }

    /// A page whose records' fields stay the stored text (decoded only to apply `desiredKeys`).
    package func recordChangesPage(_ request: RecordChangesRequest, in scope: DatabaseScope) async throws -> (page: StoredZoneChanges, mark: ChangeFeedMark) {
        let limit = try limits.resultsLimit(request.resultsLimit)
        let given = try request.syncToken.map { try ZoneChangeToken(string: $0) }
        for type in request.desiredRecordTypes ?? [] {
            if let problem = NameRules.problem(withName: type, kind: "desiredRecordTypes entry") { throw RecordSyncError(.badRequest, problem) }
        }
        return try await read(scope) { db, databaseID, _ in
            let zone = try self.zone(request.zoneID, databaseID: databaseID, scope: scope, in: db)
            let token = try given.map { try Self.check($0, for: zone, in: db) }
                ?? ZoneChangeToken(zoneUID: zone.uid, sequence: 0, tombstoneFloor: zone.sequence)
            var typeArguments = StatementArguments()
            if let types = request.desiredRecordTypes { typeArguments = StatementArguments(types) }
            let sql = Self.changesSQL(recordTypeCount: request.desiredRecordTypes?.count)
            let arguments: StatementArguments = [zone.id, token.sequence] + typeArguments
                + [zone.id, max(token.sequence, token.tombstoneFloor)] + typeArguments + [limit + 1]
            var records: [StoredZoneChanges.Entry] = []
            var lastSequence = token.sequence
            var more = false
            // The usual page (no type filter) reuses one prepared statement; a filter's SQL depends
            // on how many types it lists, so it is prepared for the request (GRDB's statement
            // cache never evicts, and a client could list any number).
            let statement = request.desiredRecordTypes == nil ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
            let rows = try Row.fetchCursor(statement, arguments: arguments)
            while let row = try rows.next() {
                if records.count == limit {
                    more = true
                    break
                }
                lastSequence = row[0]
                if (row[1] as Int64) == 1 {
                    records.append(.init(record: Record(recordName: row[2], recordType: row[3], zoneID: zone.zoneID, deleted: true)))
                } else if let desiredKeys = request.desiredKeys {
                    records.append(.init(record: try RecordRow.record(from: row, zoneID: zone.zoneID, offset: 2).restricted(to: desiredKeys)))
                } else {
                    records.append(RecordRow.storedRecord(from: row, zoneID: zone.zoneID, offset: 2))
                }
            }
            // A page that reaches the end covers everything up to the zone's current sequence.
            let next = ZoneChangeToken(zoneUID: zone.uid, sequence: more ? lastSequence : zone.sequence, tombstoneFloor: token.tombstoneFloor)
            return (StoredZoneChanges(zoneID: zone.zoneID, entries: records, syncToken: next.string, moreComing: more),
                    ChangeFeedMark(zoneUID: zone.uid, sequence: zone.sequence))
        }
    }

    /// The query of one page of a zone's changes: records and tombstones after a place in the
    /// feed, in feed order, optionally of `recordTypeCount` record types. Arguments: zone,
    /// sequence, types…, zone, tombstone bound, types…, limit.
    ///
    /// Both halves are read in sequence order from their `(zone_id, seq)` indexes and merged;
    /// the ORDER BY belongs to the compound select itself, so SQLite merges the halves and stops
    /// at the LIMIT. (Wrapped in `SELECT * FROM (…) ORDER BY`, it materialised and sorted
    /// everything after the token, for every page: fetching a large cascade's tombstones took
    /// quadratic time.) Tombstones get one lower bound, the larger of the token's place and its
    /// floor: given two, SQLite may range-scan from the smaller.
    static func changesSQL(recordTypeCount: Int?) -> String {
        let typeFilter = recordTypeCount.map { " AND type IN (\(Array(repeating: "?", count: $0).joined(separator: ", ")))" } ?? ""
        return """
            SELECT seq, 0 AS deleted, \(RecordRow.columns) FROM records
            WHERE zone_id = ? AND seq > ?\(typeFilter)
            UNION ALL
            SELECT seq, 1, name, type, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM tombstones
            WHERE zone_id = ? AND seq > ?\(typeFilter)
            ORDER BY 1 LIMIT ?
            """
    }

    /// Checks that a token belongs to this incarnation of this zone.
    ///
    /// - Throws: `CHANGE_TOKEN_EXPIRED` for a token of an earlier incarnation (the zone was
    ///   deleted and recreated); `BAD_REQUEST` for a token of another zone or from the future.
    static func check(_ token: ZoneChangeToken, for zone: ZoneRow, in db: Database) throws -> ZoneChangeToken {
        if token.zoneUID != zone.uid {
            let owner = try Int64.fetchOne(db, sql: "SELECT zone_id FROM zone_incarnations WHERE uid = ?", arguments: [token.zoneUID.data])
            if owner == zone.id {
                throw RecordSyncError(.changeTokenExpired, "syncToken is from an earlier incarnation of zone \(NameRules.quoted(zone.name)), which was deleted; fetch the zone again without a token", zoneID: zone.zoneID)
            }
            throw RecordSyncError(.badRequest, "syncToken belongs to another zone, not \(NameRules.quoted(zone.name))", zoneID: zone.zoneID)
        }
        guard token.sequence <= zone.sequence else {
            throw RecordSyncError(.badRequest, "syncToken is ahead of zone \(NameRules.quoted(zone.name)); it was not issued for this zone's history", zoneID: zone.zoneID)
        }
        return token
    }

    public func databaseChanges(_ request: DatabaseChangesRequest, in scope: DatabaseScope) async throws -> DatabaseChanges {
        let limit = try limits.resultsLimit(request.resultsLimit)
        let given = try request.syncToken.map { try DatabaseChangeToken(string: $0) }
        return try await read(scope) { db, databaseID, _ in
            guard let database = try Row.fetchOne(db, sql: "SELECT uid, seq FROM databases WHERE id = ?", arguments: [databaseID]) else {
                throw RecordSyncError(.internalError, "database vanished")
            }
            let uid = UUID(data: database[0])
            let current: Int64 = database[1]
            if let given {
                guard given.databaseUID == uid else { throw RecordSyncError(.badRequest, "syncToken belongs to another database") }
                guard given.sequence <= current else { throw RecordSyncError(.badRequest, "syncToken is ahead of this database") }
            }
            let token = given ?? DatabaseChangeToken(databaseUID: uid, sequence: 0, deletionFloor: current)
            let rows = try Row.fetchAll(db, sql: """
                SELECT name, deleted, db_seq FROM zones
                WHERE database_id = ? AND db_seq > ? AND (deleted = 0 OR db_seq > ?)
                ORDER BY db_seq LIMIT ?
                """, arguments: [databaseID, token.sequence, token.deletionFloor, limit + 1])
            let more = rows.count > limit
            let page = rows.prefix(limit)
            let zones = page.map { row in
                ChangedZone(zoneID: ZoneID(zoneName: row[0], ownerRecordName: scope.ownerRecordName), deleted: (row[1] as Int64) != 0 ? true : nil)
            }
            let next = DatabaseChangeToken(databaseUID: uid, sequence: more ? (page.last?[2] ?? token.sequence) : current, deletionFloor: token.deletionFloor)
            return DatabaseChanges(zones: zones, syncToken: next.string, moreComing: more)
        }
    }
}
