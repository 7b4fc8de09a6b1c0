import Hummingbird
import RecordModel

/// Answers every error that escapes a route (unknown paths, wrong methods, anything
/// unexpected) with the JSON error shape, so no client ever sees an empty error body.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as RecordSyncError {
            return JSONBody.response(for: error)
        } catch let error as any HTTPResponseError {
            switch error.status.code {
            case 404:
                return JSONBody.response(for: RecordSyncError(.notFound, "no endpoint \(request.method.rawValue) \(request.uri.path)"))
            case 405:
                return JSONBody.response(for: RecordSyncError(.badRequest, "\(request.method.rawValue) is not allowed on \(request.uri.path)"))
            case 413:
                return JSONBody.response(for: RecordSyncError(.limitExceeded, "the request body is too large"))
            default:
                return JSONBody.response(for: RecordSyncError(.badRequest, "the request could not be handled (HTTP \(error.status.code))"))
            }
        } catch {
            context.logger.error("unexpected error", metadata: ["error.type": "\(type(of: error))"])
            return JSONBody.response(for: RecordSyncError(.internalError, "the server could not handle the request"))
        }
    }
}
