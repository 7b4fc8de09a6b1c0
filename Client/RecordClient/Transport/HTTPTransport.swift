import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOFoundationCompat
import NIOSSL
import RecordModel

/// Sends requests to one database of a RecordSync server over HTTP.
///
/// The only part of the client that speaks HTTP. Requests go through the `URLSession` the app
/// gave `Container`, or else, on Linux, through AsyncHTTPClient (``client``): there
/// FoundationNetworking's `URLSession` (libcurl) costs about a millisecond more a request each
/// way and busy-polls a socket during large uploads. On Apple
/// platforms the library's own session is used.
struct HTTPTransport: Sendable {
    /// The base of every endpoint: `{server}/database/1/{container}/{environment}/{database}/`.
    let baseURL: URL
    /// How requests sign in: a token, or a session that signs in again when refused.
    let credentials: Container.Credentials
    /// The session requests go through, or `nil` for AsyncHTTPClient (``client``).
    let session: URLSession?
    /// A PEM file of certificate authorities trusted besides the system's, for a server whose
    /// certificate one of them signed (AsyncHTTPClient only: a session given decides itself).
    var certificateAuthority: String? = nil

    /// The largest answer read (decompressed), well above any page the server sends.
    static let maximumAnswerBytes = 1 << 30

    /// The process's client for requests without a session: connections kept alive and pooled
    /// per server, on NIO's shared event loops. It decompresses nothing itself (``exchange``
    /// does, without `HTTPClient.shared`'s 25-fold ratio limit, which a page of similar records
    /// exceeds); a server that refuses the connection fails the request at once (by default
    /// the pool retries until the 10 s connect timeout, and an offline client would wait that
    /// long for `NETWORK_FAILURE`). Like URLSession's `timeoutInterval` of 120 s, its read and
    /// write timeouts are idle times, reset by every byte, so a connection that stops
    /// answering mid-page fails instead of hanging (the request's own deadline ends when the
    /// answer's head arrives). It lives as long as the process, so it is never shut down.
    static let client = makeClient(idle: .seconds(120), trusting: nil)

    /// The client requests without a session go through: ``client``, or one that also trusts
    /// ``certificateAuthority``.
    var client: HTTPClient {
        certificateAuthority.map { Self.clients.client(idle: .seconds(120), trusting: $0) } ?? Self.client
    }

    /// A client with ``client``'s settings, `idle` as its read and write timeouts, trusting the
    /// authorities in the PEM file `authority` besides the system's.
    static func makeClient(idle: TimeAmount, trusting authority: String?) -> HTTPClient {
        var configuration = HTTPClient.Configuration(decompression: .disabled)
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout = .init(connect: .seconds(10), read: idle, write: idle)
        if let authority {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(authority)]
            configuration.tlsConfiguration = tls
        }
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    /// The clients made for authorities, one per file and idle time, living as long as the
    /// process (as ``client`` does).
    static let clients = Clients()

    final class Clients: @unchecked Sendable {
        private let lock = NSLock()
        private var made: [String: HTTPClient] = [:]

        func client(idle: TimeAmount, trusting authority: String) -> HTTPClient {
            lock.withLock {
                let key = "\(idle.nanoseconds) \(authority)"
                if let client = made[key] { return client }
                let client = HTTPTransport.makeClient(idle: idle, trusting: authority)
                made[key] = client
                return client
            }
        }
    }

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
    /// Bodies of ``Gzip/threshold`` bytes or more travel gzip-compressed (see ``Gzip``: a
    /// smaller upload is cheaper on a real network, and on Linux an upload through a URLSession
    /// that needs more than one write keeps it busy-polling the socket until the answer
    /// arrives). A server that answers a compressed body with `BAD_REQUEST` (one that predates
    /// compression reads it as bad JSON) gets the body once more as it is.
    func post<Body: Encodable, Reply>(_ endpoint: String, _ body: Body, reading read: (Data) throws -> Reply) async throws -> Reply {
        try await post(endpoint, body, readingAsArrived: { try read(try $0.decompressed()) })
    }

    /// Sends `body` to `endpoint` and reads the answer's bytes as they arrived (compressed or
    /// not) with `read`, which can then decompress them later or elsewhere.
    ///
    /// With a ``SignedInSession``, a token the server refuses (`AUTHENTICATION_FAILED`: expired,
    /// revoked) is renewed by signing in again, once, and the request sent again.
    func post<Body: Encodable, Reply>(_ endpoint: String, _ body: Body, readingAsArrived read: (Answer) throws -> Reply) async throws -> Reply {
        let used = token
        do {
            return try await Self.waitingWhenThrottled { try await postOnce(endpoint, body, readingAsArrived: read) }
        } catch let error as RecordSyncError where error.code == .authenticationFailed {
            guard case .session(let session) = credentials else { throw error }
            try await session.renew(refused: used)
            return try await Self.waitingWhenThrottled { try await postOnce(endpoint, body, readingAsArrived: read) }
        }
    }

    /// The bearer token requests carry now.
    var token: String { credentials.token }

