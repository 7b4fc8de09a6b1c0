import Foundation
import RecordModel
import RecordSQL
import RecordStorage

/// A record's rows: its row of `records` (``RecordRow/columns``), its tombstone, its references
/// and its search rows, read and written one statement each. PostgreSQL overrides the writes
/// with its batched pending writes (docs/architecture.md), which send a batch's rows of each
/// kind as one statement; the statements here are the ones it is tested against.
extension SQLStorageTransaction {
    public func records(named names: [String], inZone zone: Int64, zoneID: ZoneID) throws -> [Record] {
        try fetch(.storedRecords(named: names, inZone: zone, in: dialect)).map { try $0.record(zoneID: zoneID) }
    }

    public func record(named name: String, inZone zone: Int64, zoneID: ZoneID) throws -> Record? {
        try fetch("SELECT \(raw: RecordRow.columns) FROM records WHERE zone_id = \(zone) AND name = \(name)").first.map { try $0.record(zoneID: zoneID) }
    }

    public func insertRecord(_ row: RecordWrite, inZone zone: Int64) throws {
        try insertRecordRow(row, inZone: zone)
    }

    public func updateRecord(_ row: RecordWrite, inZone zone: Int64) throws {
        try updateRecordRow(row, inZone: zone)
    }

    public func removeTombstone(named name: String, inZone zone: Int64) throws {
        try deleteTombstoneRow(named: name, inZone: zone)
    }

    public func removeReferences(from source: String, inZone zone: Int64) throws {
        try deleteReferenceRows(from: source, inZone: zone)
    }

    public func insertReferences(_ references: [(field: String, reference: Reference)], from source: String, inZone zone: Int64) throws {
        try insertReferenceRows(references, from: source, inZone: zone)
    }

    public func removeSearchIndex(of name: String, inZone zone: Int64) throws {
        try deleteSearchRows(of: name, inZone: zone)
    }

    public func insertSearchIndex(_ index: SearchIndex, of name: String, inZone zone: Int64) throws {
        try insertSearchRows(index, of: name, inZone: zone)
    }

    public func insertSearchBlock(_ block: SearchWordBlock, capacity: Int) throws {
        let (number, part) = try addToSearchBlock(block, capacity: capacity)
        for posting in block.postings {
            try run(.insertingSearchPosting(posting, block: number, part: part, inZone: block.zone))
        }
        for name in block.names { try run(.insertingSearchMember(name, block: number, part: part, inZone: block.zone)) }
    }

    /// Counts `block`'s records into the zone's last word block while it holds fewer than
    /// `capacity`, else into a new one: the block's number and how many it held before.
    public func addToSearchBlock(_ block: SearchWordBlock, capacity: Int) throws -> (block: Int64, part: Int64) {
        let count = Int64(block.names.count)
        if let last = try fetch(.lastSearchBlock(inZone: block.zone)).first {
            let (number, records) = (try last.int64(0), try last.int64(1))
            if records < capacity {
                try run(.growingSearchBlock(number, by: count, inZone: block.zone))
                return (number, records)
            }
            try run(.insertingSearchBlock(number + 1, records: count, inZone: block.zone))
            return (number + 1, 0)
        }
        try run(.insertingSearchBlock(1, records: count, inZone: block.zone))
        return (1, 0)
    }

    // MARK: The statements

    /// ``StorageTransaction/insertRecord(_:inZone:)`` as one statement.
    public func insertRecordRow(_ row: RecordWrite, inZone zone: Int64) throws {
        try run(.insertingRecord(row, inZone: zone))
    }

    /// ``StorageTransaction/updateRecord(_:inZone:)`` as one statement.
    public func updateRecordRow(_ row: RecordWrite, inZone zone: Int64) throws {
        try run(.updatingRecord(row, inZone: zone))
    }

    /// ``StorageTransaction/removeTombstone(named:inZone:)`` as one statement.
    public func deleteTombstoneRow(named name: String, inZone zone: Int64) throws {
        try run(.deletingTombstone(named: name, inZone: zone))
    }

    /// ``StorageTransaction/removeReferences(from:inZone:)`` as one statement.
    public func deleteReferenceRows(from source: String, inZone zone: Int64) throws {
        try run(.deletingReferences(from: source, inZone: zone))
    }

    /// ``StorageTransaction/insertReferences(_:from:inZone:)``, a statement a reference.
    public func insertReferenceRows(_ references: [(field: String, reference: Reference)], from source: String, inZone zone: Int64) throws {
        for (field, reference) in references {
            try run(.insertingReference(from: source, field: try fieldKey(field), to: reference.recordName,
                                        action: ReferenceActionCode.code(reference.action), inZone: zone))
        }
    }

    /// ``StorageTransaction/removeSearchIndex(of:inZone:)``: both search tables' rows of the record.
    public func deleteSearchRows(of name: String, inZone zone: Int64) throws {
        for statement in SQLStatement.deletingSearchRows(of: name, inZone: zone) { try run(statement) }
    }

    /// ``StorageTransaction/insertSearchIndex(_:of:inZone:)``, a statement a row.
    public func insertSearchRows(_ index: SearchIndex, of name: String, inZone zone: Int64) throws {
        for (field, token) in index.tokens { try run(.insertingSearchToken(token, field: field, of: name, inZone: zone)) }
        for (field, point) in index.places { try run(.insertingSearchPlace(point, field: field, of: name, inZone: zone)) }
    }
}

