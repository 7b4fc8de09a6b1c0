import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RecordModel

/// The push channel over a plain TCP socket: an HTTP/1.1 GET whose (possibly chunked) body is
/// read on a dedicated thread and parsed as server-sent events.
///
/// Used for `http://` servers because FoundationNetworking on Linux spins a CPU core while a
/// streaming response is open and idle. (`https://` goes through URLSession; see ``PushChannel``.)
final class SocketEventStream: @unchecked Sendable {
    private let host: String
    private let port: Int
    private let request: String
    private let lock = NSLock()
    private var descriptor: Int32 = -1
    private var closed = false

    /// Prepares a connection to `url` (`http` only) with the given bearer token.
    init?(url: URL, token: String) {
        guard url.scheme == "http", let host = url.host else { return nil }
        self.host = host
        self.port = url.port ?? 80
        let path = url.path.isEmpty ? "/" : url.path
        request = "GET \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nAuthorization: Bearer \(token)\r\nAccept: text/event-stream\r\n\r\n"
    }

    /// Connects and streams events until the connection closes or the consumer goes away.
    func events() -> AsyncThrowingStream<ChangeNotification, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ChangeNotification.self)
        continuation.onTermination = { [self] _ in close() }
        let thread = Thread { [self] in
            do {
                try run { continuation.yield($0) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
            close()
        }
        thread.name = "RecordClient.push"
        thread.start()
        return stream
    }

    /// Shuts the socket down, which ends the reading thread's blocking read.
    func close() {
        lock.withLock {
            closed = true
            if descriptor >= 0 {
                _ = shutdown(descriptor, Int32(SHUT_RDWR))
                _ = Glibc_or_Darwin_close(descriptor)
                descriptor = -1
            }
        }
    }

    private func failure(_ what: String) -> RecordSyncError {
        RecordSyncError(.networkFailure, "the notification stream \(what)")
    }

    private func run(_ emit: (ChangeNotification) -> Void) throws {
        let socket = try connect()
        guard request.withCString({ pointer in send(socket, pointer, strlen(pointer), 0) }) > 0 else { throw failure("could not send its request") }
        var raw = Data()
        var body = Data()
        var headerDone = false
        var chunked = false
        var parser = EventParser()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            guard count > 0 else {
                if lock.withLock({ closed }) { return }
                throw failure(count == 0 ? "closed" : "failed (errno \(errno))")
            }
            raw.append(contentsOf: buffer[0..<count])
            if !headerDone {
                guard let end = raw.range(of: Data("\r\n\r\n".utf8)) else { continue }
                let head = String(decoding: raw[raw.startIndex..<end.lowerBound], as: UTF8.self).lowercased()
                guard head.hasPrefix("http/1.1 200") || head.hasPrefix("http/1.0 200") else {
                    throw failure("answered \(head.split(separator: "\r\n").first ?? "nothing")")
                }
                chunked = head.contains("transfer-encoding: chunked")
                raw.removeSubrange(raw.startIndex..<end.upperBound)
                headerDone = true
            }
            if chunked {
                while let line = raw.range(of: Data("\r\n".utf8)) {
                    let sizeText = String(decoding: raw[raw.startIndex..<line.lowerBound], as: UTF8.self).split(separator: ";").first ?? ""
                    guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { throw failure("sent a bad chunk") }
                    if size == 0 { return }
                    let start = line.upperBound
                    guard raw.distance(from: start, to: raw.endIndex) >= size + 2 else { break }
                    let chunkEnd = raw.index(start, offsetBy: size)
                    body.append(raw[start..<chunkEnd])
                    raw.removeSubrange(raw.startIndex..<raw.index(chunkEnd, offsetBy: 2))
                }
            } else {
                body.append(raw)
                raw.removeAll()
            }
            for event in parser.take(from: &body) { emit(event) }
        }
    }

    private func connect() throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { throw failure("could not resolve \(host)") }
        defer { freeaddrinfo(list) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            let socket = Glibc_or_Darwin_socket(current.pointee.ai_family, current.pointee.ai_socktype, current.pointee.ai_protocol)
            if socket >= 0 {
                // 45 s without a byte (the server sends a keep-alive every 15 s) means the connection is dead.
                var timeout = timeval(tv_sec: 45, tv_usec: 0)
                _ = setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                if Glibc_or_Darwin_connect(socket, current.pointee.ai_addr, current.pointee.ai_addrlen) == 0 {
                    let keep = lock.withLock { () -> Bool in
                        guard !closed else { return false }
                        descriptor = socket
                        return true
                    }
                    guard keep else {
                        _ = Glibc_or_Darwin_close(socket)
                        throw failure("was closed")
                    }
                    return socket
                }
                _ = Glibc_or_Darwin_close(socket)
            }
            entry = current.pointee.ai_next
        }
        throw failure("could not connect to \(host):\(port)")
    }
}

/// Splits a server-sent-events body into events; shared by both transports.
struct EventParser {
    mutating func take(from buffer: inout Data) -> [ChangeNotification] {
        var events: [ChangeNotification] = []
        let separator = Data("\n\n".utf8)
        while let range = buffer.range(of: separator) {
            let block = String(decoding: buffer[buffer.startIndex..<range.lowerBound], as: UTF8.self)
            buffer.removeSubrange(buffer.startIndex..<range.upperBound)
            var name = "message"
            var data = ""
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix(": connected") { events.append(.connected) }
                if line.hasPrefix("event:") { name = line.dropFirst(6).trimmingCharacters(in: .whitespaces) }
                if line.hasPrefix("data:") { data += line.dropFirst(5).trimmingCharacters(in: .whitespaces) }
            }
            if name == "zones", let notification = try? JSONDecoder().decode(ZoneNotification.self, from: Data(data.utf8)) {
                events.append(.zonesChanged(notification.zones))
            }
        }
        return events
    }
}

// The C functions, named apart from Swift methods called `close`, `connect` and `socket`.
private func Glibc_or_Darwin_close(_ descriptor: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.close(descriptor)
    #else
    Darwin.close(descriptor)
    #endif
}

private func Glibc_or_Darwin_socket(_ family: Int32, _ type: Int32, _ proto: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.socket(family, type, proto)
    #else
    Darwin.socket(family, type, proto)
    #endif
}

private func Glibc_or_Darwin_connect(_ socket: Int32, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> Int32 {
    #if canImport(Glibc)
    Glibc.connect(socket, address, length)
    #else
    Darwin.connect(socket, address, length)
    #endif
}
