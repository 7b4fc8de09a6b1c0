import Foundation
import Logging
import RecordModel
import RecordRules

/// Everything that configures a RecordSync server, with the defaults `recordserver` uses.
///
/// The executable maps its flags onto this struct in one place; tests build one directly.
public struct ServerConfiguration: Sendable {
    /// The address to listen on.
    public var host: String = "127.0.0.1"
    /// The port to listen on; `0` picks a free one.
    public var port: Int = 8080
    /// The folder holding the SQLite database (`records.sqlite`), created if missing.
    public var dataDirectory: String = ".recordserver"
    /// The PostgreSQL database to store in instead of SQLite
    /// (`postgres://USER@HOST:PORT/DATABASE`, see `PostgresLocation`), or `nil` for SQLite
    /// under ``dataDirectory``.
    public var databaseURL: String?
    /// The most connections to PostgreSQL the server opens.
    public var databasePoolSize: Int = 16
    /// The store's limits.
    public var limits = StoreLimits()
    /// The largest request body accepted, in bytes (larger: `LIMIT_EXCEEDED`).
    public var maximumBodyBytes: Int = 16 * 1024 * 1024
    /// How often the notification stream sends a keep-alive comment.
    public var keepAliveInterval: Duration = .seconds(15)
    /// The URL clients reach this server at (`https://records.example.com`), which asset upload
    /// and download URLs begin with; `nil` takes the scheme (`X-Forwarded-Proto`, else `http`)
    /// and `Host` of each request.
    public var publicURL: String?
    /// How often assets no record holds are looked for (and those past the grace period removed),
    /// and old notifications removed.
    public var assetCollectionInterval: Duration = .seconds(60)
    /// How often each server looks for word-index builds to run (`SearchIndexBuilder`) while
    /// it has none.
    public var searchIndexBuildInterval: Duration = .seconds(1)
    /// How often each server brings the records' field indexes in line with the schemas'
    /// `QUERYABLE` and `SORTABLE` marks (`FieldIndexBuilder`).
    public var fieldIndexInterval: Duration = .seconds(10)
    /// How long a `GET` on a `webcourierURL` waits for a notification before it answers empty.
    public var webcourierWait: Duration = .seconds(30)
    /// How long a notification nobody polled for is kept (and a webcourier token nobody polls).
    public var notificationRetention: Duration = .seconds(24 * 60 * 60)
    /// How long `GET /healthz` waits for the store to answer a read before it answers 503.
    public var healthTimeout: Duration = .seconds(2)
    /// A PEM file holding the certificate (and any intermediates after it) to serve HTTPS
    /// with, and one holding its private key; both `nil`: plain HTTP (behind a proxy that
    /// ends TLS, say).
    public var tlsCertificatePath: String?
    public var tlsKeyPath: String?
    /// A bearer token `GET /metrics` requires (`Authorization: Bearer TOKEN`); `nil`: anyone
    /// who reaches the server reads its metrics.
    public var metricsToken: String?
    /// How fast each user may send requests to this server (`THROTTLED`, 429, with
    /// `retryAfter`, past it); `nil`: no limit.
    public var rateLimit: RateLimit?
    /// How long a connection may stay idle (between requests, or while its request is read)
    /// before it is closed; a request being answered, a push stream or a long poll, is never
    /// cut. `nil`: never.
    public var idleTimeout: Duration? = .seconds(75)
    /// The largest header block a request may carry, in bytes (also the largest single field).
    public var maximumHeaderBytes: Int = 32 * 1024
    /// Whether a `ckAPIToken` that is no API token (`rsapi_…`) is taken as a user's token, as
    /// earlier releases did; `false` refuses it (`AUTHENTICATION_FAILED`), so that only API
    /// tokens travel in `ckAPIToken` (`--strict-api-tokens`).
    public var userTokensAsAPIToken = true
    /// The identity providers whose ID tokens sign users in (docs/deploying.md, "Identity
    /// providers"); none: only the tokens `recordserver user add` and `user token` issue.
    public var identityProviders: [IdentityProviderSettings] = []
    /// How long a session token a sign-in gives works (90 days unless set).
    public var sessionLifetime: Duration = .seconds(90 * 24 * 60 * 60)
    /// Built-in accounts: who may sign up, throttling, password hashing (docs/deploying.md,
    /// "Accounts").
    public var accounts = AccountSettings()
    /// Where the server's mails go; `nil`: it sends none, and signing up must be closed.
    public var mail: MailSettings?
    /// The sender of the server's mails.
    public var mailFrom = "recordserver@localhost"
    /// The proxies whose `X-Forwarded-For` gives a client's address (what sign-ins are
    /// throttled by); none: the peer's address.
    public var trustedProxies = try! TrustedProxies([])
    /// The web console at `/console` for named operators (docs/console.md), with how long its
    /// sessions last; `nil` (unless `--console`): no console, and no cookie opens anything.
    public var console: ConsoleSessionLimits?
    /// How long the request log keeps a request (with the console only; docs/console.md, "The
    /// request log"), and the most requests it keeps.
    public var requestLogRetention: Duration = .seconds(24 * 60 * 60)
    public var requestLogMaximum: Int64 = 1_000_000
    /// The logger for the server's own messages.
    public var logger = Logger(label: "recordserver")

    /// Creates a configuration with the defaults.
    public init() {}

    /// The SQLite database file inside ``dataDirectory``.
    public var databasePath: String { (dataDirectory as NSString).appendingPathComponent("records.sqlite") }
}
