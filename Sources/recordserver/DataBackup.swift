import ArgumentParser
import Crypto
import Foundation
import RecordPostgresEngine
import RecordRules
import RecordSQLiteEngine

/// `data backup` and `data restore`: a SQLite data directory, assets included, as one file.
///
/// The file is a tar archive (ustar) holding `records.sqlite`, a consistent snapshot taken with
/// SQLite's online backup while servers go on writing, `assets/ab/abcdef…`, the bytes of every
/// asset blob that snapshot names, and last `SHA256SUMS` (as `sha256sum` writes it), which a
/// restore checks every file against. Asset files are never changed once written, so copying
/// them after the snapshot keeps the two consistent.
extension DataCommand {
    struct Backup: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Back up a SQLite data directory, assets included, into one file (a tar archive), while servers run.",
            discussion: """
                The database is copied with SQLite's online backup: one consistent snapshot, every batch \\
                acknowledged before the backup began included, whole; servers go on reading and writing \\
                meanwhile. Then the bytes of every asset that snapshot names are added. Restore with \\
                'recordserver data restore'. For PostgreSQL, see docs/deploying.md.
                """
        )

        @Option(help: "The SQLite data directory to back up (holding records.sqlite).")
        var data: String = ".recordserver"

        @Option(help: ArgumentHelp("The backup file to write (replaced if it exists).", valueName: "file"))
        var to: String

        func run() async throws {
            do {
                try backup()
            } catch let error as CopyError {
                FileHandle.standardError.write(Data("recordserver: \(error.description)\n".utf8))
                throw ExitCode.failure
            }
        }

        private func backup() throws {
            let path = (data as NSString).appendingPathComponent("records.sqlite")
            guard FileManager.default.fileExists(atPath: path) else {
                throw CopyError("\(data) holds no records.sqlite: not a data directory")
            }
            let staging = to + ".partial-\(UUID().uuidString)"
            let snapshot = staging + ".sqlite"
            defer {
                try? FileManager.default.removeItem(atPath: snapshot)
                try? FileManager.default.removeItem(atPath: staging)
            }
            try SQLiteEngine.backUp(path, to: snapshot)
            // Every blob the snapshot names; an orphaned one may have been collected since.
            let blobs = try SQLiteEngine.blobs(inFile: snapshot)
            guard FileManager.default.createFile(atPath: staging, contents: nil), let output = FileHandle(forWritingAtPath: staging) else {
                throw CopyError("cannot write \(staging)")
            }
            let archive = TarWriter(output)
            var sums = "\(try archive.add("records.sqlite", file: snapshot))  records.sqlite\n"
            var added = 0
            for blob in blobs {
                let name = "assets/\(blob.checksum.prefix(2))/\(blob.checksum)"
                let file = (data as NSString).appendingPathComponent(name)
                guard FileManager.default.fileExists(atPath: file) else {
                    if blob.orphaned { continue }
                    throw CopyError("the bytes of asset \(blob.checksum) are missing (\(file))")
                }
                sums += "\(try archive.add(name, file: file))  \(name)\n"
                added += 1
            }
            try archive.add("SHA256SUMS", data: Data(sums.utf8))
            try archive.finish()
            try output.synchronize()
            try output.close()
            if FileManager.default.fileExists(atPath: to) { try FileManager.default.removeItem(atPath: to) }
            try FileManager.default.moveItem(atPath: staging, toPath: to)
            FileHandle.standardError.write(Data("backed up \(data) to \(to) (the database and \(added) asset\(added == 1 ? "" : "s"))\n".utf8))
        }
    }

    struct Restore: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Restore a data directory from a file 'data backup' wrote. Stop the servers of the directory first.",
            discussion: """
                The backup is unpacked beside the directory and checked (SQLite's integrity check, and every \\
                asset's size and SHA-256) before it replaces anything. A directory holding data is refused \\
                unless --replace is given; a directory a server holds open is always refused.
                """
        )

        @Option(help: ArgumentHelp("The backup file.", valueName: "file"))
        var from: String

        @Option(help: "The SQLite data directory to restore into (created if missing).")
        var data: String = ".recordserver"

        @Flag(help: "Replace the directory's data (otherwise a directory holding data is refused).")
        var replace = false

        func run() async throws {
            do {
                try await restore()
            } catch let error as CopyError {
                FileHandle.standardError.write(Data("recordserver: \(error.description)\n".utf8))
                throw ExitCode.failure
            }
        }

        private func restore() async throws {
            guard let input = FileHandle(forReadingAtPath: from) else { throw CopyError("cannot read \(from)") }
            try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
            let lock = try ServerLock(directory: data)
            guard lock.tryExclusive() else { throw CopyError("a running recordserver holds \(data) open; stop it before restoring") }
            let database = (data as NSString).appendingPathComponent("records.sqlite")
            if !replace, FileManager.default.fileExists(atPath: database) {
                throw CopyError("\(data) already holds data; give --replace to replace it")
            }
            let staging = (data as NSString).appendingPathComponent("restoring-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(atPath: staging) }
            let digests = try TarReader(input).extract(into: staging)
            guard let sums = FileManager.default.contents(atPath: (staging as NSString).appendingPathComponent("SHA256SUMS")),
                  digests["records.sqlite"] != nil else {
                throw CopyError("\(from) holds no records.sqlite and SHA256SUMS: not a backup")
            }
            // Every file is whole: as SHA256SUMS, written last, says.
            var listed: [String: String] = [:]
            for line in String(decoding: sums, as: UTF8.self).split(separator: "\n") {
                let parts = line.split(separator: " ", maxSplits: 1)
                if parts.count == 2 { listed[parts[1].trimmingCharacters(in: .whitespaces)] = String(parts[0]) }
            }
            for (name, digest) in digests where name != "SHA256SUMS" {
                guard listed[name] == digest else { throw CopyError("the backup is damaged: \(name) is not as it was backed up") }
            }
            let restored = (staging as NSString).appendingPathComponent("records.sqlite")
            let problems = try SQLiteEngine.integrityProblems(inFile: restored)
            guard problems.isEmpty else { throw CopyError("the backup's database fails SQLite's integrity check: \(problems.prefix(5).joined(separator: "; "))") }
            let blobs = try SQLiteEngine.blobs(inFile: restored)
            for blob in blobs {
                let file = (staging as NSString).appendingPathComponent("assets/\(blob.checksum.prefix(2))/\(blob.checksum)")
                guard let bytes = FileManager.default.contents(atPath: file) else {
                    if blob.orphaned { continue }
                    throw CopyError("the backup lacks the bytes of asset \(blob.checksum)")
                }
                let digest = SHA256.hash(data: bytes).hex
                guard Int64(bytes.count) == blob.size, digest == blob.checksum else {
                    throw CopyError("the backup's bytes of asset \(blob.checksum) are damaged")
                }
            }
            // Clients may hold changes made after the backup: every zone starts a new history.
            let renewed: Int
            do {
                let engine = try SQLiteEngine(path: restored)
                renewed = try await RecordStore(engine: engine).startNewHistory()
                try await engine.close(truncatingLog: true)
            }
            // The data in place moves aside first, and comes back if the restore cannot finish;
            // it is removed only once the restored data is in place.
            let fileManager = FileManager.default
            let aside = (data as NSString).appendingPathComponent("replaced-\(UUID().uuidString)")
            try fileManager.createDirectory(atPath: aside, withIntermediateDirectories: true)
            let names = ["records.sqlite", "records.sqlite-wal", "records.sqlite-shm", "assets"]
            var movedAside: [String] = []
            var movedIn: [String] = []
            do {
                for name in names where fileManager.fileExists(atPath: (data as NSString).appendingPathComponent(name)) {
                    try fileManager.moveItem(atPath: (data as NSString).appendingPathComponent(name), toPath: (aside as NSString).appendingPathComponent(name))
                    movedAside.append(name)
                }
                for name in names where fileManager.fileExists(atPath: (staging as NSString).appendingPathComponent(name)) {
                    try fileManager.moveItem(atPath: (staging as NSString).appendingPathComponent(name), toPath: (data as NSString).appendingPathComponent(name))
                    movedIn.append(name)
                }
            } catch {
                for name in movedIn { try? fileManager.removeItem(atPath: (data as NSString).appendingPathComponent(name)) }
                for name in movedAside {
                    try? fileManager.moveItem(atPath: (aside as NSString).appendingPathComponent(name), toPath: (data as NSString).appendingPathComponent(name))
                }
                try? fileManager.removeItem(atPath: aside)
                throw CopyError("the restore could not put its files in place (the data before it is back): \(error)")
            }
            try fileManager.removeItem(atPath: aside)
            FileHandle.standardError.write(Data("restored \(from) into \(data); \(renewed) zone\(renewed == 1 ? "" : "s") start a new history (clients fetch them afresh)\n".utf8))
            withExtendedLifetime(lock) {}
        }
    }
}

