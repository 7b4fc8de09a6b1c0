import Foundation
import RecordModel
import RecordSQL
import RecordStorage

extension SQLStorageTransaction {
    public func assetKeys() throws -> [AssetKey] {
        try fetch("SELECT id, secret, created_at FROM asset_keys").map { AssetKey(id: try $0.string(0), secret: try $0.data(1), createdAt: try $0.int64(2)) }
    }

    public func insertAssetKey(_ key: AssetKey) throws {
        try run("INSERT INTO asset_keys(id, secret, created_at) VALUES (\(key.id), \(key.secret), \(key.createdAt))")
    }

    public func deleteAssetKeys(except kept: [String]) throws {
        try run("DELETE FROM asset_keys WHERE NOT (\(SQLStatement.member("id", of: kept, in: dialect)))")
    }

    /// Stores a blob's row, orphaned since `now` until a record holds it, unless it is stored
    /// already; answers whether it was new (its bytes are then the engine's to store).
    public func insertAssetBlob(_ checksum: String, size: Int64, now: Int64) throws -> Bool {
        try run("INSERT INTO asset_blobs(checksum, size, orphaned_at) VALUES (\(checksum), \(size), \(now)) ON CONFLICT (checksum) DO NOTHING") == 1
    }

    /// Whether a blob's row is stored.
    public func assetBlobStored(_ checksum: String) throws -> Bool {
        try !fetch("SELECT 1 FROM asset_blobs WHERE checksum = \(checksum)").isEmpty
    }

    public func insertAssetReceipt(_ receipt: AssetReceipt) throws {
        try run("""
            INSERT INTO asset_receipts(receipt, checksum, size, user_id, container, environment, kind, zone_name, record_type, field, created_at)
            VALUES (\(receipt.receipt), \(receipt.checksum), \(receipt.size), \(receipt.userKey), \(receipt.container), \(receipt.environment),
                    \(receipt.kind), \(receipt.zoneName), \(receipt.recordType), \(receipt.field), \(receipt.createdAt))
            """)
    }

    public func assetReceipt(_ receipt: String) throws -> AssetReceipt? {
        try fetch("""
            SELECT checksum, size, user_id, container, environment, kind, zone_name, record_type, field, created_at, bound_zone, bound_record, bound_field
            FROM asset_receipts WHERE receipt = \(receipt)
            """).first.map { row in
            var binding: AssetBinding?
            if let zone = try row.optionalInt64(10), let record = try row.optionalString(11), let field = try row.optionalString(12) {
                binding = AssetBinding(zone: zone, record: record, field: field)
            }
            return AssetReceipt(receipt: receipt, checksum: try row.string(0), size: try row.int64(1), userKey: try row.int64(2), container: try row.string(3),
                                environment: try row.string(4), kind: try row.string(5), zoneName: try row.string(6), recordType: try row.string(7),
                                field: try row.string(8), createdAt: try row.int64(9), bound: binding)
        }
    }

    public func bindAssetReceipt(_ receipt: String, to binding: AssetBinding) throws {
        try run("UPDATE asset_receipts SET bound_zone = \(binding.zone), bound_record = \(binding.record), bound_field = \(binding.field) WHERE receipt = \(receipt)")
    }

    /// The row lock the update takes makes a concurrent collection of the blob wait, then see it held.
    public func adoptAssetBlob(_ checksum: String) throws -> Bool {
        try run("UPDATE asset_blobs SET orphaned_at = NULL WHERE checksum = \(checksum)") == 1
    }

    public func replaceAssetRefs(inZone zone: Int64, record: String, refs: [(field: String, checksum: String)]) throws {
        try run("DELETE FROM asset_refs WHERE record_name = \(record) AND zone_id = \(zone)")
        for ref in refs {
            try run("INSERT INTO asset_refs(zone_id, record_name, field, checksum) VALUES (\(zone), \(record), \(ref.field), \(ref.checksum)) ON CONFLICT DO NOTHING")
        }
    }

    public func sweepAssetRefs(now: Int64) throws {
        try run("DELETE FROM asset_refs WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.name = asset_refs.record_name AND r.zone_id = asset_refs.zone_id)")
        try run("""
            UPDATE asset_blobs SET orphaned_at = \(now) WHERE orphaned_at IS NULL
                AND NOT EXISTS (SELECT 1 FROM asset_refs a WHERE a.checksum = asset_blobs.checksum)
            """)
    }

    /// `orphaned_at` is checked again on a row a concurrent adoption changed (it waits for the
    /// row's lock), so a blob adopted meanwhile stays.
    public func collectAssetBlobs(orphanedBefore cutoff: Int64) throws -> [String] {
        let gone = try fetch("""
            DELETE FROM asset_blobs WHERE orphaned_at IS NOT NULL AND orphaned_at < \(cutoff)
                AND NOT EXISTS (SELECT 1 FROM asset_refs a WHERE a.checksum = asset_blobs.checksum)
            RETURNING checksum
            """).map { try $0.string(0) }.sorted()
        if !gone.isEmpty {
            try run("DELETE FROM asset_receipts WHERE \(SQLStatement.member("checksum", of: gone, in: dialect))")
            try deleteBlobChunks(gone)
        }
        return gone
    }

    public func assetChecksums(inZones zones: [Int64], receiptsOfUser user: Int64) throws -> [String] {
        try fetch("""
            SELECT checksum FROM asset_receipts WHERE user_id = \(user)
            UNION SELECT a.checksum FROM records r JOIN asset_refs a ON a.record_name = r.name AND a.zone_id = r.zone_id
                WHERE \(SQLStatement.member("r.zone_id", of: zones, in: dialect))
            ORDER BY 1
            """).map { try $0.string(0) }
    }

    public func collectUnheldAssetBlobs(_ checksums: [String]) throws -> [String] {
        guard !checksums.isEmpty else { return [] }
        let gone = try fetch("""
            DELETE FROM asset_blobs WHERE \(SQLStatement.member("checksum", of: checksums, in: dialect))
                AND NOT EXISTS (SELECT 1 FROM asset_refs a WHERE a.checksum = asset_blobs.checksum)
                AND NOT EXISTS (SELECT 1 FROM asset_receipts r WHERE r.checksum = asset_blobs.checksum)
            RETURNING checksum
            """).map { try $0.string(0) }.sorted()
        try deleteBlobChunks(gone)
        return gone
    }

    /// Removes the bytes of blobs whose rows went, where the engine keeps them in its tables
    /// (``StorageSchema/assetChunks``; the SQLite engine's files go after the commit).
    func deleteBlobChunks(_ checksums: [String]) throws {
        guard !checksums.isEmpty, StorageSchema.assetChunks.dialects.contains(dialect) else { return }
        try run("DELETE FROM \(raw: StorageSchema.assetChunks.name) WHERE \(SQLStatement.member("checksum", of: checksums, in: dialect))")
    }
}
