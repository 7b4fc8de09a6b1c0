import Foundation
import HTTPTypes
import Hummingbird
import RecordModel
import RecordRules

/// Cross-origin requests from web pages (CORS): a page may read an answer only when its origin
/// is listed by an API token. This is no authentication (any program can send any `Origin`);
/// it is what lets browsers run a web app's requests, and keeps pages of other sites from
/// reading what a signed-in visitor's browser could.
///
/// The origins that count for a request are those of its API token (`ckAPIToken`) when it
/// carries one; else those of every API token of the container and environment its path names
/// (`/database/1/C/E/…`, `/device/1/C/E/…`); else (webcourier and asset URLs, which name no
/// container) those of every API token. A preflight (`OPTIONS` with
/// `Access-Control-Request-Method`) from a listed origin is answered `204` with what it may
/// send; from any other, `403` without `Access-Control-Allow-Origin`. Every answer carries
/// `Vary: Origin`. The last rule also covers `/signin`, `/healthz` and `/metrics`.
struct CORSMiddleware: RouterMiddleware {
    typealias Context = RequestContextWithAddress

    let store: RecordStore
    let apiTokens: APITokenCache

    /// What a page may send beside a simple request's headers.
    static let allowedHeaders = "Content-Type, Content-Encoding, Authorization, X-Apple-CloudKit-Request-KeyID, "
        + "X-Apple-CloudKit-Request-ISO8601Date, X-Apple-CloudKit-Request-SignatureV1"

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let origin = request.headers[.origin] else {
            var response = try await next(request, context)
            response.headers.append(HTTPField(name: .vary, value: "Origin"))
            return response
        }
        if request.method == .options, request.headers[.accessControlRequestMethod] != nil {
            return await preflight(request, origin: origin)
        }
        var response = try await next(request, context)
        response.headers.append(HTTPField(name: .vary, value: "Origin"))
        if (try? await allows(origin, request)) == true {
            response.headers[.accessControlAllowOrigin] = origin
            response.headers[.accessControlExposeHeaders] = "Retry-After"
        }
        return response
    }

    private func preflight(_ request: Request, origin: String) async -> Response {
        var headers: HTTPFields = [.vary: "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"]
        do {
            guard try await allows(origin, request) else {
                throw RecordSyncError(.accessDenied, "origin \(NameRules.quoted(origin)) is not listed by an API token for \(request.uri.path) (recordserver api-token add --origin)")
            }
        } catch let error as RecordSyncError {
            var response = JSONBody.response(for: error)
            response.headers.append(contentsOf: headers)
            return response
        } catch {
            var response = JSONBody.response(for: RecordSyncError(.internalError, "the server could not read its API tokens"))
            response.headers.append(contentsOf: headers)
            return response
        }
        headers[.accessControlAllowOrigin] = origin
        headers[.accessControlAllowMethods] = "GET, POST"
        headers[.accessControlAllowHeaders] = Self.allowedHeaders
        headers[.accessControlMaxAge] = "600"
        return Response(status: .noContent, headers: headers)
    }

    /// Whether a page of `origin` may read the answer to `request`.
    private func allows(_ origin: String, _ request: Request) async throws -> Bool {
        // An API token the store does not know (revoked, say) falls back to the container's
        // origins, so that its page can read the AUTHENTICATION_FAILED answer.
        if let given = request.uri.queryParameters.get("ckAPIToken"), Credentials.isAPIToken(given),
           let token = try await apiTokens.token(hash: Credentials.hash(given), from: store) {
            return token.allows(origin: origin)
        }
        // The path's segments as the routes read them (not percent-decoded).
        let segments = request.uri.path.split(separator: "/", omittingEmptySubsequences: true)
        let named = segments.count >= 4 && (segments[0] == "database" || segments[0] == "device")
            ? (container: String(segments[2]), environment: String(segments[3])) : nil
        return try await apiTokens.all(from: store).values.contains { token in
            (named.map { token.container == $0.container && token.environment == $0.environment } ?? true) && token.allows(origin: origin)
        }
    }
}
