import Foundation
import RecordModel

extension StorageTransaction {
    /// The records of `zones` matching `query`, in its order, after `marker`, at most `limit`:
    /// the engine's ``query(_:inZones:schema:after:limit:)`` alone when SQL answers every
    /// filter, else its looser statement read in batches and finished by the ``FilterPlan``.
    ///
    /// - Returns: the matches, and, when `limits` ran out of records to examine before `limit`
    ///   matches were found, the last record examined (where the next page starts).
    /// - Throws: ``RecordSyncError``: `BAD_REQUEST` for a query that does not compile,
    ///   `LIMIT_EXCEEDED` when matching passes its ``MatchBudget``.
    func matches(_ query: Query, inZones zones: [Int64: ZoneID], schema: QuerySchema,
                 after marker: ContinuationMarker?, limit: Int, limits: StoreLimits) throws -> (matches: [QueryMatch], resumeAfter: QueryMatch?) {
        let plan = try FilterPlan(query.filterBy ?? [], schema: schema)
        if plan.isSQLOnly {
            return (try self.query(query, inZones: zones, schema: schema, after: marker, limit: limit), nil)
        }
        var found: [QueryMatch] = []
        var budget = MatchBudget(steps: limits.maximumMatchSteps)
        var cursor = marker
        var examined = 0
        let batch = min(max(limit * 4, 100), 1_000, max(limits.maximumRecordsExamined, 1))
        while true {
            let rows = try self.query(query, inZones: zones, schema: schema, after: cursor, limit: batch)
            for row in rows {
                examined += 1
                guard try plan.matches(row.record, flags: row.flags, budget: &budget) else { continue }
                found.append(row)
                if found.count == limit { return (found, nil) }
            }
            guard rows.count == batch, let last = rows.last else { return (found, nil) }
            if examined >= limits.maximumRecordsExamined { return (found, last) }
            cursor = ContinuationMarker(query: marker?.query ?? "", values: last.sortValues, zone: last.zoneKey, name: last.record.recordName)
        }
    }
}
