import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HTTPTypes
import NIOCore
import RecordClient
import RecordModel
import RecordServer
import Testing

/// Rate limits (`THROTTLED` with `retryAfter`, which the client library waits out), idle and
/// slow connections closed while push streams stay, oversized headers refused.
@Suite struct LimitsTests {
    @Test func aUserPastTheRateIsThrottledAndTheClientWaitsAsTold() async throws {
        try await withServer(configure: { $0.rateLimit = RateLimit(rate: 2, burst: 3) }) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            for _ in 0..<3 { #expect(try await alice.post("users/current", "").status == 200) }
            let throttled = try await alice.post("users/current", "")
            #expect(throttled.status == 429 && throttled.code == "THROTTLED", "\(throttled.json)")
            let wait = try #require(throttled.json["retryAfter"].flatMap { value -> Double? in
                if case .double(let seconds) = value { return seconds }
                if case .int(let seconds) = value { return Double(seconds) }
                return nil
            })
            #expect(wait > 0 && wait <= 0.5, "\(throttled.json)")
            // Each user has a bucket of their own.
            #expect(try await bob.post("users/current", "").status == 200)
            try await Task.sleep(for: .milliseconds(Int64(wait * 1000) + 20))
            #expect(try await alice.post("users/current", "").status == 200)

            // The client library waits out THROTTLED and sends again: every call succeeds.
            try await Task.sleep(for: .seconds(2))
            let container = Container(serverURL: URL(string: "http://127.0.0.1:\(alice.client.port!)")!, identifier: alice.container, credentials: .bearerToken(alice.token))
            let started = ContinuousClock.now
            for index in 0..<6 {
                var record = Record(recordType: "Note", recordID: Record.ID(recordName: "n\(index)"))
                record["index"] = .int64(Int64(index))
                _ = try await container.privateCloudDatabase.save(record)
            }
            // Three at once, then two a second: the last three waited about 1.5 s in all.
            #expect(ContinuousClock.now - started > .milliseconds(1200))
            let metrics = String(decoding: try await server.send(.get, "/metrics").data, as: UTF8.self)
            #expect(metrics.contains("status=\"429\""), "\(metrics)")
        }
    }

    /// A connected socket to 127.0.0.1:`port`.
    static func connect(port: Int) throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard socket >= 0, connected == 0 else { throw RecordSyncError(.networkFailure, "cannot connect to port \(port)") }
        return socket
    }

    static func send(_ socket: Int32, _ text: String) {
        _ = text.withCString { Glibc.send(socket, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
    }

    /// What arrives on `socket` until it holds `marker`, the connection closes, or `within` passes.
    static func receive(_ socket: Int32, until marker: String, within limit: Duration) -> String {
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let started = ContinuousClock.now
        var received = ""
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now - started < limit, !received.contains(marker) {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count == 0 { break }
            if count > 0 { received += String(decoding: buffer[0..<count], as: UTF8.self) }
        }
        return received
    }

    /// Sends `text` on a new connection to `port`, waits `pause`, and answers whether the server
    /// closed the connection meanwhile (else what it answered within a second).
    static func rawExchange(port: Int, _ text: String, pause: Duration) async throws -> (closed: Bool, answer: String) {
        let socket = try connect(port: port)
        defer { close(socket) }
        send(socket, text)
        try await Task.sleep(for: pause)
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(socket, &buffer, buffer.count, 0)
        if count == 0 { return (true, "") }
        if count < 0 { return (errno == ECONNRESET, "") }
        return (false, String(decoding: buffer[0..<count], as: UTF8.self))
    }

    @Test func idleAndSlowConnectionsCloseButPushStreamsStay() async throws {
        try await withServer(configure: { $0.idleTimeout = .seconds(1); $0.keepAliveInterval = .seconds(5) }) { server in
            let port = server.client.port!
            // A request whose headers never end, and a connection that never sends one.
            #expect(try await Self.rawExchange(port: port, "GET /healthz HTTP/1.1\r\nHost: x\r\n", pause: .milliseconds(2500)).closed)
            #expect(try await Self.rawExchange(port: port, "", pause: .milliseconds(2500)).closed)
            // A whole request is answered as usual.
            let answered = try await Self.rawExchange(port: port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", pause: .milliseconds(100))
            #expect(answered.answer.hasPrefix("HTTP/1.1 200"), "\(answered.answer)")

            // A push stream outlives the idle timeout and still delivers.
            let alice = try await server.user("alice")
            let stream = try Self.connect(port: port)
            defer { close(stream) }
            Self.send(stream, "GET /database/1/\(alice.container)/development/private/notifications HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(alice.token)\r\n\r\n")
            try await Task.sleep(for: .milliseconds(2500))
            // (Saved over a connection of its own: the test client's pooled one idled out meanwhile.)
            let saving = try Self.connect(port: port)
            defer { close(saving) }
            let body = #"{"operations":[{"operationType":"forceReplace","record":{"recordName":"late","recordType":"Artist"}}]}"#
            Self.send(saving, "POST /database/1/\(alice.container)/development/private/records/modify HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(alice.token)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            #expect(Self.receive(saving, until: "recordChangeTag", within: .seconds(3)).hasPrefix("HTTP/1.1 200"))
            let received = Self.receive(stream, until: "_defaultZone", within: .seconds(3))
            #expect(received.hasPrefix("HTTP/1.1 200") && received.contains("_defaultZone"), "\(received)")
        }
    }

    @Test func oversizedHeadersAreRefused() async throws {
        try await withServer(configure: { $0.maximumHeaderBytes = 8 * 1024 }) { server in
            let big = String(repeating: "a", count: 10 * 1024)
            let refused = try await Self.rawExchange(port: server.client.port!, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: \(big)\r\n\r\n", pause: .milliseconds(200))
            #expect(refused.closed || refused.answer.hasPrefix("HTTP/1.1 4"), "\(refused.answer)")
            #expect(!refused.answer.hasPrefix("HTTP/1.1 200"))
            let small = try await Self.rawExchange(port: server.client.port!, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Small: \(big.prefix(1000))\r\n\r\n", pause: .milliseconds(200))
            #expect(small.answer.hasPrefix("HTTP/1.1 200"), "\(small.answer)")
        }
    }
}
