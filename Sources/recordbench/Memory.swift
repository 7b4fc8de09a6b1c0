import Foundation
import RecordClient
import RecordRules
import RecordServer
import RecordSQLiteEngine

/// The `memory` scenario: the server runs as its own process (this program, `recordbench
/// serve DIR`, which runs the same `RecordServer` code as `recordserver`), so its peak resident
/// memory (`VmHWM` in `/proc/PID/status`) is the server's alone.
enum Memory {
    /// `recordbench serve DIR [--database URL]`: runs a server over the store in DIR (or the
    /// PostgreSQL database at URL) with the user `bench` (created if missing), prints
    /// `URL TOKEN` on a line, and serves until killed.
    ///
    /// With `users` above 1, also `bench-1` … (each with a token after the first on the line);
    /// with `rateLimit`, each user's requests are limited as `--rate-limit` and `--rate-burst` do.
    static func serve(directory: String, databaseURL: String? = nil, users: Int = 1, rateLimit: RateLimit? = nil) async throws {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.dataDirectory = directory
        configuration.databaseURL = databaseURL
        configuration.logger.logLevel = .critical
        configuration.rateLimit = rateLimit
        let store = RecordStore(engine: try await openEngine(configuration), limits: configuration.limits)
        var tokens: [String] = []
        for index in 0..<max(1, users) {
            let token = Credentials.newToken()
            let name = index == 0 ? "bench" : "bench-\(index)"
            do {
                _ = try await store.createUser(named: name, tokenHash: Credentials.hash(token))
            } catch let error as RecordSyncError where error.code == .exists {
                _ = try await store.addToken(forUserNamed: name, tokenHash: Credentials.hash(token))
            }
            tokens.append(token)
        }
        let line = tokens.joined(separator: " ")
        try await withRunningServer(configuration: configuration, store: store) { url in
            FileHandle.standardOutput.write(Data("\(url.absoluteString) \(line)\n".utf8))
            while true { try await Task.sleep(for: .seconds(3600)) }
        }
    }

    /// Saves `scale.memoryRecords` Artworks, fetches the whole zone's changes from scratch, then
    /// 100 changes since the token; reports the server process's peak resident memory.
    ///
    /// - Parameter executable: the program that runs `serve` (this one, by default).
    static func run(_ scale: Scale, executable: URL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()) async throws -> Measurement {
        try await BenchStorage.with { storage in
            let server = try await ServerProcess(storage, executable: executable)
            defer { server.stop() }
            return try await measure(scale, database: server.container.privateCloudDatabase, pid: server.process.processIdentifier)
        }
    }

    static func measure(_ scale: Scale, database: Database, pid: Int32) async throws -> Measurement {

        let count = scale.memoryRecords
        try await Workload.save(database, count: count, zone: .defaultZone) { $0.map { Workload.artwork($0, artists: 1000) } }
        let afterSave = try peakResidentBytes(of: pid)
        let all = try await Workload.drainChanges(database, zone: .defaultZone, since: nil)
        guard all.changed == count else { throw BenchError("fetched \(all.changed) records, not \(count)") }
        _ = try await database.modify((0..<100).map { Workload.artwork($0, artists: 1000) }, inZoneWith: .defaultZone, atomically: false)
        let delta = try await Workload.drainChanges(database, zone: .defaultZone, since: all.token)
        guard delta.changed == 100 else { throw BenchError("fetched \(delta.changed) changes, not 100") }
        let peak = try peakResidentBytes(of: pid)
        let megabytes = Double(peak) / 1_048_576
        return Measurement(scenario: "memory", unit: "MB peak RSS (server)", figure: megabytes, floor: nil, ratio: megabytes,
                           target: "≤ 250 MB", met: megabytes <= 250,
                           notes: String(format: "%.0f MB after saving %d records", Double(afterSave) / 1_048_576, count))
    }

    /// A bench server as a process of its own (`recordbench serve`), over `storage`.
    final class ServerProcess: @unchecked Sendable {
        let process = Process()
        let container: Container
        /// Where it listens, and a token of each of its users (`bench` first).
        let url: URL
        let tokens: [String]

        init(_ storage: BenchStorage, executable: URL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath(), name: String = "server",
             arguments: [String] = []) async throws {
            let outputPath = storage.directory + "/\(name).out"
            guard FileManager.default.createFile(atPath: outputPath, contents: nil) else { throw BenchError("cannot create \(outputPath)") }
            let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
            process.executableURL = executable
            process.arguments = ["serve", storage.directory + "/\(name)"] + (storage.databaseURL.map { ["--database", $0] } ?? []) + arguments
            process.standardOutput = output
            process.standardError = output
            try process.run()
            try? output.close()
            var line: Substring?
            for _ in 0..<1000 where line == nil {
                let text = String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: outputPath))) ?? Data(), as: UTF8.self)
                line = text.split(separator: "\n").first { $0.hasPrefix("http") }
                if line == nil {
                    guard process.isRunning else { throw BenchError("the server process exited: \(text)") }
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            guard let parts = line?.split(separator: " "), parts.count >= 2, let url = URL(string: String(parts[0])) else {
                process.terminate()
                throw BenchError("the server process did not announce its address")
            }
            self.url = url
            tokens = parts.dropFirst().map(String.init)
            container = Container(serverURL: url, identifier: "iCloud.bench", credentials: .bearerToken(tokens[0]))
        }

        func stop() {
            guard process.isRunning else { return }
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// `VmHWM` of a process: its peak resident set, in bytes.
    static func peakResidentBytes(of pid: Int32) throws -> Int {
        try statusBytes("VmHWM", of: pid)
    }

    /// A size line of `/proc/PID/status` (`VmHWM`, `VmRSS`, …), in bytes.
    static func statusBytes(_ key: String, of pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("\(key):") }),
              let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else {
            throw BenchError("no \(key) in /proc/\(pid)/status")
        }
        return kilobytes * 1024
    }
}
