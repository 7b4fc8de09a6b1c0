import Foundation
import HTTPTypes
import Hummingbird
import Logging
import RecordRules

/// One log line per request, at `info`: its id, method, path, status and the time until the
/// answer's head in milliseconds (a streamed body, a push stream or a download, goes on after);
/// and the request counted and timed in ``ServerMetrics``.
///
/// The id is the client's `X-Request-ID` when that is 1 to 64 letters, digits, `-`, `_` or `.`
/// (a balancer's), else a new one; the answer carries it back in `X-Request-ID`. Paths are
/// logged without their query and with the secret segment of webcourier, upload and download
/// URLs elided: a log line never holds a credential.
///
/// With a ``RequestJournal`` (the console's request log), each request is also kept there with
/// who sent it and the error its answer carries, as the routes note them in ``RequestNotes``.
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let logger: Logger
    /// Where each request is also counted and timed.
    let metrics: ServerMetrics
    /// The request log, when the console keeps one.
    let journal: RequestJournal?

    static var requestIDField: HTTPField.Name { HTTPField.Name("X-Request-ID")! }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let id = Self.requestID(given: request.headers[Self.requestIDField])
        let started = ContinuousClock.now
        let notes = journal == nil ? nil : RequestNotes()
        do {
            var response = try await RequestNotes.$current.withValue(notes) { try await next(request, context) }
            response.headers[Self.requestIDField] = id
            log(request, context: context, id: id, status: Int(response.status.code), since: started, notes: notes)
            return response
        } catch {
            log(request, context: context, id: id, status: Int((error as? any HTTPResponseError)?.status.code ?? 500), since: started, notes: notes)
            throw error
        }
    }

    private func log(_ request: Request, context: Context, id: String, status: Int, since started: ContinuousClock.Instant, notes: RequestNotes?) {
        let elapsed = ContinuousClock.now - started
        // The route's pattern, not the path: a bounded label.
        metrics.request(endpoint: context.endpointPath ?? "unmatched", method: request.method.rawValue, status: status, duration: elapsed)
        if let journal, let notes {
            let noted = notes.state
            journal.record(StoredRequest(at: Int64((Date().timeIntervalSince1970 * 1000).rounded()), node: journal.node, requestID: id,
                                         method: request.method.rawValue, path: Self.loggedPath(request.uri.path), endpoint: context.endpointPath ?? "unmatched",
                                         userRecordName: noted.userRecordName, userName: noted.userName, operatorName: noted.operatorName, status: status,
                                         errorCode: noted.errorCode, micros: elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds / 1_000_000_000_000))
        }
        guard logger.logLevel <= .info else { return }
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        logger.info("request", metadata: [
            "request_id": .string(id),
            "method": .string(request.method.rawValue),
            "path": .string(Self.loggedPath(request.uri.path)),
            "status": .stringConvertible(status),
            "ms": .string(String(format: "%.2f", milliseconds)),
        ])
    }

    /// `given` if it is an acceptable id, else a new one (16 hexadecimal digits).
    static func requestID(given: String?) -> String {
        if let given, (1...64).contains(given.utf8.count),
           given.utf8.allSatisfy({ $0 < 0x80 && (Character(UnicodeScalar($0)).isLetter || Character(UnicodeScalar($0)).isNumber || "-_.".utf8.contains($0)) }) {
            return given
        }
        return String(format: "%016llx", UInt64.random(in: .min ... .max))
    }

    /// `path` with the segment after `/webcourier/1/`, `/assets/1/upload/` or
    /// `/assets/1/download/` (a push token or a signed grant) replaced by `…`.
    static func loggedPath(_ path: String) -> String {
        for prefix in ["/webcourier/1/", "/assets/1/upload/", "/assets/1/download/"] where path.hasPrefix(prefix) {
            let rest = path.dropFirst(prefix.count)
            return prefix + "…" + (rest.firstIndex(of: "/").map { String(rest[$0...]) } ?? "")
        }
        return path
    }
}
