import Foundation
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import RecordModel
import RecordRules

extension PostgresTransaction {
    func assetKeys() throws -> [AssetKey] {
        try rows("SELECT id, secret, created_at FROM asset_keys").map {
            let (id, secret, createdAt) = try $0.decode((String, Data, Int64).self)
            return AssetKey(id: id, secret: secret, createdAt: createdAt)
        }
    }

    func insertAssetKey(_ key: AssetKey) throws {
        try execute("INSERT INTO asset_keys(id, secret, created_at) VALUES (\(key.id), \(key.secret), \(key.createdAt))")
    }

    func deleteAssetKeys(except kept: [String]) throws {
        try execute("DELETE FROM asset_keys WHERE NOT (id = ANY(\(kept)))")
    }

    func insertAssetReceipt(_ receipt: AssetReceipt) throws {
        try execute("""
            INSERT INTO asset_receipts(receipt, checksum, size, user_id, container, environment, kind, zone_name, record_type, field, created_at)
            VALUES (\(receipt.receipt), \(receipt.checksum), \(receipt.size), \(receipt.userKey), \(receipt.container), \(receipt.environment),
                    \(receipt.kind), \(receipt.zoneName), \(receipt.recordType), \(receipt.field), \(receipt.createdAt))
            """)
    }

    func assetReceipt(_ receipt: String) throws -> AssetReceipt? {
        try rows("""
            SELECT checksum, size, user_id, container, environment, kind, zone_name, record_type, field, created_at, bound_zone, bound_record, bound_field
            FROM asset_receipts WHERE receipt = \(receipt)
            """).first.map { row in
            let (checksum, size, user, container, environment, kind, zoneName, recordType, field, createdAt, zone, record, boundField) =
                try row.decode((String, Int64, Int64, String, String, String, String, String, String, Int64, Int64?, String?, String?).self)
            var binding: AssetBinding?
            if let zone, let record, let boundField { binding = AssetBinding(zone: zone, record: record, field: boundField) }
            return AssetReceipt(receipt: receipt, checksum: checksum, size: size, userKey: user, container: container, environment: environment, kind: kind,
                                zoneName: zoneName, recordType: recordType, field: field, createdAt: createdAt, bound: binding)
        }
    }

    func bindAssetReceipt(_ receipt: String, to binding: AssetBinding) throws {
        try execute("UPDATE asset_receipts SET bound_zone = \(binding.zone), bound_record = \(binding.record), bound_field = \(binding.field) WHERE receipt = \(receipt)")
    }

    func adoptAssetBlob(_ checksum: String) throws -> Bool {
        // The row lock this takes makes a concurrent collection of the blob wait, then see it held.
        try execute("UPDATE asset_blobs SET orphaned_at = NULL WHERE checksum = \(checksum)") == 1
    }

    func replaceAssetRefs(inZone zone: Int64, record: String, refs: [(field: String, checksum: String)]) throws {
        try execute("DELETE FROM asset_refs WHERE record_name = \(record) AND zone_id = \(zone)")
        for ref in refs {
            try execute("""
                INSERT INTO asset_refs(zone_id, record_name, field, checksum) VALUES (\(zone), \(record), \(ref.field), \(ref.checksum))
                ON CONFLICT DO NOTHING
                """)
        }
    }

    func sweepAssetRefs(now: Int64) throws {
        try execute("DELETE FROM asset_refs a WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.name = a.record_name AND r.zone_id = a.zone_id)")
        try execute("""
            UPDATE asset_blobs b SET orphaned_at = \(now) WHERE orphaned_at IS NULL
                AND NOT EXISTS (SELECT 1 FROM asset_refs a WHERE a.checksum = b.checksum)
            """)
    }

    func collectAssetBlobs(orphanedBefore cutoff: Int64) throws -> [String] {
        // `orphaned_at` is checked again on a row a concurrent adoption changed (it waits for
        // the row's lock), so a blob adopted meanwhile stays.
        let gone = try rows("""
            DELETE FROM asset_blobs b WHERE orphaned_at IS NOT NULL AND orphaned_at < \(cutoff)
                AND NOT EXISTS (SELECT 1 FROM asset_refs a WHERE a.checksum = b.checksum)
            RETURNING checksum
            """).map { try $0.decode(String.self) }
        if !gone.isEmpty {
            try execute("DELETE FROM asset_receipts WHERE checksum = ANY(\(gone))")
            try execute("DELETE FROM asset_chunks WHERE checksum = ANY(\(gone))")
        }
        return gone
    }

