import Foundation

/// A program of this package run as a child process, with its output collected.
public final class ChildProcess: @unchecked Sendable {
    public let process = Process()
    private let output = Pipe()
    private let lock = NSLock()
    private var collected = Data()

    /// The executable `name` built next to the test bundle.
    public static func executable(_ name: String) -> URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name)
    }

    /// Starts `name ARGUMENTS`; standard output (and standard error, if `mergeErrors`) is collected.
    public init(_ name: String, _ arguments: [String], mergeErrors: Bool = true) throws {
        process.executableURL = Self.executable(name)
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = mergeErrors ? output : FileHandle.nullDevice
        output.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let chunk = handle.availableData
            guard let self, !chunk.isEmpty else { return }
            self.lock.withLock { self.collected.append(chunk) }
        }
        try process.run()
    }

    /// Everything the process has written so far.
    public var text: String { lock.withLock { String(decoding: collected, as: UTF8.self) } }

    /// Waits until the output matches `pattern` (a regular expression), and returns the match.
    public func waitFor(_ pattern: String, seconds: Double = 60) async throws -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let current = text
            if let range = current.range(of: pattern, options: .regularExpression) { return String(current[range]) }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        let current = text
        return current.range(of: pattern, options: .regularExpression).map { String(current[$0]) }
    }

    /// Waits for the process to exit; returns its status and everything it wrote.
    ///
    /// Never blocks a thread: a blocking read to the end of the pipe could wait forever, since
    /// a sibling child spawned meanwhile may hold the pipe's write end open.
    public func wait() async -> (status: Int32, reason: Process.TerminationReason, output: String) {
        while process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
        // Let the readability handler collect what is left in the pipe.
        var quiet = 0
        var last = lock.withLock { collected.count }
        while quiet < 3 {
            try? await Task.sleep(for: .milliseconds(20))
            let now = lock.withLock { collected.count }
            quiet = now == last ? quiet + 1 : 0
            last = now
        }
        output.fileHandleForReading.readabilityHandler = nil
        return (process.terminationStatus, process.terminationReason, text)
    }

    /// Sends `signal` and waits for the process to exit.
    public func stop(signal: Int32) async -> (status: Int32, reason: Process.TerminationReason, output: String) {
        kill(process.processIdentifier, signal)
        return await wait()
    }

    /// Runs `name ARGUMENTS` to completion.
    public static func run(_ name: String, _ arguments: [String], mergeErrors: Bool = false) async throws -> (status: Int32, output: String) {
        let child = try ChildProcess(name, arguments, mergeErrors: mergeErrors)
        let result = await child.wait()
        return (result.status, result.output)
    }
}
