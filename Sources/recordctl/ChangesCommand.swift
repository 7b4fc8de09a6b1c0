import ArgumentParser
import Foundation
import RecordClient

/// `recordctl changes [--zone Z] [--since TOKEN] [--follow]`.
struct ChangesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "changes",
        abstract: "Print a zone's changes since a token, then the new token.",
        discussion: "Each change is a record or a tombstone (\"deleted\": true); the last line is 'token TOKEN'. With --follow it keeps printing changes as they happen, woken by the server's push channel."
    )
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var zone: ZoneOption
    @Option(help: "The token a previous run printed; without it, the zone's current records.") var since: String?
    @Flag(help: "Keep running and print changes as they happen.") var follow = false

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
        var changes: [Record] = []
        while true {
            let page = try await database.recordZoneChanges(inZoneWith: zone.zoneID, since: token)
            changes += page.changes
            token = page.changeToken
            if !page.moreComing { break }
        }
        if connection.json || !Console.isTerminal {
            for record in changes { Console.line(Rendering.json(record)) }
        } else {
            Rendering.table(["change", "recordName", "recordType", "tag"], changes.map {
                [$0.deleted ? "deleted" : "changed", $0.recordName, $0.recordType, $0.recordChangeTag ?? ""]
            })
        }
        if let token { Console.line("token \(token.rawValue)") }
        return token
    }
}
