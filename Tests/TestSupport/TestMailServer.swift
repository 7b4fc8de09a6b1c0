import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real SMTP server for the tests: aiosmtpd (PyPI; `.ci/run` installs it) on a loopback
/// port, keeping each message it accepts as a file of a Maildir.
public final class TestMailServer: @unchecked Sendable {
    public let port: Int
    /// The `smtp://` URL of the server.
    public var url: String { "smtp://127.0.0.1:\(port)" }
    private let directory: String
    private let child: ChildProcess
    private let lock = NSLock()
    private var taken: Set<String> = []

    private init(port: Int, directory: String, child: ChildProcess) {
        self.port = port
        self.directory = directory
        self.child = child
    }

    /// The interpreter that has `module` (aiosmtpd unless given): `RECORDSYNC_TEST_PYTHON`,
    /// else `python3` on the PATH, else `/usr/bin/python3` (Debian's `python3-aiosmtpd`,
    /// `python3-authlib`).
    static func python(with module: String = "aiosmtpd") async throws -> URL {
        var candidates = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/python3" }
        candidates.append("/usr/bin/python3")
        if let given = ProcessInfo.processInfo.environment["RECORDSYNC_TEST_PYTHON"] { candidates.insert(given, at: 0) }
        for path in candidates where FileManager.default.isExecutableFile(atPath: path) {
            let check = try ChildProcess(executable: URL(fileURLWithPath: path), ["-c", "import \(module)"])
            if await check.wait().status == 0 { return URL(fileURLWithPath: path) }
        }
        throw TestMailServerError("no python3 with \(module): install it with 'python3 -m pip install \(module)' (.ci/run installs Debian's python3-\(module))")
    }

    /// Starts a server keeping its messages under `parent`; with `tls` (a certificate and its
    /// key, PEM files), it offers STARTTLS and takes no mail before it.
    public static func start(in parent: String, tls: (certificate: String, key: String)? = nil) async throws -> TestMailServer {
        let python = try await python()
        let directory = (parent as NSString).appendingPathComponent("mail-\(UUID().uuidString)")
        for _ in 0..<5 {
            let port = try freePort()
            // The Maildir must not exist yet: aiosmtpd makes it with its cur/new/tmp.
            let encryption = tls.map { ["--tlscert", $0.certificate, "--tlskey", $0.key] } ?? []
            let child = try ChildProcess(executable: python, ["-m", "aiosmtpd", "-n", "-l", "127.0.0.1:\(port)"] + encryption
                                         + ["-c", "aiosmtpd.handlers.Mailbox", directory])
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline, child.process.isRunning {
                if accepts(port) { return TestMailServer(port: port, directory: directory, child: child) }
                try await Task.sleep(for: .milliseconds(50))
            }
            _ = await child.stop(signal: SIGKILL)
        }
        throw TestMailServerError("aiosmtpd did not start")
    }

    /// Stops the server. With SIGKILL: a child of the test process inherits its blocked
    /// signals, SIGTERM among them, and Python does not unblock them.
    public func stop() async {
        _ = await child.stop(signal: SIGKILL)
    }

    /// Every message accepted so far to `address`, as text.
    public func messages(to address: String) -> [String] {
        let folder = (directory as NSString).appendingPathComponent("new")
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
        return names.compactMap { name -> String? in
            let text = (try? String(contentsOfFile: (folder as NSString).appendingPathComponent(name), encoding: .utf8)) ?? ""
            return Self.recipients(of: text).contains(address.lowercased()) ? text : nil
        }
    }

    /// Waits (up to 20 seconds) for a message to `address` not returned before, and returns it.
    public func nextMessage(to address: String) async throws -> String {
        let folder = (directory as NSString).appendingPathComponent("new")
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
            for name in names {
                let path = (folder as NSString).appendingPathComponent(name)
                guard let text = try? String(contentsOfFile: path, encoding: .utf8), Self.recipients(of: text).contains(address.lowercased()) else { continue }
                let fresh = lock.withLock { taken.insert(name).inserted }
                if fresh { return text }
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestMailServerError("no new message to \(address) within 20 seconds")
    }

    /// The addresses aiosmtpd recorded the message as sent to (`X-RcptTo`).
    static func recipients(of message: String) -> [String] {
        message.components(separatedBy: "\n").filter { $0.hasPrefix("X-RcptTo:") }
            .flatMap { $0.dropFirst("X-RcptTo:".count).split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines).lowercased() }
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestMailServerError("socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0 else { throw TestMailServerError("bind: \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } } == 0
    }
}

public struct TestMailServerError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body` with a test mail server, stopped afterwards.
public func withMailServer<T: Sendable>(_ body: (TestMailServer) async throws -> T) async throws -> T {
    try await withTemporaryDirectory { directory in
        let server = try await TestMailServer.start(in: directory)
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }
}
