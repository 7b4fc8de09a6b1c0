import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Hummingbird

/// Runs `body` with an HTTP proxy on a loopback port in front of `upstream`, which passes every
/// `POST` on and may change the answers: for clients facing a server that answers wrongly.
///
/// - Parameter tamper: given a successful answer's request path and body, the body to send
///   back instead (the answers come uncompressed).
public func withTamperingProxy<T: Sendable>(
    to upstream: URL,
    tamper: @escaping @Sendable (_ path: String, _ body: Data) -> Data,
    _ body: @escaping @Sendable (_ url: URL) async throws -> T
) async throws -> T {
    try await withProxy(to: upstream, tamper: tamper, lose: { _ in false }, body)
}

/// Runs `body` with an HTTP proxy on a loopback port in front of `upstream` that passes every
/// `POST` on, and for those `lose` picks (given the request's path), loses the answer after
/// the server gave it: the client gets `502 Bad Gateway` without a body it can read, as from a
/// balancer whose connection to the server broke after the server had done the work.
public func withLossyProxy<T: Sendable>(
    to upstream: URL,
    lose: @escaping @Sendable (_ path: String) -> Bool,
    _ body: @escaping @Sendable (_ url: URL) async throws -> T
) async throws -> T {
    try await withProxy(to: upstream, tamper: { $1 }, lose: lose, body)
}

/// What a proxy does with a request.
public enum ProxiedRequest: Sendable {
    /// Passes it on with this body.
    case forward(Data)
    /// Answers it itself, with this status and JSON body.
    case answer(status: Int, body: String)
}

/// Runs `body` with an HTTP proxy on a loopback port in front of `upstream`, which passes every
/// `POST` on as `request` decides (given its path and body, as the client sent it): for
/// clients facing a server that reads requests otherwise (one that does not know an extension).
/// `tamper` may change the successful answers too, as ``withTamperingProxy(to:tamper:_:)``'s does.
public func withRequestRewritingProxy<T: Sendable>(
    to upstream: URL,
    request: @escaping @Sendable (_ path: String, _ body: Data) -> ProxiedRequest,
    tamper: @escaping @Sendable (_ path: String, _ body: Data) -> Data = { $1 },
    _ body: @escaping @Sendable (_ url: URL) async throws -> T
) async throws -> T {
    try await withProxy(to: upstream, request: request, tamper: tamper, lose: { _ in false }, body)
}

private func withProxy<T: Sendable>(
    to upstream: URL,
    request rewrite: @escaping @Sendable (_ path: String, _ body: Data) -> ProxiedRequest = { .forward($1) },
    tamper: @escaping @Sendable (_ path: String, _ body: Data) -> Data,
    lose: @escaping @Sendable (_ path: String) -> Bool,
    _ body: @escaping @Sendable (_ url: URL) async throws -> T
) async throws -> T {
    let session = URLSession(configuration: .ephemeral)
    let router = Router()
    router.post("**") { request, _ -> Response in
        let sent: Data
        switch rewrite(request.uri.path, Data(try await request.body.collect(upTo: 64 << 20).readableBytesView)) {
        case .forward(let data): sent = data
        case .answer(let status, let answer):
            return Response(status: HTTPResponse.Status(code: status), headers: [.contentType: "application/json"],
                            body: ResponseBody(byteBuffer: ByteBuffer(string: answer)))
        }
        guard let url = URL(string: upstream.absoluteString + request.uri.path) else { return Response(status: .badRequest) }
        var forward = URLRequest(url: url)
        forward.httpMethod = "POST"
        forward.setValue(request.headers[.authorization], forHTTPHeaderField: "Authorization")
        forward.setValue(request.headers[.contentType], forHTTPHeaderField: "Content-Type")
        forward.setValue(request.headers[.contentEncoding], forHTTPHeaderField: "Content-Encoding")
        forward.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        forward.httpBody = sent
        let (data, status) = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, Int), any Error>) in
            session.dataTask(with: forward) { data, response, error in
                if let error {
                    continuation.resume(throwing: error)
                } else {
                    continuation.resume(returning: (data ?? Data(), (response as? HTTPURLResponse)?.statusCode ?? 502))
                }
            }.resume()
        }
        if lose(request.uri.path) {
            return Response(status: .badGateway, headers: [.contentType: "text/plain"], body: ResponseBody(byteBuffer: ByteBuffer(string: "upstream connection lost")))
        }
        let answer = status == 200 ? tamper(request.uri.path, data) : data
        return Response(status: HTTPResponse.Status(code: status), headers: [.contentType: "application/json"],
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer)))
    }
    return try await withLoopbackApp(router, body)
}

/// Runs `body` with an HTTP server on a loopback port that answers every `POST` with the same
/// status, `Retry-After` header (if any) and body: for clients facing answers a real server
/// gives only under load, or something else in front of it.
public func withCannedAnswer<T: Sendable>(
    status: Int, retryAfter: String? = nil, body answer: String,
    _ body: @escaping @Sendable (_ url: URL) async throws -> T
) async throws -> T {
    let router = Router()
    router.post("**") { request, _ -> Response in
        _ = try await request.body.collect(upTo: 64 << 20)
        var fields: HTTPFields = [.contentType: "application/json"]
        if let retryAfter { fields[.retryAfter] = retryAfter }
        return Response(status: HTTPResponse.Status(code: status), headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(string: answer)))
    }
    return try await withLoopbackApp(router, body)
}

/// Runs `router` on a loopback port for as long as `body` runs (a stand-in for a service the
/// server calls, such as an identity provider's key URL).
public func withLoopbackServer<T: Sendable>(_ router: Router<BasicRequestContext>, _ body: @escaping @Sendable (_ url: URL) async throws -> T) async throws -> T {
    try await withLoopbackApp(router, body)
}

/// Runs `router` on a loopback port for as long as `body` runs.
private func withLoopbackApp<T: Sendable>(_ router: Router<BasicRequestContext>, _ body: @escaping @Sendable (_ url: URL) async throws -> T) async throws -> T {
    let (ports, announce) = AsyncStream.makeStream(of: Int.self)
    let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                          onServerRunning: { channel in announce.yield(channel.localAddress?.port ?? 0) })
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            try await app.run()
            return nil
        }
        defer { group.cancelAll() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), let url = URL(string: "http://127.0.0.1:\(port)") else { throw CancellationError() }
        return try await body(url)
    }
}
