import ArgumentParser
import Foundation
import Logging
import RecordModel
import RecordPostgresEngine
import RecordRules
import RecordServer

/// `recordserver`: serves the CloudKit Web Services protocol over a SQLite or PostgreSQL store.
@main
struct RecordServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recordserver",
        abstract: "A self-hostable, CloudKit-compatible record sync server.",
        discussion: "With no subcommand, serves on 127.0.0.1:8080 with data in ./.recordserver/.",
        subcommands: [Serve.self, UserCommand.self, AccountCommand.self, OperatorCommand.self, APITokenCommand.self, RoleCommand.self, DataCommand.self, AssetsCommand.self],
        defaultSubcommand: Serve.self
    )

    /// Logs go to standard error whatever the subcommand (`user add` prints its token, and
    /// nothing else, on standard output): as text, or JSON lines with `serve --log-format json`.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if (command as? Serve)?.logFormat == .json {
                LoggingSystem.bootstrap(JSONLogHandler.init)
            } else {
                LoggingSystem.bootstrap(StreamLogHandler.standardError)
            }
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}

/// Where the data is, shared by every subcommand.
struct DataOptions: ParsableArguments {
    @Option(name: .long, help: "The folder holding the SQLite database (created if missing).")
    var data: String = ".recordserver"

    @Option(name: .long, help: ArgumentHelp(
        "Store in PostgreSQL instead of SQLite: postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require|verify-full].",
        discussion: "Also read from the environment variable RECORDSYNC_DATABASE.", valueName: "url"))
    var database: String?

    @Option(name: .long, help: "The most connections to PostgreSQL (with --database).")
    var poolSize: Int = 16

    /// The database URL: the flag, else the environment.
    var databaseURL: String? {
        database ?? ProcessInfo.processInfo.environment["RECORDSYNC_DATABASE"].flatMap { $0.isEmpty ? nil : $0 }
    }

    func validate() throws {
        guard poolSize > 0 else { throw ValidationError("--pool-size must be positive") }
    }

    /// A configuration with these options.
    func configuration() -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.dataDirectory = data
        configuration.databaseURL = databaseURL
        configuration.databasePoolSize = poolSize
        return configuration
    }
}

/// Opens the store, or ends the process with one line on standard error saying why it cannot.
func openStore(_ configuration: ServerConfiguration) async throws -> RecordStore {
    do {
        return RecordStore(engine: try await openEngine(configuration), limits: configuration.limits)
    } catch {
        FileHandle.standardError.write(Data("recordserver: \(error)\n".utf8))
        throw ExitCode.failure
    }
}

extension RecordServerCommand {
    /// Runs the server until SIGTERM or SIGINT.
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Run the server (the default).")

        @Option(help: "The address to listen on.")
        var host: String = "127.0.0.1"

        @Option(help: "The port to listen on; 0 picks a free port.")
        var port: Int = 8080

        @OptionGroup var dataOptions: DataOptions

        @Option(help: "Operations allowed per request (records/modify, records/lookup, zones).")
        var maxOperations: Int = 400

        @Option(help: "The largest request body accepted, in bytes.")
        var maxBodyBytes: Int = 16 * 1024 * 1024

        @Option(help: "Log level: trace, debug, info, notice, warning, error, critical. At info, one line per request (its id, method, path, status, milliseconds).")
        var logLevel: String = "info"

        enum LogFormat: String, ExpressibleByArgument, CaseIterable { case text, json }

        @Option(help: "Log lines as text, or as one JSON object a line (time, level, label, message and the message's fields).")
        var logFormat: LogFormat = .text

        @Option(help: "The largest asset accepted, in bytes.")
        var maxAssetBytes: Int64 = 50 * 1024 * 1024

        @Option(help: "How long an asset no record holds is kept, in seconds (also how long an upload can wait to be saved).")
        var assetGracePeriod: Int = 24 * 60 * 60

        @Option(help: "The URL clients reach this server at (https://records.example.com), for asset URLs; default: each request's scheme and Host.")
        var publicURL: String?

        @Option(help: "The URL shares' url begins with, their short GUID after it (https://example.com/share/); default: shares carry no url.")
        var shareURL: String?

