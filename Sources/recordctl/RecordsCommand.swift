import ArgumentParser
import Foundation
import RecordClient

/// `recordctl records modify|get|delete`.
struct RecordsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "records", abstract: "Save, fetch and delete records.",
                                                    subcommands: [Modify.self, Get.self, Delete.self])

    struct Modify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Apply a batch of saves and deletes from a file.",
            discussion: """
                The file (or - for standard input) is a JSON array or NDJSON, one entry per record:
                  {"recordName": "monet", "recordType": "Artist", "fields": {"name": "Claude Monet", "born": 1840}}
                  {"recordName": "lilies", "recordType": "Artwork", "fields": {"artist": {"ref": "monet", "action": "deleteSelf"}}}
                  {"op": "delete", "recordName": "old"}
                A reference is {"ref": NAME, "action": "none" | "deleteSelf" | "validate" | "nullify"}.
                Field values are plain JSON (typed by the server's schema); {"value": …, "type": "…"} is accepted too.
                Batches of any size are split into requests, every record in the same or a later request than the records it references. Exit status 2 if any record failed.
                """
        )
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var zone: ZoneOption
        @Option(name: .long, help: "The batch file, or - for standard input.") var file: String
        @Flag(help: "All or nothing: refuse a batch that does not fit in one request.") var atomic = false

        func run() async throws {
            try await reportingErrors {
                let operations = try BatchFile.operations(from: try readInput(file))
                let database = try connection.makeDatabase()
                if atomic {
                    let requests = try database.requestCount(for: operations)
                    guard requests <= 1 else {
                        throw RecordSyncError(.limitExceeded, "--atomic: the batch of \(operations.count) operations needs \(requests) requests (the limit is \(database.maximumOperationsPerRequest) per request)")
                    }
                }
                let results = try await database.modify(operations, inZoneWith: zone.zoneID, atomically: atomic)
                try printResults(results, json: connection.json)
            }
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Fetch records by name (targets before sources).")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var zone: ZoneOption
        @Argument(help: "Record names.") var names: [String]
        @Option(name: .long, help: "A reference field to follow; its records are printed after. Repeatable.") var include: [String] = []
        @Option(help: "How many references deep --include follows.") var depth = 1
        @Option(help: "Download each asset field into this folder as NAME.FIELD (NAME.FIELD.N for a list).") var download: String?
        @Flag(help: "Then list the records that refer to each record named: field and action of each reference.") var backlinks = false

        func run() async throws {
            try await reportingErrors {
                let ids = names.map { Record.ID(recordName: $0, zoneID: zone.zoneID) }
                let database = try connection.makeDatabase()
                let fetched = try await database.records(for: ids, including: include, depth: depth)
                Rendering.print(fetched.includedRecords + fetched.records, json: connection.json)
                if backlinks {
                    for id in ids where fetched.errors[id] == nil {
                        Rendering.printBacklinks(of: id.recordName, try await database.records(referencing: id), json: connection.json)
                    }
                }
                if let download {
                    try FileManager.default.createDirectory(atPath: download, withIntermediateDirectories: true)
                    for record in fetched.records {
                        for (field, value) in record.fields.sorted(by: { $0.key < $1.key }) {
                            var assets: [(String, Asset)] = []
                            if let asset = value.asset { assets = [("\(record.recordName).\(field)", asset)] }
                            if case .list(.asset, let elements) = value {
                                assets = elements.enumerated().compactMap { index, element in element.asset.map { ("\(record.recordName).\(field).\(index)", $0) } }
                            }
                            for (name, asset) in assets where asset.downloadURL != nil {
                                let file = URL(fileURLWithPath: download).appendingPathComponent(name.replacingOccurrences(of: "/", with: "_"))
                                try await database.downloadAsset(asset, to: file)
                                Console.error("downloaded \(file.path)")
                            }
                        }
                    }
                }
                for id in fetched.failedIDs {
                    if let error = fetched.errors[id] { Console.error("\(id.recordName): \(error.code.rawValue): \(error.reason)") }
                }
                if !fetched.failedIDs.isEmpty { throw ExitCode(ExitStatus.partialFailure) }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete records; prints what each DELETE_SELF cascade removed.")
        @OptionGroup var connection: ConnectionOptions
        @OptionGroup var zone: ZoneOption
        @Argument(help: "Record names.") var names: [String]

        func run() async throws {
            try await reportingErrors {
                let operations = names.map { RecordOperation(.forceDelete, RecordPayload(recordName: $0)) }
                try printResults(try await connection.makeDatabase().modify(operations, inZoneWith: zone.zoneID, atomically: false), json: connection.json)
            }
        }
    }
}

/// Reads a file, or standard input for `-`.
func readInput(_ path: String) throws -> Data {
    if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
    guard let data = FileManager.default.contents(atPath: path) else {
        throw RecordSyncError(.badRequest, "cannot read \(path)")
    }
    return data
}

/// Prints one line per operation (saved, deleted with its cascade, or the error on standard
/// error); exit status 2 if any failed.
func printResults(_ results: [(operation: RecordOperation, result: Result<Record, RecordSyncError>, cascadedRecordNames: [String])], json: Bool) throws {
    var failures = 0
    for (operation, result, cascaded) in results {
        let name = operation.record.recordName ?? "?"
        switch result {
        case .success(let record) where operation.operationType.isDelete:
            if json {
                Console.line(#"{"cascadedRecordNames":\#(jsonArray(cascaded)),"deleted":true,"recordName":\#(jsonString(record.recordName))}"#)
            } else {
                Console.line("deleted \(name)" + (cascaded.isEmpty ? "" : " (cascade: \(cascaded.joined(separator: ", ")))"))
            }
        case .success(let record):
            Console.line(json ? Rendering.json(record) : "saved \(name) (tag \(record.recordChangeTag ?? "-"))")
        case .failure(let error):
            failures += 1
            Console.error("\(name): \(error.code.rawValue): \(error.reason)")
        }
    }
    if failures > 0 {
        Console.error("\(failures) of \(results.count) records failed")
        throw ExitCode(ExitStatus.partialFailure)
    }
}

private func jsonString(_ text: String) -> String {
    String(decoding: (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
}

private func jsonArray(_ names: [String]) -> String { "[" + names.map(jsonString).joined(separator: ",") + "]" }
