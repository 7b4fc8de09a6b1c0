import ArgumentParser
import Foundation
import RecordClient

/// `recordctl export [--zone Z] > FILE`.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a zone's records as NDJSON (one record per line, typed fields), for backups and migrations."
    )
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var zone: ZoneOption

    func run() async throws {
        try await reportingErrors {
            let database = try connection.makeDatabase()
            var token: ServerChangeToken?
            var count = 0
            while true {
                let page = try await database.recordZoneChanges(inZoneWith: zone.zoneID, since: token)
                for record in page.modifications {
                    Console.line(Self.line(for: record))
                    count += 1
                }
                Console.progress("exported \(count) records")
                token = page.changeToken
                if !page.moreComing { break }
            }
            Console.progress("")
        }
    }

    /// The export form of a record: name, type, typed fields and `parent`, keys sorted, no other
    /// system fields.
    static func line(for record: Record) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let payload = RecordPayload(recordName: record.recordName, recordType: record.recordType, fields: record.fields.mapValues(RawFieldValue.init),
                                    parent: record.parent.map(RecordPayload.ParentChange.set))
        return (try? String(decoding: encoder.encode(payload), as: UTF8.self)) ?? "{}"
    }
}

/// `recordctl import FILE`.
struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Save every record of an NDJSON file (export's format, or the batch format) into a zone, references intact.",
        discussion: "Records may be listed in any order: the server saves targets before sources, and a file split into several requests sends every record in the same or a later request than the records it references. A progress line shows counts and rate on a terminal. Exit status 2 if any record failed."
    )
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var zone: ZoneOption
    @Argument(help: "The NDJSON file, or - for standard input.") var file: String

    func run() async throws {
        try await reportingErrors {
            let operations = try BatchFile.operations(from: try readInput(file))
            let start = Date()
            let results = try await connection.makeDatabase().modify(operations, inZoneWith: zone.zoneID, atomically: false) { done, total in
                let rate = Double(done) / max(Date().timeIntervalSince(start), 0.001)
                Console.progress("imported \(done)/\(total) records (\(Int(rate))/s)")
            }
            Console.progress("")
            let failed = results.filter { if case .failure = $0.result { true } else { false } }
            for (operation, result, _) in failed {
                if case .failure(let error) = result { Console.error("\(operation.record.recordName ?? "?"): \(error.code.rawValue): \(error.reason)") }
            }
            Console.line("imported \(results.count - failed.count) of \(results.count) records")
            if !failed.isEmpty { throw ExitCode(ExitStatus.partialFailure) }
        }
    }
}
