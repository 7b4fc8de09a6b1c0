import Foundation
import NIOCore
import NIOSSL
import PostgresNIO

/// Where a PostgreSQL database is and how to reach it, from a URL:
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=MODE]` (`postgresql://` too).
///
/// `options` passes server settings as libpq does (`options=-c%20search_path%3Drecordsync` keeps
/// the tables in the schema `recordsync`). `sslmode` takes libpq's names: `disable` (plain), `prefer` (TLS if the server offers it, the
/// default), `require` (TLS, the server's certificate not checked), `verify-full` (TLS, the
/// certificate checked against the system's roots or `sslrootcert=PATH`, and the host name).
public struct PostgresLocation: Sendable, CustomStringConvertible {
    /// How TLS is used.
    public enum TLSMode: String, Sendable {
        case disable
        case prefer
        case require
        case verifyFull = "verify-full"
    }

    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode
    /// A PEM file of the certificate authorities `verify-full` trusts (the system's if `nil`).
    public var rootCertificatePath: String?
    /// How long connecting may take.
    public var connectTimeout: Duration = .seconds(10)
    /// Server settings sent when connecting (libpq's `options`, e.g. `-c search_path=NAME`).
    public var options: String?

    /// Parses a database URL.
    ///
    /// - Throws: ``PostgresEngineError`` naming what is wrong with it.
    public init(url text: String) throws {
        guard let url = URLComponents(string: text), let scheme = url.scheme?.lowercased() else {
            throw PostgresEngineError("not a database URL: \(Self.redacted(text)) (expected postgres://USER@HOST:PORT/DATABASE)")
        }
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw PostgresEngineError("unsupported database URL scheme \"\(scheme)\" (expected postgres://USER@HOST:PORT/DATABASE)")
        }
        guard let host = url.host, !host.isEmpty else {
            throw PostgresEngineError("the database URL names no host (expected postgres://USER@HOST:PORT/DATABASE)")
        }
        guard let user = url.user, !user.isEmpty else {
            throw PostgresEngineError("the database URL names no user (expected postgres://USER@HOST:PORT/DATABASE)")
        }
        let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        guard !database.isEmpty, !database.contains("/") else {
            throw PostgresEngineError("the database URL names no database (expected postgres://USER@HOST:PORT/DATABASE)")
        }
        self.host = host
        port = url.port ?? 5432
        username = user
        password = url.password
        self.database = database
        tls = .prefer
        for item in url.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let value = item.value, let mode = TLSMode(rawValue: value) else {
                    throw PostgresEngineError("sslmode must be disable, prefer, require or verify-full, not \"\(item.value ?? "")\"")
                }
                tls = mode
            case "options":
                options = item.value
            case "sslrootcert":
                rootCertificatePath = item.value
            case "connect_timeout":
                guard let value = item.value, let seconds = Int(value), seconds > 0 else {
                    throw PostgresEngineError("connect_timeout must be a number of seconds, not \"\(item.value ?? "")\"")
                }
                connectTimeout = .seconds(seconds)
            default:
                throw PostgresEngineError("unknown database URL parameter \"\(item.name)\" (known: sslmode, sslrootcert, connect_timeout, options)")
            }
        }
    }

    /// The URL without its password.
    public var description: String {
        var items: [URLQueryItem] = []
        if tls != .prefer { items.append(URLQueryItem(name: "sslmode", value: tls.rawValue)) }
        if let options { items.append(URLQueryItem(name: "options", value: options)) }
        var url = URLComponents()
        url.queryItems = items.isEmpty ? nil : items
        return "postgres://\(username)@\(host):\(port)/\(database)\(url.string ?? "")"
    }

    /// `text` with any password replaced by `***`.
    static func redacted(_ text: String) -> String {
        guard var url = URLComponents(string: text), url.password != nil else { return text }
        url.password = "***"
        return url.string ?? text
    }

    /// The TLS settings, or `nil` for none.
    func tlsConfiguration() throws -> TLSConfiguration? {
        switch tls {
        case .disable:
            return nil
        case .prefer, .require:
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .none
            return configuration
        case .verifyFull:
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .fullVerification
            if let rootCertificatePath {
                configuration.trustRoots = .file(rootCertificatePath)
            }
            return configuration
        }
    }

    /// The startup packet's extra parameters.
    private var startupParameters: [(String, String)] {
        options.map { [("options", $0)] } ?? []
    }

    /// The settings of the engine's pool.
    var clientConfiguration: PostgresClient.Configuration {
        get throws {
            let tlsSettings: PostgresClient.Configuration.TLS
            switch (tls, try tlsConfiguration()) {
            case (_, nil): tlsSettings = .disable
            case (.prefer, let configuration?): tlsSettings = .prefer(configuration)
            case (_, let configuration?): tlsSettings = .require(configuration)
            }
            var configuration = PostgresClient.Configuration(host: host, port: port, username: username, password: password, database: database, tls: tlsSettings)
            configuration.options.connectTimeout = connectTimeout
            configuration.options.additionalStartupParameters = startupParameters
            return configuration
        }
    }

    /// The settings of one connection of its own (migrations, listening).
    var connectionConfiguration: PostgresConnection.Configuration {
        get throws {
            let tlsSettings: PostgresConnection.Configuration.TLS
            switch (tls, try tlsConfiguration()) {
            case (_, nil): tlsSettings = .disable
            case (.prefer, let configuration?): tlsSettings = .prefer(try NIOSSLContext(configuration: configuration))
            case (_, let configuration?): tlsSettings = .require(try NIOSSLContext(configuration: configuration))
            }
            var configuration = PostgresConnection.Configuration(host: host, port: port, username: username, password: password, database: database, tls: tlsSettings)
            configuration.options.connectTimeout = .seconds(connectTimeout.components.seconds)
            configuration.options.additionalStartupParameters = startupParameters
            return configuration
        }
    }
}
