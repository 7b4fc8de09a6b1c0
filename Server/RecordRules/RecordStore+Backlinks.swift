import Foundation
import RecordModel

extension RecordStore {
    /// `records/backlinks` (an extension): the records of the zone that refer to one record,
    /// whatever their type and field, each once and in name order, with every reference they
    /// hold to it and its action; paged by a marker. Read from the `refs` index by target.
    public func backlinks(_ request: BacklinksRequest, in scope: DatabaseScope) async throws -> BacklinksResponse {
        let limit = try limits.resultsLimit(request.resultsLimit)
        if let problem = NameRules.problem(withName: request.recordName, kind: "recordName") { throw RecordSyncError(.badRequest, problem) }
        let scope = try await sharedZoneScope(scope, zoneID: request.zoneID)
        let fingerprint = "backlinks/" + request.recordName
        let marker = try request.continuationMarker.map { try ContinuationMarker(string: $0) }
        if let marker, marker.query != fingerprint {
            throw RecordSyncError(.badRequest, "continuationMarker belongs to a different request")
        }
        return try await read(scope, zone: request.zoneID) { transaction, database, zone in
            let access = try Access.load(scope, zone: zone, containerKey: database.containerKey, kept: self.accessInputs, in: transaction)
            // A record the caller may not read has, to it, no backlinks (as a missing one).
            if !access.readsEverything, let target = try transaction.record(named: request.recordName, inZone: zone.key, zoneID: zone.zoneID), !access.mayRead(target) {
                return BacklinksResponse(records: [], backlinks: [], continuationMarker: nil)
            }
            let references = try transaction.references(to: request.recordName, inZone: zone.key, after: marker?.name, limit: limit + 1)
            var sources: [String] = []
            for reference in references where sources.last != reference.source { sources.append(reference.source) }
            let page = Array(sources.prefix(limit))
            let kept = Set(page)
            let found = Dictionary(try transaction.records(named: page, inZone: zone.key, zoneID: zone.zoneID).map { ($0.recordName, $0) }) { first, _ in first }
            // Sources the caller may not read are left out of the page (a page may hold fewer).
            let records = page.compactMap { found[$0] }.filter(access.mayRead)
            let shown = Set(records.map(\.recordName))
            let next = sources.count > limit ? page.last.map { ContinuationMarker(query: fingerprint, values: [], zone: zone.key, name: $0).string } : nil
            return BacklinksResponse(records: records.map { $0.restricted(to: request.desiredKeys) },
                                     backlinks: references.filter { kept.contains($0.source) && shown.contains($0.source) }.map { Backlink(recordName: $0.source, fieldName: $0.field, action: $0.action) },
                                     continuationMarker: next)
        }
    }
}
