import Foundation
import RecordModel

/// Several `recordserver` processes over one PostgreSQL database (a schema of its own in the
/// test server, ``TestPostgres``), as a deployment behind a load balancer runs them.
public final class Deployment: @unchecked Sendable {
    /// One server process.
    public final class Node: Sendable {
        public let child: ChildProcess
        /// `http://127.0.0.1:PORT`.
        public let url: URL
        /// The node's own data directory (uploads arrive there).
        public let dataDirectory: String

        init(child: ChildProcess, url: URL, dataDirectory: String) {
            self.child = child
            self.url = url
            self.dataDirectory = dataDirectory
        }

        /// Sends `signal` and waits for the process to end.
        @discardableResult
        public func stop(signal: Int32 = SIGTERM) async -> (status: Int32, reason: Process.TerminationReason, output: String) {
            await child.stop(signal: signal)
        }
    }

    /// The database all nodes share.
    public let databaseURL: String
    /// The nodes started so far.
    public private(set) var nodes: [Node] = []

    /// A deployment over the schema of `directory`, with `count` nodes started.
    public convenience init(directory: String, nodes count: Int, environment: [String: String] = [:]) async throws {
        try await self.init(databaseURL: try await TestPostgres.databaseURL(for: directory), nodes: count, environment: environment)
    }

    /// A deployment over the database at `databaseURL`, with `count` nodes started.
    public init(databaseURL: String, nodes count: Int, environment: [String: String] = [:]) async throws {
        self.databaseURL = databaseURL
        for _ in 0..<count { _ = try await startNode(environment: environment) }
    }

    /// Starts one more node; `environment` is added to its own.
    @discardableResult
    public func startNode(environment: [String: String] = [:]) async throws -> Node {
        // Each node has a data directory of its own, as on machines of their own.
        let data = (NSTemporaryDirectory() as NSString).appendingPathComponent("recordsync-node-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let child = try ChildProcess("recordserver", ["--port", "0", "--database", databaseURL, "--data", data, "--log-level", "notice"], environment: environment)
        guard let line = try await child.waitFor(#"listening on http://127\.0\.0\.1:\d+"#),
              let port = line.split(separator: ":").last, let url = URL(string: "http://127.0.0.1:\(port)") else {
            _ = await child.stop(signal: SIGKILL)
            throw RecordSyncError(.internalError, "recordserver did not start: \(child.text)")
        }
        let node = Node(child: child, url: url, dataDirectory: data)
        nodes.append(node)
        return node
    }

    /// Creates a user with `recordserver user add` and returns their token.
    public func addUser(_ name: String) async throws -> String {
        let result = try await ChildProcess.run("recordserver", ["user", "add", name, "--database", databaseURL], mergeErrors: true)
        guard result.status == 0 else { throw RecordSyncError(.internalError, "user add failed: \(result.output)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops every node.
    public func stop() async {
        for node in nodes where node.child.process.isRunning { await node.stop(signal: SIGKILL) }
    }

    /// Kills every node still running, at once (for a `defer`: a task started there may not run
    /// before the test process ends, and would leave the nodes behind).
    public func kill() {
        for node in nodes where node.child.process.isRunning { Foundation.kill(node.child.process.processIdentifier, SIGKILL) }
    }

    deinit {
        kill()
        for node in nodes { try? FileManager.default.removeItem(atPath: node.dataDirectory) }
    }
}