extension DataCommand {
    /// `data new-history`: what a restore does to the feeds, for a database put back otherwise.
    struct NewHistory: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "new-history",
            abstract: "After restoring a PostgreSQL backup: make every zone start a new history, so that clients holding changes made after the backup fetch afresh.",
            discussion: """
                Every live zone becomes a new incarnation (its change tokens are CHANGE_TOKEN_EXPIRED), every \
                zone is reported changed in its database's feed, and feed numbers jump far ahead, so no change \
                tag or token of the lost time is valid again. 'data restore' does this itself. Run it with the \
                servers stopped.
                """
        )
        @OptionGroup var dataOptions: DataOptions

        func run() async throws {
            let store = try await openStore(dataOptions.configuration())
            let renewed = try await store.startNewHistory()
            print("\(renewed) zone\(renewed == 1 ? "" : "s") start a new history")
            await (store.engine as? PostgresEngine)?.shutdown()
        }
    }
}

/// Writes a ustar archive of regular files, one after another.
struct TarWriter {
    let output: FileHandle

    init(_ output: FileHandle) { self.output = output }

    /// Adds the file at `path` as `name` (at most 100 bytes); answers its SHA-256 in hex.
    func add(_ name: String, file path: String) throws -> String {
        guard let input = FileHandle(forReadingAtPath: path) else { throw CopyError("cannot read \(path)") }
        defer { try? input.close() }
        let size = try input.seekToEnd()
        try input.seek(toOffset: 0)
        try output.write(contentsOf: Self.header(name: name, size: size))
        var written: UInt64 = 0
        var digest = SHA256()
        while let piece = try input.read(upToCount: 1 << 20), !piece.isEmpty {
            try output.write(contentsOf: piece)
            digest.update(data: piece)
            written += UInt64(piece.count)
        }
        guard written == size else { throw CopyError("\(path) changed while it was being read") }
        try pad(size)
        return digest.finalize().hex
    }

