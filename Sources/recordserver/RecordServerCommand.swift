import ArgumentParser
import Foundation
import Logging
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
        subcommands: [Serve.self, UserCommand.self, DataCommand.self, AssetsCommand.self],
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

        func validate() throws {
            guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
            guard maxOperations > 0 else { throw ValidationError("--max-operations must be positive") }
            guard maxBodyBytes > 0 else { throw ValidationError("--max-body-bytes must be positive") }
            guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("--log-level \(logLevel) is not a level") }
            guard maxAssetBytes > 0 else { throw ValidationError("--max-asset-bytes must be positive") }
            guard assetGracePeriod > 0 else { throw ValidationError("--asset-grace-period must be positive") }
            if let publicURL, URL(string: publicURL)?.scheme == nil { throw ValidationError("--public-url \(publicURL) is not a URL") }
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
            let app = buildApplication(configuration: configuration, store: store)
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
            subcommands: [Add.self, List.self, Token.self, Profile.self]
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
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                let token = Credentials.newToken()
                let profile = UserProfile(email: email, givenName: givenName, familyName: familyName, discoverable: email != nil && !hidden)
                _ = try await store.createUser(named: name, tokenHash: Credentials.hash(token), profile: profile)
                print(token)
            }
        }

        /// `user list`: every user, one a line.
        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List the users: name, user record name, when created (UTC) and how many tokens each holds, tab-separated, by name."
            )
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                for (user, createdAt, tokens) in try await store.users() {
                    let created = Date(timeIntervalSince1970: Double(createdAt) / 1000).formatted(.iso8601)
                    print([user.name, user.userRecordName, created, "\(tokens) token\(tokens == 1 ? "" : "s")"].joined(separator: "\t"))
                }
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
                abstract: "Issue another bearer token for an existing user and print it."
            )
            @Argument(help: "The user's name.") var name: String
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                let token = Credentials.newToken()
                _ = try await store.addToken(forUserNamed: name, tokenHash: Credentials.hash(token))
                print(token)
            }
        }
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
