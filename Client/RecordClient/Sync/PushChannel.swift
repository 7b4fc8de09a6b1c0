import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RecordModel

/// The client end of the server's notification stream (server-sent events on
/// `…/notifications`, see docs/protocol.md, "Push").
///
/// One instance is one connection; ``events()`` ends when the connection does.
final class PushChannel: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let request: URLRequest
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
    }

    /// Opens the connection and streams its events; the stream ends (or throws) when the
    /// connection closes, and cancelling the consumer closes the connection.
    ///
    /// `http://` servers are read over a plain socket (``SocketEventStream``): on Linux,
    /// FoundationNetworking spins a core while a streaming response is idle.
    func events() -> AsyncThrowingStream<ChangeNotification, any Error> {
        if let url = request.url, let token = request.value(forHTTPHeaderField: "Authorization")?.replacingOccurrences(of: "Bearer ", with: ""),
           let socketStream = SocketEventStream(url: url, token: token) {
            return socketStream.events()
        }
        return sessionEvents()
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
