import Foundation
import GRDB
import RecordModel
import RecordRules

extension SQLiteTransaction {
    func assetKeys() throws -> [AssetKey] {
        try Row.fetchAll(db, sql: "SELECT id, secret, created_at FROM asset_keys").map { AssetKey(id: $0[0], secret: $0[1], createdAt: $0[2]) }
    }

    func insertAssetKey(_ key: AssetKey) throws {
        try db.execute(sql: "INSERT INTO asset_keys(id, secret, created_at) VALUES (?, ?, ?)", arguments: [key.id, key.secret, key.createdAt])
    }

    func deleteAssetKeys(except kept: [String]) throws {
        try db.execute(sql: "DELETE FROM asset_keys WHERE id NOT IN (SELECT value FROM json_each(?))",
                       arguments: [String(decoding: try JSONEncoder().encode(kept), as: UTF8.self)])
    }

    func insertAssetReceipt(_ receipt: AssetReceipt) throws {
        try db.execute(sql: """
            INSERT INTO asset_receipts(receipt, checksum, size, user_id, container, environment, kind, zone_name, record_type, field, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [receipt.receipt, receipt.checksum, receipt.size, receipt.userKey, receipt.container, receipt.environment,
                             receipt.kind, receipt.zoneName, receipt.recordType, receipt.field, receipt.createdAt])
    }

    func assetReceipt(_ receipt: String) throws -> AssetReceipt? {
        try Row.fetchOne(db, sql: """
            SELECT checksum, size, user_id, container, environment, kind, zone_name, record_type, field, created_at, bound_zone, bound_record, bound_field
            FROM asset_receipts WHERE receipt = ?
            """, arguments: [receipt]).map { row in
            let zone: Int64? = row[10], record: String? = row[11], field: String? = row[12]
            return AssetReceipt(receipt: receipt, checksum: row[0], size: row[1], userKey: row[2], container: row[3], environment: row[4], kind: row[5],
                                zoneName: row[6], recordType: row[7], field: row[8], createdAt: row[9],
                                bound: zone.flatMap { zone in record.flatMap { record in field.map { AssetBinding(zone: zone, record: record, field: $0) } } })
        }
    }

    func bindAssetReceipt(_ receipt: String, to binding: AssetBinding) throws {
        try db.execute(sql: "UPDATE asset_receipts SET bound_zone = ?, bound_record = ?, bound_field = ? WHERE receipt = ?",
                       arguments: [binding.zone, binding.record, binding.field, receipt])
    }

    func adoptAssetBlob(_ checksum: String) throws -> Bool {
        try db.execute(sql: "UPDATE asset_blobs SET orphaned_at = NULL WHERE checksum = ?", arguments: [checksum])
        return db.changesCount == 1
    }

    func replaceAssetRefs(inZone zone: Int64, record: String, refs: [(field: String, checksum: String)]) throws {
        try db.execute(sql: "DELETE FROM asset_refs WHERE record_name = ? AND zone_id = ?", arguments: [record, zone])
        for ref in refs {
            try db.execute(sql: "INSERT OR IGNORE INTO asset_refs(zone_id, record_name, field, checksum) VALUES (?, ?, ?, ?)",
                           arguments: [zone, record, ref.field, ref.checksum])
        }
    }

    func sweepAssetRefs(now: Int64) throws {
        try db.execute(sql: """
            DELETE FROM asset_refs WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.name = asset_refs.record_name AND r.zone_id = asset_refs.zone_id);
            UPDATE asset_blobs SET orphaned_at = ? WHERE orphaned_at IS NULL
                AND NOT EXISTS (SELECT 1 FROM asset_refs a WHERE a.checksum = asset_blobs.checksum);
            """, arguments: [now])
    }

    func collectAssetBlobs(orphanedBefore cutoff: Int64) throws -> [String] {
        let gone = try String.fetchAll(db, sql: """
            SELECT checksum FROM asset_blobs WHERE orphaned_at IS NOT NULL AND orphaned_at < ?
                AND NOT EXISTS (SELECT 1 FROM asset_refs a WHERE a.checksum = asset_blobs.checksum)
            """, arguments: [cutoff])
        for checksum in gone {
            try db.execute(sql: "DELETE FROM asset_blobs WHERE checksum = ?", arguments: [checksum])
            try db.execute(sql: "DELETE FROM asset_receipts WHERE checksum = ?", arguments: [checksum])
        }
        return gone
    }
}

extension SQLiteTransaction {
    func assetChecksums(inZones zones: [Int64], receiptsOfUser user: Int64) throws -> [String] {
        var checksums = Set(try String.fetchAll(db, sql: "SELECT checksum FROM asset_receipts WHERE user_id = ?", arguments: [user]))
        for zone in zones {
            checksums.formUnion(try String.fetchAll(db, sql: """
                SELECT a.checksum FROM records r JOIN asset_refs a ON a.record_name = r.name AND a.zone_id = r.zone_id WHERE r.zone_id = ?
                """, arguments: [zone]))
        }
        return checksums.sorted()
    }

    func collectUnheldAssetBlobs(_ checksums: [String]) throws -> [String] {
        var gone: [String] = []
        for checksum in checksums {
            try db.execute(sql: """
                DELETE FROM asset_blobs WHERE checksum = ?1
                    AND NOT EXISTS (SELECT 1 FROM asset_refs WHERE checksum = ?1) AND NOT EXISTS (SELECT 1 FROM asset_receipts WHERE checksum = ?1)
                """, arguments: [checksum])
            if db.changesCount > 0 { gone.append(checksum) }
        }
        return gone
    }
}

/// Asset bytes as files named by their SHA-256 under one directory (`ab/abcdef…`). A file is
/// moved into place, and removed, inside a write transaction that checks its blob's row, so a
/// collection never removes the bytes of a blob stored again meanwhile.
final class SQLiteAssetFiles: AssetByteStore, @unchecked Sendable {
    let directory: String
    let pool: DatabasePool

    init(directory: String, pool: DatabasePool) {
        self.directory = directory
        self.pool = pool
    }

    func path(of checksum: String) -> String {
        "\(directory)/\(checksum.prefix(2))/\(checksum)"
    }

    func store(file: URL, checksum: String, size: Int64, now: Int64, receipt: AssetReceipt) async throws {
        let target = path(of: checksum)
        try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try await pool.write { db in
            try db.execute(sql: "INSERT INTO asset_blobs(checksum, size, orphaned_at) VALUES (?, ?, ?) ON CONFLICT(checksum) DO NOTHING",
                           arguments: [checksum, size, now])
            try SQLiteTransaction(db).insertAssetReceipt(receipt)
            if FileManager.default.fileExists(atPath: target) {
                try? FileManager.default.removeItem(at: file)
            } else {
                guard rename(file.path, target) == 0 else {
                    throw RecordSyncError(.internalError, "could not store the asset's bytes (errno \(errno))")
                }
                // The name is durable once the directory is.
                let descriptor = open((target as NSString).deletingLastPathComponent, O_RDONLY)
                if descriptor >= 0 { fsync(descriptor); close(descriptor) }
            }
        }
    }

    func contains(_ checksum: String) async throws -> Bool {
        FileManager.default.fileExists(atPath: path(of: checksum))
    }

    func read(_ checksum: String, range: Range<Int64>, _ each: (Data) async throws -> Void) async throws {
        guard let handle = FileHandle(forReadingAtPath: path(of: checksum)) else {
            throw RecordSyncError(.notFound, "the asset's bytes are not stored")
        }
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(range.lowerBound))
        var left = range.count
        while left > 0 {
            let piece = try handle.read(upToCount: min(left, 256 * 1024)) ?? Data()
            if piece.isEmpty { throw RecordSyncError(.internalError, "the asset's file is shorter than its size") }
            left -= piece.count
            try await each(piece)
        }
    }

    func removeCollected(_ checksums: [String]) async throws {
        for checksum in checksums {
            let target = path(of: checksum)
            try await pool.write { db in
                let stored = try Bool.fetchOne(db, sql: "SELECT 1 FROM asset_blobs WHERE checksum = ?", arguments: [checksum]) ?? false
                if !stored { try? FileManager.default.removeItem(atPath: target) }
            }
        }
    }
}
