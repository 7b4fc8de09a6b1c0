import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RecordModel

/// Sends requests to one database of a RecordSync server over HTTP (URLSession).
///
/// The only part of the client that speaks HTTP.
struct HTTPTransport: Sendable {
    /// The base of every endpoint: `{server}/database/1/{container}/{environment}/{database}/`.
    let baseURL: URL
    let token: String
    let session: URLSession

    /// Sends `body` to `endpoint` and decodes the answer.
    ///
    /// - Throws: the server's error as ``RecordSyncError`` (with `retryAfter` from the body or
    ///   the `Retry-After` header), or ``ServerErrorCode/networkFailure`` when the server could
    ///   not be reached or answered something that is not the protocol.
    func post<Body: Encodable, Reply: Decodable>(_ endpoint: String, _ body: Body, as reply: Reply.Type) async throws -> Reply {
        try await post(endpoint, body) { try JSONValueDecoder().decode(Reply.self, from: $0) }
    }

    /// Sends `body` to `endpoint` and reads the answer's bytes with `read`.
    ///
    /// Bodies of ``Gzip/threshold`` bytes or more travel gzip-compressed (see ``Gzip``: on
    /// Linux an upload that needs more than one write keeps URLSession busy-polling the socket
    /// until the answer arrives). A server that answers a compressed body with `BAD_REQUEST` (one
    /// that predates compression reads it as bad JSON) gets the body once more as it is.
    func post<Body: Encodable, Reply>(_ endpoint: String, _ body: Body, reading read: (Data) throws -> Reply) async throws -> Reply {
        let json: Data
        do {
            json = try JSONValueEncoder().encode(body)
        } catch {
            throw RecordSyncError(.badRequest, "the request could not be encoded: \(error)")
        }
        if json.count >= Gzip.threshold {
            do {
                return try await send(endpoint, Gzip.compress(json), encoding: "gzip", reading: read)
            } catch let error as RecordSyncError where error.code == .badRequest {
                // Sent as is below: the server's verdict on the plain body is the one that counts.
            }
        }
        return try await send(endpoint, json, encoding: nil, reading: read)
    }

    private func send<Reply>(_ endpoint: String, _ body: Data, encoding: String?, reading read: (Data) throws -> Reply) async throws -> Reply {
        var request = URLRequest(url: baseURL.appendingPathComponent(endpoint))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        if let encoding { request.setValue(encoding, forHTTPHeaderField: "Content-Encoding") }
        request.timeoutInterval = 120
        request.httpBody = body
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await Self.load(request, in: session)
        } catch {
            throw RecordSyncError(.networkFailure, "\(endpoint): \(error.localizedDescription)", retryAfter: 1)
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status == 200 else {
            if var error = (try? JSONValueDecoder().decode(ErrorBody.self, from: data))?.error {
                if error.retryAfter == nil, let header = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Retry-After") {
                    error.retryAfter = Double(header)
                }
                throw error
            }
            throw RecordSyncError(.networkFailure, "\(endpoint): HTTP \(status) without a RecordSync error body", retryAfter: 1)
        }
        do {
            return try read(data)
        } catch {
            throw RecordSyncError(.networkFailure, "\(endpoint): the answer could not be read: \(error)")
        }
    }
}

extension HTTPTransport {
    /// `session.data(for:)`, cancelled without blocking.
    ///
    /// FoundationNetworking's `data(for:)` cancels its data task from the Swift task's
    /// cancellation handler with a `sync` onto the session's queue, while the runtime holds the
    /// task's status lock; if that queue is at that moment resuming the same task, each waits
    /// for the other forever (seen when a running sync engine was cancelled mid-request). Here
    /// the data task is cancelled asynchronously instead.
    static func load(_ request: URLRequest, in session: URLSession) async throws -> (Data, URLResponse) {
        let pending = PendingLoad()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, URLResponse), any Error>) in
                let task = session.dataTask(with: request) { data, response, error in
                    if let error {
                        continuation.resume(throwing: error)
                    } else if let response {
                        continuation.resume(returning: (data ?? Data(), response))
                    } else {
                        continuation.resume(throwing: URLError(.badServerResponse))
                    }
                }
                pending.start(task)
            }
        } onCancel: {
            pending.cancel()
        }
    }
}

/// A data task that a cancellation may reach before or after it starts.
private final class PendingLoad: @unchecked Sendable {
    private let lock = NSLock()
    private var task: URLSessionDataTask?
    private var cancelled = false

    func start(_ task: URLSessionDataTask) {
        lock.lock()
        self.task = task
        let cancelled = self.cancelled
        lock.unlock()
        task.resume()
        if cancelled { DispatchQueue.global().async { task.cancel() } }
    }

    func cancel() {
        lock.lock()
        cancelled = true
        let task = self.task
        lock.unlock()
        if let task { DispatchQueue.global().async { task.cancel() } }
    }
}

/// An empty JSON object, for endpoints without parameters.
struct EmptyBody: Codable, Sendable {}