        @Option(help: ArgumentHelp("Serve HTTPS with this certificate (PEM; intermediates after it), with --tls-key.", valueName: "file"))
        var tlsCert: String?

        @Option(help: ArgumentHelp("The private key of --tls-cert (PEM).", valueName: "file"))
        var tlsKey: String?

        @Option(help: "Requests a second each user may send to this server (past it: THROTTLED, 429, with retryAfter); default: no limit.")
        var rateLimit: Double?

        @Option(help: "Requests a user may send at once after a quiet time (with --rate-limit; default: one second's worth).")
        var rateBurst: Double?

        @Option(help: "The most records each user may have created, over every container and database (past it: QUOTA_EXCEEDED, 413); default: no limit.")
        var quotaRecords: Int64?

        @Option(help: "The most bytes each user's records may hold, their fields' JSON and their uploaded assets (past it: QUOTA_EXCEEDED, 413); default: no limit.")
        var quotaBytes: Int64?

        @Option(help: "Seconds a connection may stay idle (between requests, or while its request is being read) before it is closed; 0: never. Requests being answered, push streams and long polls are never cut.")
        var idleTimeout: Double = 75

        @Option(help: "The largest request header block, in bytes; larger is refused.")
        var maxHeaderBytes: Int = 32 * 1024

        @Flag(help: "Take ckAPIToken as an API token only: a user's token sent there (which earlier releases accepted) is refused.")
        var strictAPITokens = false

        @Option(help: ArgumentHelp("A token GET /metrics requires (Authorization: Bearer TOKEN); also read from RECORDSYNC_METRICS_TOKEN. Without one, /metrics is open.", valueName: "token"))
        var metricsToken: String?

        @Option(help: ArgumentHelp("Identity providers whose ID tokens sign users in: a JSON file holding an array of {name, issuer, audiences, jwksFile or jwksURL, clockSkewSeconds?, keyRefreshSeconds?} (docs/deploying.md).", valueName: "file"))
        var identityProviders: String?

        @Option(help: ArgumentHelp("Sign in with Apple for this client ID (the app's bundle ID, or its Services ID on the web); repeat for each.", valueName: "client-id"))
        var signInWithApple: [String] = []

        @Option(help: "Days a session token from a sign-in works.")
        var sessionDays: Int = 90

        @Option(help: "Who may sign up for an account with an email address and a password: open (anyone), invitation (with a code from 'account invite'), closed. Anything but closed needs --smtp or --mail-directory.")
        var signUp: SignUpMode = .closed

        @Option(help: ArgumentHelp("The SMTP server mails (sign-up and reset codes) go through: smtp://[USER[:PASSWORD]@]HOST[:PORT] (STARTTLS when offered) or smtps://… (TLS).", valueName: "url"))
        var smtp: String?

        @Option(help: ArgumentHelp("A file holding the SMTP password (instead of the URL's); also read from RECORDSYNC_SMTP_PASSWORD.", valueName: "file"))
        var smtpPasswordFile: String?

        @Option(help: ArgumentHelp("Trust the SMTP server's certificate when this CA (PEM) signed it, instead of the system's roots.", valueName: "file"))
        var smtpCA: String?

        @Option(help: ArgumentHelp("Development only: write each mail to a file in this directory instead of sending it.", valueName: "directory"))
        var mailDirectory: String?

        @Option(help: ArgumentHelp("The sender of the server's mails.", valueName: "address"))
        var mailFrom: String = "recordserver@localhost"

        @Option(help: ArgumentHelp("A proxy (IP address, or ADDRESS/BITS) whose X-Forwarded-For names the client (what sign-ins are throttled by); repeat for each.", valueName: "address"))
        var trustedProxy: [String] = []

        @Option(help: "Failed sign-ins (and codes, and password checks) for one email address within 15 minutes before THROTTLED.")
        var signInFailures: Int = 5

        @Option(help: "Failed attempts, and mails asked for, from one client address within 15 minutes before THROTTLED.")
        var addressFailures: Int = 50

        @Flag(help: "Serve the web console at /console, for named operators (their name and secret sign them in; docs/console.md).")
        var console = false

