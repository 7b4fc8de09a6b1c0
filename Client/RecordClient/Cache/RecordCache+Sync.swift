import Foundation
import GRDB
import RecordModel
import RecordSQL

/// A record's queued local edits, folded into the one operation to send.
struct PendingChange: Sendable {
    enum Kind: Sendable { case save, delete }

    var zoneID: ZoneID
    var name: String
    var kind: Kind
    /// The newest outbox entry folded in; acknowledging removes entries up to it.
    var lastEntry: Int64
    /// For a save: the record as it is locally now.
    var record: RecordModel.Record?
    /// For a save: the fields the edits changed; `nil` means the whole record (a delete came
    /// before the save, so it replaces whatever the server has).
    var changedKeys: Set<String>?
    /// For a save: the server version the edits started from, if the record was on the server.
    var ancestor: RecordModel.Record?

    var recordID: RecordID { RecordID(recordName: name, zoneID: zoneID) }
}

extension RecordCache {
    // MARK: Outbox

    /// The queued edits, folded per record (a save then a delete is just the delete), in the
    /// order their records were first edited.
    func pendingChanges(limit: Int = 5000) async throws -> [PendingChange] {
        try await writer.read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT o.id, o.zone_id, z.name, o.name, o.kind, o.changed_keys, z.owner FROM outbox o JOIN zones z ON z.id = o.zone_id
                ORDER BY o.id LIMIT ?
                """, arguments: [limit])
            var order: [String] = []
            var folded: [String: PendingChange] = [:]
            for row in rows {
                let zoneName: String = row[2]
                let owner: String = row[6]
                let name: String = row[3]
                let key = owner + "\u{0}" + zoneName + "\u{0}" + name
                let kind: PendingChange.Kind = (row[4] as String) == "delete" ? .delete : .save
                let keysJSON: String? = row[5]
                let keys = try keysJSON.map { Set(try JSONDecoder().decode([String].self, from: Data($0.utf8))) } ?? []
                if var change = folded[key] {
                    change.lastEntry = row[0]
                    switch (change.kind, kind) {
                    case (_, .delete): change.kind = .delete
                    case (.delete, .save): change.kind = .save; change.changedKeys = nil
                    case (.save, .save): change.changedKeys = change.changedKeys.map { $0.union(keys) }
                    }
                    folded[key] = change
                } else {
                    order.append(key)
                    folded[key] = PendingChange(zoneID: Self.zoneID(name: zoneName, owner: owner), name: name, kind: kind, lastEntry: row[0], changedKeys: keys)
                }
            }
            var changes: [PendingChange] = []
            for key in order {
                guard var change = folded[key] else { continue }
                if change.kind == .save {
                    guard let cached = try Self.fetchRecord(change.recordID, in: db) else { continue }
                    change.record = cached.record
                    change.ancestor = cached.serverRecord
                }
                changes.append(change)
            }
            return changes
        }
    }

    /// A save reached the server: drop the edits it covered and cache the server's copy (or,
    /// if newer edits are queued, only the new base version they now start from).
    func acknowledgeSave(_ change: PendingChange, serverRecord: RecordModel.Record) async throws {
        try await writer.write { db in
            let zone = try Self.zoneKeyCreating(change.zoneID, in: db)
            try Self.dropEntries(of: change, zone: zone, in: db)
            if try Self.hasEntries(change.name, zone: zone, in: db) {
                // Newer edits are queued: they now start from this version. (If one of them
                // deleted the record, it stays deleted locally until that delete is sent.)
                if let cached = try Self.fetchRecord(change.recordID, in: db) {
                    try Self.store(cached.record, zone: zone, tag: serverRecord.recordChangeTag, serverRecord: serverRecord, in: db)
                }
            } else {
                try Self.store(serverRecord, zone: zone, tag: serverRecord.recordChangeTag, serverRecord: serverRecord, in: db)
            }
        }
    }

    /// A delete reached the server (or found nothing to delete).
    func acknowledgeDelete(_ change: PendingChange) async throws {
        try await writer.write { db in
            guard let zone = try Self.zoneKey(change.zoneID, in: db) else { return }
            try Self.dropEntries(of: change, zone: zone, in: db)
        }
    }

    /// After a conflict: `merged` becomes the local record, based on `server`; the queued edits
    /// are replaced by one save of the fields where `merged` differs from `server` (none: the
    /// conflict is settled and nothing is sent).
    ///
    /// Edits queued while the conflicting send was in flight win over `merged`: a queued delete
    /// keeps the record deleted; queued saves keep their fields' current local values.
    func rebase(_ change: PendingChange, onto server: RecordModel.Record, merged: RecordModel.Record) async throws {
        try await writer.write { db in
            let zone = try Self.zoneKeyCreating(change.zoneID, in: db)
            try Self.dropEntries(of: change, zone: zone, in: db)
            var merged = merged
            let newer = try Row.fetchAll(db, sql: "SELECT kind, changed_keys FROM outbox WHERE zone_id = ? AND name = ? ORDER BY id",
                                         arguments: [zone, change.name])
            if let last = newer.last, (last[0] as String) == "delete" { return }
            if !newer.isEmpty, let current = try Self.fetchRecord(change.recordID, in: db)?.record {
                for row in newer {
                    let keysJSON: String? = row[1]
                    let keys = try keysJSON.map { try JSONDecoder().decode([String].self, from: Data($0.utf8)) } ?? Array(current.fields.keys)
                    for key in keys { merged.fields[key] = current.fields[key] }
                }
            }
            var local = merged
            local.recordChangeTag = server.recordChangeTag
            local.created = server.created
            local.modified = server.modified
            try Self.store(local, zone: zone, tag: server.recordChangeTag, serverRecord: server, in: db)
            let differing = Set(server.fields.keys).union(merged.fields.keys).filter { server.fields[$0] != merged.fields[$0] }
            if !differing.isEmpty || merged.recordType != server.recordType {
                let keys = String(decoding: try JSONEncoder().encode(differing.sorted()), as: UTF8.self)
                try db.execute(sql: "INSERT INTO outbox(zone_id, name, kind, changed_keys) VALUES (?, ?, 'save', ?)", arguments: [zone, change.name, keys])
            }
        }
    }

    /// A change the server refused for good: drop its edits and put back the server's version
    /// (or nothing, if the record never reached the server), unless newer edits are queued.
    func discard(_ change: PendingChange, restoring server: RecordModel.Record?) async throws {
        try await writer.write { db in
            guard let zone = try Self.zoneKey(change.zoneID, in: db) else { return }
            try Self.dropEntries(of: change, zone: zone, in: db)
            guard try !Self.hasEntries(change.name, zone: zone, in: db) else { return }
            if let server {
                try Self.store(server, zone: zone, tag: server.recordChangeTag, serverRecord: server, in: db)
            } else {
                try Self.remove(change.name, zone: zone, in: db)
            }
        }
    }

    private static func dropEntries(of change: PendingChange, zone: Int64, in db: SQLDatabase) throws {
        try db.execute(sql: "DELETE FROM outbox WHERE zone_id = ? AND name = ? AND id <= ?", arguments: [zone, change.name, change.lastEntry])
    }

    private static func hasEntries(_ name: String, zone: Int64, in db: SQLDatabase) throws -> Bool {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM outbox WHERE zone_id = ? AND name = ? LIMIT 1"), arguments: [zone, name]) != nil
    }

    // MARK: Fetched changes

    /// Writes one fetched page and the token covering it, in one transaction.
    ///
    /// Changed records replace their cached copies, except records with queued local edits
    /// (their conflict is settled when they are sent). Tombstones remove records, queued edits
    /// included: a deletion on the server (a cascade, say, or a record leaving a share) wins.
    ///
    /// - Parameter resetting: the zone is being fetched again from scratch (its token expired):
    ///   cached records without queued edits are dropped first.
    /// - Returns: the records whose queued edits a tombstone dropped.
    @discardableResult
    func apply(_ page: ZoneChangesPage, to zoneID: ZoneID, resetting: Bool) async throws -> [RecordModel.Record.ID] {
        let sharedDatabase = self.sharedDatabase
        return try await writer.write { db in
            var dropped: [RecordModel.Record.ID] = []
            let zone = try Self.zoneKeyCreating(zoneID, in: db)
            if resetting {
                try db.execute(sql: "DELETE FROM refs WHERE zone_id = ? AND source NOT IN (SELECT name FROM outbox WHERE zone_id = ?)", arguments: [zone, zone])
                try db.execute(sql: "DELETE FROM search_tokens WHERE zone_id = ? AND name NOT IN (SELECT name FROM outbox WHERE zone_id = ?)", arguments: [zone, zone])
                try db.execute(sql: "DELETE FROM search_locations WHERE zone_id = ? AND name NOT IN (SELECT name FROM outbox WHERE zone_id = ?)", arguments: [zone, zone])
                try db.execute(sql: "DELETE FROM records WHERE zone_id = ? AND name NOT IN (SELECT name FROM outbox WHERE zone_id = ?)", arguments: [zone, zone])
            }
            // The records with queued edits, read once per page (the outbox is small).
            let queued = Set(try String.fetchAll(db.cachedStatement(sql: "SELECT DISTINCT name FROM outbox WHERE zone_id = ?"), arguments: [zone]))
            var rows = try FetchedRowWriter(db)
            for (offset, record) in page.changes.enumerated() {
                if record.deleted {
                    // A record created locally (no server version) after an older deletion is
                    // not what this tombstone deleted: keep it and its queued save.
                    let id = RecordID(recordName: record.recordName, zoneID: zoneID)
                    if queued.contains(record.recordName), let cached = try Self.fetchRecord(id, in: db), cached.record.recordChangeTag == nil {
                        continue
                    }
                    try Self.remove(record.recordName, zone: zone, in: db)
                    if queued.contains(record.recordName) {
                        try db.execute(sql: "DELETE FROM outbox WHERE zone_id = ? AND name = ?", arguments: [zone, record.recordName])
                        dropped.append(id)
                    }
                } else if !queued.contains(record.recordName) {
                    let text = offset < page.fieldsText.count ? page.fieldsText[offset] : nil
                    if record.recordChangeTag != nil {
                        let references = offset < page.references.count ? page.references[offset] : record.references
                        let searchFields = offset < page.searchFields.count ? page.searchFields[offset] : record.fields.map { ($0.key, $0.value) }
                        try rows.write(record, zone: zone, fieldsText: text, references: references, searchFields: searchFields)
                    } else {
                        // Not a server version a later edit could start from: stored the general way
                        // (with its fields decoded, if the page was read for the cache alone).
                        var server = record
                        server.zoneID = zoneID
                        if page.fieldsSkimmed, let text { server.fields = try RecordModel.Record.fields(fromJSON: text) }
                        try Self.store(server, zone: zone, tag: nil, serverRecord: server, recordingSchema: false, fieldsText: text, in: db)
                    }
                }
            }
            try rows.notifyObservers()
            if sharedDatabase {
                // What the user may do in each share it takes part in, as its share record says.
                for record in page.changes where record.deleted || ShareInfo.recordTypes.contains(record.recordType) {
                    if let info = record.shareInfo, !record.deleted {
                        let permission = info.currentUserParticipant?.type == .owner ? SharePermission.readWrite : info.currentUserParticipant?.permission ?? .none
                        try db.cachedStatement(sql: "INSERT OR REPLACE INTO share_permissions(zone_id, share, permission) VALUES (?, ?, ?)")
                            .execute(arguments: [zone, record.recordName, permission.rawValue])
                    } else if record.deleted {
                        try db.cachedStatement(sql: "DELETE FROM share_permissions WHERE zone_id = ? AND share = ?").execute(arguments: [zone, record.recordName])
                    }
                }
            }
            for (recordType, fields) in page.fieldTypes ?? ZoneChangesPage.fieldTypes(of: page.modifications) {
                for (field, type) in fields {
                    try db.cachedStatement(sql: "INSERT OR IGNORE INTO schema_fields(record_type, field, type) VALUES (?, ?, ?)")
                        .execute(arguments: [recordType, field, type.rawValue])
                }
            }
            try db.cachedStatement(sql: "UPDATE zones SET token = ? WHERE id = ?").execute(arguments: [page.changeToken.rawValue, zone])
            return dropped
        }
    }

    /// Forgets a zone's token, so the next fetch starts from scratch.
    func forgetToken(of zoneID: ZoneID) async throws {
        try await writer.write { db in
            try db.execute(sql: "UPDATE zones SET token = NULL WHERE name = ? AND owner = ?", arguments: [zoneID.zoneName, try Self.ownerKey(zoneID, in: db)])
        }
    }

    /// Removes a zone that was deleted on the server: its records, queued edits and token.
    ///
    /// - Returns: the records whose local edits were queued, now dropped with the zone.
    @discardableResult
    func purge(_ zoneID: ZoneID) async throws -> [RecordModel.Record.ID] {
        try await writer.write { db in
            guard let zone = try Self.zoneKey(zoneID, in: db) else { return [] }
            let dropped = try String.fetchAll(db, sql: "SELECT name FROM outbox WHERE zone_id = ? GROUP BY name ORDER BY MIN(id)", arguments: [zone])
                .map { RecordModel.Record.ID(recordName: $0, zoneID: zoneID) }
            for table in ["records", "refs", "search_tokens", "search_locations", "outbox", "share_permissions"] {
                try db.execute(sql: "DELETE FROM \(table) WHERE zone_id = ?", arguments: [zone])
            }
            try db.execute(sql: "DELETE FROM zones WHERE id = ?", arguments: [zone])
            return dropped
        }
    }

    /// The saved database change token.
    func databaseToken() async throws -> ServerChangeToken? {
        try await writer.read { db in
            try String.fetchOne(db, sql: "SELECT value FROM state WHERE key = 'databaseToken'").map(ServerChangeToken.init)
        }
    }

    /// Saves the database change token (after the zones it covers were fetched).
    func setDatabaseToken(_ token: ServerChangeToken) async throws {
        try await writer.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO state(key, value) VALUES ('databaseToken', ?)", arguments: [token.rawValue])
        }
    }

    /// A change to the outbox: its size and newest entry. The sync engine observes it to send
    /// local edits as they are made.
    func outboxState() -> ValueObservation<ValueReducers.Fetch<[Int64]>> {
        ValueObservation.tracking { db in
            try Int64.fetchAll(db, sql: "SELECT COUNT(*) FROM outbox UNION ALL SELECT IFNULL(MAX(id), 0) FROM outbox")
        }
    }
}
