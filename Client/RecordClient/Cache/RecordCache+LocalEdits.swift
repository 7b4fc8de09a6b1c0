import Foundation
import GRDB
import RecordModel
import RecordSQL

extension RecordCache {
    /// Saves a record locally and queues it for sending, in one transaction.
    ///
    /// The fields that differ from the cached copy (added, changed or removed) are remembered
    /// as the edit's changed keys: on a conflict, the default policy re-applies exactly those
    /// onto the server's record.
    ///
    /// - Returns: the record as cached (its change tag is the server version it is based on).
    /// - Throws: `BAD_REQUEST` for a bad record or field name.
    @discardableResult
    public func save(_ record: RecordModel.Record) async throws -> RecordModel.Record {
        if let problem = NameRules.problem(withName: record.recordName, kind: "recordName") ?? NameRules.problem(withName: record.recordType, kind: "recordType") {
            throw RecordSyncError(.badRequest, problem, recordName: record.recordName)
        }
        for field in record.fields.keys {
            if let problem = NameRules.problem(withFieldName: field) { throw RecordSyncError(.badRequest, problem, recordName: record.recordName) }
        }
        let record = try keepingLocalAssets(record)
        do {
            return try await saveKept(record)
        } catch {
            forgetLocalAssets(of: record)
            throw error
        }
    }

    private func saveKept(_ record: RecordModel.Record) async throws -> RecordModel.Record {
        let sharedDatabase = self.sharedDatabase
        return try await writer.write { db in
            let zone = try Self.zoneKeyCreating(record.recordID.zoneID, in: db)
            let cached = try Self.fetchRecord(record.recordID, in: db)
            if sharedDatabase { try Self.checkParticipantEdit(cached == nil ? .create : .write, record.recordName, zone: zone, in: db) }
            let previous = cached?.record.fields ?? [:]
            let changed = Set(previous.keys).union(record.fields.keys).filter { previous[$0] != record.fields[$0] }
            let now = Int64((Date().timeIntervalSince1970 * 1000).rounded())
            var local = record
            local.zoneID = record.recordID.zoneID
            local.recordChangeTag = cached?.record.recordChangeTag
            local.created = cached?.record.created ?? Stamp(timestamp: now, userRecordName: "")
            local.modified = Stamp(timestamp: now, userRecordName: cached?.record.modified?.userRecordName ?? "")
            try Self.store(local, zone: zone, tag: local.recordChangeTag, serverRecord: cached?.serverRecord, in: db)
            let keys = String(decoding: try JSONEncoder().encode(changed.sorted()), as: UTF8.self)
            try db.execute(sql: "INSERT INTO outbox(zone_id, name, kind, changed_keys) VALUES (?, ?, 'save', ?)",
                           arguments: [zone, record.recordName, keys])
            return local
        }
    }

    /// Deletes a record locally and queues the delete, in one transaction. On the server the
    /// delete cascades; the cascaded records leave the cache on the next fetch.
    public func delete(_ id: RecordID) async throws {
        let sharedDatabase = self.sharedDatabase
        try await writer.write { db in
            let zone = try Self.zoneKeyCreating(id.zoneID, in: db)
            if sharedDatabase { try Self.checkParticipantEdit(.write, id.recordName, zone: zone, in: db) }
            try Self.remove(id.recordName, zone: zone, in: db)
            try db.execute(sql: "INSERT INTO outbox(zone_id, name, kind) VALUES (?, ?, 'delete')", arguments: [zone, id.recordName])
        }
    }

    /// In a shared database's cache, refuses an edit the server would refuse for the share's
    /// permission, with the server's error (``RecordSyncError/participantRefused(_:recordName:user:share:sharePermission:)``):
    /// in a zone shared whole read-only, or in a zone whose record shares the user takes part
    /// in are all read-only. Where the cache does not know (no share record fetched yet, or
    /// record shares of both permissions) the edit is queued and the server decides.
    static func checkParticipantEdit(_ permission: SchemaPermission, _ recordName: String, zone: Int64, in db: SQLDatabase) throws {
        let shares = try Row.fetchAll(db.cachedStatement(sql: "SELECT share, permission FROM share_permissions WHERE zone_id = ? ORDER BY share"), arguments: [zone])
            .map { (share: $0[0] as String, permission: SharePermission(rawValue: $0[1]) ?? .unknown) }
        let governing = shares.first { $0.share == ShareInfo.zoneShareName } ?? (shares.allSatisfy { $0.permission == .readOnly } ? shares.first : nil)
        guard let governing, governing.permission != .readWrite else { return }
        let user = try String.fetchOne(db, sql: "SELECT value FROM state WHERE key = 'userName'") ?? ""
        throw RecordSyncError.participantRefused(permission, recordName: recordName, user: user, share: governing.share, sharePermission: governing.permission)
    }

    /// Keeps the user's name, as the server's refusals name it (``checkParticipantEdit(_:_:zone:in:)``).
    func setUserName(_ name: String) async throws {
        try await writer.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO state(key, value) VALUES ('userName', ?)", arguments: [name])
        }
    }

    /// Whether the user's name is kept.
    func hasUserName() async throws -> Bool {
        try await writer.read { db in try Bool.fetchOne(db, sql: "SELECT 1 FROM state WHERE key = 'userName'") ?? false }
    }

    /// Where copies of the files of assets waiting to be uploaded are kept.
    var pendingAssetDirectory: URL { assetDirectory.appendingPathComponent("pending") }
    /// Where fetched assets are downloaded.
    var downloadedAssetDirectory: URL { assetDirectory.appendingPathComponent("downloads") }

    /// `record` with the file of each asset that waits to be uploaded copied into
    /// ``pendingAssetDirectory`` (synced to disk before the edit is queued, so the edit survives
    /// a crash and the app may remove or change its own file) and the asset pointing at the copy.
    func keepingLocalAssets(_ record: RecordModel.Record) throws -> RecordModel.Record {
        var record = record
        let pending = pendingAssetDirectory.standardizedFileURL
        func kept(_ value: FieldValue) throws -> FieldValue {
            guard case .asset(let json) = value, let file = Asset(json).localFile else { return value }
            if file.standardizedFileURL.deletingLastPathComponent() == pending { return value }
            try FileManager.default.createDirectory(at: pending, withIntermediateDirectories: true)
            let copy = pending.appendingPathComponent(UUID().uuidString)
            try FileManager.default.copyItem(at: file, to: copy)
            for path in [copy.path, pending.path] {
                let descriptor = open(path, O_RDONLY)
                if descriptor >= 0 { fsync(descriptor); close(descriptor) }
            }
            return Asset(fileURL: copy).fieldValue
        }
        for (field, value) in record.fields {
            switch value {
            case .asset: record.fields[field] = try kept(value)
            case .list(.asset, let elements): record.fields[field] = .list(.asset, try elements.map(kept))
            default: continue
            }
        }
        return record
    }

    /// Removes the kept copies of a sent record's assets (after the server acknowledged it).
    func forgetLocalAssets(of record: RecordModel.Record) {
        let pending = pendingAssetDirectory.standardizedFileURL
        for value in record.fields.values {
            let elements: [FieldValue]
            if case .list(.asset, let list) = value { elements = list } else { elements = [value] }
            for element in elements {
                if case .asset(let json) = element, let file = Asset(json).localFile, file.standardizedFileURL.deletingLastPathComponent() == pending {
                    try? FileManager.default.removeItem(at: file)
                }
            }
        }
    }
}