        @Option(help: "Hours a console session lasts however it is used (with --console).")
        var consoleSessionHours: Int = 12

        @Option(help: "Minutes a console session may stay unused before it ends (with --console).")
        var consoleIdleMinutes: Int = 30

        @Option(help: "Hours the request log keeps a request (with --console; at most a million requests are kept).")
        var requestLogHours: Int = 24

        @Option(help: "scrypt's N for new password hashes (a power of two from 1024 to 1048576).")
        var passwordHashRounds: Int = PasswordHashing.standard.rounds

        func validate() throws {
            guard (1...3650).contains(sessionDays) else { throw ValidationError("--session-days must be between 1 and 3650") }
            if let problem = PasswordHashing.problem(withRounds: passwordHashRounds) { throw ValidationError("--password-hash-rounds: \(problem)") }
            guard (1...720).contains(consoleSessionHours) else { throw ValidationError("--console-session-hours must be between 1 and 720") }
            guard (1...1440).contains(consoleIdleMinutes) else { throw ValidationError("--console-idle-minutes must be between 1 and 1440") }
            guard (1...720).contains(requestLogHours) else { throw ValidationError("--request-log-hours must be between 1 and 720") }
            guard signInFailures > 0, addressFailures > 0 else { throw ValidationError("--sign-in-failures and --address-failures must be positive") }
            if smtp != nil, mailDirectory != nil { throw ValidationError("--smtp and --mail-directory are two places for the same mails: give one") }
            if signUp != .closed, smtp == nil, mailDirectory == nil {
                throw ValidationError("--sign-up \(signUp.rawValue) mails codes to verify addresses: give --smtp (or --mail-directory, for development)")
            }
            guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
            guard maxOperations > 0 else { throw ValidationError("--max-operations must be positive") }
            guard maxBodyBytes > 0 else { throw ValidationError("--max-body-bytes must be positive") }
            guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("--log-level \(logLevel) is not a level") }
            guard maxAssetBytes > 0 else { throw ValidationError("--max-asset-bytes must be positive") }
            guard assetGracePeriod > 0 else { throw ValidationError("--asset-grace-period must be positive") }
            if let publicURL, URL(string: publicURL)?.scheme == nil { throw ValidationError("--public-url \(publicURL) is not a URL") }
            if let shareURL, URL(string: shareURL)?.scheme == nil { throw ValidationError("--share-url \(shareURL) is not a URL") }
            if (tlsCert == nil) != (tlsKey == nil) { throw ValidationError("--tls-cert and --tls-key go together") }
            if let rateLimit, !(rateLimit > 0 && rateLimit <= 1_000_000) { throw ValidationError("--rate-limit must be more than 0 and at most 1000000") }
            if let rateBurst, !(rateBurst >= 1 && rateBurst <= 1_000_000) || rateLimit == nil {
                throw ValidationError("--rate-burst needs --rate-limit and is between 1 and 1000000")
            }
            if let quotaRecords, quotaRecords < 0 { throw ValidationError("--quota-records must not be negative") }
            if let quotaBytes, quotaBytes < 0 { throw ValidationError("--quota-bytes must not be negative") }
            guard idleTimeout >= 0, idleTimeout <= 86_400 else { throw ValidationError("--idle-timeout must be between 0 and 86400 seconds") }
            guard (1024...1 << 20).contains(maxHeaderBytes) else { throw ValidationError("--max-header-bytes must be between 1024 and 1048576") }
        }

        func run() async throws {
            var configuration = dataOptions.configuration()
            configuration.host = host
            configuration.port = port
            configuration.limits.maximumOperationsPerRequest = maxOperations
            configuration.maximumBodyBytes = maxBodyBytes
            configuration.logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
            configuration.limits.maximumAssetBytes = maxAssetBytes
            configuration.limits.assetGracePeriod = .seconds(assetGracePeriod)
            configuration.publicURL = publicURL.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
            configuration.tlsCertificatePath = tlsCert
            configuration.tlsKeyPath = tlsKey
            configuration.rateLimit = rateLimit.map { RateLimit(rate: $0, burst: rateBurst) }
            configuration.limits.quota = Quota(records: quotaRecords, bytes: quotaBytes)
            configuration.limits.shareURLBase = shareURL
            configuration.idleTimeout = idleTimeout > 0 ? .milliseconds(Int64(idleTimeout * 1000)) : nil
            configuration.maximumHeaderBytes = maxHeaderBytes
            configuration.userTokensAsAPIToken = !strictAPITokens
            configuration.metricsToken = metricsToken ?? ProcessInfo.processInfo.environment["RECORDSYNC_METRICS_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
            configuration.sessionLifetime = .seconds(sessionDays * 24 * 60 * 60)
            configuration.accounts.signUp = signUp
            configuration.accounts.hashing = PasswordHashing(rounds: passwordHashRounds)
            configuration.accounts.throttle.failuresPerAccount = signInFailures
            configuration.accounts.throttle.failuresPerAddress = addressFailures
            configuration.mailFrom = mailFrom
            if console {
                configuration.console = ConsoleSessionLimits(lifetime: .seconds(consoleSessionHours * 3600), idle: .seconds(consoleIdleMinutes * 60))
                configuration.requestLogRetention = .seconds(requestLogHours * 3600)
            }
            do {
                configuration.identityProviders = try IdentityProviderSettings.read(file: identityProviders, signInWithApple: signInWithApple)
                configuration.trustedProxies = try TrustedProxies(trustedProxy)
                if let smtp {
                    let password = try smtpPasswordFile.map { try String(contentsOfFile: $0, encoding: .utf8).trimmingCharacters(in: .newlines) }
                        ?? ProcessInfo.processInfo.environment["RECORDSYNC_SMTP_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
                    configuration.mail = .smtp(try SMTPSettings(url: smtp, password: password, certificateAuthority: smtpCA))
                } else if let mailDirectory {
                    configuration.mail = .directory(mailDirectory)
                }
            } catch {
                FileHandle.standardError.write(Data("recordserver: \(error)\n".utf8))
                throw ExitCode.failure
            }
            do {
                try checkTLSFiles(configuration)
            } catch let error as TLSFilesError {
                FileHandle.standardError.write(Data("recordserver: \(error.description)\n".utf8))
                throw ExitCode.failure
            }
            let store = try await openStore(configuration)
            // A SQLite directory is marked in use, so that `data copy` refuses it while it is served.
            var lock: ServerLock?
            if configuration.databaseURL == nil {
                lock = try ServerLock(directory: configuration.dataDirectory)
                guard lock?.tryShared() == true else {
                    FileHandle.standardError.write(Data("recordserver: \(configuration.dataDirectory) is being copied; try again when the copy is done\n".utf8))
                    throw ExitCode.failure
                }
            }
            let app = try buildApplication(configuration: configuration, store: store)
            try await app.runService()
            // After graceful shutdown: PostgreSQL's pool and listening connection close
            // (their tasks are the engine's, ended here).
            await (store.engine as? PostgresEngine)?.shutdown()
            withExtendedLifetime(lock) {}
        }
    }

    /// Manages users.
    struct UserCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "user",
            abstract: "Manage users and their bearer tokens.",
            discussion: """
                Each user holds named bearer tokens (one per device, say). Tokens are stored only as \
                hashes: a token is printed once, when issued. A revoked token, or any token of a deleted \
                user, stops working on every server sharing the data within a second.
                """,
            subcommands: [Add.self, List.self, Usage.self, Delete.self, Link.self, Token.self, Tokens.self, RevokeToken.self, Key.self, Keys.self, RevokeKey.self, Profile.self]
        )

        /// `user add NAME`: creates a user and prints its token.
        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Create a user and print a bearer token (and nothing else) on standard output."
            )
            @Argument(help: "The user's name.") var name: String
            @Option(help: "The user's email address: other users can find them by it (users/discover, users/lookup/email).")
            var email: String?
            @Option(help: "The user's given name, shown to users who find them.") var givenName: String?
            @Option(help: "The user's family name, shown to users who find them.") var familyName: String?
            @Flag(help: "Keep the user undiscoverable although an email is given (they can opt in later).")
            var hidden = false
            @OptionGroup var tokenOptions: TokenOptions
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                let token = Credentials.newToken()
                let profile = UserProfile(email: email, givenName: givenName, familyName: familyName, discoverable: email != nil && !hidden)
                try await reportingStoreErrors {
                    _ = try await store.createUser(named: name, tokenHash: Credentials.hash(token), tokenName: tokenOptions.tokenName,
                                                   expiresAt: tokenOptions.expiresAt, profile: profile)
                }
                print(token)
                await (store.engine as? PostgresEngine)?.shutdown()
            }
        }

        /// `user link SOURCE --into TARGET --yes`: makes SOURCE's identities and account sign in
        /// as TARGET.
        struct Link: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Link two users: SOURCE's identity-provider identities and account (password) sign in as TARGET from then on; SOURCE's tokens are revoked.",
                discussion: """
                    Two identities become one user only this way, never by their email addresses. SOURCE keeps its \
                    data; delete it with 'user delete' once nothing of it is wanted. Prints what moved.
                    """
            )
            @Argument(help: "The user whose ways of signing in move.") var source: String
            @Option(help: "The user they sign in as from then on.") var into: String
            @Flag(help: "Confirm: without it, nothing is linked.") var yes = false
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                guard yes else { throw ValidationError("linking \(source) into \(into) needs --yes") }
                let store = try await openStore(dataOptions.configuration())
                try await reportingStoreErrors {
                    let moved = try await store.linkUser(named: source, into: into)
                    print("\(moved.identities) identit\(moved.identities == 1 ? "y" : "ies")\(moved.account ? " and an account" : "") now sign in as \(into)")
                }
                await (store.engine as? PostgresEngine)?.shutdown()
            }
        }

        /// `user delete NAME --yes`: removes a user and their private data.
        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Delete a user: their private databases (every container and environment), the assets only those held, their subscriptions, notifications, tokens and profile.",
                discussion: """
                    Records the user created in public databases stay, still naming them as creator; no user's \
                    token can change them any more. The user's tokens stop working on every server within a \
                    second. Prints what was removed.
                    """
            )
            @Argument(help: "The user's name.") var name: String
            @Flag(help: "Confirm: without it, nothing is deleted.") var yes = false
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                guard yes else { throw ValidationError("deleting user \(name) removes all their private data; give --yes to confirm") }
                let store = try await openStore(dataOptions.configuration())
                let deletion = try await reportingStoreErrors { try await store.deleteUser(named: name) }
                print("deleted user \(name) (\(deletion.user.userRecordName)): \(deletion.databases) private database\(deletion.databases == 1 ? "" : "s"), \(deletion.zones) zone\(deletion.zones == 1 ? "" : "s"), \(deletion.assets.count) asset\(deletion.assets.count == 1 ? "" : "s")")
                await (store.engine as? PostgresEngine)?.shutdown()
            }
        }

        /// `user list`: every user, one a line.
        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List the users: name, user record name, when created (UTC), how many tokens each holds, and how they sign in (operator: tokens from 'user add' and 'user token'; else password for an account, and the identity providers of their identities), tab-separated, by name."
            )
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                for (user, createdAt, tokens) in try await store.users() {
                    let created = Date(timeIntervalSince1970: Double(createdAt) / 1000).formatted(.iso8601)
                    let methods = try await store.signInMethods(of: user)
                    let signsIn = methods.isEmpty ? "operator" : methods.joined(separator: ",")
                    print([user.name, user.userRecordName, created, "\(tokens) token\(tokens == 1 ? "" : "s")", signsIn].joined(separator: "\t"))
                }
                await (store.engine as? PostgresEngine)?.shutdown()
            }
        }

        /// `user usage NAME`: what the user's records hold.
        struct Usage: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Print how many records a user created and the bytes they hold (fields' JSON and uploaded assets), tab-separated: what --quota-records and --quota-bytes limit."
            )
            @Argument(help: "The user's name.") var name: String
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                let usage = try await reportingStoreErrors { try await store.usage(ofUserNamed: name) }
                print("\(usage.records) records\t\(usage.bytes) bytes")
                await (store.engine as? PostgresEngine)?.shutdown()
            }
        }

        /// `user profile NAME`: shows or changes what other users can find a user by.
        struct Profile: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Show or change a user's email, names and discoverability, and print the result."
            )
            @Argument(help: "The user's name.") var name: String
            @Option(help: "A new email address (an empty string removes it).") var email: String?
            @Option(help: "A new given name (an empty string removes it).") var givenName: String?
            @Option(help: "A new family name (an empty string removes it).") var familyName: String?
            @Option(help: "Whether other users can find this one: yes or no.") var discoverable: Discoverability?
            @OptionGroup var dataOptions: DataOptions

            enum Discoverability: String, ExpressibleByArgument { case yes, no }

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                let (email, givenName, familyName, discoverable) = (email, givenName, familyName, discoverable)
                let profile = try await store.setProfile(ofUserNamed: name) { profile in
                    if let email { profile.email = email.isEmpty ? nil : email }
                    if let givenName { profile.givenName = givenName.isEmpty ? nil : givenName }
                    if let familyName { profile.familyName = familyName.isEmpty ? nil : familyName }
                    if let discoverable { profile.discoverable = discoverable == .yes }
                }
                print("email: \(profile.email ?? "-")")
                print("given name: \(profile.givenName ?? "-")")
                print("family name: \(profile.familyName ?? "-")")
                print("discoverable: \(profile.discoverable ? "yes" : "no")")
            }
        }

        /// `user token NAME`: issues another token for an existing user.
        struct Token: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Issue another bearer token for an existing user and print it (and nothing else)."
            )
            @Argument(help: "The user's name.") var name: String
            @OptionGroup var tokenOptions: TokenOptions
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                let token = Credentials.newToken()
                try await reportingStoreErrors {
                    _ = try await store.addToken(forUserNamed: name, tokenHash: Credentials.hash(token), tokenName: tokenOptions.tokenName,
                                                 expiresAt: tokenOptions.expiresAt)
                }
                print(token)
                await (store.engine as? PostgresEngine)?.shutdown()
            }
        }

        /// `user tokens NAME`: a user's tokens, one a line.
        struct Tokens: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List a user's tokens: name, when issued and when it expires (UTC, or never), tab-separated, by name."
            )
            @Argument(help: "The user's name.") var name: String
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                let tokens = try await reportingStoreErrors { try await store.tokens(ofUserNamed: name) }
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                for token in tokens {
                    let expiry = token.expiresAt.map { (token.expiresAt ?? 0) <= now ? "expired \(Self.date($0))" : "expires \(Self.date($0))" } ?? "never expires"
                    print([token.name, "issued \(Self.date(token.createdAt))", expiry].joined(separator: "\t"))
                }
                await (store.engine as? PostgresEngine)?.shutdown()
            }

            static func date(_ milliseconds: Int64) -> String {
                Date(timeIntervalSince1970: Double(milliseconds) / 1000).formatted(.iso8601)
            }
        }

        /// `user revoke-token NAME TOKEN`: a token stops working.
        struct RevokeToken: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "revoke-token",
                abstract: "Revoke one of a user's tokens by name: it stops working on every server within a second."
            )
            @Argument(help: "The user's name.") var name: String
            @Argument(help: "The token's name (see 'user tokens').") var token: String
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                try await reportingStoreErrors { try await store.revokeToken(named: token, ofUserNamed: name) }
                await (store.engine as? PostgresEngine)?.shutdown()
            }
        }
    }
}

