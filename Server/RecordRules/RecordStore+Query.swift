import Crypto
import Foundation
import RecordModel

extension RecordStore {
    /// `records/query`: one page of the records of a type that match the filters, in the sort
    /// order (then by zone and name), with a continuation marker when more remain.
    ///
    /// A marker holds the last record's sort-key values, zone key and name, and a fingerprint
    /// of the query; it is refused with any other query.
    public func queryRecords(_ request: QueryRecordsRequest, in scope: DatabaseScope) async throws -> QueryRecordsResponse {
        let scope = try await sharedZoneScope(scope, zoneID: request.zoneID)
        let limit = try limits.resultsLimit(request.resultsLimit)
        if let problem = NameRules.problem(withName: request.query.recordType, kind: "query.recordType") {
            throw RecordSyncError(.badRequest, problem)
        }
        let includeDepth = request.includeDepth ?? 1
        guard (1...limits.maximumIncludeDepth).contains(includeDepth) else {
            throw RecordSyncError(.badRequest, "includeDepth must be between 1 and \(limits.maximumIncludeDepth), not \(includeDepth)")
        }
        let fingerprint = Self.fingerprint(of: request)
        let marker = try request.continuationMarker.map { try ContinuationMarker(string: $0) }
        if let marker, marker.query != fingerprint {
            throw RecordSyncError(.badRequest, "continuationMarker belongs to a different query")
        }
        do {
            return try await markingIndexes(for: request.query) { try await markingSearchTypes { try await read(scope) { transaction, database in
                var zones: [Int64: ZoneID] = [:]
                var contexts: [Int64: ZoneContext] = [:]
                var addressed: ZoneContext?
                if request.zoneWide == true && request.zoneID == nil {
                    guard scope.kind != .shared else {
                        throw RecordSyncError(.badRequest, "a query of the shared database names its zone (zoneID with its ownerRecordName)")
                    }
                    for zone in try transaction.liveZones(in: database.key) {
                        let zoneID = ZoneID(zoneName: zone.name, ownerRecordName: scope.ownerRecordName)
                        zones[zone.key] = zoneID
                        contexts[zone.key] = ZoneContext(key: zone.key, databaseKey: database.key, name: zone.name, uid: zone.uid,
                                                         sequence: zone.sequence, zoneID: zoneID)
                    }
                } else {
                    let zone = try Self.zone(request.zoneID, database: database.key, scope: scope, in: transaction)
                    zones[zone.key] = zone.zoneID
                    contexts[zone.key] = zone
                    addressed = zone
                }
                let stored = try transaction.schemaIndexes(inContainer: database.containerKey)
                try SchemaIndexes.check(request.query, locked: stored.locked, stored: stored.types[request.query.recordType], inContainer: database.containerKey)
                let access = try Access.load(scope, zone: addressed, containerKey: database.containerKey, kept: self.accessInputs, in: transaction)
                var schema = QuerySchema(recordType: request.query.recordType, stored: stored.types)
                // The records the caller may not read are left out by the statement itself (and
                // key paths do not step into them), so pages and markers stay exact.
                schema.readers = access.queryReaders
                try SearchTypes.check(request.query, schema: schema, inContainer: database.containerKey, in: transaction)
                let (matches, resumeAfter) = try transaction.matches(request.query, inZones: zones, schema: schema, after: marker, limit: limit + 1, limits: self.limits)
                var page = matches.prefix(limit)
                // More remain past the page, or past the rows examined for a filter Swift finishes.
                var last = matches.count > limit ? page.last : resumeAfter
                var included: [Record]?
                if let include = request.include, !include.isEmpty {
                    // The page and its includes fit the results limit: the page is cut, never refused.
                    let found = try Self.including(page.map { ($0.record, $0.zoneKey, zones[$0.zoneKey] ?? .defaultZone) }, fields: Set(include),
                                                   depth: includeDepth, cap: self.limits.maximumResultsLimit, access: access, in: transaction)
                    if found.kept < page.count {
                        page = page.prefix(found.kept)
                        last = page.last
                    }
                    included = found.included.map { $0.restricted(to: request.desiredKeys) }
                }
                let next = last.map {
                    ContinuationMarker(query: fingerprint, values: $0.sortValues, zone: $0.zoneKey, name: $0.record.recordName).string
                }
                var records = page.map { $0.record.restricted(to: request.desiredKeys) }
                // Share records and shared roots as a lookup answers them, zone by zone (a
                // zone-wide query's page spans zones).
                let byZone = Dictionary(grouping: records.indices) { page[page.startIndex + $0].zoneKey }
                for (zoneKey, indices) in byZone {
                    guard let zone = contexts[zoneKey] else { continue }
                    let described = try self.describingShares(indices.map { records[$0] }, zone: zone, scope: scope, in: transaction)
                    for (index, record) in zip(indices, described) { records[index] = record }
                }
                return QueryRecordsResponse(records: records, continuationMarker: next, includedRecords: included)
            } } }
        } catch let error as RecordSyncError where error.code == .internalError {
            // An engine refuses statements that are too deep or too large: the query's fault.
            throw RecordSyncError(.badRequest, "the query is too complex to run; use fewer filters, sort keys or values")
        }
    }

    /// Identifies a query (type, filters, sort, zone) so a marker cannot be used with another.
    static func fingerprint(of request: QueryRecordsRequest) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var material = (try? encoder.encode(request.query)) ?? Data()
        material.append(contentsOf: Array("|\(request.zoneID?.zoneName ?? "")|\(request.zoneWide ?? false)".utf8))
        return SHA256.hash(data: material).prefix(8).map { String(format: "%02x", $0) }.joined()
    }
}
