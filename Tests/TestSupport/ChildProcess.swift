import Foundation

/// A program of this package run as a child process, with its output collected.
///
/// The output goes to a temporary file rather than a pipe: swift-corelibs-foundation's
/// `readabilityHandler` can fire after its descriptor is closed and then traps in
/// `availableData` (a `SIGILL` that takes the whole test process down), and a blocking read to
/// the end of a pipe could wait forever, since a sibling child spawned meanwhile may hold the
/// pipe's write end open. A file has neither problem: the child appends, and `text` reads
/// whatever has been written so far.
public final class ChildProcess: @unchecked Sendable {
    public let process = Process()
    private let outputURL: URL

    /// The executable `name` built next to the test bundle.
    public static func executable(_ name: String) -> URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name)
    }

    /// Starts `name ARGUMENTS`; standard output (and standard error, if `mergeErrors`) is
    /// collected; `environment` is added to this process's environment.
    public convenience init(_ name: String, _ arguments: [String], mergeErrors: Bool = true, environment: [String: String] = [:]) throws {
        try self.init(executable: Self.executable(name), arguments, mergeErrors: mergeErrors, environment: environment)
    }

    /// Starts the program at `executable` (another machine's program, such as the tests' SMTP
    /// server) as ``init(_:_:mergeErrors:environment:)`` starts one of this package.
    public init(executable: URL, _ arguments: [String], mergeErrors: Bool = true, environment: [String: String] = [:]) throws {
        outputURL = FileManager.default.temporaryDirectory
            .appendingPathComponent("recordsync-child-\(UUID().uuidString).out")
        guard FileManager.default.createFile(atPath: outputURL.path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: outputURL.path])
        }
        let output = try FileHandle(forWritingTo: outputURL)
        // The child gets its own copies of the descriptor; ours is closed once it has started.
        defer { try? output.close() }
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = mergeErrors ? output : FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            try? FileManager.default.removeItem(at: outputURL)
            throw error
        }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: outputURL)
    }

    /// Everything the process has written so far.
    public var text: String {
        String(decoding: (try? Data(contentsOf: outputURL)) ?? Data(), as: UTF8.self)
    }

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

    /// Waits for the process to exit (polling, so no thread is blocked); returns its status and
    /// everything it wrote.
    public func wait() async -> (status: Int32, reason: Process.TerminationReason, output: String) {
        while process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
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