extension RecordServerCommand.UserCommand {
    /// `user key NAME --public-key FILE`: registers a server-to-server key.
    struct Key: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a server-to-server key that signs requests as the user, in public databases only, and print its key ID.",
            discussion: """
                Make a key pair with 'openssl ecparam -name prime256v1 -genkey -noout -out key.pem' and its public \
                half with 'openssl ec -in key.pem -pubout -out public.pem'; give public.pem here. Requests carry the \
                printed ID in X-Apple-CloudKit-Request-KeyID, as CloudKit's do (docs/protocol.md).
                """
        )
        @Argument(help: "The user the key signs as.") var name: String
        @Option(help: ArgumentHelp("The P-256 public key, in PEM form.", valueName: "file")) var publicKey: String
        @Option(help: "The key's name (default: key-1, key-2, …, the first free).") var keyName: String?
        @OptionGroup var dataOptions: DataOptions

        func run() async throws {
            guard let pem = try? String(contentsOfFile: publicKey, encoding: .utf8) else {
                throw ValidationError("cannot read --public-key \(publicKey)")
            }
            let store = try await openStore(dataOptions.configuration())
            let id = try await reportingStoreErrors { try await store.addServerKey(forUserNamed: name, keyName: keyName, publicKeyPEM: pem) }
            print(id)
            await (store.engine as? PostgresEngine)?.shutdown()
        }
    }

    /// `user keys NAME`: a user's server-to-server keys.
    struct Keys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a user's server-to-server keys: name, key ID, when registered (UTC), tab-separated, by name."
        )
        @Argument(help: "The user's name.") var name: String
        @OptionGroup var dataOptions: DataOptions

        func run() async throws {
            let store = try await openStore(dataOptions.configuration())
            for key in try await reportingStoreErrors({ try await store.serverKeys(ofUserNamed: name) }) {
                print([key.name, key.id, "registered \(Tokens.date(key.createdAt))"].joined(separator: "\t"))
            }
            await (store.engine as? PostgresEngine)?.shutdown()
        }
    }

    /// `user revoke-key NAME KEY`: a key stops signing.
    struct RevokeKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke-key",
            abstract: "Remove one of a user's server-to-server keys by name: requests it signs are refused from then on, on every server."
        )
        @Argument(help: "The user's name.") var name: String
        @Argument(help: "The key's name (see 'user keys').") var key: String
        @OptionGroup var dataOptions: DataOptions

        func run() async throws {
            let store = try await openStore(dataOptions.configuration())
            try await reportingStoreErrors { try await store.revokeServerKey(named: key, ofUserNamed: name) }
            await (store.engine as? PostgresEngine)?.shutdown()
        }
    }
}

