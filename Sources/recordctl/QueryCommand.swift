import ArgumentParser
import Foundation
import RecordClient

/// `recordctl query TYPE [--where PREDICATE] [--sort KEY[@LAT,LON][:desc]…] [--limit N] [--all] [--include FIELD…] [--cache PATH]`.
struct QueryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Query records with the NSPredicate format language, on the server or in a local cache.",
        discussion: """
            Example: recordctl query Artwork --where "year >= 1900 AND title BEGINSWITH 'W'" --sort year:desc --all
            Key paths, OR, NOT and string matching: --where "artist.name == 'Claude Monet' OR title CONTAINS[cd] 'nympheas'"
            Words and places: --where "self CONTAINS 'water lilies' AND distanceToLocation:fromLocation:(place, {49.07, 1.53}) < 2" --sort place@49.07,1.53
            (the distance in kilometres, as in CloudKit's predicates; words match whole, folded)
            With --cache PATH the query runs offline on a cache kept by 'recordctl sync'; the output is
            the same as the server's for a synced cache.
            """
    )
    @OptionGroup var connection: ConnectionOptions
    @OptionGroup var zone: ZoneOption
    @Argument(help: "The record type.") var recordType: String
    @Option(name: .customLong("where"), help: "A predicate, e.g. \"artist == 'monet'\" or \"year > 1900\".") var predicate: String?
    @Option(help: "A sort key, KEY or KEY:desc; KEY@LATITUDE,LONGITUDE sorts a LOCATION field nearest first. Repeatable; later keys break ties.") var sort: [String] = []
    @Option(help: "At most this many records.") var limit: Int?
    @Flag(help: "Every matching record (follows cursors).") var all = false
    @Option(help: "Answer from this local cache instead of the server.") var cache: String?
    @Option(name: .long, help: "A reference field to follow; the records it reaches are printed first (targets first). Repeatable.") var include: [String] = []
    @Option(help: "How many references deep --include follows.") var depth = 1

    func validate() throws {
        if let limit, limit <= 0 { throw ValidationError("--limit must be positive") }
        if !include.isEmpty, cache != nil { throw ValidationError("--include asks the server; it cannot be used with --cache") }
        if depth < 1 { throw ValidationError("--depth must be positive") }
        for key in sort {
            _ = try Self.sortDescriptor(key)
        }
    }

    /// A `--sort` value: `KEY`, `KEY:asc` or `KEY:desc`, the key optionally `FIELD@LATITUDE,LONGITUDE`
    /// (by distance from that place).
    static func sortDescriptor(_ text: String) throws -> RecordSortDescriptor {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, parts.count == 1 || ["asc", "desc"].contains(parts[1]) else {
            throw ValidationError("--sort \(text): use KEY, KEY:asc or KEY:desc (KEY may be FIELD@LATITUDE,LONGITUDE)")
        }
        let ascending = parts.count < 2 || parts[1] != "desc"
        let key = parts[0].split(separator: "@", omittingEmptySubsequences: false)
        guard key.count == 2 else {
            guard key.count == 1 else { throw ValidationError("--sort \(text): one @ at most, as in place@48.8606,2.3376") }
            return RecordSortDescriptor(key: String(parts[0]), ascending: ascending)
        }
        let coordinates = key[1].split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard coordinates.count == 2, let latitude = coordinates[0], let longitude = coordinates[1], abs(latitude) <= 90, abs(longitude) <= 180 else {
            throw ValidationError("--sort \(text): after @ give LATITUDE,LONGITUDE in degrees, as in place@48.8606,2.3376")
        }
        return RecordSortDescriptor(key: String(key[0]), relativeLocation: Location(latitude: latitude, longitude: longitude), ascending: ascending)
    }

    func run() async throws {
        try await reportingErrors {
            let query = RecordQuery(recordType: recordType,
                                    predicate: try predicate.map { try RecordPredicate(format: $0) } ?? .all,
                                    sortDescriptors: try sort.map(Self.sortDescriptor))
            var records: [Record]
            if let cache {
                records = try await RecordCache(path: cache).records(matching: query, inZoneWith: zone.zoneID)
                if !all, let limit { records = Array(records.prefix(limit)) }
            } else if !include.isEmpty {
                let database = try connection.makeDatabase()
                var page = try await database.records(matching: query, inZoneWith: zone.zoneID, including: include, depth: depth, resultsLimit: limit)
                records = page.records
                var included = page.includedRecords
                while all, let cursor = page.queryCursor {
                    page = try await database.records(continuingMatchFrom: cursor, including: include, depth: depth, resultsLimit: limit)
                    records += page.records
                    included += page.includedRecords.filter { new in !included.contains { $0.recordName == new.recordName } }
                }
                if !all, page.queryCursor != nil, limit == nil { Console.error("(more records match: use --all or --limit)") }
                records = included + records
            } else {
                let database = try connection.makeDatabase()
                if all {
                    records = try await database.allRecords(matching: query, inZoneWith: zone.zoneID)
                } else {
                    let (results, cursor) = try await database.records(matching: query, inZoneWith: zone.zoneID, resultsLimit: limit)
                    records = results.compactMap { try? $0.1.get() }
                    if cursor != nil, limit == nil { Console.error("(more records match: use --all or --limit)") }
                }
            }
            Rendering.print(records, json: connection.json)
        }
    }
}
