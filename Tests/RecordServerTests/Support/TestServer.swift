import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import RecordModel
import RecordPostgresEngine
import RecordRules
import RecordServer
import RecordSQLiteEngine
import TestSupport
import Testing

/// A running server, reached over real HTTP on a port picked by the system.
struct TestServer: Sendable {
    let client: any TestClientProtocol
    let store: RecordStore
    let directory: String
    let backend: Backend

    /// Creates a user and a session that signs in as them.
    func user(_ name: String, container: String = "iCloud.test.Gallery") async throws -> Session {
        let token = Credentials.newToken()
        let user = try await store.createUser(named: name, tokenHash: Credentials.hash(token))
        return Session(client: client, token: token, container: container, userRecordName: user.userRecordName)
    }

    /// Sends a raw request (for authentication and malformed-input tests).
    func send(_ method: HTTPRequest.Method = .post, _ uri: String, headers: HTTPFields = [:], body: String? = nil) async throws -> Reply {
        let response = try await client.executeRequest(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
        return Reply(status: Int(response.status.code), data: Data(buffer: response.body), headers: response.headers)
    }
}

/// Runs `body` against a live server on port 0, once per backend.
func withServer(
    directory: String? = nil,
    configure: @Sendable (inout ServerConfiguration) -> Void = { _ in },
    _ body: @escaping @Sendable (TestServer) async throws -> Void
) async throws {
    for backend in Backend.all {
        try await withTemporaryDirectory { temporary in
            let directory = directory ?? temporary
            var configuration = ServerConfiguration()
            configuration.port = 0
            configuration.dataDirectory = directory
            configuration.logger.logLevel = .warning
            configure(&configuration)
            try await backend.withStore(directory, configuration.limits) { store in
                let app = try buildApplication(configuration: configuration, store: store)
                try await app.test(.live) { client in
                    try await body(TestServer(client: client, store: store, directory: directory, backend: backend))
                }
            }
        }
    }
}

/// An HTTP answer.
struct Reply: Sendable {
    var status: Int
    var data: Data
    var headers: HTTPFields = [:]

    /// The body as untyped JSON (`.null` when it is not JSON).
    var json: JSONValue { (try? JSONDecoder().decode(JSONValue.self, from: data)) ?? .null }

    /// The code an error body means: its `recordSyncErrorCode` extension, else its
    /// `serverErrorCode`. Checks on the way that the body speaks Apple's documented codes only,
    /// with Apple's HTTP status for a request-level error.
    var code: String? {
        guard let wire = json["serverErrorCode"]?.stringValue else { return nil }
        let apple = WireForm.appleErrorCodes[ServerErrorCode(rawValue: wire)]
        #expect(apple != nil, "serverErrorCode \(wire) is not one Apple documents")
        if status != 200 { #expect(apple == status, "\(wire) answered with HTTP \(status)") }
        return json[WireForm.errorExtensionKey]?.stringValue ?? wire
    }

    /// The `reason` of an error body.
    var reason: String { json["reason"]?.stringValue ?? "" }

    /// The body decoded as a model type; fails the test if it does not decode.
    func decode<T: Decodable>(_ type: T.Type, sourceLocation: SourceLocation = #_sourceLocation) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch {
            Issue.record("could not decode \(T.self) from \(String(decoding: data, as: UTF8.self)): \(error)", sourceLocation: sourceLocation)
            throw error
        }
    }
}

/// A signed-in user talking to one container.
struct Session: Sendable {
    let client: any TestClientProtocol
    let token: String
    let container: String
    let userRecordName: String

    /// POSTs a raw JSON body to an endpoint of a database.
    func post(_ endpoint: String, _ body: String, database: String = "private", environment: String = "development") async throws -> Reply {
        let response = try await client.executeRequest(
            uri: "/database/1/\(container)/\(environment)/\(database)/\(endpoint)", method: .post,
            headers: [.authorization: "Bearer \(token)", .contentType: "application/json"], body: ByteBuffer(string: body)
        )
        return Reply(status: Int(response.status.code), data: Data(buffer: response.body))
    }

    /// POSTs an encodable request body.
    func post<T: Encodable>(_ endpoint: String, _ body: T, database: String = "private") async throws -> Reply {
        try await post(endpoint, String(decoding: try JSONEncoder().encode(body), as: UTF8.self), database: database)
    }

    /// `records/modify`, decoded; the HTTP status must be 200.
    func modify(_ operations: [RecordOperation], zone: String? = nil, atomic: Bool? = nil, database: String = "private",
                sourceLocation: SourceLocation = #_sourceLocation) async throws -> [RecordResult] {
        let reply = try await post("records/modify", ModifyRecordsRequest(operations: operations, zoneID: zone.map { ZoneID(zoneName: $0) }, atomic: atomic), database: database)
        #expect(reply.status == 200, "\(reply.code ?? ""): \(reply.reason)", sourceLocation: sourceLocation)
        return try reply.decode(RecordsResponse.self).records
    }

    /// Saves records with `forceReplace` (creating them), expecting every one to succeed.
    @discardableResult
    func save(_ records: [Record], zone: String? = nil, database: String = "private", sourceLocation: SourceLocation = #_sourceLocation) async throws -> [Record] {
        let results = try await modify(records.map { RecordOperation(.forceReplace, RecordPayload($0)) }, zone: zone, database: database, sourceLocation: sourceLocation)
        for result in results { #expect(result.error == nil, "\(result.error?.description ?? "")", sourceLocation: sourceLocation) }
        return results.compactMap(\.record)
    }

    /// Creates custom zones in the private database.
    func createZones(_ names: String...) async throws {
        let reply = try await post("zones/modify", ModifyZonesRequest(operations: names.map { .init(.create, ZoneID(zoneName: $0)) }))
        #expect(reply.status == 200)
    }

    /// Every change of a zone since `token`, following `moreComing`, and the final token.
    func allChanges(zone: String? = nil, since token: String? = nil, pageSize: Int? = nil) async throws -> (records: [Record], token: String) {
        var token = token
        var records: [Record] = []
        while true {
            let reply = try await post("records/changes", RecordChangesRequest(zoneID: zone.map { ZoneID(zoneName: $0) }, syncToken: token, resultsLimit: pageSize))
            #expect(reply.status == 200, "\(reply.reason)")
            let page = try reply.decode(ZoneChanges.self)
            records += page.records
            token = page.syncToken
            if !page.moreComing { return (records, page.syncToken) }
        }
    }

    /// The names a query returns, following continuation markers.
    func queryNames(_ query: Query, zone: String? = nil, pageSize: Int? = nil, database: String = "private") async throws -> [String] {
        var marker: String?
        var names: [String] = []
        repeat {
            let reply = try await post("records/query", QueryRecordsRequest(query: query, zoneID: zone.map { ZoneID(zoneName: $0) }, resultsLimit: pageSize, continuationMarker: marker), database: database)
            #expect(reply.status == 200, "\(reply.code ?? ""): \(reply.reason)")
            let page = try reply.decode(QueryRecordsResponse.self)
            names += page.records.map(\.recordName)
            marker = page.continuationMarker
        } while marker != nil
        return names
    }
}

extension JSONValue {
    subscript(index: Int) -> JSONValue? {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }

    var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }
}

