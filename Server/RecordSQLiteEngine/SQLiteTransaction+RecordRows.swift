import Foundation
import GRDB
import RecordModel
import RecordStorage
import RecordStorageSQL
import RecordSQL

/// SQLite's own writes of a record's rows (docs/architecture.md, "Overrides": its figure): the
/// generic statements (``SQLStatement/insertingRecord(_:inZone:)`` and the rest), each rendered
/// once, compiled once per connection, and its values bound through SQLite's C API
/// (``SQLiteBinder``) in the order the statement interpolates them, rather than a
/// ``SQLStatement`` built, rendered and looked up in the statement cache for every row.
extension SQLiteTransaction {
    /// The SQL of each statement, rendered once from the generic statement.
    enum RowSQL {
        static var placeholder: RecordWrite {
            RecordWrite(name: "", recordType: "", changeTag: "", fields: "", created: Stamp(timestamp: 0, userRecordName: ""),
                        modified: Stamp(timestamp: 0, userRecordName: ""), sequence: 0, assetBytes: nil)
        }
        static let insertRecord = SQLStatement.insertingRecord(placeholder, inZone: 0).rendered(in: .sqlite).sql
        static let updateRecord = SQLStatement.updatingRecord(placeholder, inZone: 0).rendered(in: .sqlite).sql
        static let deleteTombstone = SQLStatement.deletingTombstone(named: "", inZone: 0).rendered(in: .sqlite).sql
        static let deleteReferences = SQLStatement.deletingReferences(from: "", inZone: 0).rendered(in: .sqlite).sql
        static let insertReference = SQLStatement.insertingReference(from: "", field: 0, to: "", action: 0, inZone: 0).rendered(in: .sqlite).sql
        static let deleteSearchRows = SQLStatement.deletingSearchRows(of: "", inZone: 0).map { $0.rendered(in: .sqlite).sql }
        static let insertSearchToken = SQLStatement.insertingSearchToken("", field: "", of: "", inZone: 0).rendered(in: .sqlite).sql
        static let insertSearchPosting = SQLStatement.insertingSearchPosting(.init(token: "", field: "", names: []), block: 0, part: 0, inZone: 0)
            .rendered(in: .sqlite).sql
        static let insertSearchMember = SQLStatement.insertingSearchMember("", block: 0, part: 0, inZone: 0).rendered(in: .sqlite).sql
        static let insertSearchPlace = SQLStatement.insertingSearchPlace(GeoPoint(latitude: 0, longitude: 0), field: "", of: "", inZone: 0)
            .rendered(in: .sqlite).sql
    }

    func insertRecord(_ row: RecordWrite, inZone zone: Int64) throws {
        try db.cachedStatement(sql: RowSQL.insertRecord).run(in: db) { binder in
            binder.bind(zone); binder.bind(row.name); binder.bind(row.recordType); binder.bind(row.changeTag); binder.bind(row.fields)
            binder.bind(row.created.timestamp); binder.bind(row.created.userRecordName)
            binder.bind(row.modified.timestamp); binder.bind(row.modified.userRecordName); binder.bind(row.sequence)
            binder.bind(row.assetBytes ?? 0); binder.bind(row.parent); binder.bind(row.chargedTo)
        }
    }

    func updateRecord(_ row: RecordWrite, inZone zone: Int64) throws {
        try db.cachedStatement(sql: RowSQL.updateRecord).run(in: db) { binder in
            binder.bind(row.changeTag); binder.bind(row.fields); binder.bind(row.modified.timestamp); binder.bind(row.modified.userRecordName)
            binder.bind(row.sequence); binder.bind(row.assetBytes); binder.bind(row.parent); binder.bind(zone); binder.bind(row.name)
        }
    }

    func removeTombstone(named name: String, inZone zone: Int64) throws {
        try db.cachedStatement(sql: RowSQL.deleteTombstone).run(in: db) { binder in binder.bind(zone); binder.bind(name) }
    }

    func removeReferences(from source: String, inZone zone: Int64) throws {
        try db.cachedStatement(sql: RowSQL.deleteReferences).run(in: db) { binder in binder.bind(zone); binder.bind(source) }
    }

    func insertReferences(_ references: [(field: String, reference: Reference)], from source: String, inZone zone: Int64) throws {
        guard !references.isEmpty else { return }
        let insert = try db.cachedStatement(sql: RowSQL.insertReference)
        for (field, reference) in references {
            let key = try fieldKey(field)
            try insert.run(in: db) { binder in
                binder.bind(zone); binder.bind(source); binder.bind(key); binder.bind(reference.recordName); binder.bind(ReferenceActionCode.code(reference.action))
            }
        }
    }

    func removeSearchIndex(of name: String, inZone zone: Int64) throws {
        for sql in RowSQL.deleteSearchRows {
            try db.cachedStatement(sql: sql).run(in: db) { binder in binder.bind(zone); binder.bind(name) }
        }
    }

    func insertSearchBlock(_ block: SearchWordBlock, capacity: Int) throws {
        let (number, part) = try addToSearchBlock(block, capacity: capacity)
        let zone = block.zone
        let posting = try db.cachedStatement(sql: RowSQL.insertSearchPosting)
        for entry in block.postings {
            let names = SearchWordBlock.encodedNames(entry.names)
            try posting.run(in: db) { binder in
                binder.bind(zone); binder.bind(number); binder.bind(entry.token); binder.bind(entry.field); binder.bind(part); binder.bind(names)
            }
        }
        let member = try db.cachedStatement(sql: RowSQL.insertSearchMember)
        for name in block.names {
            try member.run(in: db) { binder in binder.bind(zone); binder.bind(name); binder.bind(number); binder.bind(part) }
        }
    }

    func insertSearchIndex(_ index: SearchIndex, of name: String, inZone zone: Int64) throws {
        if !index.tokens.isEmpty {
            let insert = try db.cachedStatement(sql: RowSQL.insertSearchToken)
            for (field, token) in index.tokens {
                try insert.run(in: db) { binder in binder.bind(zone); binder.bind(name); binder.bind(field); binder.bind(token) }
            }
        }
        if !index.places.isEmpty {
            let insert = try db.cachedStatement(sql: RowSQL.insertSearchPlace)
            for (field, point) in index.places {
                try insert.run(in: db) { binder in
                    binder.bind(zone); binder.bind(name); binder.bind(field); binder.bind(point.cell); binder.bind(point.x); binder.bind(point.y); binder.bind(point.z)
                }
            }
        }
    }
}
