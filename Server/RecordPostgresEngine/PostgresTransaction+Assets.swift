import Foundation
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import RecordModel
import RecordSQL
import RecordStorage
import RecordStorageSQL

/// Asset bytes as rows of chunks (256 KiB each) in the database every server shares.
struct PostgresAssetChunks: AssetByteStore {
    let engine: PostgresEngine
    static let chunkSize = StorageSchema.assetChunkSize

    func store(file: URL, checksum: String, size: Int64, now: Int64, receipt: AssetReceipt) async throws {
        defer { try? FileManager.default.removeItem(at: file) }
        try await engine.writeTransaction { transaction in
            let inserted = try transaction.insertAssetBlob(checksum, size: size, now: now)
            try transaction.insertAssetReceipt(receipt)
            guard inserted else { return .commit(()) }
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
        try await engine.readTransaction { transaction in
            try transaction.assetBlobStored(checksum)
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