    func assetChecksums(inZones zones: [Int64], receiptsOfUser user: Int64) throws -> [String] {
        try rows("""
            SELECT checksum FROM asset_receipts WHERE user_id = \(user)
            UNION SELECT a.checksum FROM records r JOIN asset_refs a ON a.record_name = r.name AND a.zone_id = r.zone_id WHERE r.zone_id = ANY(\(zones))
            ORDER BY 1
            """).map { try $0.decode(String.self) }
    }

    func collectUnheldAssetBlobs(_ checksums: [String]) throws -> [String] {
        guard !checksums.isEmpty else { return [] }
        let gone = try rows("""
            DELETE FROM asset_blobs b WHERE checksum = ANY(\(checksums))
                AND NOT EXISTS (SELECT 1 FROM asset_refs a WHERE a.checksum = b.checksum)
                AND NOT EXISTS (SELECT 1 FROM asset_receipts r WHERE r.checksum = b.checksum)
            RETURNING checksum
            """).map { try $0.decode(String.self) }
        if !gone.isEmpty {
            try execute("DELETE FROM asset_chunks WHERE checksum = ANY(\(gone))")
        }
        return gone
    }
}

/// Asset bytes as rows of chunks (256 KiB each) in the database every server shares.
struct PostgresAssetChunks: AssetByteStore {
    let engine: PostgresEngine
    static let chunkSize = 256 * 1024

    func store(file: URL, checksum: String, size: Int64, now: Int64, receipt: AssetReceipt) async throws {
        defer { try? FileManager.default.removeItem(at: file) }
        try await engine.write { transaction in
            let transaction = transaction as! PostgresTransaction
            let inserted = try transaction.execute("""
                INSERT INTO asset_blobs(checksum, size, orphaned_at) VALUES (\(checksum), \(size), \(now)) ON CONFLICT (checksum) DO NOTHING
                """)
            try transaction.insertAssetReceipt(receipt)
            guard inserted == 1 else { return .commit(()) }
            guard let handle = FileHandle(forReadingAtPath: file.path) else {
                throw RecordSyncError(.internalError, "the uploaded file is gone")
            }
            defer { try? handle.close() }
            var index: Int32 = 0
            while let piece = try handle.read(upToCount: Self.chunkSize), !piece.isEmpty {
                try transaction.execute("INSERT INTO asset_chunks(checksum, idx, bytes) VALUES (\(checksum), \(index), \(piece))")
                index += 1
            }
            return .commit(())
        }
    }

    func contains(_ checksum: String) async throws -> Bool {
        try await engine.read { transaction in
            try !(transaction as! PostgresTransaction).rows("SELECT 1 FROM asset_blobs WHERE checksum = \(checksum)").isEmpty
        }
    }

    /// Chunks read per statement: a megabyte held at a time, and the pool's connection held
    /// only while the statement runs, never while a slow client takes the bytes.
    static let chunksPerRead: Int32 = 4

    /// A statement per few chunks, each on a connection leased for it alone (no transaction, no
    /// hop to the engine's threads), its rows taken before the bytes are handed on.
    func read(_ checksum: String, range: Range<Int64>, _ each: (Data) async throws -> Void) async throws {
        guard !range.isEmpty else { return }
        let chunk = Int64(Self.chunkSize)
        var next = Int32(range.lowerBound / chunk)
        let last = Int32((range.upperBound - 1) / chunk)
        while next <= last {
            let from = next, upTo = min(last, next + Self.chunksPerRead - 1)
            let pieces: [(Int32, ByteBuffer)] = try await PostgresEngine.translatingErrors {
                let answer = try await engine.client.withConnection { connection in
                    try await connection.answering("""
                        SELECT idx, bytes FROM asset_chunks WHERE checksum = \(checksum) AND idx BETWEEN \(from) AND \(upTo) ORDER BY idx
                        """, logger: engine.logger).get()
                }
                return try answer.rows.map { try $0.decode((Int32, ByteBuffer).self) }
            }
            guard pieces.count == Int(upTo - from + 1) else { throw RecordSyncError(.notFound, "the asset's bytes are not stored") }
            for (index, bytes) in pieces {
                let start = Int64(index) * chunk
                let lower = Int(max(range.lowerBound - start, 0)), upper = Int(min(range.upperBound - start, Int64(bytes.readableBytes)))
                if lower < upper, let piece = bytes.getData(at: bytes.readerIndex + lower, length: upper - lower) { try await each(piece) }
            }
            next = upTo + 1
        }
    }

    func removeCollected(_ checksums: [String]) async throws {}
}
