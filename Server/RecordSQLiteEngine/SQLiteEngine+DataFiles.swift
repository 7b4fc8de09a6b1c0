import Foundation
import GRDB
import RecordSQL

/// What `recordserver data backup`, `data restore` and `data copy` read of a SQLite database
/// file, so that nothing outside the storage targets speaks SQL: a snapshot, its blobs, its
/// integrity, and its tables' rows as ``StorageSchema`` describes them.
extension SQLiteEngine {
    /// Copies the database file at `path` into a new file `snapshot` with SQLite's online
    /// backup: one consistent snapshot while servers go on writing. The file is opened as it
    /// is, never migrated: the server serving it may be of another release.
    public static func backUp(_ path: String, to snapshot: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        let source = try DatabasePool(path: path, configuration: configuration)
        let copy = try DatabaseQueue(path: snapshot)
        try source.backup(to: copy)
        try copy.close()
        try source.close()
    }

    /// What SQLite's integrity check finds wrong with the database file at `path` (nothing if
    /// it is whole).
    public static func integrityProblems(inFile path: String) throws -> [String] {
        let check = try DatabaseQueue(path: path).read { try String.fetchAll($0, sql: "PRAGMA integrity_check") }
        return check == ["ok"] ? [] : check
    }

    /// The blobs the database file at `path` names, by checksum (none in a file from before
    /// assets), the file opened as it is.
    public static func blobs(inFile path: String) throws -> [StoredBlob] {
        try DatabaseQueue(path: path).read { db in
            guard try db.tableExists(StorageSchema.assetBlobs.name) else { return [] }
            return try StoredBlob.read(from: db)
        }
    }

    /// Reads the engine's tables in one snapshot (`data copy`): `body` is given a reader of
    /// their rows.
    public func readTables<T: Sendable>(_ body: @escaping @Sendable (SQLiteTableReader) throws -> T) async throws -> T {
        try await pool.read { db in try body(SQLiteTableReader(db: db)) }
    }

    /// Checkpoints the whole write-ahead log into the database file and closes the engine.
    public func close(truncatingLog: Bool) async throws {
        if truncatingLog { _ = try await pool.writeWithoutTransaction { try $0.checkpoint(.truncate) } }
        try pool.close()
    }
}

/// A blob of asset bytes a database names.
public struct StoredBlob: Sendable {
    public var checksum: String
    public var size: Int64
    /// No record holds it any more; its bytes may be collected.
    public var orphaned: Bool

    static func read(from db: Database) throws -> [StoredBlob] {
        try Row.fetchAll(db, sql: "SELECT checksum, size, orphaned_at IS NOT NULL FROM asset_blobs ORDER BY checksum")
            .map { StoredBlob(checksum: $0[0], size: $0[1], orphaned: $0[2]) }
    }
}

/// The rows of a SQLite database's tables, read in one snapshot (``SQLiteEngine/readTables(_:)``).
public struct SQLiteTableReader {
    let db: Database

    /// How many rows `table` holds.
    public func count(of table: RecordSQL.TableDefinition) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table.name)") ?? 0
    }

    /// The rows of `table`, every column of its description in order, in its key's order, handed
    /// on in batches of at most `batchSize` rows.
    public func rows(of table: RecordSQL.TableDefinition, batchSize: Int, _ each: ([[SQLValue]]) throws -> Void) throws {
        let columns = table.columns.map(\.name)
        let key = table.primaryKey.columns(in: .sqlite).joined(separator: ", ")
        let cursor = try Row.fetchCursor(db, sql: "SELECT \(columns.joined(separator: ", ")) FROM \(table.name) ORDER BY \(key)")
        var batch: [[SQLValue]] = []
        batch.reserveCapacity(batchSize)
        while let row = try cursor.next() {
            batch.append((0..<columns.count).map { SQLValue(row[$0] as DatabaseValue) })
            if batch.count == batchSize {
                try each(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        if !batch.isEmpty { try each(batch) }
    }

    /// The blobs the database names, by checksum.
    public func blobs() throws -> [StoredBlob] {
        try StoredBlob.read(from: db)
    }
}
