import ArgumentParser
import RecordClient

/// `recordctl zones list|create|delete`.
struct ZonesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "zones", abstract: "List, create and delete zones.",
                                                    subcommands: [List.self, Create.self, Delete.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the database's zones (in the shared database, each with its owner).")
        @OptionGroup var connection: ConnectionOptions

        func run() async throws {
            try await reportingErrors {
                let database = try connection.makeDatabase()
                for zone in try await database.allRecordZones() {
                    Console.line(database.scope == .shared ? "\(zone.zoneID.zoneName)\t\(zone.zoneID.ownerRecordName ?? "")" : zone.zoneID.zoneName)
                }
            }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create zones (existing ones are left as they are).")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Zone names.") var names: [String]

        func run() async throws {
            try await reportingErrors {
                let results = try await connection.makeDatabase().modifyRecordZones(saving: names.map(RecordZone.init(zoneName:)), deleting: [])
                try report(names, results.saveResults.mapValues { $0.map { _ in () } }, verb: "created")
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete zones and every record in them.")
        @OptionGroup var connection: ConnectionOptions
        @Argument(help: "Zone names.") var names: [String]

        func run() async throws {
            try await reportingErrors {
                let results = try await connection.makeDatabase().modifyRecordZones(saving: [], deleting: names.map { ZoneID(zoneName: $0) })
                try report(names, results.deleteResults, verb: "deleted")
            }
        }
    }
}

/// Prints one line per zone; exit status 2 if any failed.
private func report(_ names: [String], _ results: [ZoneID: Result<Void, RecordSyncError>], verb: String) throws {
    var failed = false
    for name in names {
        switch results[ZoneID(zoneName: name)] {
        case .success?: Console.line("\(verb) \(name)")
        case .failure(let error)?: Console.error("\(name): \(error.code.rawValue): \(error.reason)"); failed = true
        case nil: Console.error("\(name): no answer"); failed = true
        }
    }
    if failed { throw ExitCode(ExitStatus.partialFailure) }
}
