import ArgumentParser
import Foundation
import RecordClient

/// `recordctl`: batch operations, queries, change feeds, import/export and sync against a
/// RecordSync server, built on the client library.
@main
struct RecordCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recordctl",
        abstract: "Work with a RecordSync server: zones, records, queries, changes, import/export and sync.",
        discussion: """
            Connection settings come from flags, then the environment (RECORDCTL_SERVER, RECORDCTL_TOKEN, \
            RECORDCTL_CONTAINER, RECORDCTL_DATABASE), then a profile file (--profile, default \
            ~/.config/recordctl/profile.json), in that order of precedence.

            Exit status: 0 success, 64 usage error, 1 server or request error, 2 some records failed.
            """,
        subcommands: [ConfigCommand.self, ZonesCommand.self, RecordsCommand.self, QueryCommand.self,
                      ChangesCommand.self, ImportCommand.self, ExportCommand.self, SyncCommand.self,
                      SubscriptionsCommand.self]
    )
}

/// Exit statuses.
enum ExitStatus {
    static let serverError: Int32 = 1
    static let partialFailure: Int32 = 2
}

/// Runs a command body, turning a `RecordSyncError` into one line on standard error
/// (`CODE: reason`) and exit status 1.
func reportingErrors(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as RecordSyncError {
        Console.error("\(error.code.rawValue): \(error.reason)")
        throw ExitCode(ExitStatus.serverError)
    }
}
