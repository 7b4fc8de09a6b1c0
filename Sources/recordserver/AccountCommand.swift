import ArgumentParser
import Foundation
import RecordPostgresEngine
import RecordRules
import RecordServer

extension SignUpMode: ExpressibleByArgument {}

extension RecordServerCommand {
    /// Built-in accounts (`docs/deploying.md`, "Accounts"): invitations, and verifying an
    /// address by hand.
    struct AccountCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "account",
            abstract: "Built-in accounts (email and password): invitation codes, verifying a sign-up by hand.",
            subcommands: [Invite.self, Verify.self]
        )

        /// `account invite [--email ADDRESS]`: prints a single-use invitation code.
        struct Invite: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Make an invitation code (for serve --sign-up invitation) and print it (nothing else on standard output).",
                discussion: "The code works once, until it expires; with --email, only for that address."
            )
            @Option(help: "The only address the code admits.") var email: String?
            @Option(help: "Days the code works.") var days: Int = 7
            @OptionGroup var dataOptions: DataOptions

            func validate() throws {
                guard (1...365).contains(days) else { throw ValidationError("--days must be between 1 and 365") }
            }

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                var code = ""
                try await reportingStoreErrors {
                    code = try await Accounts(store: store, settings: AccountSettings()).invite(email: email, lifetime: .seconds(days * 24 * 60 * 60))
                }
                print(code)
                await (store.engine as? PostgresEngine)?.shutdown()
            }
        }

        /// `account verify ADDRESS`: makes the account of a waiting sign-up without its code.
        struct Verify: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Verify a waiting sign-up's address without its code (the operator vouches for it): makes the account, and prints the user's name."
            )
            @Argument(help: "The address the sign-up gave.") var email: String
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                try await reportingStoreErrors {
                    let user = try await Accounts(store: store, settings: AccountSettings()).verifyWithoutCode(email: email)
                    print(user.name)
                }
                await (store.engine as? PostgresEngine)?.shutdown()
            }
        }
    }
}
