import Crypto
import Foundation
import GRDB
import RecordModel
import RecordSQL

extension SQLiteRecordStore {
    public func queryRecords(_ request: QueryRecordsRequest, in scope: DatabaseScope) async throws -> QueryRecordsResponse {
        let limit = try limits.resultsLimit(request.resultsLimit)
        if let problem = NameRules.problem(withName: request.query.recordType, kind: "query.recordType") {
            throw RecordSyncError(.badRequest, problem)
        }
        let fingerprint = Self.fingerprint(of: request)
        let marker = try request.continuationMarker.map { try ContinuationMarker(string: $0) }
        if let marker, marker.query != fingerprint {
            throw RecordSyncError(.badRequest, "continuationMarker belongs to a different query")
        }
        do {
            return try await runQuery(request, limit: limit, marker: marker, fingerprint: fingerprint, in: scope)
        } catch let error as RecordSyncError where error.code == .internalError {
            // SQLite refuses statements that are too deep or too large: the query's fault.
            throw RecordSyncError(.badRequest, "the query is too complex to run; use fewer filters, sort keys or values")
        }
    }

    private func runQuery(_ request: QueryRecordsRequest, limit: Int, marker: ContinuationMarker?, fingerprint: String, in scope: DatabaseScope) async throws -> QueryRecordsResponse {
        try await read(scope) { db, databaseID, containerID in
            var zones: [Int64: ZoneID] = [:]
            if request.zoneWide == true && request.zoneID == nil {
                for row in try Row.fetchAll(db, sql: "SELECT id, name FROM zones WHERE database_id = ? AND deleted = 0", arguments: [databaseID]) {
                    zones[row[0]] = ZoneID(zoneName: row[1], ownerRecordName: scope.ownerRecordName)
                }
            } else {
                let zone = try self.zone(request.zoneID, databaseID: databaseID, scope: scope, in: db)
                zones[zone.id] = zone.zoneID
            }
            var schema: [String: FieldType] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT field, type FROM schema_fields WHERE container_id = ? AND record_type = ?",
                                        arguments: [containerID, request.query.recordType]) {
                if let type = FieldType(rawValue: row[1]) { schema[row[0]] = type }
            }
            let compiler = QueryCompiler(zoneKeys: zones.keys.sorted(), schema: schema, keyedReferenceFields: true)
            let statement = try compiler.compile(request.query, after: marker, limit: limit + 1)
            var records: [Record] = []
            var last: ContinuationMarker?
            var more = false
            let rows = try Row.fetchCursor(db, sql: statement.sql, arguments: statement.arguments)
            while let row = try rows.next() {
                if records.count == limit {
                    more = true
                    break
                }
                let zoneKey: Int64 = row[0]
                let record = try RecordRow.record(from: row, zoneID: zones[zoneKey] ?? .defaultZone, offset: 1)
                records.append(record.restricted(to: request.desiredKeys))
                let firstKey = 1 + RecordRow.columnCount
                last = ContinuationMarker(
                    query: fingerprint,
                    values: (0..<statement.sortKeyCount).map { QueryCompiler.markerValue(row[firstKey + $0] as DatabaseValue) },
                    zone: zoneKey, name: record.recordName
                )
            }
            return QueryRecordsResponse(records: records, continuationMarker: more ? last?.string : nil)
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
