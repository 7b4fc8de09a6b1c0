import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOSSL
import NIOCore
import RecordModel
import RecordPostgresEngine
import RecordRules
import RecordSQLiteEngine
import ServiceLifecycle

/// Opens the engine the configuration names: PostgreSQL at ``ServerConfiguration/databaseURL``,
/// else SQLite under ``ServerConfiguration/dataDirectory`` (created if missing).
///
/// - Throws: `PostgresEngineError` (a bad URL, a database that cannot be reached or migrated)
///   or GRDB's error for a SQLite file that cannot be opened.
public func openEngine(_ configuration: ServerConfiguration) async throws -> any StorageEngine {
    if let url = configuration.databaseURL {
        var logger = configuration.logger
        logger.logLevel = max(logger.logLevel, .warning)
        return try await PostgresEngine(location: try PostgresLocation(url: url), maximumConnections: configuration.databasePoolSize, logger: logger)
    }
    try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
    return try SQLiteEngine(path: configuration.databasePath)
}

/// Builds the RecordSync server: opens the store (``openEngine(_:)``) and wires the routes.
///
/// The application logs `listening on http://HOST:PORT` once it accepts connections, and
/// `onListening` (if given) receives the port (useful with port 0).
///
/// - Throws: when the store cannot be opened (``openEngine(_:)``).
public func buildApplication(
    configuration: ServerConfiguration,
    onListening: (@Sendable (_ port: Int) async -> Void)? = nil
) async throws -> some ApplicationProtocol {
    let store = RecordStore(engine: try await openEngine(configuration), limits: configuration.limits)
    return try buildApplication(configuration: configuration, store: store, onListening: onListening)
}

/// The HTTP server: HTTPS with the configuration's certificate and key, else plain HTTP.
///
/// - Throws: ``TLSFilesError`` when the files cannot be read or do not make a pair.
func httpServer(_ configuration: ServerConfiguration) throws -> HTTPServerBuilder {
    let http1 = HTTP1Channel.Configuration(
        idleTimeout: configuration.idleTimeout.map { .nanoseconds($0.components.seconds * 1_000_000_000 + $0.components.attoseconds / 1_000_000_000) },
        httpDecoderConfiguration: .init(maxHeaderFieldSize: configuration.maximumHeaderBytes, maxHeaderListSize: configuration.maximumHeaderBytes))
    guard configuration.tlsCertificatePath != nil || configuration.tlsKeyPath != nil else { return .http1(configuration: http1) }
    guard let certificatePath = configuration.tlsCertificatePath, let keyPath = configuration.tlsKeyPath else {
        throw TLSFilesError(description: "HTTPS needs both a certificate and its private key (--tls-cert and --tls-key)")
    }
    let tls: TLSConfiguration
    do {
        let chain = try NIOSSLCertificate.fromPEMFile(certificatePath).map(NIOSSLCertificateSource.certificate)
        guard !chain.isEmpty else { throw TLSFilesError(description: "\(certificatePath) holds no certificate") }
        let key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
        var configured = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
        configured.minimumTLSVersion = .tlsv12
        tls = configured
        // Fails here, not at the first connection, when the key is not the certificate's.
        _ = try NIOSSLContext(configuration: tls)
    } catch let error as TLSFilesError {
        throw error
    } catch {
        throw TLSFilesError(description: "cannot serve HTTPS with \(certificatePath) and \(keyPath): \(error)")
    }
    return try .tls(.http1(configuration: http1), tlsConfiguration: tls)
}

/// Checks that the certificate and key the configuration names (if any) can serve HTTPS.
///
/// - Throws: ``TLSFilesError`` saying why not.
public func checkTLSFiles(_ configuration: ServerConfiguration) throws {
    _ = try httpServer(configuration)
}

/// Why the certificate and key given for HTTPS cannot be used.
public struct TLSFilesError: Error, CustomStringConvertible {
    public var description: String
}

