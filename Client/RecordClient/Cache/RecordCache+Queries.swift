import Foundation
import GRDB
import RecordModel
import RecordSQL

extension RecordCache {
    /// The cached records a query matches, in the query's order: the same statement the server
    /// runs (``RecordSQL/QueryCompiler``), over rows of the same shape.
    ///
    /// - Parameter zoneID: the zone to search; `nil` searches every cached zone.
    /// - Throws: `BAD_REQUEST` for a query the server could not run either.
    public func records(matching query: Query, inZoneWith zoneID: ZoneID? = .defaultZone) async throws -> [RecordModel.Record] {
        try await writer.read { db in try Self.run(query, inZoneWith: zoneID, in: db) }
    }

    /// The results of a query, again every time the cache changes in a way that affects them.
    ///
    /// The first element is the current result. Iterate it in a task; cancelling the task ends
    /// the observation.
    public func observe(_ query: Query, inZoneWith zoneID: ZoneID? = .defaultZone) -> AsyncValueObservation<[RecordModel.Record]> {
        ValueObservation.tracking { db in try Self.run(query, inZoneWith: zoneID, in: db) }
            .removeDuplicates()
            .values(in: writer)
    }

    static func run(_ query: Query, inZoneWith zoneID: ZoneID?, in db: SQLDatabase) throws -> [RecordModel.Record] {
        var zones: [Int64: ZoneID] = [:]
        if let zoneID {
            guard let key = try zoneKey(zoneID, in: db) else { return [] }
            zones[key] = zoneID
        } else {
            for row in try Row.fetchAll(db, sql: "SELECT id, name FROM zones") { zones[row[0]] = ZoneID(zoneName: row[1]) }
        }
        guard !zones.isEmpty else { return [] }
        // The field types it has fetched, of every type (key paths step into them).
        var types: [String: [String: FieldType]] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT record_type, field, type FROM schema_fields") {
            if let type = FieldType(rawValue: row[2]) { types[row[0], default: [:]][row[1]] = type }
        }
        let schema = QuerySchema(recordType: query.recordType, types: types)
        let statement = try QueryCompiler(zoneKeys: zones.keys.sorted(), schema: schema, keyedReferenceFields: false).compile(query, after: nil, limit: Int(Int32.max))
        // Filters the database cannot finish (string matching) are finished in Swift, as the
        // server does (FilterPlan).
        let plan = try FilterPlan(query.filterBy ?? [], schema: schema)
        var budget = MatchBudget(steps: .max)
        let firstFlag = 1 + RecordRow.columnCount + statement.sortKeyCount
        var records: [RecordModel.Record] = []
        let rows = try Row.fetchCursor(db, sql: statement.sql, arguments: statement.arguments)
        while let row = try rows.next() {
            let record = try RecordRow.record(from: row, zoneID: zones[row[0]] ?? .defaultZone, offset: 1)
            if !plan.isSQLOnly {
                let flags = (0..<statement.flagCount).map { row[firstFlag + $0] as Bool? }
                guard try plan.matches(record, flags: flags, budget: &budget) else { continue }
            }
            records.append(record)
        }
        return records
    }
}

extension RecordCache {
    /// The cached records a query matches, in its order: what the server would answer for the
    /// same query once the cache is in sync.
    ///
    /// - Throws: `BAD_REQUEST` for a query the server could not run either.
    public func records(matching query: RecordQuery, inZoneWith zoneID: ZoneID? = .defaultZone) async throws -> [RecordModel.Record] {
        try await records(matching: query.wire, inZoneWith: zoneID)
    }

    /// The results of a query, again whenever the cache changes (see ``observe(_:inZoneWith:)-(Query,_)``).
    public func observe(_ query: RecordQuery, inZoneWith zoneID: ZoneID? = .defaultZone) -> AsyncValueObservation<[RecordModel.Record]> {
        observe(query.wire, inZoneWith: zoneID)
    }
}
