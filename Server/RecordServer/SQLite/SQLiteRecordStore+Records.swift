import Foundation
import GRDB
import RecordModel
import RecordSQL

extension SQLiteRecordStore {
    public func modifyRecords(_ request: ModifyRecordsRequest, in scope: DatabaseScope) async throws -> RecordsResponse {
        try limits.checkCount(request.operations.count, of: "operations")
        let limits = self.limits
        // The operations are checked and their fields resolved on a reader first, outside the
        // write lock that every write of the server waits for; the write uses that work if the
        // stored schema it was checked against is unchanged, and checks again otherwise.
        let validation: ModifyBatch.Validation
        do {
            validation = try await read(scope) { db, databaseID, containerID in
                let zone = try self.zone(request.zoneID, databaseID: databaseID, scope: scope, in: db)
                var batch = ModifyBatch(request: request, scope: scope, zone: zone, containerID: containerID, limits: limits, db: db)
                return try batch.validate(request).get()
            }
        } catch let failure as ModifyBatch.AtomicFailure {
            return failure.response
        }
        return try await write { db in
            let (databaseID, containerID) = try self.database(scope, in: db)
            let zone = try self.zone(request.zoneID, databaseID: databaseID, scope: scope, in: db)
            var response = RecordsResponse(records: [])
            try db.inTransaction(.immediate) {
                var batch = ModifyBatch(request: request, scope: scope, zone: zone, containerID: containerID, limits: limits, db: db)
                let (result, commit) = try batch.run(request, validated: validation)
                response = result
                return commit ? .commit : .rollback
            }
            return response
        }
    }

    public func lookupRecords(_ request: LookupRecordsRequest, in scope: DatabaseScope) async throws -> RecordsResponse {
        try limits.checkCount(request.records.count, of: "records")
        let depth = request.includeDepth ?? 1
        guard (1...limits.maximumIncludeDepth).contains(depth) else {
            throw RecordSyncError(.badRequest, "includeDepth must be between 1 and \(limits.maximumIncludeDepth), not \(depth)")
        }
        return try await read(scope) { db, databaseID, _ in
            let zone = try self.zone(request.zoneID, databaseID: databaseID, scope: scope, in: db)
            var found: [String: Record] = [:]
            let results: [RecordResult] = try request.records.map { entry in
                if let problem = NameRules.problem(withName: entry.recordName, kind: "recordName") {
                    return .failure(RecordSyncError(.badRequest, problem, recordName: entry.recordName, zoneID: zone.zoneID))
                }
                guard let record = try Self.fetchRecord(entry.recordName, zone: zone, in: db) else {
                    return .failure(RecordSyncError(.notFound, "record \(NameRules.quoted(entry.recordName)) does not exist", recordName: entry.recordName, zoneID: zone.zoneID))
                }
                found[record.recordName] = record
                return .success(record.restricted(to: request.desiredKeys))
            }
            guard let include = request.include, !include.isEmpty else { return RecordsResponse(records: results) }
            let included = try Self.included(from: Array(found.values), fields: Set(include), depth: depth, limit: self.limits.maximumResultsLimit, zone: zone, in: db)
            return RecordsResponse(records: results, includedRecords: included.map { $0.restricted(to: request.desiredKeys) })
        }
    }

    /// The records reachable from `roots` through the reference `fields`, up to `depth` hops,
    /// excluding the roots, ordered targets before sources.
    static func included(from roots: [Record], fields: Set<String>, depth: Int, limit: Int, zone: ZoneRow, in db: Database) throws -> [Record] {
        var known = Set(roots.map(\.recordName))
        var included: [Record] = []
        var frontier = roots.sorted { $0.recordName < $1.recordName }
        for _ in 0..<depth where !frontier.isEmpty {
            var next: [Record] = []
            for record in frontier {
                for (field, reference) in record.references where fields.contains(field) && !known.contains(reference.recordName) {
                    guard included.count + next.count < limit else {
                        throw RecordSyncError(.limitExceeded, "include reaches more than \(limit) records; ask for fewer records, fields or levels")
                    }
                    known.insert(reference.recordName)
                    if let target = try fetchRecord(reference.recordName, zone: zone, in: db) { next.append(target) }
                }
            }
            included.append(contentsOf: next)
            frontier = next
        }
        let order = DependencyOrder.savingOrder(included.map { record in
            (record.recordName, record.references.filter { fields.contains($0.field) }.map(\.reference.recordName))
        })
        return order.flatMap { $0.map { included[$0] } }
    }

    /// One record, or `nil`.
    static func fetchRecord(_ name: String, zone: ZoneRow, in db: Database) throws -> Record? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(RecordRow.columns) FROM records WHERE zone_id = ? AND name = ?"), arguments: [zone.id, name])
            .map { try RecordRow.record(from: $0, zoneID: zone.zoneID) }
    }

    /// Runs `body` in a GRDB write (without an implicit transaction), mapping storage errors.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.writeWithoutTransaction(body)
        } catch let error as DatabaseError {
            throw RecordSyncError(.internalError, "storage error: \(error.resultCode)")
        }
    }
}
