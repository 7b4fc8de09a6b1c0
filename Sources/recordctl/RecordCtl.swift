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
                      SubscriptionsCommand.self, ShareCommand.self, SchemaCommand.self, SignUpCommand.self, LoginCommand.self, LogoutCommand.self]
    )
}

/// Exit statuses.
enum ExitStatus {
    static let serverError: Int32 = 1
    static let partialFailure: Int32 = 2
    /// `EX_USAGE`, as ArgumentParser exits on a flag it cannot parse.
    static let usage: Int32 = 64
}

/// A problem with what the command was given (its flags, environment or profile), found after
/// parsing: exit status 64, never reported as the server's.
struct UsageError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// Runs a command body, turning a `RecordSyncError` into one line on standard error
/// (`CODE: reason`) and exit status 1, and a ``UsageError`` into one line and exit status 64.
func reportingErrors(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as UsageError {
        Console.error("usage: \(error.message)")
        throw ExitCode(ExitStatus.usage)
    } catch let error as RecordSyncError {
        Console.error("\(error.code.rawValue): \(error.reason)")
        throw ExitCode(ExitStatus.serverError)
    }
}
