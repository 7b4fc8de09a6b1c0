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
    /// change. A token is (database, last number delivered, deletion floor): a client starting
    /// from scratch is not told of zones deleted before it started.
    public func databaseChanges(_ request: DatabaseChangesRequest, in scope: DatabaseScope) async throws -> DatabaseChanges {
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
                ChangedZone(zoneID: ZoneID(zoneName: row.name, ownerRecordName: scope.ownerRecordName), deleted: row.deleted ? true : nil)
            }
            let next = DatabaseChangeToken(databaseUID: database.uid, sequence: more ? (page.last?.sequence ?? token.sequence) : database.sequence,
                                           deletionFloor: token.deletionFloor)
            return DatabaseChanges(zones: zones, syncToken: next.string, moreComing: more)
        }
    }
}
