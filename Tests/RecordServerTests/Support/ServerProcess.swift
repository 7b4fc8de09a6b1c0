import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RecordModel
import TestSupport

/// The real `recordserver` executable, run as a child process on port 0.
final class ServerProcess: Sendable {
    let child: ChildProcess
    let port: Int

    /// Starts the server with `data` as its data directory (and `arguments`) and waits until it logs
    /// `listening on http://HOST:PORT`.
    init(data: String, arguments: [String] = [], environment: [String: String] = [:]) async throws {
        child = try ChildProcess("recordserver", ["--port", "0", "--data", data] + arguments, environment: environment)
        guard let line = try await child.waitFor(#"listening on http://127\.0\.0\.1:\d+"#),
              let port = Int(line.split(separator: ":").last ?? "") else {
            _ = await child.stop(signal: SIGKILL)
            throw RecordSyncError(.internalError, "recordserver did not start: \(child.text)")
        }
        self.port = port
    }

    /// Everything the server has logged.
    var logText: String { child.text }

    /// Sends `signal` and waits for the process to exit.
    func stop(signal: Int32) async -> (status: Int32, reason: Process.TerminationReason) {
        let result = await child.stop(signal: signal)
        return (result.status, result.reason)
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
