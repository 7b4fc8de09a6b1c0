import Foundation
import Hummingbird
@_exported import struct RecordServer.ServerConfiguration
import RecordModel
import RecordRules
import RecordServer
import RecordSQLiteEngine

/// A RecordSync server running in this process on a loopback port, for clients that connect
/// over real HTTP.
public struct LiveServer: Sendable {
    /// `http://127.0.0.1:PORT`.
    public let url: URL
    /// The port.
    public let port: Int
    /// The server's store, for creating users.
    public let store: RecordStore
    /// The data directory.
    public let directory: String

    /// Creates a user and returns their bearer token.
    public func token(forNewUser name: String) async throws -> String {
        let token = Credentials.newToken()
        _ = try await store.createUser(named: name, tokenHash: Credentials.hash(token))
        return token
    }

    /// Creates a named operator with `scopes` (`schema`, `users`, …) and returns its secret.
    public func secret(forNewOperator name: String, scopes: [String]) async throws -> String {
        let secret = Credentials.newOperatorSecret()
        try await store.createOperator(named: name, secretHash: Credentials.hash(secret), scopes: Set(scopes.compactMap(OperatorScope.init(rawValue:))))
        return secret
    }
}

/// Runs `body` with a live server on `port` (0: a free port) with its data in `directory`,
/// and stops the server when `body` returns.
public func withLiveServer<T: Sendable>(
    directory: String, port: Int = 0,
    configure: @Sendable (inout ServerConfiguration) -> Void = { _ in },
    _ body: @escaping @Sendable (LiveServer) async throws -> T
) async throws -> T {
    var configuration = ServerConfiguration()
    configuration.port = port
    configuration.dataDirectory = directory
    configuration.logger.logLevel = .warning
    configure(&configuration)
    let store = RecordStore(engine: try SQLiteEngine(path: configuration.databasePath), limits: configuration.limits)
    return try await withRunningServer(configuration: configuration, store: store) { url in
        try await body(LiveServer(url: url, port: url.port ?? port, store: store, directory: directory))
    }
}
