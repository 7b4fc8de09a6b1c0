import Foundation
import RecordModel

/// Where a query's results stopped; pass it to ``Database/records(continuingMatchFrom:desiredKeys:resultsLimit:)``
/// for the next page (CloudKit's `CKQueryOperation.Cursor`).
public struct QueryCursor: Sendable, Hashable, Codable {
    let query: Query
    let zoneID: ZoneID?
    let marker: String
}

extension Database {
    /// Runs a query (CloudKit's `records(matching:inZoneWith:desiredKeys:resultsLimit:)`).
    ///
    /// - Parameters:
    ///   - zoneID: the zone to search; `nil` searches every zone of the database.
    ///   - resultsLimit: records per page (the server caps it, 400 by default).
    /// - Returns: the matching records in the query's order, and a cursor when more remain.
    /// - Throws: `BAD_REQUEST` for a query the server cannot run, `ZONE_NOT_FOUND`, ….
    public func records(matching query: RecordQuery, inZoneWith zoneID: ZoneID? = .defaultZone, desiredKeys: [String]? = nil,
                        resultsLimit: Int? = nil) async throws -> (matchResults: [(Record.ID, Result<Record, RecordSyncError>)], queryCursor: QueryCursor?) {
        try await page(query.wire, zoneID: zoneID, marker: nil, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
    }

    /// Fetches the next page of a query (CloudKit's `records(continuingMatchFrom:)`).
    public func records(continuingMatchFrom cursor: QueryCursor, desiredKeys: [String]? = nil,
                        resultsLimit: Int? = nil) async throws -> (matchResults: [(Record.ID, Result<Record, RecordSyncError>)], queryCursor: QueryCursor?) {
        try await page(cursor.query, zoneID: cursor.zoneID, marker: cursor.marker, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
    }

    /// Every record a query matches, following cursors.
    public func allRecords(matching query: RecordQuery, inZoneWith zoneID: ZoneID? = .defaultZone, desiredKeys: [String]? = nil) async throws -> [Record] {
        var (results, cursor) = try await records(matching: query, inZoneWith: zoneID, desiredKeys: desiredKeys)
        var found = results.compactMap { try? $0.1.get() }
        while let next = cursor {
            (results, cursor) = try await records(continuingMatchFrom: next, desiredKeys: desiredKeys)
            found += results.compactMap { try? $0.1.get() }
        }
        return found
    }

    /// A page of a query with the records its references reach.
    public struct IncludingPage: Sendable {
        /// The records matched, in the query's order.
        public var records: [Record]
        /// The records the `including` fields reach from them, targets before sources.
        public var includedRecords: [Record]
        /// Where the next page starts, when more remain.
        public var queryCursor: QueryCursor?
    }

    /// Runs a query and fetches, in the same answer, the records its reference fields
    /// `including` point at (`depth` hops; an extension, as ``records(for:desiredKeys:including:depth:)``
    /// has it for lookups). A page whose includes would pass the server's results limit comes
    /// back smaller, with a cursor.
    public func records(matching query: RecordQuery, inZoneWith zoneID: ZoneID? = .defaultZone, including fields: [String], depth: Int = 1,
                        desiredKeys: [String]? = nil, resultsLimit: Int? = nil) async throws -> IncludingPage {
        try await includingPage(query.wire, zoneID: zoneID, marker: nil, fields: fields, depth: depth, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
    }

    /// The next page of ``records(matching:inZoneWith:including:depth:desiredKeys:resultsLimit:)``.
    public func records(continuingMatchFrom cursor: QueryCursor, including fields: [String], depth: Int = 1, desiredKeys: [String]? = nil,
                        resultsLimit: Int? = nil) async throws -> IncludingPage {
        try await includingPage(cursor.query, zoneID: cursor.zoneID, marker: cursor.marker, fields: fields, depth: depth, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
    }

    private func includingPage(_ query: Query, zoneID: ZoneID?, marker: String?, fields: [String], depth: Int, desiredKeys: [String]?,
                               resultsLimit: Int?) async throws -> IncludingPage {
        let answer = try await answer(query, zoneID: zoneID, marker: marker, desiredKeys: desiredKeys, resultsLimit: resultsLimit,
                                      include: fields.isEmpty ? nil : fields, depth: fields.isEmpty ? nil : depth)
        return IncludingPage(records: answer.records, includedRecords: answer.includedRecords ?? [],
                             queryCursor: answer.continuationMarker.map { QueryCursor(query: query, zoneID: zoneID, marker: $0) })
    }

    private func page(_ query: Query, zoneID: ZoneID?, marker: String?, desiredKeys: [String]?,
                      resultsLimit: Int?) async throws -> (matchResults: [(Record.ID, Result<Record, RecordSyncError>)], queryCursor: QueryCursor?) {
        let answer = try await answer(query, zoneID: zoneID, marker: marker, desiredKeys: desiredKeys, resultsLimit: resultsLimit, include: nil, depth: nil)
        let results = answer.records.map { ($0.recordID, Result<Record, RecordSyncError>.success($0)) }
        return (results, answer.continuationMarker.map { QueryCursor(query: query, zoneID: zoneID, marker: $0) })
    }

    private func answer(_ query: Query, zoneID: ZoneID?, marker: String?, desiredKeys: [String]?, resultsLimit: Int?,
                        include: [String]?, depth: Int?) async throws -> QueryRecordsResponse {
        let request = QueryRecordsRequest(query: query, zoneID: zoneID, resultsLimit: resultsLimit, continuationMarker: marker,
                                          desiredKeys: desiredKeys, zoneWide: zoneID == nil ? true : nil, include: include, includeDepth: depth)
        return try await transport.post("records/query", request, as: QueryRecordsResponse.self)
    }
}
