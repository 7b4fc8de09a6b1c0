import ArgumentParser
import Foundation
import RecordClient

/// `recordctl sync --cache PATH [--watch]`.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Keep a local cache in sync with the database: one pass, or --watch to keep running on the push channel.",
        discussion: "Query the cache offline with 'recordctl query TYPE --cache PATH'."
    )
    @OptionGroup var connection: ConnectionOptions
    @Option(help: "The cache file (created if missing).") var cache: String
    @Flag(help: "Keep running until interrupted, syncing as changes happen.") var watch = false

    func run() async throws {
        try await reportingErrors {
            let engine = SyncEngine(database: try connection.makeDatabase(), cache: try RecordCache(path: cache))
            if watch {
                Console.error("watching; interrupt to stop")
                try await engine.run()
                return
            }
            let sent = try await engine.sendChanges()
            let fetched = try await engine.fetchChanges()
            Console.line("sent \(sent.saved.count) saves and \(sent.deleted.count) deletes; fetched \(fetched.changedRecordCount) changes and \(fetched.deletedRecordCount) deletions in \(fetched.fetchedZones.count) zones")
            for (id, error) in sent.failures { Console.error("\(id.recordName): \(error.code.rawValue): \(error.reason)") }
            if !sent.failures.isEmpty { throw ExitCode(ExitStatus.partialFailure) }
        }
    }
}
