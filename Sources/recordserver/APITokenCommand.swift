import ArgumentParser
import Foundation
import RecordPostgresEngine
import RecordRules
import RecordServer

extension RecordServerCommand {
    /// Manages API tokens: what lets a web app's signed-out visitors read a container's public
    /// database, and which web origins may use it (`docs/deploying.md`, "API tokens").
    struct APITokenCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "api-token",
            abstract: "Manage API tokens (CloudKit JS's apiToken): signed-out visitors, web origins.",
            subcommands: [Add.self, List.self, Revoke.self]
        )

        /// `api-token add CONTAINER ENVIRONMENT`: issues one and prints it.
        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Issue an API token for a container and environment and print it (nothing else on standard output).",
                discussion: """
                    An app gives it to CloudKit JS as its apiToken (sent as ckAPIToken). A request with it and no user's \
                    token is a signed-out visitor, who reads the public database; pages of the --origin origins may call \
                    the server from a browser (CORS). The web sign-in page hands a signed-in user's token to the app \
                    by a message to its window at its --origin (Post Message, CloudKit's default; the token must list \
                    the app's origins, not *), or, with --sign-in-callback, by sending the browser to that URL with \
                    ckWebAuthToken and ckSession (URL Redirect).
                    """
            )
            @Argument(help: "The container (iCloud.com.example.Gallery).") var container: String
            @Argument(help: "development or production.") var environment: String
            @Option(help: "The token's name (default: api-token-1, api-token-2, …, the first free in the container and environment).") var name: String?
            @Option(name: .customLong("origin"), help: ArgumentHelp("A web origin whose pages may use it (https://gallery.example.com), or * for any; repeat for several.", valueName: "origin"))
            var origins: [String] = []
            @Option(name: .customLong("sign-in-callback"), help: ArgumentHelp("The URL the web sign-in page sends signed-in users to, with their token (URL Redirect); without it, the page posts the token to the app's window (Post Message).", valueName: "url"))
            var signInCallback: String?
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                let token = Credentials.newAPIToken()
                try await reportingStoreErrors {
                    _ = try await store.createAPIToken(named: name, container: container, environment: environment, origins: origins,
                                                   signInCallback: signInCallback, tokenHash: Credentials.hash(token))
                }
                print(token)
                await (store.engine as? PostgresEngine)?.shutdown()
            }
        }

        /// `api-token list`: every API token.
        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List API tokens: container, environment, name, origins (comma-separated), sign-in (post-message or the callback URL), when issued (UTC), tab-separated."
            )
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                for token in try await reportingStoreErrors({ try await store.apiTokens() }) {
                    print([token.container, token.environment, token.name, token.origins.isEmpty ? "-" : token.origins.joined(separator: ","),
                           token.signInCallback ?? "post-message",
                           "issued \(UserCommand.Tokens.date(token.createdAt))"].joined(separator: "\t"))
                }
                await (store.engine as? PostgresEngine)?.shutdown()
            }
        }

        /// `api-token revoke CONTAINER ENVIRONMENT NAME`.
        struct Revoke: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Revoke an API token by name: refused on every server within a second."
            )
            @Argument(help: "The container.") var container: String
            @Argument(help: "development or production.") var environment: String
            @Argument(help: "The token's name (see 'api-token list').") var name: String
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                try await reportingStoreErrors { try await store.revokeAPIToken(named: name, container: container, environment: environment) }
                await (store.engine as? PostgresEngine)?.shutdown()
            }
        }
    }
}
