import ArgumentParser
import Foundation
import RecordPostgresEngine
import RecordRules
import RecordServer

extension OperatorScope: ExpressibleByArgument {}

extension RecordServerCommand {
    /// Named operators (`docs/deploying.md`, "Operators"): credentials for the operators' API
    /// and for acting as users, each with a name for the audit log and its scopes.
    struct OperatorCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "operator",
            abstract: "Manage named operators: secrets for the operators' API (/admin/1/) and for acting as users, with scopes and an audit log.",
            discussion: """
                What recordserver does on the machine's own data needs no operator: these commands are how \
                the first one is made. Secrets are stored only as hashes: a secret is printed once.
                """,
            subcommands: [Add.self, List.self, Revoke.self, Audit.self]
        )

        /// `operator add NAME --scope S…`: makes an operator and prints its secret.
        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Make an operator and print its secret (rsop_…, nothing else on standard output)."
            )
            @Argument(help: "The operator's name, as the audit log shows it.") var name: String
            @Option(name: .customLong("scope"), help: ArgumentHelp("read, write, schema, users or all; repeat for several.", valueName: "scope"))
            var scopes: [OperatorScope] = []
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                let secret = Credentials.newOperatorSecret()
                try await reportingStoreErrors {
                    _ = try await store.createOperator(named: name, secretHash: Credentials.hash(secret), scopes: Set(scopes))
                }
                print(secret)
                await (store.engine as? PostgresEngine)?.shutdown()
            }
        }

        /// `operator list`: name, scopes, when made.
        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List the operators: name, scopes (comma-separated), when made (UTC), tab-separated, by name.")
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                for (found, createdAt) in try await store.operators() {
                    let created = Date(timeIntervalSince1970: Double(createdAt) / 1000).formatted(.iso8601)
                    print([found.name, found.scopes.map(\.rawValue).sorted().joined(separator: ","), created].joined(separator: "\t"))
                }
                await (store.engine as? PostgresEngine)?.shutdown()
            }
        }

        /// `operator revoke NAME`.
        struct Revoke: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Revoke an operator: its secret is refused from the next request on, on every server.")
            @Argument(help: "The operator's name.") var name: String
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                try await reportingStoreErrors { try await store.revokeOperator(named: name) }
                await (store.engine as? PostgresEngine)?.shutdown()
            }
        }

        /// `operator audit [--limit N]`: the newest entries of the audit log.
        struct Audit: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Print the audit log's newest entries: when (UTC), operator, action, target, tab-separated, newest first.")
            @Option(help: "How many entries.") var limit: Int = 50
            @OptionGroup var dataOptions: DataOptions

            func run() async throws {
                let store = try await openStore(dataOptions.configuration())
                for entry in try await store.auditLog(limit: limit) {
                    let at = Date(timeIntervalSince1970: Double(entry.at) / 1000).formatted(.iso8601)
                    print([at, entry.operatorName, entry.action, entry.target].joined(separator: "\t"))
                }
                await (store.engine as? PostgresEngine)?.shutdown()
            }
        }
    }
}
