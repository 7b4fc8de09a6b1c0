import Foundation
import PostgresNIO
import RecordModel
import RecordStorage
import RecordSQL

/// The writes of a batch's saves, held back and sent together.
///
/// Every statement is a round trip to PostgreSQL, and a batch of 400 saves calls two write
/// primitives a record (the row, its references). Those primitives only add to ``PendingWrites``;
/// the next statement of any kind (a read, a savepoint, the commit) first sends them all, each
/// kind as one statement over arrays (`unnest`). Reads therefore always see the transaction's own
/// writes, and the order that matters is kept: tombstones and old references go before rows and
/// new references, and a write that would need to follow a pending write of another kind to the
/// same key (a record's references removed after new ones were held back) sends what is pending
/// first.
struct PendingWrites {
    var removedTombstones: [(zone: Int64, name: String)] = []
    var removedReferences: [(zone: Int64, source: String)] = []
    var insertedRecords: [(zone: Int64, row: RecordWrite)] = []
    var updatedRecords: [(zone: Int64, row: RecordWrite)] = []
    var insertedReferences: [(zone: Int64, source: String, field: Int64, target: String, action: Int64)] = []
    /// The sources whose new references are pending.
    var sourcesWithNewReferences: Set<String> = []
    var removedSearchRows: [(zone: Int64, name: String)] = []
    var insertedTokens: [(zone: Int64, name: String, field: String, token: String)] = []
    var insertedPlaces: [(zone: Int64, name: String, field: String, point: GeoPoint)] = []
    /// The records whose new search rows are pending.
    var recordsWithNewSearchRows: Set<String> = []

    var isEmpty: Bool {
        removedTombstones.isEmpty && removedReferences.isEmpty && insertedRecords.isEmpty && updatedRecords.isEmpty && insertedReferences.isEmpty
            && removedSearchRows.isEmpty && insertedTokens.isEmpty && insertedPlaces.isEmpty
    }
}

extension PostgresTransaction {
    func insertRecord(_ row: RecordWrite, inZone zone: Int64) throws {
        pending.insertedRecords.append((zone, row))
    }

    func updateRecord(_ row: RecordWrite, inZone zone: Int64) throws {
        if pending.insertedRecords.contains(where: { $0.zone == zone && $0.row.name == row.name }) { try flush() }
        pending.updatedRecords.append((zone, row))
    }

    func removeTombstone(named name: String, inZone zone: Int64) throws {
        pending.removedTombstones.append((zone, name))
    }

    func removeReferences(from source: String, inZone zone: Int64) throws {
        if pending.sourcesWithNewReferences.contains(source) { try flush() }
        pending.removedReferences.append((zone, source))
    }

    func insertReferences(_ references: [(field: String, reference: Reference)], from source: String, inZone zone: Int64) throws {
        for (field, reference) in references {
            pending.insertedReferences.append((zone, source, try fieldKey(field), reference.recordName, Int64(ReferenceActionCode.code(reference.action))))
        }
        if !references.isEmpty { pending.sourcesWithNewReferences.insert(source) }
    }

    /// The advisory lock, one a container (its key second), that orders marking a type
    /// searchable after the writes in flight: each writing transaction holds it shared from
    /// reading the searchable types to its end, and marking takes it alone (any number no
    /// other program uses, first).
    static let searchTypesLock: Int32 = 0x5253_5354 // "RSST"

    func lockSearchTypes(inContainer container: Int64, exclusive: Bool) throws {
        let lock = exclusive ? "pg_advisory_xact_lock" : "pg_advisory_xact_lock_shared"
        try execute("SELECT \(unescaped: lock)(\(Self.searchTypesLock), \(Int32(truncatingIfNeeded: container)))")
    }

    static let schemaLock: Int32 = 0x5253_5343 // "RSSC"

    func lockSchema(inContainer container: Int64, exclusive: Bool) throws {
        let lock = exclusive ? "pg_advisory_xact_lock" : "pg_advisory_xact_lock_shared"
        try execute("SELECT \(unescaped: lock)(\(Self.schemaLock), \(Int32(truncatingIfNeeded: container)))")
    }

    func removeSearchIndex(of name: String, inZone zone: Int64) throws {
        if pending.recordsWithNewSearchRows.contains(name) { try flush() }
        pending.removedSearchRows.append((zone, name))
    }

    func insertSearchBlock(_ block: SearchWordBlock, capacity: Int) throws {
        try flush()
        let (number, part) = try addToSearchBlock(block, capacity: capacity)
        let zone = block.zone
        if !block.postings.isEmpty {
            let postings = block.postings
            try send("""
                INSERT INTO search_postings(zone_id, block, token, field, part, names)
                SELECT \(zone), \(number), u.token, u.field, \(part), u.names FROM unnest(\(postings.map(\.token)), \(postings.map(\.field)), \(postings.map { SearchWordBlock.encodedNames($0.names) }))
                    AS u(token, field, names)
                """)
        }
        if !block.names.isEmpty {
            try send("""
                INSERT INTO search_members(zone_id, name, block, part) SELECT \(zone), name, \(number), \(part) FROM unnest(\(block.names)) AS u(name)
                ON CONFLICT (zone_id, name) DO UPDATE SET block = excluded.block, part = excluded.part
                """)
        }
    }

