import Foundation
import RecordModel

extension RecordStore {
    /// `records/modify`: saves and deletes, targets before sources, with cascades (``ModifyBatch``);
    /// a dry run (`recordSyncDryRun`) answers as the batch would and undoes it.
    /// The notifier is told of the zone if the batch changed it: for the owner's private
    /// database, and the shared database of each participant the change reached.
    public func modifyRecords(_ request: ModifyRecordsRequest, in scope: DatabaseScope) async throws -> RecordsResponse {
        try limits.checkCount(request.operations.count, of: "operations")
        let scope = try await sharedZoneScope(scope, zoneID: request.zoneID)
        let limits = self.limits
        // The operations are checked and their fields resolved on a reader first, outside the
        // write lock that every write waits for; the write uses that work if the stored schema
        // it was checked against is unchanged, and checks again otherwise.
        let validation: ModifyBatch.Validation
        do {
            validation = try await read(scope, zone: request.zoneID) { transaction, database, zone in
                var batch = ModifyBatch(request: request, scope: scope, access: try Access.load(scope, zone: zone, containerKey: database.containerKey, in: transaction), zone: zone,
                                        containerKey: database.containerKey, limits: limits, transaction: transaction)
                return try batch.validate(request).get()
            }
        } catch let failure as ModifyBatch.AtomicFailure {
            return failure.response
        }
        let (response, changed): (RecordsResponse, (zone: ZoneID, participants: [User])?) = try await engine.write { transaction in
            let database = try Self.database(scope, in: transaction)
            let zone = try Self.zone(request.zoneID, database: database.key, scope: scope, in: transaction)
            var batch = ModifyBatch(request: request, scope: scope, access: try Access.load(scope, zone: zone, containerKey: database.containerKey, in: transaction), zone: zone,
                                    containerKey: database.containerKey, limits: limits, transaction: transaction)
            let (response, commit) = try batch.run(request, validated: validation)
            guard commit, request.recordSyncDryRun != true else { return .rollback((response, nil)) }
            return .commit((response, batch.changedZone ? (zone.zoneID, batch.participantsReached) : nil))
        }
        if let (zoneID, participants) = changed {
            await notifier.publish([zoneID], in: scope)
            await announce(zoneID.zoneName, toParticipants: participants, in: scope)
        }
        return response
    }

    /// `records/lookup`: one result per requested name, in request order, and the records
    /// `include` reaches (``included(from:fields:depth:limit:zone:in:)``).
    public func lookupRecords(_ request: LookupRecordsRequest, in scope: DatabaseScope) async throws -> RecordsResponse {
        try limits.checkCount(request.records.count, of: "records")
        let scope = try await sharedZoneScope(scope, zoneID: request.zoneID)
        let depth = request.includeDepth ?? 1
        guard (1...limits.maximumIncludeDepth).contains(depth) else {
            throw RecordSyncError(.badRequest, "includeDepth must be between 1 and \(limits.maximumIncludeDepth), not \(depth)")
        }
        let maximumIncluded = limits.maximumResultsLimit
        return try await read(scope, zone: request.zoneID) { transaction, database, zone in
            let access = try Access.load(scope, zone: zone, containerKey: database.containerKey, kept: self.accessInputs, in: transaction)
            var found: [String: Record] = [:]
            let results: [RecordResult] = try request.records.map { entry in
                if let problem = NameRules.problem(withName: entry.recordName, kind: "recordName") {
                    return .failure(RecordSyncError(.badRequest, problem, recordName: entry.recordName, zoneID: zone.zoneID))
                }
                // A record the caller may not read is, to it, one that does not exist.
                guard let record = try transaction.record(named: entry.recordName, inZone: zone.key, zoneID: zone.zoneID), access.mayRead(record) else {
                    return .failure(RecordSyncError(.notFound, "record \(NameRules.quoted(entry.recordName)) does not exist", recordName: entry.recordName, zoneID: zone.zoneID))
                }
                found[record.recordName] = record
                return .success(record.restricted(to: request.desiredKeys))
            }
            let described = try self.describingShares(Array(found.values), zone: zone, scope: scope, in: transaction)
            let shown = Dictionary(described.filter { $0.shareInfo != nil || $0.share != nil }.map { ($0.recordName, $0) }) { first, _ in first }
            let answered = shown.isEmpty ? results : results.map { result in
                guard case .success(let record, _) = result, let described = shown[record.recordName] else { return result }
                var copy = record
                copy.shareInfo = described.shareInfo
                copy.share = described.share
                return .success(copy)
            }
            guard let include = request.include, !include.isEmpty else { return RecordsResponse(records: answered) }
            let included = try Self.included(from: Array(found.values), fields: Set(include), depth: depth, limit: maximumIncluded, zone: zone, access: access, in: transaction)
            return RecordsResponse(records: answered, includedRecords: try self.describingShares(included, zone: zone, scope: scope, in: transaction).map { $0.restricted(to: request.desiredKeys) })
        }
    }

