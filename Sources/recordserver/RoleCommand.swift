import ArgumentParser
import Foundation
import RecordPostgresEngine
import RecordRules
import RecordServer

extension RecordServerCommand {
    /// Gives users the security roles of a container environment's schema (docs/protocol.md,
    /// "Security roles"): what its `GRANT … TO role` lines give in the public database.
    struct RoleCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "role",
            abstract: "Give users the security roles of a schema (CREATE ROLE), which its GRANT lines give permissions in the public database.",
            subcommands: [List.self, Give.self, Take.self]
        )

        /// `role list CONTAINER ENVIRONMENT`.
        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List the schema's roles and the users holding each: role, user names (comma-separated, or -), tab-separated, by role.")
            @Argument(help: "The container (iCloud.com.example.Gallery).") var container: String
            @Argument(help: "development or production.") var environment: String
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                for holders in try await reportingStoreErrors({ try await store.roles(ofContainer: container, environment: environment) }) {
                    print([holders.role, holders.users.isEmpty ? "-" : holders.users.joined(separator: ",")].joined(separator: "\t"))
                }
                await (store.engine as? PostgresEngine)?.shutdown()
            }
        }

        /// `role give CONTAINER ENVIRONMENT ROLE USER`.
        struct Give: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Give a user a role of the schema of a container environment (every server judges by it within a second).")
            @OptionGroup var role: RoleOfUser

            func run() async throws { try await role.set(held: true) }
        }

        /// `role take CONTAINER ENVIRONMENT ROLE USER`.
        struct Take: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Take a role of the schema of a container environment from a user.")
            @OptionGroup var role: RoleOfUser

            func run() async throws { try await role.set(held: false) }
        }
    }
}

/// The arguments of `role give` and `role take`.
struct RoleOfUser: ParsableArguments {
    @Argument(help: "The container.") var container: String
    @Argument(help: "development or production.") var environment: String
    @Argument(help: "The role (CREATE ROLE in the schema).") var role: String
    @Argument(help: "The user's name.") var user: String
    @OptionGroup var dataOptions: DataOptions

    /// Gives the user the role (`held`) or takes it.
    func set(held: Bool) async throws {
        let store = try await openStore(dataOptions.configuration())
        try await reportingStoreErrors { try await store.setRole(role, held: held, user: user, container: container, environment: environment) }
        await (store.engine as? PostgresEngine)?.shutdown()
    }
}
