import ArgumentParser
import Foundation
import RecordClient

/// `recordctl schema export|import|validate|diff|deploy|reset|lock|history`: the schema
/// lifecycle through the operators' API (docs/deploying.md, "Deploying a schema"), with an
/// operator's secret. cktool's names (`export-schema`, …) are aliases.
struct SchemaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema", abstract: "Export, import, diff and deploy schemas in CloudKit's schema language (an operator's secret).",
        subcommands: [Export.self, Import.self, Validate.self, Diff.self, Deploy.self, Reset.self, Lock.self, History.self])

    /// The flags every schema command takes.
    struct Options: ParsableArguments {
        @OptionGroup var connection: ConnectionOptions
        @Option(help: ArgumentHelp("An operator's secret, rsop_… (env RECORDCTL_OPERATOR_SECRET; 'recordserver operator add --scopes schema').", valueName: "secret"))
        var operatorSecret: String?

        func makeConnection() throws -> (OperatorConnection, container: String, environment: Container.Environment) {
            let settings = try connection.resolvedSettings()
            let (url, environment) = try connection.serverAndEnvironment(settings)
            guard let secret = operatorSecret ?? ProcessInfo.processInfo.environment["RECORDCTL_OPERATOR_SECRET"].flatMap({ $0.isEmpty ? nil : $0 }) else {
                throw UsageError("no operator secret: give --operator-secret or RECORDCTL_OPERATOR_SECRET ('recordserver operator add NAME --scopes schema' makes one)")
            }
            return (OperatorConnection(serverURL: url, secret: secret, certificateAuthority: try connection.certificateAuthority()),
                    settings.container.value ?? ConnectionOptions.defaultContainer, environment)
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the environment's schema (or write it to --output-file).", aliases: ["export-schema"])
        @OptionGroup var options: Options
        @Option(help: ArgumentHelp("Write the schema here instead of printing it.", valueName: "file")) var outputFile: String?

        func run() async throws {
            try await reportingErrors {
                let (connection, container, environment) = try options.makeConnection()
                let text = try await connection.exportSchema(container: container, environment: environment)
                if let outputFile {
                    do { try Data(text.utf8).write(to: URL(fileURLWithPath: outputFile)) } catch { throw UsageError("cannot write '\(outputFile)': \(error.localizedDescription)") }
                } else {
                    Console.text(text)
                }
            }
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make development's schema the file's.",
            discussion: "Records of types or fields the file drops (or retypes) refuse the import, listed, unless --delete-records; --dry-run lists what would change.",
            aliases: ["import-schema"])
        @OptionGroup var options: Options
        @Option(help: ArgumentHelp("The schema file (.ckdb).", valueName: "file")) var file: String
        @Flag(help: "Show what would change and which records would be deleted, changing nothing.") var dryRun = false
        @Flag(help: "Delete development's records of what the file drops.") var deleteRecords = false

        func run() async throws {
            try await reportingErrors {
                let (connection, container, _) = try options.makeConnection()
                let plan = try await connection.importSchema(try SchemaCommand.read(file), container: container, dryRun: dryRun, deleteRecords: deleteRecords)
                SchemaCommand.print(plan, json: options.connection.json)
            }
        }
    }

    struct Validate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Check that a schema file reads (the server says where it does not).", aliases: ["validate-schema"])
        @OptionGroup var options: Options
        @Option(help: ArgumentHelp("The schema file (.ckdb).", valueName: "file")) var file: String

        func run() async throws {
            try await reportingErrors {
                let (connection, container, environment) = try options.makeConnection()
                try await connection.validateSchema(try SchemaCommand.read(file), container: container, environment: environment)
                Console.line("\(file) is a valid schema")
            }
        }
    }

    struct Diff: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show what deploying development's schema to production would change.")
        @OptionGroup var options: Options

        func run() async throws {
            try await reportingErrors {
                let (connection, container, _) = try options.makeConnection()
                SchemaCommand.print(SchemaPlan(changes: try await connection.schemaDiff(container: container), applied: false), json: options.connection.json, footer: false)
            }
        }
    }

    struct Deploy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Deploy development's schema to production, and lock production's.",
            discussion: "Only additions deploy; a removed type or field or a changed field type refuses the deploy. Revoked grants, dropped indexes and roles need --confirm.")
        @OptionGroup var options: Options
        @Flag(help: "Deploy revoked grants, dropped indexes and dropped roles too.") var confirm = false

        func run() async throws {
            try await reportingErrors {
                let (connection, container, _) = try options.makeConnection()
                SchemaCommand.print(try await connection.deploySchema(container: container, confirm: confirm), json: options.connection.json)
            }
        }
    }

    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Put development's schema back to production's, deleting development's records of what production lacks.",
                                                        aliases: ["reset-schema"])
        @OptionGroup var options: Options
        @Flag(help: "List what would change and be deleted, changing nothing.") var dryRun = false

        func run() async throws {
            try await reportingErrors {
                let (connection, container, _) = try options.makeConnection()
                SchemaCommand.print(try await connection.resetSchema(container: container, dryRun: dryRun), json: options.connection.json)
            }
        }
    }

    struct Lock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Lock production's schema before its first deploy: saves add no type or field to it.")
        @OptionGroup var options: Options

        func run() async throws {
            try await reportingErrors {
                let (connection, container, _) = try options.makeConnection()
                try await connection.lockSchema(container: container)
                Console.line("production's schema of \(container) is locked")
            }
        }
    }

    struct History: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the environment's imports, deploys, resets and locks, newest first.")
        @OptionGroup var options: Options
        @Option(help: "At most this many.") var limit = 20

        func run() async throws {
            try await reportingErrors {
                let (connection, container, environment) = try options.makeConnection()
                let entries = try await connection.schemaHistory(container: container, environment: environment, limit: limit)
                if options.connection.json {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                    Console.line(String(decoding: try encoder.encode(entries), as: UTF8.self))
                    return
                }
                for entry in entries {
                    let date = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(entry.at) / 1000))
                    Console.line("\(date)  \(entry.action)  by \(entry.operatorName)")
                    for line in entry.summary.split(separator: "\n") { Console.line("    \(line)") }
                }
            }
        }
    }

    static func read(_ file: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: file) else { throw UsageError("cannot read the schema file '\(file)'") }
        return String(decoding: data, as: UTF8.self)
    }

    /// A plan: each change with what a deploy does with it, then the records deleted.
    static func print(_ plan: SchemaPlan, json: Bool, footer: Bool = true) {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            Console.line(String(decoding: (try? encoder.encode(plan)) ?? Data(), as: UTF8.self))
            return
        }
        if plan.changes.isEmpty { Console.line("no change") }
        for change in plan.changes {
            let mark = switch change.effect { case .adds: "+"; case .tightens: "!"; case .refused: "x" }
            Console.line("\(mark) \(change.change)\(change.effect == .adds ? "" : " (\(change.effect == .tightens ? "needs --confirm" : "refused"))")")
        }
        if plan.recordCount > 0 {
            Console.line("\(plan.applied ? "deleted" : "would delete") \(plan.recordCount) record(s):")
            for record in plan.records {
                Console.line("    \(record.recordType) \(record.recordName) in \(record.database)\(record.owner.isEmpty ? "" : " of \(record.owner)")/\(record.zoneName)")
            }
        }
        if footer { Console.line(plan.applied ? "applied" : "nothing applied") }
    }
}