/// The name and lifetime of a token being issued.
struct TokenOptions: ParsableArguments {
    @Option(help: "The token's name, such as the device it is for (default: token-1, token-2, …, the first free).")
    var tokenName: String?

    @Option(help: ArgumentHelp("How long the token works: a number of seconds, or a number followed by s, m, h or d (90d).", valueName: "duration"))
    var expiresIn: String?

    func validate() throws {
        if let expiresIn, Self.seconds(expiresIn) == nil {
            throw ValidationError("--expires-in \(expiresIn) is not a duration (a positive number, optionally followed by s, m, h or d)")
        }
    }

    /// When the token expires (milliseconds since 1970), or `nil`.
    var expiresAt: Int64? {
        expiresIn.flatMap(Self.seconds).map { Int64(Date().timeIntervalSince1970 * 1000) + $0 * 1000 }
    }

    /// `90`, `90s`, `15m`, `12h`, `30d` in seconds, or `nil`.
    static func seconds(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        var digits = Substring(text)
        var unit: Int64 = 1
        if let last = text.last, let scale = units[last] { digits = digits.dropLast(); unit = scale }
        guard let count = Int64(digits), count > 0 else { return nil }
        let (seconds, overflow) = count.multipliedReportingOverflow(by: unit)
        return overflow || seconds > 100 * 365 * 86400 ? nil : seconds
    }
}

/// Runs `body`; a `RecordSyncError` (no such user, a name taken) ends the process with one line
/// on standard error saying why.
func reportingStoreErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as RecordSyncError {
        FileHandle.standardError.write(Data("recordserver: \(error.reason)\n".utf8))
        throw ExitCode.failure
    }
}

extension RecordServerCommand {
    /// Manages what assets need.
    struct AssetsCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "assets",
            abstract: "Manage the keys that sign asset URLs.",
            subcommands: [RotateKey.self]
        )

        /// `assets rotate-key`: a new signing key; the one before keeps verifying.
        struct RotateKey: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Make a new key sign asset URLs (every server within a minute); URLs the previous key signed stay valid, older keys are removed."
            )
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                let id = try await AssetSigner.rotate(in: store.engine, now: Int64(Date().timeIntervalSince1970 * 1000))
                print(id)
            }
        }
    }
}
