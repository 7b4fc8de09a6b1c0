import ArgumentParser
import Foundation
@testable import recordctl
import TestSupport

/// What a command printed and its exit status.
struct Run: Sendable {
    var status: Int32
    var output: String
    var errors: String
    var lines: [String] { output.split(separator: "\n").map(String.init) }
}

/// swift-argument-parser's parsing is not safe to run concurrently (a real `recordctl` parses
/// once per process; tests run many commands in parallel in one process), so parsing and
/// error formatting are serialised.
let parserLock = NSLock()

/// Parses `arguments` as `Command` under ``parserLock``.
func parsed<Command: ParsableArguments>(_ type: Command.Type, _ arguments: [String]) throws -> Command {
    try parserLock.withLock { try Command.parse(arguments) }
}

/// Runs `recordctl ARGUMENTS` in-process, capturing its output.
func recordctl(_ arguments: [String]) async -> Run {
    let capture = Console.Capture()
    let status: Int32 = await Console.$capture.withValue(capture) {
        do {
            var command = try parserLock.withLock { try RecordCtl.parseAsRoot(arguments) }
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
            return 0
        } catch {
            return parserLock.withLock {
                let code = RecordCtl.exitCode(for: error).rawValue
                if !(error is ExitCode) { capture.write(RecordCtl.fullMessage(for: error) + "\n", error: true) }
                return code
            }
        }
    }
    return Run(status: status, output: capture.standardOutput, errors: capture.standardError)
}

extension LiveServer {
    /// Connection flags for a new user.
    func flags(forNewUser name: String, container: String = "iCloud.test.ctl") async throws -> [String] {
        ["--server", url.absoluteString, "--token", try await token(forNewUser: name), "--container", container]
    }
}

/// Runs `body` with a live server in a fresh directory.
func withServer<T: Sendable>(_ body: @escaping @Sendable (LiveServer) async throws -> T) async throws -> T {
    try await withTemporaryDirectory { directory in try await withLiveServer(directory: directory, body) }
}