    /// Adds `data` as `name`.
    func add(_ name: String, data: Data) throws {
        try output.write(contentsOf: Self.header(name: name, size: UInt64(data.count)))
        try output.write(contentsOf: data)
        try pad(UInt64(data.count))
    }

    private func pad(_ size: UInt64) throws {
        let padding = (512 - Int(size % 512)) % 512
        if padding > 0 { try output.write(contentsOf: Data(count: padding)) }
    }

    /// The two empty blocks that end an archive.
    func finish() throws {
        try output.write(contentsOf: Data(count: 1024))
    }

    static func header(name: String, size: UInt64) -> Data {
        var block = [UInt8](repeating: 0, count: 512)
        func put(_ text: String, at offset: Int) {
            for (index, byte) in text.utf8.enumerated() { block[offset + index] = byte }
        }
        put(name, at: 0)
        put("0000644\0", at: 100)                       // mode
        put("0000000\0", at: 108)                       // uid
        put("0000000\0", at: 116)                       // gid
        put(String(size, radix: 8).leftPadded(to: 11) + "\0", at: 124)
        put(String(Int(Date().timeIntervalSince1970), radix: 8).leftPadded(to: 11) + "\0", at: 136)
        put("        ", at: 148)                        // checksum, as spaces while summing
        block[156] = UInt8(ascii: "0")                  // a regular file
        put("ustar\0" + "00", at: 257)
        let sum = block.reduce(0) { $0 + Int($1) }
        put(String(sum, radix: 8).leftPadded(to: 6) + "\0 ", at: 148)
        return Data(block)
    }
}

/// Reads a ustar archive of regular files (as ``TarWriter`` writes them).
struct TarReader {
    let input: FileHandle

    init(_ input: FileHandle) { self.input = input }

    /// Writes every file under `directory` and answers their names with their SHA-256 in hex.
    func extract(into directory: String) throws -> [String: String] {
        var names: [String: String] = [:]
        while true {
            guard let header = try input.read(upToCount: 512), header.count == 512 else {
                throw CopyError("the backup ends in the middle: it is not whole")
            }
            if header.allSatisfy({ $0 == 0 }) { return names }
            let bytes = [UInt8](header)
            let name = String(decoding: bytes[0..<100].prefix { $0 != 0 }, as: UTF8.self)
            let sizeText = String(decoding: bytes[124..<136].prefix { $0 != 0 && $0 != 32 }, as: UTF8.self)
            let stored = bytes[148..<156].prefix { $0 != 0 && $0 != 32 }
            var summed = bytes
            for index in 148..<156 { summed[index] = 32 }
            guard let size = UInt64(sizeText, radix: 8), let checksum = Int(String(decoding: stored, as: UTF8.self), radix: 8),
                  checksum == summed.reduce(0, { $0 + Int($1) }) else {
                throw CopyError("the backup is damaged (a bad tar header after \(names.count) files)")
            }
            guard bytes[156] == UInt8(ascii: "0") || bytes[156] == 0, !name.isEmpty, !name.hasPrefix("/"),
                  !name.split(separator: "/").contains(".."), ["records.sqlite", "SHA256SUMS"].contains(name) || name.hasPrefix("assets/") else {
                throw CopyError("the backup holds an unexpected entry \(name)")
            }
            let path = (directory as NSString).appendingPathComponent(name)
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            guard FileManager.default.createFile(atPath: path, contents: nil), let output = FileHandle(forWritingAtPath: path) else {
                throw CopyError("cannot write \(path)")
            }
            var left = size
            var digest = SHA256()
            while left > 0 {
                guard let piece = try input.read(upToCount: Int(min(left, 1 << 20))), !piece.isEmpty else {
                    throw CopyError("the backup ends in the middle of \(name): it is not whole")
                }
                try output.write(contentsOf: piece)
                digest.update(data: piece)
                left -= UInt64(piece.count)
            }
            try output.synchronize()
            try output.close()
            let padding = (512 - Int(size % 512)) % 512
            if padding > 0 { _ = try input.read(upToCount: padding) }
            names[name] = digest.finalize().hex
        }
    }
}

extension SHA256.Digest {
    /// The digest in lowercase hex.
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
