import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import RecordModel

/// The operators' API of a RecordSync server (docs/protocol.md, "Operators"), for a named
/// operator's secret (`rsop_…`): the schema lifecycle (docs/protocol.md, "The schema API"),
/// as `recordctl schema` uses it.
public struct OperatorConnection: Sendable {
    public var serverURL: URL
    public var secret: String
    /// A PEM file of certificate authorities trusted besides the system's.
    public var certificateAuthority: String?

    public init(serverURL: URL, secret: String, certificateAuthority: String? = nil) {
        self.serverURL = serverURL
        self.secret = secret
        self.certificateAuthority = certificateAuthority
    }

    // MARK: The schema lifecycle

    /// The schema of `container` in `environment`, in CloudKit's schema language.
    public func exportSchema(container: String, environment: Container.Environment) async throws -> String {
        String(decoding: try await send("GET", schema(container, environment), query: ["format": "ckdb"]), as: UTF8.self)
    }

    /// Checks that `text` reads as a schema file (`BAD_REQUEST` naming the line and column).
    public func validateSchema(_ text: String, container: String, environment: Container.Environment) async throws {
        _ = try await send("POST", schema(container, environment, "validate"), body: Data(text.utf8))
    }

    /// Makes development's schema `text` (or, with `dryRun`, says what that would do).
    public func importSchema(_ text: String, container: String, dryRun: Bool = false, deleteRecords: Bool = false) async throws -> SchemaPlan {
        try await plan("POST", schema(container, .development, "import"), query: flags(dryRun: dryRun, deleteRecords: deleteRecords), body: Data(text.utf8))
    }

    /// What deploying development's schema to production would change.
    public func schemaDiff(container: String) async throws -> [SchemaChange] {
        try await plan("GET", schema(container, .production, "diff")).changes
    }

    /// Deploys development's schema to production (`confirm`: tightening grants, dropping
    /// indexes or roles too).
    public func deploySchema(container: String, confirm: Bool = false) async throws -> SchemaPlan {
        try await plan("POST", schema(container, .production, "deploy"), query: confirm ? ["confirm": "true"] : [:])
    }

    /// Puts development's schema back to production's (or, with `dryRun`, says what that would
    /// delete).
    public func resetSchema(container: String, dryRun: Bool = false) async throws -> SchemaPlan {
        try await plan("POST", schema(container, .development, "reset"), query: flags(dryRun: dryRun, deleteRecords: false))
    }

    /// Locks production's schema: it takes no new type or field from saves.
    public func lockSchema(container: String) async throws {
        _ = try await send("POST", schema(container, .production, "lock"))
    }

    /// The latest imports, deploys, resets and locks of the schema of `container` in
    /// `environment`, newest first.
    public func schemaHistory(container: String, environment: Container.Environment, limit: Int = 100) async throws -> [SchemaHistoryEntry] {
        struct History: Decodable { var history: [SchemaHistoryEntry] }
        return try JSONDecoder().decode(History.self, from: try await send("GET", schema(container, environment, "history"), query: ["limit": String(limit)])).history
    }

    // MARK: Requests

    private func schema(_ container: String, _ environment: Container.Environment, _ action: String? = nil) -> String {
        let name = container.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? container
        return "\(name)/\(environment.rawValue)/schema" + (action.map { "/\($0)" } ?? "")
    }

    private func flags(dryRun: Bool, deleteRecords: Bool) -> [String: String] {
        var query: [String: String] = [:]
        if dryRun { query["dryRun"] = "true" }
        if deleteRecords { query["deleteRecords"] = "true" }
        return query
    }

    private func plan(_ method: String, _ path: String, query: [String: String] = [:], body: Data? = nil) async throws -> SchemaPlan {
        let data = try await send(method, path, query: query, body: body)
        do {
            return try JSONDecoder().decode(SchemaPlan.self, from: data)
        } catch {
            throw RecordSyncError(.networkFailure, "\(path): the answer could not be read: \(error)")
        }
    }

    /// `method /admin/1/path?query` with `body`: the answer, or the server's error.
    public func send(_ method: String, _ path: String, query: [String: String] = [:], body: Data? = nil) async throws -> Data {
        var components = URLComponents(url: serverURL.appendingPathComponent("admin/1"), resolvingAgainstBaseURL: false)!
        components.percentEncodedPath += "/" + path
        if !query.isEmpty { components.queryItems = query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) } }
        guard let url = components.url else { throw RecordSyncError(.badRequest, "\(path) does not make a URL") }
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .init(rawValue: method)
        request.headers.add(name: "Authorization", value: "Bearer \(secret)")
        if let body {
            request.headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
            request.body = .bytes(ByteBuffer(data: body))
        }
        let client = certificateAuthority.map { HTTPTransport.clients.client(idle: .seconds(120), trusting: $0) } ?? HTTPTransport.client
        let status: Int, data: Data
        do {
            let response = try await client.execute(request, timeout: .minutes(10))
            status = Int(response.status.code)
            data = Data(buffer: try await response.body.collect(upTo: HTTPTransport.maximumAnswerBytes))
        } catch {
            throw RecordSyncError(.networkFailure, "\(path): \(error)", retryAfter: 1)
        }
        guard status == 200 else {
            if let error = (try? JSONValueDecoder().decode(ErrorBody.self, from: data))?.error { throw error }
            throw RecordSyncError(.networkFailure, "\(path): HTTP \(status) without a RecordSync error body", retryAfter: 1)
        }
        return data
    }
}