/// The statements of a record's rows. An engine that binds their values itself (SQLite's
/// override) renders each once and binds the values in the order they appear here.
extension SQLStatement {
    public static func insertingRecord(_ row: RecordWrite, inZone zone: Int64) -> SQLStatement {
        """
        INSERT INTO records(zone_id, name, type, tag, fields, created_at, created_by, modified_at, modified_by, seq, asset_bytes, parent, charged_to)
        VALUES (\(zone), \(row.name), \(row.recordType), \(row.changeTag), \(row.fields), \(row.created.timestamp), \(row.created.userRecordName),
                \(row.modified.timestamp), \(row.modified.userRecordName), \(row.sequence), \(row.assetBytes ?? 0), \(row.parent), \(row.chargedTo))
        """
    }

    /// The stored asset bytes are kept when the write gives none.
    public static func updatingRecord(_ row: RecordWrite, inZone zone: Int64) -> SQLStatement {
        """
        UPDATE records SET tag = \(row.changeTag), fields = \(row.fields), modified_at = \(row.modified.timestamp), modified_by = \(row.modified.userRecordName),
            modified_device = NULL, seq = \(row.sequence), asset_bytes = COALESCE(\(row.assetBytes), asset_bytes), parent = \(row.parent)
        WHERE zone_id = \(zone) AND name = \(row.name)
        """
    }

    public static func deletingTombstone(named name: String, inZone zone: Int64) -> SQLStatement {
        "DELETE FROM tombstones WHERE zone_id = \(zone) AND name = \(name)"
    }

    public static func deletingReferences(from source: String, inZone zone: Int64) -> SQLStatement {
        "DELETE FROM refs WHERE zone_id = \(zone) AND source = \(source)"
    }

    /// A field listing the same target twice stores it once.
    public static func insertingReference(from source: String, field: Int64, to target: String, action: Int, inZone zone: Int64) -> SQLStatement {
        "INSERT INTO refs(zone_id, source, field, target, action) VALUES (\(zone), \(source), \(field), \(target), \(action)) ON CONFLICT DO NOTHING"
    }

    public static func deletingSearchRows(of name: String, inZone zone: Int64) -> [SQLStatement] {
        [
            "DELETE FROM search_tokens WHERE zone_id = \(zone) AND name = \(name)",
            "DELETE FROM search_members WHERE zone_id = \(zone) AND name = \(name)",
            "DELETE FROM search_locations WHERE zone_id = \(zone) AND name = \(name)",
        ]
    }

    public static func lastSearchBlock(inZone zone: Int64) -> SQLStatement {
        "SELECT block, records FROM search_blocks WHERE zone_id = \(zone) ORDER BY block DESC LIMIT 1"
    }

    public static func insertingSearchBlock(_ block: Int64, records: Int64, inZone zone: Int64) -> SQLStatement {
        "INSERT INTO search_blocks(zone_id, block, records) VALUES (\(zone), \(block), \(records))"
    }

    public static func growingSearchBlock(_ block: Int64, by records: Int64, inZone zone: Int64) -> SQLStatement {
        "UPDATE search_blocks SET records = records + \(records) WHERE zone_id = \(zone) AND block = \(block)"
    }

    public static func insertingSearchPosting(_ posting: SearchWordBlock.Posting, block: Int64, part: Int64, inZone zone: Int64) -> SQLStatement {
        """
        INSERT INTO search_postings(zone_id, block, token, field, part, names)
        VALUES (\(zone), \(block), \(posting.token), \(posting.field), \(part), \(SearchWordBlock.encodedNames(posting.names)))
        """
    }

    /// A record in an earlier block or part of the zone moves to this one.
    public static func insertingSearchMember(_ name: String, block: Int64, part: Int64, inZone zone: Int64) -> SQLStatement {
        """
        INSERT INTO search_members(zone_id, name, block, part) VALUES (\(zone), \(name), \(block), \(part))
        ON CONFLICT (zone_id, name) DO UPDATE SET block = excluded.block, part = excluded.part
        """
    }

    /// A word once a field.
    public static func insertingSearchToken(_ token: String, field: String, of name: String, inZone zone: Int64) -> SQLStatement {
        "INSERT INTO search_tokens(zone_id, name, field, token) VALUES (\(zone), \(name), \(field), \(token)) ON CONFLICT DO NOTHING"
    }

    /// A place replaces the field's place.
    public static func insertingSearchPlace(_ point: GeoPoint, field: String, of name: String, inZone zone: Int64) -> SQLStatement {
        """
        INSERT INTO search_locations(zone_id, name, field, cell, x, y, z) VALUES (\(zone), \(name), \(field), \(point.cell), \(point.x), \(point.y), \(point.z))
        ON CONFLICT (zone_id, name, field) DO UPDATE SET cell = excluded.cell, x = excluded.x, y = excluded.y, z = excluded.z
        """
    }

    /// The rows (``RecordRow/columns``) of the records named in a zone: each name one search of
    /// the table's `(name, zone_id)` key, never a walk of the zone.
    public static func storedRecords(named names: [String], inZone zone: Int64, in dialect: SQLDialect) -> SQLStatement {
        "SELECT \(raw: RecordRow.columns) FROM records WHERE zone_id = \(zone) AND \(member("name", of: names, in: dialect))"
    }
}

extension SQLRow {
    /// The record of a row holding ``RecordRow/columns`` from column `offset` on.
    public func record(zoneID: ZoneID, offset: Int = 0) throws -> Record {
        Record(recordName: try string(offset), recordType: try string(offset + 1), zoneID: zoneID, recordChangeTag: try string(offset + 2),
               fields: try RecordRow.decodeFields(try string(offset + 3)),
               created: Stamp(timestamp: try int64(offset + 4), userRecordName: try string(offset + 5), deviceID: try optionalString(offset + 6)),
               modified: Stamp(timestamp: try int64(offset + 7), userRecordName: try string(offset + 8), deviceID: try optionalString(offset + 9)),
               parent: try optionalString(offset + 10))
    }
}
