import ArgumentParser
import Foundation
import RecordClient

/// `recordctl changes [--zone Z] [--since TOKEN] [--include FIELD…] [--follow]`.
struct ChangesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "changes",
        abstract: "Print a zone's changes since a token, then the new token.",
        discussion: "Each change is a record or a tombstone (\"deleted\": true); the last line is 'token TOKEN'. With --include FIELD the records the changed records' references reach are printed first (targets first), marked \"included\" (JSON: \"included\": true). With --follow it keeps printing changes as they happen, woken by the server's push channel."
    )
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var zone: ZoneOption
    @Option(help: "The token a previous run printed; without it, the zone's current records.") var since: String?
    @Flag(help: "Keep running and print changes as they happen.") var follow = false
    @Option(name: .long, help: "A reference field to follow; the records it reaches are printed first (targets first). Repeatable.") var include: [String] = []
    @Option(help: "How many references deep --include follows.") var depth = 1

    func validate() throws {
        if depth < 1 { throw ValidationError("--depth must be positive") }
    }

    func run() async throws {
        try await reportingErrors {
            let database = try connection.makeDatabase()
            var token = since.map(ServerChangeToken.init(rawValue:))
            token = try await printChanges(database, since: token)
            guard follow else { return }
            while !Task.isCancelled {
                do {
                    for try await notification in database.changeNotifications() {
                        if case .zonesChanged(let zones) = notification, !zones.contains(where: { $0.zoneName == zone.zone }) { continue }
                        token = try await printChanges(database, since: token)
                    }
                } catch let error as RecordSyncError where error.code == .networkFailure {
                    try await Task.sleep(for: .seconds(1))
                }
            }
        }
    }

    /// Prints every change since `token` and the new token; returns the new token.
    private func printChanges(_ database: Database, since token: ServerChangeToken?) async throws -> ServerChangeToken? {
        var token = token
        var changes: [Record] = [], included: [Record] = []
        while true {
            let page = try await database.recordZoneChanges(inZoneWith: zone.zoneID, since: token, including: include, depth: depth)
            changes += page.changes
            included += page.includedRecords.filter { new in !included.contains { $0.recordName == new.recordName } }
            token = page.changeToken
            if !page.moreComing { break }
        }
        if connection.json || !Console.isTerminal {
            for record in included { Console.line(#"{"included":true,"# + Rendering.json(record).dropFirst()) }
            for record in changes { Console.line(Rendering.json(record)) }
        } else {
            Rendering.table(["change", "recordName", "recordType", "tag"], included.map {
                ["included", $0.recordName, $0.recordType, $0.recordChangeTag ?? ""]
            } + changes.map {
                [$0.deleted ? "deleted" : "changed", $0.recordName, $0.recordType, $0.recordChangeTag ?? ""]
            })
        }
        if let token { Console.line("token \(token.rawValue)") }
        return token
    }
}
