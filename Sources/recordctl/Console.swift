import Foundation

/// Where commands write. Tests run commands in-process and capture both streams by setting
/// ``Console/capture``.
enum Console {
    /// Captured output, for tests.
    final class Capture: @unchecked Sendable {
        private let lock = NSLock()
        private var out = ""
        private var err = ""
        init() {}
        var standardOutput: String { lock.withLock { out } }
        var standardError: String { lock.withLock { err } }
        func write(_ text: String, error: Bool) { lock.withLock { if error { err += text } else { out += text } } }
    }

    @TaskLocal static var capture: Capture?

    /// Writes a line to standard output.
    static func line(_ text: String) { write(text + "\n", error: false) }

    /// Prints `text` as it is.
    static func text(_ text: String) { write(text, error: false) }

    /// Writes a line to standard error.
    static func error(_ text: String) { write(text + "\n", error: true) }

    /// Writes progress (no newline) to standard error, only on a terminal.
    static func progress(_ text: String) {
        guard capture == nil, isatty(STDERR_FILENO) == 1 else { return }
        FileHandle.standardError.write(Data(("\r\u{1B}[K" + text).utf8))
    }

    /// Whether standard output is a terminal (tables there, JSON otherwise only with --json).
    static var isTerminal: Bool { capture == nil && isatty(STDOUT_FILENO) == 1 }

    private static func write(_ text: String, error: Bool) {
        if let capture {
            capture.write(text, error: error)
        } else {
            (error ? FileHandle.standardError : FileHandle.standardOutput).write(Data(text.utf8))
        }
    }
}
