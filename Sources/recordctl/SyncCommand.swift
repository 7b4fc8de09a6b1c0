import ArgumentParser
import Foundation
import RecordClient

/// `recordctl sync --cache PATH [--watch]`.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Keep a local cache in sync with the database: one pass, or --watch to keep running on the push channel.",
        discussion: "Query the cache offline with 'recordctl query TYPE --cache PATH'. With --database shared the cache holds the zones shared with you (give it a file of its own; query it with --owner)."
    )
    @OptionGroup var connection: ConnectionOptions
    @Option(help: "The cache file (created if missing).") var cache: String
    @Flag(help: "Keep running until interrupted, syncing as changes happen.") var watch = false

    func run() async throws {
        try await reportingErrors {
            let database = try connection.makeDatabase()
            let engine = SyncEngine(database: database, cache: try RecordCache(path: cache, sharedDatabase: database.scope == .shared))
            if watch {
                Console.error("watching; interrupt to stop")
                try await engine.run()
                return
            }
            let sent = try await engine.sendChanges()
            let fetched = try await engine.fetchChanges()
            Console.line("sent \(sent.saved.count) saves and \(sent.deleted.count) deletes; fetched \(fetched.changedRecordCount) changes and \(fetched.deletedRecordCount) deletions in \(fetched.fetchedZones.count) zones")
            for zone in fetched.purgedZones { Console.line("zone \(zone.zoneName)\(zone.ownerRecordName.map { " of \($0)" } ?? "") is gone (deleted, or no longer shared with you)") }
            for (id, error) in sent.failures { Console.error("\(id.recordName): \(error.code.rawValue): \(error.reason)") }
            for id in fetched.droppedEdits { Console.error("\(id.recordName): an edit went with its zone \(id.zoneID.zoneName), never sent") }
            if !sent.failures.isEmpty || !fetched.droppedEdits.isEmpty { throw ExitCode(ExitStatus.partialFailure) }
        }
    }
}
