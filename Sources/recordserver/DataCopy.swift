import ArgumentParser
import Foundation
import Logging
import RecordPostgresEngine
import RecordSQL
import RecordSQLiteEngine

/// `recordserver data …`: moving data between engines.
struct DataCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "data",
        abstract: "Back up, restore, and move a deployment's data between storage engines.",
        subcommands: [Backup.self, Restore.self, NewHistory.self, Copy.self]
    )

    /// `data copy --from DIR --to URL`: a SQLite data directory into PostgreSQL.
    struct Copy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy a SQLite data directory into a PostgreSQL database.",
            discussion: """
                Copies everything: users with their token hashes and server-to-server keys, containers, databases and zones with \
                their identities and feed positions, the schema, records with their change tags, \
                references and tombstones. Tokens and change tags issued before the copy stay valid \
                after it. The copy is one transaction: if it is interrupted, the target is left as it \
                was and the copy can simply be run again. Stop the servers of the source first.
                """
        )

        @Option(help: "The SQLite data directory to copy (holding records.sqlite).")
        var from: String

        @Option(help: ArgumentHelp("The PostgreSQL database to copy into: postgres://USER@HOST:PORT/DATABASE.", valueName: "url"))
        var to: String

        @Flag(help: "Replace whatever the target holds (otherwise a target holding data is refused).")
        var replace = false

        func run() async throws {
            do {
                try await copy()
            } catch let error as CopyError {
                FileHandle.standardError.write(Data("recordserver: \(error.description)\n".utf8))
                throw ExitCode.failure
            } catch let error as PostgresEngineError {
                FileHandle.standardError.write(Data("recordserver: \(error.description)\n".utf8))
                throw ExitCode.failure
            }
        }

        private func copy() async throws {
            let path = (from as NSString).appendingPathComponent("records.sqlite")
            guard FileManager.default.fileExists(atPath: path) else {
                throw CopyError("\(from) holds no records.sqlite: not a data directory")
            }
            let lock = try ServerLock(directory: from)
            guard lock.tryExclusive() else {
                throw CopyError("a running recordserver holds \(from) open; stop it before copying")
            }
            let location = try PostgresLocation(url: to)
            var logger = Logger(label: "recordserver.copy")
            logger.logLevel = .warning
            let source = try SQLiteEngine(path: path)
            let target = try await PostgresCopyTarget.open(location, logger: logger)
            if !replace, try await !target.isEmpty() {
                await target.close()
                throw CopyError("\(location) already holds data; give --replace to replace it")
            }
            let progress = Progress()
            do {
                try await source.readTables { reader in
                    try target.begin(replacing: replace)
                    for table in Self.tables {
                        try Self.copy(table, from: reader, to: target, progress: progress)
                    }
                    try Self.copyAssetBytes(of: try reader.blobs(), directory: from, to: target, progress: progress)
                    try target.commit()
                }
            } catch {
                await target.close()
                throw error
            }
            await target.close()
            progress.say("copied \(from) to \(location)")
        }

        /// Every table carried as it is, in the order ``PostgresCopyTarget/tables`` fills them.
        static let tables: [TableDefinition] = StorageSchema.tables(in: .sqlite).filter(\.copied)

        /// The columns of the asset chunks the bytes of blobs are copied into.
        static let chunkColumns = StorageSchema.assetChunks.columns.map(PostgresCopyTarget.Column.init)

        /// Copies the bytes of every blob (files under `assets/`) into PostgreSQL's chunks.
        static func copyAssetBytes(of blobs: [StoredBlob], directory: String, to target: PostgresCopyTarget, progress: Progress) throws {
            progress.say("asset bytes: 0 of \(blobs.count)")
            for (done, checksum) in blobs.map(\.checksum).enumerated() {
                let path = "\(directory)/assets/\(checksum.prefix(2))/\(checksum)"
                guard let handle = FileHandle(forReadingAtPath: path) else {
                    throw CopyError("the bytes of asset \(checksum) are missing (\(path))")
                }
                defer { try? handle.close() }
                var index: Int64 = 0
                var batch: [[SQLValue]] = []
                while let piece = try handle.read(upToCount: PostgresCopyTarget.assetChunkSize), !piece.isEmpty {
                    batch.append([.text(checksum), .integer(index), .blob(piece)])
                    index += 1
                    if batch.count == 16 {
                        try target.insert(batch, into: StorageSchema.assetChunks.name, columns: chunkColumns)
                        batch.removeAll()
                    }
                }
                try target.insert(batch, into: StorageSchema.assetChunks.name, columns: chunkColumns)
                progress.say("asset bytes: \(done + 1) of \(blobs.count)", everySecond: true)
            }
            progress.say("asset bytes: \(blobs.count) of \(blobs.count)")
        }

        /// Copies one table in batches, saying how far it got.
        static func copy(_ table: TableDefinition, from reader: SQLiteTableReader, to target: PostgresCopyTarget, progress: Progress) throws {
            let total = try reader.count(of: table)
            let columns = table.columns.map(PostgresCopyTarget.Column.init)
            var copied = 0
            progress.say("\(table.name): 0 of \(total)")
            // PostgreSQL takes at most 65,535 parameters a statement.
            try reader.rows(of: table, batchSize: 60_000 / columns.count) { batch in
                try target.insert(batch, into: table.name, columns: columns)
                copied += batch.count
                progress.say("\(table.name): \(copied) of \(total)", everySecond: true)
            }
            progress.say("\(table.name): \(copied) of \(total)")
        }
    }
}

/// Progress lines on standard error, at most one a second when asked.
final class Progress: @unchecked Sendable {
    private var last = ContinuousClock.now

    func say(_ line: String, everySecond: Bool = false) {
        if everySecond, ContinuousClock.now - last < .seconds(1) { return }
        last = ContinuousClock.now
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

/// A reason the copy cannot start.
struct CopyError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A lock on `DIR/recordserver.lock`: every server serving a SQLite data directory holds it
/// shared, and `data copy` needs it alone, so that a copy never reads a directory a server is
/// writing. The system releases it when the process ends, however it ends.
final class ServerLock {
    private let descriptor: Int32

    init(directory: String) throws {
        let path = (directory as NSString).appendingPathComponent("recordserver.lock")
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw CopyError("cannot open \(path): \(String(cString: strerror(errno)))") }
    }

    deinit { close(descriptor) }

    /// Takes the lock alone, if nothing holds it.
    func tryExclusive() -> Bool { flock(descriptor, LOCK_EX | LOCK_NB) == 0 }

    /// Takes the lock shared, unless a copy holds it alone.
    func tryShared() -> Bool { flock(descriptor, LOCK_SH | LOCK_NB) == 0 }
}
