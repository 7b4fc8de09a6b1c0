import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import RecordModel

/// Kinto (Mozilla's JSON sync server, Python), run beside a bench server for the `kinto`
/// scenario: Kinto 26.5 from PyPI in a virtual environment of its own, its in-memory backends,
/// on a free loopback port.
enum Kinto {
    /// The version compared against.
    static let version = "26.5.0"

    /// The `kinto` command to run: `given` itself, or, when `given` is `install`, the one in
    /// `.build/kinto` (the working directory's), installed there from PyPI first if it is not.
    static func executable(_ given: String) throws -> String {
        guard given == "install" else { return given }
        let directory = URL(fileURLWithPath: ".build/kinto").standardizedFileURL.path
        let kinto = directory + "/bin/kinto"
        if !FileManager.default.isExecutableFile(atPath: kinto) {
            say("  installing Kinto \(version) from PyPI into \(directory)…")
            try run("/usr/bin/env", ["python3", "-m", "venv", directory])
            try run(directory + "/bin/pip", ["install", "--quiet", "kinto==\(version)"])
        }
        return kinto
    }

    private static func run(_ executable: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchError("\(([executable] + arguments).joined(separator: " ")) failed (exit \(process.terminationStatus)); on Debian, python3-venv is needed")
        }
    }

    /// Runs `body` with a Kinto started (`executable` is its `kinto` command) and answering at
    /// the URL given (`http://127.0.0.1:PORT/v1`), its bucket `bench` made; stops it after.
    static func withKinto<T>(executable: String, http: HTTPClient, _ body: (String) async throws -> T) async throws -> T {
        let directory = (NSTemporaryDirectory() as NSString).appendingPathComponent("recordbench-kinto-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let port = try freePort()
        let ini = (directory as NSString).appendingPathComponent("kinto.ini")
        try """
            [server:main]
            use = egg:waitress#main
            host = 127.0.0.1
            port = \(port)

            [app:main]
            use = egg:kinto
            kinto.storage_backend = kinto.core.storage.memory
            kinto.storage_url =
            kinto.cache_backend = kinto.core.cache.memory
            kinto.cache_url =
            kinto.permission_backend = kinto.core.permission.memory
            kinto.permission_url =
            multiauth.policies = basicauth
            kinto.userid_hmac_secret = recordbench
            kinto.bucket_create_principals = system.Authenticated
            kinto.batch_max_requests = 400

            """.write(toFile: ini, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["start", "--ini", ini]
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        defer {
            // Kinto's server does not end on SIGTERM.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        let base = "http://127.0.0.1:\(port)/v1"
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            if let status = try? await send(http, .GET, base + "/").status, status == .ok { break }
            guard process.isRunning, ContinuousClock.now < deadline else { throw BenchError("Kinto (\(executable)) did not start on port \(port)") }
            try await Task.sleep(for: .milliseconds(200))
        }
        _ = try await send(http, .PUT, base + "/buckets/bench", expect: [.ok, .created])
        return try await body(base)
    }

    /// One request with basic auth (Kinto's default policy: any user and password name a user).
    static func send(_ http: HTTPClient, _ method: HTTPMethod, _ url: String, json: [String: Any]? = nil,
                     expect: [HTTPResponseStatus]? = nil) async throws -> (status: HTTPResponseStatus, body: Data) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Basic " + Data("bench:bench".utf8).base64EncodedString())
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(data: try JSONSerialization.data(withJSONObject: json)))
        }
        let response = try await http.execute(request, timeout: .seconds(60))
        let body = Data(buffer: try await response.body.collect(upTo: 64 << 20))
        if let expect, !expect.contains(response.status) {
            throw BenchError("Kinto answered \(response.status) to \(method) \(url): \(String(decoding: body, as: UTF8.self))")
        }
        return (response.status, body)
    }

    /// A loopback port nothing listens on now.
    static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
        }
        guard bound else { throw BenchError("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