/// Builds the server over a given store (any engine).
///
/// - Throws: ``TLSFilesError`` when HTTPS is configured with files that cannot be used.
public func buildApplication(
    configuration: ServerConfiguration,
    store: RecordStore,
    onListening: (@Sendable (_ port: Int) async -> Void)? = nil
) throws -> some ApplicationProtocol {
    MallocTuning.applied
    let server = try httpServer(configuration)
    let scheme = configuration.tlsCertificatePath == nil ? "http" : "https"
    let router = Router(context: RequestContextWithAddress.self)
    let metrics = ServerMetrics()
    // Outermost: it sees the answer the client gets, errors turned into answers included.
    // The console's request log, kept on every node that serves the console.
    let journal = configuration.console.map { _ in
        RequestJournal(store: store, node: RequestJournal.nodeName(), retention: configuration.requestLogRetention,
                       maximum: configuration.requestLogMaximum, logger: configuration.logger)
    }
    router.add(middleware: RequestLogMiddleware(logger: configuration.logger, metrics: metrics, journal: journal))
    let apiTokens = APITokenCache()
    // Outside the error middleware, so that error answers carry its headers too.
    router.add(middleware: CORSMiddleware(store: store, apiTokens: apiTokens))
    router.add(middleware: ErrorMiddleware())
    let console = configuration.console.map {
        ConsoleSessions(store: store, limits: $0, trustedProxies: configuration.trustedProxies, publicURL: configuration.publicURL, scheme: scheme)
    }
    let readAhead = ChangePageReadAhead<PreparedResponse>()
    DatabaseRoutes(store: store, limits: configuration.limits, maximumBodyBytes: configuration.maximumBodyBytes, readAhead: readAhead,
                   publicURL: configuration.publicURL, scheme: scheme, webcourierWait: configuration.webcourierWait, metrics: metrics,
                   rateLimiter: configuration.rateLimit.map { RateLimiter($0) }, apiTokens: apiTokens,
                   userTokensAsAPIToken: configuration.userTokensAsAPIToken, console: console)
        .register(on: router)
    let providers = try IdentityRoutes.providers(configuration.identityProviders)
    IdentityRoutes(store: store, providers: providers, sessionLifetime: configuration.sessionLifetime)
        .register(on: router)
    if configuration.accounts.signUp != .closed, configuration.mail == nil {
        throw RecordSyncError(.badRequest, "signing up (\(configuration.accounts.signUp.rawValue)) needs mail to verify addresses: give --smtp or --mail-directory")
    }
    let accounts = Accounts(store: store, settings: configuration.accounts)
    let mailer = configuration.mail.map { Mailer(settings: $0, from: configuration.mailFrom) }
    AdminRoutes(store: store, accounts: accounts, console: console, journal: journal,
                providers: providers.map { AdminProvider(name: $0.settings.name, web: $0.settings.web != nil) }).register(on: router)
    if let console { ConsoleRoutes(sessions: console, accounts: accounts).register(on: router) }
    AccountRoutes(accounts: accounts, mailer: mailer, sessionLifetime: configuration.sessionLifetime, trustedProxies: configuration.trustedProxies)
        .register(on: router)
    SignInPage(store: store, apiTokens: apiTokens, accounts: accounts, mailer: mailer, providers: providers.filter { $0.settings.web != nil },
               sessionLifetime: configuration.sessionLifetime, trustedProxies: configuration.trustedProxies, publicURL: configuration.publicURL,
               scheme: scheme)
        .register(on: router)
    AssetRoutes(store: store, incoming: (configuration.dataDirectory as NSString).appendingPathComponent("assets/incoming"))
        .register(on: router)
    // Ready only when the store answers: for load balancers and orchestrators.
    let healthTimeout = configuration.healthTimeout
    router.get("/healthz") { _, _ in
        let ready = await store.storageAnswers(within: healthTimeout)
        let body = ready ? #"{"status":"ready"}"# : #"{"status":"unavailable","reason":"the store did not answer"}"#
        return Response(status: ready ? .ok : .serviceUnavailable, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
                        body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
    // Prometheus's text format; with a metrics token, for its holder only.
    let metricsToken = configuration.metricsToken.map { Data("Bearer \($0)".utf8) }
    router.get("/metrics") { request, _ in
        if let metricsToken {
            let given = Data((request.headers[.authorization] ?? "").utf8)
            // Compared in constant time: the token guards what the server reveals of its load.
            guard given.count == metricsToken.count, zip(given, metricsToken).reduce(0, { $0 | ($1.0 ^ $1.1) }) == 0 else {
                return Response(status: .unauthorized, headers: [.contentType: "text/plain; charset=utf-8", .wwwAuthenticate: "Bearer"],
                                body: ResponseBody(byteBuffer: ByteBuffer(string: "metrics need the metrics token: Authorization: Bearer TOKEN\n")))
            }
        }
        let text = await metrics.exposition(of: store)
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                        body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    let logger = configuration.logger
    var frameworkLogger = logger
    frameworkLogger.logLevel = max(logger.logLevel, .warning)
    let host = configuration.host
    var services: [any Service] = [
        KeepAlive(notifier: store.notifier, interval: configuration.keepAliveInterval), readAhead,
        Collector(store: store, interval: configuration.assetCollectionInterval, notificationRetention: configuration.notificationRetention, logger: logger),
        SearchIndexBuilder(store: store, interval: configuration.searchIndexBuildInterval, logger: logger),
        FieldIndexBuilder(store: store, interval: configuration.fieldIndexInterval, logger: logger),
    ]
    if let journal { services.append(journal) }
    return Application(
        router: router,
        server: server,
        configuration: .init(address: .hostname(host, port: configuration.port), serverName: "recordserver"),
        services: services,
        onServerRunning: { channel in
            let port = channel.localAddress?.port ?? configuration.port
            logger.notice("listening on \(scheme)://\(host):\(port)")
            await onListening?(port)
        },
        logger: frameworkLogger
    )
}

/// Runs a server over `store` in this process until `body` returns, then stops it.
///
/// `body` receives the server's URL (`http://HOST:PORT`, with the port the server actually
/// bound when `configuration.port` is 0). Tests and `recordbench` use this to drive a real
/// server over real sockets.
///
/// The server is stopped with a graceful shutdown (as `recordserver` is on SIGTERM), and
/// cancelled only if that has not finished within `shutdownGrace` (a request that never ends,
/// such as an open push stream). Cancelling alone can trap in SwiftNIO when a connection was
/// accepted but not yet served ("Deinited NIOAsyncWriter without calling finish()",
/// swift-nio issue 2637): a client that cancelled its requests may still be connecting.
public func withRunningServer<T: Sendable>(
    configuration: ServerConfiguration,
    store: RecordStore,
    shutdownGrace: Duration = .seconds(2),
    _ body: @escaping @Sendable (_ url: URL) async throws -> T
) async throws -> T {
    let (ports, announce) = AsyncStream.makeStream(of: Int.self)
    let app = try buildApplication(configuration: configuration, store: store) { port in announce.yield(port) }
    let services = ServiceGroup(configuration: .init(services: [app], logger: configuration.logger))
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            try await services.run()
            return nil
        }
        func stop() async {
            await services.triggerGracefulShutdown()
            group.addTask {
                try? await Task.sleep(for: shutdownGrace)
                return nil
            }
            _ = try? await group.next()  // stopped, or out of time
            group.cancelAll()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), let url = URL(string: "http://\(configuration.host):\(port)") else {
            group.cancelAll()
            throw CancellationError()
        }
        do {
            let result = try await body(url)
            await stop()
            return result
        } catch {
            await stop()
            throw error
        }
    }
}

/// The push channel's keep-alives, as a service of the application: the store's notifier sends
/// them until graceful shutdown, then ends every stream.
struct KeepAlive: Service {
    let notifier: ChangeNotifier
    let interval: Duration

    func run() async throws {
        try await notifier.run(keepAliveInterval: interval)
    }
}

/// Runs `step` until the task is cancelled or the application shuts down gracefully, pausing
/// for `first` before the first step and after each for what it answers (`nil`: at once).
func repeatUntilShutdown(first: Duration? = nil, _ step: () async -> Duration?) async {
    var pause = first
    while !Task.isCancelled, !Task.isShuttingDownGracefully {
        if let wait = pause {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: wait) }
            } catch {
                return
            }
        }
        pause = await step()
    }
}

