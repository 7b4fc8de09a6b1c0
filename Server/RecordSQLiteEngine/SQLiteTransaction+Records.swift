import Foundation
import GRDB
import RecordModel
import RecordStorage
import RecordSQL

extension SQLiteTransaction {
    /// The stored rows (``RecordRow/columns``) of the names in a JSON array (first argument) in
    /// a zone (second). CROSS JOIN keeps the list as the outer loop, so each name is one search
    /// of the table's `(name, zone_id)` key rather than a walk of the zone.
    static let storedRowsSQL = """
        SELECT \(RecordRow.columns(alias: "r")) FROM json_each(?) AS j CROSS JOIN records r ON r.zone_id = ? AND r.name = j.value
        """

    func records(named names: [String], inZone zone: Int64, zoneID: ZoneID) throws -> [Record] {
        var records: [Record] = []
        let cursor = try Row.fetchCursor(db.cachedStatement(sql: Self.storedRowsSQL),
                                         arguments: [try JSONValue.array(names.map(JSONValue.string)).serializedString(), zone])
        while let row = try cursor.next() {
            records.append(try RecordRow.record(from: row, zoneID: zoneID))
        }
        return records
    }

    func record(named name: String, inZone zone: Int64, zoneID: ZoneID) throws -> Record? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(RecordRow.columns) FROM records WHERE zone_id = ? AND name = ?"), arguments: [zone, name])
            .map { try RecordRow.record(from: $0, zoneID: zoneID) }
    }

    func insertRecord(_ row: RecordWrite, inZone zone: Int64) throws {
        try db.cachedStatement(sql: """
            INSERT INTO records(zone_id, name, type, tag, fields, created_at, created_by, modified_at, modified_by, seq, asset_bytes)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).run(in: db) { binder in
                binder.bind(zone); binder.bind(row.name); binder.bind(row.recordType); binder.bind(row.changeTag); binder.bind(row.fields)
                binder.bind(row.created.timestamp); binder.bind(row.created.userRecordName)
                binder.bind(row.modified.timestamp); binder.bind(row.modified.userRecordName); binder.bind(row.sequence)
                binder.bind(row.assetBytes ?? 0)
            }
    }

    func updateRecord(_ row: RecordWrite, inZone zone: Int64) throws {
        try db.cachedStatement(sql: """
            UPDATE records SET tag = ?, fields = ?, modified_at = ?, modified_by = ?, modified_device = NULL, seq = ?, asset_bytes = ifnull(?, asset_bytes)
            WHERE zone_id = ? AND name = ?
            """).run(in: db) { binder in
                binder.bind(row.changeTag); binder.bind(row.fields); binder.bind(row.modified.timestamp); binder.bind(row.modified.userRecordName)
                binder.bind(row.sequence); binder.bind(row.assetBytes); binder.bind(zone); binder.bind(row.name)
            }
    }

    func removeTombstone(named name: String, inZone zone: Int64) throws {
        try db.cachedStatement(sql: "DELETE FROM tombstones WHERE zone_id = ? AND name = ?").execute(arguments: [zone, name])
    }

    func removeReferences(from source: String, inZone zone: Int64) throws {
        try db.cachedStatement(sql: "DELETE FROM refs WHERE zone_id = ? AND source = ?").execute(arguments: [zone, source])
    }

    func insertReferences(_ references: [(field: String, reference: Reference)], from source: String, inZone zone: Int64) throws {
        let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO refs(zone_id, source, field, target, action) VALUES (?, ?, ?, ?, ?)")
        for (field, reference) in references {
            let key = try fieldKey(field)
            try insert.run(in: db) { binder in
                binder.bind(zone); binder.bind(source); binder.bind(key); binder.bind(reference.recordName); binder.bind(ReferenceActionCode.code(reference.action))
            }
        }
    }

    func removeSearchIndex(of name: String, inZone zone: Int64) throws {
        try SearchRows.remove(name, inZone: zone, in: db)
    }

    func insertSearchIndex(_ index: SearchIndex, of name: String, inZone zone: Int64) throws {
        try SearchRows.insert(index, of: name, inZone: zone, in: db)
    }
}
