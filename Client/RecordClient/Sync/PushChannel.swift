import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import RecordModel

/// The client end of the server's notification stream (server-sent events on
/// `…/notifications`, see docs/protocol.md, "Push").
///
/// One instance is one connection; ``events()`` ends when the connection does. It streams
/// through the library the database's requests go through (``HTTPTransport``): the app's
/// `URLSession` when it gave one, else AsyncHTTPClient.
final class PushChannel: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let request: URLRequest
    private let transport: HTTPTransport
    private let lock = NSLock()
    private var buffer = Data()
    private var continuation: AsyncThrowingStream<ChangeNotification, any Error>.Continuation?
    private var session: URLSession?

    init(database: Database) {
        var request = URLRequest(url: database.transport.baseURL.appendingPathComponent("notifications"))
        request.setValue("Bearer \(database.transport.token)", forHTTPHeaderField: "Authorization")
        request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        request.timeoutInterval = 24 * 3600
        self.request = request
        transport = database.transport
    }

    /// Opens the connection and streams its events; the stream ends (or throws) when the
    /// connection closes, and cancelling the consumer closes the connection.
    func events() -> AsyncThrowingStream<ChangeNotification, any Error> {
        transport.session == nil ? clientEvents() : sessionEvents()
    }

    /// The client for push streams: ``HTTPTransport/client``'s settings, but 45 s of silence
    /// (three missed keep-alives, sent every 15 s) ends the stream as a dead connection. It
    /// lives as long as the process.
    static let client = HTTPTransport.makeClient(idle: .seconds(45), trusting: nil)

    /// The stream through AsyncHTTPClient: the body's bytes as they come, parsed into events.
    private func clientEvents() -> AsyncThrowingStream<ChangeNotification, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ChangeNotification.self)
        guard let url = request.url else {
            continuation.finish(throwing: RecordSyncError(.networkFailure, "no notification URL"))
            return stream
        }
        var outgoing = HTTPClientRequest(url: url.absoluteString)
        outgoing.method = .GET
        for (name, value) in request.allHTTPHeaderFields ?? [:] { outgoing.headers.add(name: name, value: value) }
        let reading = Task {
            do {
                let client = transport.certificateAuthority.map { HTTPTransport.clients.client(idle: .seconds(45), trusting: $0) } ?? Self.client
                let response = try await client.execute(outgoing, timeout: .hours(24 * 365))
                guard response.status.code == 200 else {
                    throw RecordSyncError(.networkFailure, "the notification stream answered HTTP \(response.status.code)")
                }
                var buffer = Data()
                var parser = EventParser()
                for try await chunk in response.body {
                    buffer.append(contentsOf: chunk.readableBytesView)
                    for event in parser.take(from: &buffer) { continuation.yield(event) }
                }
                continuation.finish()
            } catch let error as RecordSyncError {
                continuation.finish(throwing: error)
            } catch {
                continuation.finish(throwing: RecordSyncError(.networkFailure, "the notification stream closed: \(error)"))
            }
        }
        continuation.onTermination = { _ in reading.cancel() }
        return stream
    }

    private func sessionEvents() -> AsyncThrowingStream<ChangeNotification, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ChangeNotification.self)
        let configuration = Container.sessionConfiguration()
        // The server sends a keep-alive every 15 s: 45 s of silence means the connection is dead.
        configuration.timeoutIntervalForRequest = 45
        configuration.timeoutIntervalForResource = 365 * 24 * 3600
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
        lock.withLock {
            self.continuation = continuation
            self.session = session
        }
        continuation.onTermination = { [weak self] _ in self?.close() }
        session.dataTask(with: request).resume()
        return stream
    }

    /// Closes the connection. The session is cancelled from a dispatch queue, never inline:
    /// this runs from the stream's termination handler, inside task cancellation, and
    /// FoundationNetworking's cancellation waits on its own queue, which may at that moment be
    /// resuming a continuation of the same task (a deadlock).
    private func close() {
        let session = lock.withLock { () -> URLSession? in
            defer { self.session = nil }
            return self.session
        }
        guard let session else { return }
        DispatchQueue.global().async { session.invalidateAndCancel() }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        if status == 200 {
            completionHandler(.allow)
        } else {
            completionHandler(.cancel)
            finish(throwing: RecordSyncError(.networkFailure, "the notification stream answered HTTP \(status)"))
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let events = lock.withLock { () -> [ChangeNotification] in
            buffer.append(data)
            return takeEvents()
        }
        for event in events { lock.withLock { continuation }?.yield(event) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        finish(throwing: error.map { RecordSyncError(.networkFailure, "the notification stream closed: \($0.localizedDescription)") })
    }

    private func finish(throwing error: (any Error)?) {
        let continuation = lock.withLock { () -> AsyncThrowingStream<ChangeNotification, any Error>.Continuation? in
            defer { self.continuation = nil }
            return self.continuation
        }
        continuation?.finish(throwing: error)
        close()
    }

    /// Parses the complete events in the buffer. Caller holds the lock.
    private func takeEvents() -> [ChangeNotification] {
        var parser = EventParser()
        return parser.take(from: &buffer)
    }
}

/// Splits a server-sent-events body into events.
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