    /// The records reachable from `roots` through the reference `fields`, up to `depth` hops,
    /// excluding the roots, ordered targets before sources; only through records `access`
    /// may read.
    ///
    /// - Throws: `LIMIT_EXCEEDED` when more than `limit` records would be included.
    static func included(from roots: [Record], fields: Set<String>, depth: Int, limit: Int, zone: ZoneContext, access: Access,
                         in transaction: any StorageTransaction) throws -> [Record] {
        var known = Set(roots.map(\.recordName))
        let included = try reachable(from: roots, fields: fields, depth: depth, known: &known, zoneKey: zone.key, zoneID: zone.zoneID, access: access, in: transaction) { count in
            guard count < limit else {
                throw RecordSyncError(.limitExceeded, "include reaches more than \(limit) records; ask for fewer records, fields or levels")
            }
            return true
        }
        return targetsFirst(included, fields: fields)
    }

    /// A page's records and what `include` reaches from them, within `cap` records in all:
    /// the page is cut after the last record whose includes still fit (a page is made smaller,
    /// never refused; a first record whose includes alone pass the cap keeps those that fit).
    ///
    /// - Returns: how many of `roots` are kept, and the records included (none of the kept
    ///   roots), targets before sources.
    static func including(_ roots: [(record: Record, zoneKey: Int64, zoneID: ZoneID)], fields: Set<String>, depth: Int, cap: Int, access: Access,
                          in transaction: any StorageTransaction) throws -> (kept: Int, included: [Record]) {
        var known: [Int64: Set<String>] = [:]
        var included: [(record: Record, zoneKey: Int64)] = []
        var kept = 0
        for root in roots {
            var zoneKnown = known[root.zoneKey, default: []]
            zoneKnown.insert(root.record.recordName)
            let first = kept == 0
            let room = cap - kept - 1 - included.count
            if !first && room < 0 { break }
            // The walk stops at the room left: a first record keeps what fits; any later one
            // that would pass it (one more than fits) ends the page before it.
            var overflowed = false
            let reached = try reachable(from: [root.record], fields: fields, depth: depth, known: &zoneKnown, zoneKey: root.zoneKey, zoneID: root.zoneID,
                                        access: access, in: transaction) { count in
                if count < room { return true }
                overflowed = true
                return false
            }
            if !first && overflowed { break }
            known[root.zoneKey] = zoneKnown
            included += reached.prefix(max(room, 0)).map { ($0, root.zoneKey) }
            kept += 1
        }
        let keptNames = Set(roots.prefix(kept).map { "\($0.zoneKey)/\($0.record.recordName)" })
        return (kept, targetsFirst(included.filter { !keptNames.contains("\($0.zoneKey)/\($0.record.recordName)") }.map(\.record), fields: fields))
    }

    /// The records reachable from `roots` through `fields` in `depth` hops, none of `known`
    /// (which gains them), stepping only into records `access` may read; `proceed(count)` is
    /// asked before each new one is read and ends the walk when it answers `false`.
    private static func reachable(from roots: [Record], fields: Set<String>, depth: Int, known: inout Set<String>, zoneKey: Int64, zoneID: ZoneID,
                                  access: Access, in transaction: any StorageTransaction, proceed: (Int) throws -> Bool) throws -> [Record] {
        var included: [Record] = []
        var frontier = roots.sorted { $0.recordName < $1.recordName }
        for _ in 0..<depth where !frontier.isEmpty {
            var next: [Record] = []
            for record in frontier {
                for (field, reference) in record.references where fields.contains(field) && !known.contains(reference.recordName) {
                    guard try proceed(included.count + next.count) else { return included + next }
                    known.insert(reference.recordName)
                    if let target = try transaction.record(named: reference.recordName, inZone: zoneKey, zoneID: zoneID), access.mayRead(target) { next.append(target) }
                }
            }
            included.append(contentsOf: next)
            frontier = next
        }
        return included
    }

    /// `records` ordered so that a record comes after those its `fields` point at.
    private static func targetsFirst(_ records: [Record], fields: Set<String>) -> [Record] {
        let order = DependencyOrder.savingOrder(records.map { record in
            (record.recordName, record.references.filter { fields.contains($0.field) }.map(\.reference.recordName))
        })
        return order.flatMap { $0.map { records[$0] } }
    }
}