    /// The most times a request the server answered `THROTTLED` is sent again, and the longest
    /// it waits before one of them.
    static let throttledRetries = 5
    static let longestThrottledWait: Double = 60

    /// Runs `send`; when the server answers `THROTTLED` (it did nothing), waits the
    /// `retryAfter` it asked for and sends again, up to ``throttledRetries`` times, each wait at
    /// most ``longestThrottledWait`` (a longer one is thrown to the caller at once).
    static func waitingWhenThrottled<Reply>(_ send: () async throws -> Reply) async throws -> Reply {
        var attempt = 0
        while true {
            do {
                return try await send()
            } catch let error as RecordSyncError where error.code == .throttled && attempt < throttledRetries {
                let wait = error.retryAfter ?? 1
                guard wait.isFinite, wait <= longestThrottledWait else { throw error }
                attempt += 1
                try await Task.sleep(for: .milliseconds(Int64(max(0, wait) * 1000) + 1))
            }
        }
    }

    private func postOnce<Body: Encodable, Reply>(_ endpoint: String, _ body: Body, readingAsArrived read: (Answer) throws -> Reply) async throws -> Reply {
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

    private func send<Reply>(_ endpoint: String, _ body: Data, encoding: String?, reading read: (Answer) throws -> Reply) async throws -> Reply {
        let url = baseURL.appendingPathComponent(endpoint)
        let status: Int, answer: Answer, retryAfter: String?
        if let session {
            let data: Data
            (status, data, retryAfter) = try await exchange(url, body, encoding: encoding, endpoint: endpoint, in: session)
            answer = Answer(bytes: data, gzipped: false)
        } else {
            (status, answer, retryAfter) = try await exchange(url, body, encoding: encoding, endpoint: endpoint)
        }
        guard status == 200 else {
            if var error = (try? JSONValueDecoder().decode(ErrorBody.self, from: answer.decompressed()))?.error {
                if error.retryAfter == nil, let retryAfter {
                    error.retryAfter = Double(retryAfter)
                }
                throw error
            }
            throw RecordSyncError(.networkFailure, "\(endpoint): HTTP \(status) without a RecordSync error body", retryAfter: 1)
        }
        do {
            return try read(answer)
        } catch {
            throw RecordSyncError(.networkFailure, "\(endpoint): the answer could not be read: \(error)")
        }
    }

    /// An answer's bytes as they arrived.
    struct Answer: Sendable {
        var bytes: Data
        /// Whether `bytes` are gzip-compressed (`Content-Encoding: gzip`).
        var gzipped: Bool

        /// The answer itself.
        func decompressed() throws -> Data {
            gzipped ? try Gzip.decompress(bytes, limit: HTTPTransport.maximumAnswerBytes) : bytes
        }

        /// The answer's first `count` bytes (fewer if it is shorter), decompressing no more.
        func prefix(_ count: Int) throws -> Data {
            gzipped ? try Gzip.prefix(of: bytes, upTo: count) : bytes.prefix(count)
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

extension HTTPTransport {
    /// A request through ``client``: the status, the answer's bytes as they arrived and its
    /// `Retry-After` header. A cancelled task cancels the request.
    ///
    /// - Throws: ``ServerErrorCode/networkFailure`` when the server could not be reached or the
    ///   answer could not be read.
    private func exchange(_ url: URL, _ body: Data, encoding: String?, endpoint: String) async throws -> (Int, Answer, String?) {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Accept-Encoding", value: "gzip")
        if let encoding { request.headers.add(name: "Content-Encoding", value: encoding) }
        request.body = .bytes(ByteBuffer(data: body))
        do {
            // The idle timeouts of ``client`` bound a stalled exchange; this bounds a slow upload
            // and the wait for a pooled connection, generously.
            let response = try await client.execute(request, timeout: .minutes(10))
            let data = Data(buffer: try await response.body.collect(upTo: Self.maximumAnswerBytes))
            let gzipped = response.headers.first(name: "Content-Encoding")?.lowercased() == "gzip"
            return (Int(response.status.code), Answer(bytes: data, gzipped: gzipped), response.headers.first(name: "Retry-After"))
        } catch {
            throw RecordSyncError(.networkFailure, "\(endpoint): \(error)", retryAfter: 1)
        }
    }

    /// A request through `session`: the status, the answer's bytes (URLSession decompresses
    /// them) and its `Retry-After` header.
    private func exchange(_ url: URL, _ body: Data, encoding: String?, endpoint: String, in session: URLSession) async throws -> (Int, Data, String?) {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        if let encoding { request.setValue(encoding, forHTTPHeaderField: "Content-Encoding") }
        request.timeoutInterval = 120
        request.httpBody = body
        do {
            let (data, response) = try await Self.load(request, in: session)
            let http = response as? HTTPURLResponse
            return (http?.statusCode ?? 0, data, http?.value(forHTTPHeaderField: "Retry-After"))
        } catch {
            throw RecordSyncError(.networkFailure, "\(endpoint): \(error.localizedDescription)", retryAfter: 1)
        }
    }
}

/// An empty JSON object, for endpoints without parameters.
struct EmptyBody: Codable, Sendable {}
