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
        if QueryFilter.searchWords(query.filterBy ?? []) {
            try await writer.write { db in try Self.markSearchTypes(for: query, in: db) }
        }
        return try await writer.read { db in try Self.run(query, inZoneWith: zoneID, in: db) }
    }

    /// Makes the record types whose words `query` searches searchable, as the server does
    /// (`SearchTypes`): their words are indexed from then on, the cached records' at once.
    static func markSearchTypes(for query: Query, in db: SQLDatabase) throws {
        let filters = query.filterBy ?? []
        guard QueryFilter.searchWords(filters),
              let needed = try? QueryFilter.wordSearchTypes(filters, recordType: query.recordType, schema: schema(for: query.recordType, in: db)) else { return }
        for type in needed.sorted() {
            try db.execute(sql: "INSERT OR IGNORE INTO search_types(record_type) VALUES (?)", arguments: [type])
            guard db.changesCount > 0 else { continue }
            let rows = try Row.fetchCursor(db, sql: "SELECT zone_id, name, fields FROM records WHERE type = ?", arguments: [type])
            while let row = try rows.next() {
                let texts = try RecordRow.decodeFields(row[2]).filter { if case .location = $0.value { false } else { true } }
                let words = SearchIndex(fields: texts)
                if !words.isEmpty { try SearchRows.insert(words, of: row[1], inZone: row[0], in: db) }
            }
        }
    }

    /// The record types whose words the cache indexes.
    static func searchableTypes(in db: SQLDatabase) throws -> Set<String> {
        Set(try String.fetchAll(db.cachedStatement(sql: "SELECT record_type FROM search_types")))
    }

    /// The schema of `recordType` and every type the cache has fetched (key paths step into them).
    static func schema(for recordType: String, in db: SQLDatabase) throws -> QuerySchema {
        var types: [String: [String: FieldType]] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT record_type, field, type FROM schema_fields") {
            if let type = FieldType(rawValue: row[2]) { types[row[0], default: [:]][row[1]] = type }
        }
        return QuerySchema(recordType: recordType, types: types)
    }

    /// The results of a query, again every time the cache changes in a way that affects them.
    ///
    /// The first element is the current result. Iterate it in a task; cancelling the task ends
    /// the observation.
    public func observe(_ query: Query, inZoneWith zoneID: ZoneID? = .defaultZone) -> AsyncValueObservation<[RecordModel.Record]> {
        if QueryFilter.searchWords(query.filterBy ?? []) {
            // A query that cannot run reports its error through the observation.
            try? writer.write { db in try Self.markSearchTypes(for: query, in: db) }
        }
        return ValueObservation.tracking { db in try Self.run(query, inZoneWith: zoneID, in: db) }
            .removeDuplicates()
            .values(in: writer)
    }

    static func run(_ query: Query, inZoneWith zoneID: ZoneID?, in db: SQLDatabase) throws -> [RecordModel.Record] {
        var zones: [Int64: ZoneID] = [:]
        if let zoneID {
            guard let key = try zoneKey(zoneID, in: db) else { return [] }
            zones[key] = zoneID
        } else {
            for row in try Row.fetchAll(db, sql: "SELECT id, name, owner FROM zones") { zones[row[0]] = Self.zoneID(name: row[1], owner: row[2]) }
        }
        guard !zones.isEmpty else { return [] }
        // The field types it has fetched, of every type (key paths step into them).
        let schema = try schema(for: query.recordType, in: db)
        let statement = try QueryCompiler(zoneKeys: zones.keys.sorted(), schema: schema, keyedReferenceFields: false, wordBlocks: false).compile(query, after: nil, limit: Int(Int32.max))
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