/// Removes assets no record holds (``RecordStore/collectAssets()``) and old notifications,
/// every `interval`.
struct Collector: Service {
    let store: RecordStore
    let interval: Duration
    let notificationRetention: Duration
    let logger: Logger

    func run() async throws {
        await repeatUntilShutdown(first: interval) {
            do {
                let removed = try await store.collectAssets()
                if removed > 0 { logger.info("removed \(removed) assets no record holds") }
            } catch {
                logger.warning("could not collect assets: \(error)")
            }
            do {
                try await store.collectNotifications(retention: notificationRetention)
            } catch {
                logger.warning("could not remove old notifications: \(error)")
            }
            return interval
        }
    }
}

/// Builds the word indexes of record types just marked searchable (``RecordStore/advanceSearchBuild(inContainer:ofType:)``),
/// a step at a time, on every server: a build a data directory or database holds is taken up
/// again after a restart, and on PostgreSQL the servers over one database take steps in turn.
/// Looks for builds every `interval` while there are none.
struct SearchIndexBuilder: Service {
    let store: RecordStore
    let interval: Duration
    let logger: Logger

    func run() async throws {
        await repeatUntilShutdown {
            do {
                switch try await store.advanceSearchBuild() {
                case .none: return interval
                case .busy: return .milliseconds(20)
                case .advanced: return nil
                case .finished(let build):
                    let seconds = Date().timeIntervalSince1970 - Double(build.startedAt) / 1000
                    logger.info("indexed the words of \(build.indexed) \(build.recordType) records in \(String(format: "%.1f", seconds)) s")
                    return nil
                }
            } catch {
                logger.warning("could not index the words of stored records (will try again): \(error)")
                return interval
            }
        }
    }
}

/// Brings the records' field indexes in line with the schemas' marks when the server starts and
/// every `interval` after (``RecordStore/settleFieldIndexes()``): a field a deploy, an import or
/// a development query marks gets its index within the interval.
struct FieldIndexBuilder: Service {
    let store: RecordStore
    let interval: Duration
    let logger: Logger

    func run() async throws {
        await repeatUntilShutdown {
            do {
                let start = ContinuousClock.now
                let (built, dropped) = try await store.settleFieldIndexes()
                if !built.isEmpty || !dropped.isEmpty {
                    logger.info("field indexes: built \(built.count), dropped \(dropped.count) in \(ContinuousClock.now - start)")
                }
            } catch {
                logger.warning("could not bring the field indexes in line with the schemas (will try again): \(error)")
            }
            return interval
        }
    }
}
