import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import RecordModel

/// Kinto (Mozilla's JSON sync server, Python) run beside a bench server, for `initial-sync`'s
/// side-by-side reading of the same records: its in-memory backend (`Scripts/kinto-install`
/// installs Kinto 26.5 from PyPI), on a free loopback port, the same HTTP client reading.
enum Kinto {
    /// Starts Kinto (`executable` is its `kinto` command), stores `records` Artwork-shaped
    /// records in one collection, then times `rounds` rounds of reading them through Kinto's
    /// feed (`GET …/records?_since=0`, one page, parsed) and of `recordSync` (the same records
    /// read from RecordSync), alternating which goes first. Returns the medians, in seconds.
    static func sideBySide(executable: String, http: HTTPClient, records: Int, rounds: Int,
                           recordSync: @Sendable () async throws -> Void) async throws -> (recordSync: Double, kinto: Double) {
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
            kinto.batch_max_requests = 100

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
        _ = try await send(http, .PUT, base + "/buckets/bench/collections/art", expect: [.ok, .created])
        for first in stride(from: 0, to: records, by: 100) {
            var requests: [[String: Any]] = []
            for i in first..<min(first + 100, records) {
                var data: [String: Any] = ["artist": "a\(i % 1000)", "title": "title \(i)", "medium": "oil"]
                data["year"] = 1800 + i % 200
                data["price"] = Double(i) / 3
                data["rank"] = i % 7
                requests.append(["method": "PUT", "path": "/buckets/bench/collections/art/records/w\(i)", "body": ["data": data]])
            }
            _ = try await send(http, .POST, base + "/batch", json: ["requests": requests], expect: [.ok])
        }
        var ours: [Double] = [], theirs: [Double] = []
        for round in 0..<rounds {
            let kinto: @Sendable () async throws -> Void = {
                // Gathered and parsed as RecordSync's pages are: on the HTTP client's event loop,
                // then on the client's thread.
                var headers = HTTPHeaders()
                headers.add(name: "Authorization", value: "Basic " + Data("bench:bench".utf8).base64EncodedString())
                let request = try HTTPClient.Request(url: base + "/buckets/bench/collections/art/records?_since=0", method: .GET, headers: headers)
                let body = try await ChangesReader.answer(http, request).get()
                guard try await ChangesReader.parseKinto(body) == records else {
                    throw BenchError("Kinto did not answer \(records) records")
                }
            }
            if round % 2 == 0 {
                ours.append(try await seconds(recordSync))
                theirs.append(try await seconds(kinto))
            } else {
                theirs.append(try await seconds(kinto))
                ours.append(try await seconds(recordSync))
            }
        }
        return (median(ours), median(theirs))
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
