import Foundation
import GRDB
import RecordModel
import RecordStorage
import RecordStorageSQL

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
            let transaction = SQLiteTransaction(db)
            _ = try transaction.insertAssetBlob(checksum, size: size, now: now)
            try transaction.insertAssetReceipt(receipt)
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
                if try !SQLiteTransaction(db).assetBlobStored(checksum) { try? FileManager.default.removeItem(atPath: target) }
            }
        }
    }
}
