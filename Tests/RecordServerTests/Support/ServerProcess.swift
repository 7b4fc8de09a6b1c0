import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RecordModel
import Testing

/// The real `recordserver` executable, run as a child process.
final class ServerProcess: @unchecked Sendable {
    let process = Process()
    private let output = Pipe()
    private let lock = NSLock()
    private var log = Data()
    private(set) var port = 0

    /// The built `recordserver` next to the test bundle.
    static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("recordserver")
    }

    /// Runs `recordserver ARGUMENTS` to completion and returns its standard output.
    static func run(_ arguments: [String]) throws -> (status: Int32, stdout: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Starts the server on port 0 with `data` as its data directory and waits until it
    /// logs `listening on http://HOST:PORT`.
    init(data: String) async throws {
        process.executableURL = Self.executable
        process.arguments = ["--port", "0", "--data", data]
        process.standardOutput = output
        process.standardError = output
        output.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let chunk = handle.availableData
            guard let self, !chunk.isEmpty else { return }
            self.lock.withLock { self.log.append(chunk) }
        }
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let text = lock.withLock { String(decoding: log, as: UTF8.self) }
            if let range = text.range(of: #"listening on http://127\.0\.0\.1:(\d+)"#, options: .regularExpression) {
                port = Int(text[range].split(separator: ":").last ?? "") ?? 0
                return
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        process.terminate()
        throw RecordSyncError(.internalError, "recordserver did not start: \(lock.withLock { String(decoding: log, as: UTF8.self) })")
    }

    /// Everything the server has logged.
    var logText: String { lock.withLock { String(decoding: log, as: UTF8.self) } }

    /// Sends `signal` and waits for the process to exit.
    func stop(signal: Int32) -> (status: Int32, reason: Process.TerminationReason) {
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        output.fileHandleForReading.readabilityHandler = nil
        return (process.terminationStatus, process.terminationReason)
    }

    /// POSTs JSON to an endpoint of the private database of `container`.
    func post(_ endpoint: String, _ body: String, token: String, container: String = "iCloud.test.Durable") async throws -> (status: Int, data: Data) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/database/1/\(container)/development/private/\(endpoint)")!)
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }
}
