import ArgumentParser
import RecordClient

/// `recordctl config show`.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "config", abstract: "Show connection settings.", subcommands: [Show.self])

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the settings in effect and where each comes from (token masked).")
        @OptionGroup var connection: ConnectionOptions

        func run() async throws {
            try await reportingErrors {
                let settings = try connection.resolvedSettings()
                let rows: [[String]] = [
                    ["server", settings.server.value ?? "-", settings.server.source],
                    ["token", Settings.masked(settings.token.value) ?? "-", settings.token.source],
                    ["container", settings.container.value ?? "iCloud.recordctl", settings.container.source],
                    ["database", settings.database.value ?? "private", settings.database.source],
                    ["environment", settings.environment.value ?? "development", settings.environment.source],
                    ["profile", settings.profilePath, "-"],
                ]
                Rendering.table(["setting", "value", "from"], rows)
            }
        }
    }
}