    func insertSearchIndex(_ index: SearchIndex, of name: String, inZone zone: Int64) throws {
        pending.insertedTokens += index.tokens.map { (zone, name, $0.field, $0.token) }
        pending.insertedPlaces += index.places.map { (zone, name, $0.field, $0.point) }
        pending.recordsWithNewSearchRows.insert(name)
    }

    /// Sends the pending writes: at most one statement per kind, in an order that keeps their
    /// meaning.
    func flush() throws {
        guard !pending.isEmpty else { return }
        let writes = pending
        pending = PendingWrites()
        if !writes.removedTombstones.isEmpty {
            try send("""
                DELETE FROM tombstones t USING unnest(\(writes.removedTombstones.map(\.zone)), \(writes.removedTombstones.map(\.name))) AS u(zone_id, name)
                WHERE t.zone_id = u.zone_id AND t.name = u.name COLLATE "C"
                """)
        }
        if !writes.removedReferences.isEmpty {
            try send("""
                DELETE FROM refs r USING unnest(\(writes.removedReferences.map(\.zone)), \(writes.removedReferences.map(\.source))) AS u(zone_id, source)
                WHERE r.zone_id = u.zone_id AND r.source = u.source COLLATE "C"
                """)
        }
        if !writes.removedSearchRows.isEmpty {
            let rows = writes.removedSearchRows
            for table in ["search_tokens", "search_members", "search_locations"] {
                try send("""
                    DELETE FROM \(unescaped: table) s USING unnest(\(rows.map(\.zone)), \(rows.map(\.name))) AS u(zone_id, name)
                    WHERE s.zone_id = u.zone_id AND s.name = u.name COLLATE "C"
                    """)
            }
        }
        if !writes.insertedRecords.isEmpty {
            let rows = writes.insertedRecords
            try send("""
                INSERT INTO records(zone_id, name, type, tag, fields, created_at, created_by, modified_at, modified_by, seq, asset_bytes, parent, charged_to)
                SELECT z, n, t, g, f, ca, cb, ma, mb, s, a, NULLIF(p, ''), NULLIF(c, '')
                FROM unnest(\(rows.map(\.zone)), \(rows.map(\.row.name)), \(rows.map(\.row.recordType)), \(rows.map(\.row.changeTag)),
                            \(rows.map(\.row.fields)), \(rows.map(\.row.created.timestamp)), \(rows.map(\.row.created.userRecordName)),
                            \(rows.map(\.row.modified.timestamp)), \(rows.map(\.row.modified.userRecordName)), \(rows.map(\.row.sequence)),
                            \(rows.map { $0.row.assetBytes ?? 0 }), \(rows.map { $0.row.parent ?? "" }), \(rows.map { $0.row.chargedTo ?? "" }))
                    AS u(z, n, t, g, f, ca, cb, ma, mb, s, a, p, c)
                """)
        }
        if !writes.updatedRecords.isEmpty {
            let rows = writes.updatedRecords
            try send("""
                UPDATE records r SET tag = u.tag, fields = u.fields, modified_at = u.modified_at, modified_by = u.modified_by,
                    modified_device = NULL, seq = u.seq, asset_bytes = CASE WHEN u.asset_bytes < 0 THEN r.asset_bytes ELSE u.asset_bytes END,
                    parent = NULLIF(u.parent, '')
                FROM unnest(\(rows.map(\.zone)), \(rows.map(\.row.name)), \(rows.map(\.row.changeTag)), \(rows.map(\.row.fields)),
                            \(rows.map(\.row.modified.timestamp)), \(rows.map(\.row.modified.userRecordName)), \(rows.map(\.row.sequence)),
                            \(rows.map { $0.row.assetBytes ?? -1 }), \(rows.map { $0.row.parent ?? "" }))
                    AS u(zone_id, name, tag, fields, modified_at, modified_by, seq, asset_bytes, parent)
                WHERE r.zone_id = u.zone_id AND r.name = u.name COLLATE "C"
                """)
        }
        if !writes.insertedReferences.isEmpty {
            let rows = writes.insertedReferences
            try send("""
                INSERT INTO refs(zone_id, source, field, target, action)
                SELECT * FROM unnest(\(rows.map(\.zone)), \(rows.map(\.source)), \(rows.map(\.field)), \(rows.map(\.target)), \(rows.map(\.action)))
                ON CONFLICT DO NOTHING
                """)
        }
        if !writes.insertedTokens.isEmpty {
            let rows = writes.insertedTokens
            try send("""
                INSERT INTO search_tokens(zone_id, name, field, token)
                SELECT * FROM unnest(\(rows.map(\.zone)), \(rows.map(\.name)), \(rows.map(\.field)), \(rows.map(\.token)))
                ON CONFLICT DO NOTHING
                """)
        }
        if !writes.insertedPlaces.isEmpty {
            let rows = writes.insertedPlaces
            try send("""
                INSERT INTO search_locations(zone_id, name, field, cell, x, y, z)
                SELECT * FROM unnest(\(rows.map(\.zone)), \(rows.map(\.name)), \(rows.map(\.field)), \(rows.map(\.point.cell)),
                                     \(rows.map(\.point.x)), \(rows.map(\.point.y)), \(rows.map(\.point.z)))
                ON CONFLICT (zone_id, name, field) DO UPDATE SET cell = excluded.cell, x = excluded.x, y = excluded.y, z = excluded.z
                """)
        }
    }
}
