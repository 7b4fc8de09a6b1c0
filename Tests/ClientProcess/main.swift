// recordsync-testclient: a client process for the multi-process and crash-safety tests.
//
//   recordsync-testclient work SERVER TOKEN CACHE PROCESS SEED OPERATIONS
//       random creates, updates and deletes of Artists, Artworks (DELETE_SELF to an Artist)
//       and Ledger records in zone "Shared", syncing as it goes; prints one line per
//       acknowledged Ledger record ("ledger NAME") and per acknowledged edit of a record
//       ("edited NAME"), then "done".
//   recordsync-testclient sync SERVER TOKEN CACHE
//       sends and fetches until nothing is pending; prints "synced".
//   recordsync-testclient write-then-hang SERVER TOKEN CACHE NAME
//       saves one record locally (cache and outbox), prints "written", then waits forever.
//   recordsync-testclient send SERVER TOKEN CACHE
//       sends the outbox once and prints "saved NAME" per saved record.
//
// With RECORDSYNC_TESTCLIENT_SHARED_OWNER set (a user record name), the process is a
// participant: it syncs its shared database, where zone "Shared" is that user's.
import Foundation
import RecordClient

let sharedOwner = ProcessInfo.processInfo.environment["RECORDSYNC_TESTCLIENT_SHARED_OWNER"]
let zone = ZoneID(zoneName: "Shared", ownerRecordName: sharedOwner)

/// Writes a line to standard output at once (the tests read it while the process runs).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// A small deterministic generator (SplitMix64), so a seed replays the same run.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func engine(_ server: String, _ token: String, _ cache: String) throws -> SyncEngine {
    guard let url = URL(string: server) else { throw RecordSyncError(.badRequest, "bad server URL \(server)") }
    let container = Container(serverURL: url, identifier: "iCloud.test.Processes", credentials: .bearerToken(token))
    return SyncEngine(database: sharedOwner == nil ? container.privateCloudDatabase : container.sharedCloudDatabase,
                      cache: try RecordCache(path: cache, sharedDatabase: sharedOwner != nil))
}

func settle(_ engine: SyncEngine) async throws {
    for _ in 0..<20 {
        try await engine.sendChanges()
        try await engine.fetchChanges()
        if try await engine.cache.pendingChangeCount() == 0 { return }
    }
}

func work(_ engine: SyncEngine, process: String, seed: UInt64, operations: Int) async throws {
    var random = SeededGenerator(state: seed)
    if sharedOwner == nil { try await engine.database.save(RecordZone(zoneID: zone)) }
    try await engine.fetchChanges()
    var ledger: [String] = []
    var edited: Set<String> = []
    func acknowledge(_ report: SendReport) {
        for id in report.saved where ledger.contains(id.recordName) { say("ledger \(id.recordName)") }
        for id in report.saved where edited.contains(id.recordName) { say("edited \(id.recordName)") }
    }
    for step in 0..<operations {
        let known = try await engine.cache.allRecords(inZoneWith: zone)
        let artists = known.filter { $0.recordType == "Artist" }
        let roll = Int.random(in: 0..<100, using: &random)
        switch roll {
        case 0..<25:
            var artist = Record(recordType: "Artist", recordID: Record.ID(recordName: "\(process)-a\(step)", zoneID: zone))
            artist["name"] = .string("artist \(step) of \(process)")
            try await engine.save(artist)
        case 25..<55 where !artists.isEmpty:
            let owner = artists[Int.random(in: 0..<artists.count, using: &random)]
            var artwork = Record(recordType: "Artwork", recordID: Record.ID(recordName: "\(process)-w\(step)", zoneID: zone))
            artwork["title"] = .string("work \(step)")
            artwork["artist"] = .reference(Record.Reference(record: owner, action: .deleteSelf))
            try await engine.save(artwork)
        case 55..<80 where !known.isEmpty:
            var record = known[Int.random(in: 0..<known.count, using: &random)]
            guard record.recordType != "Ledger" else { continue }
            record["rev"] = .int64(Int64(Int.random(in: 0..<1_000_000, using: &random)))
            record["editedBy"] = .string(process)
            try await engine.save(record)
            edited.insert(record.recordID.recordName)
        case 80..<88 where !artists.isEmpty:
            try await engine.delete(artists[Int.random(in: 0..<artists.count, using: &random)].recordID)
        default:
            let name = "\(process)-ledger\(step)"
            var entry = Record(recordType: "Ledger", recordID: Record.ID(recordName: name, zoneID: zone))
            entry["step"] = .int64(Int64(step))
            try await engine.save(entry)
            ledger.append(name)
        }
        if step % 5 == 4 {
            acknowledge(try await engine.sendChanges())
            try await engine.fetchChanges()
        }
    }
    acknowledge(try await engine.sendChanges())
    try await settle(engine)
    say("done")
}

let arguments = CommandLine.arguments
guard arguments.count >= 5 else {
    FileHandle.standardError.write(Data("usage: recordsync-testclient MODE SERVER TOKEN CACHE …\n".utf8))
    exit(64)
}
do {
    let syncEngine = try engine(arguments[2], arguments[3], arguments[4])
    switch arguments[1] {
    case "work" where arguments.count == 8:
        try await work(syncEngine, process: arguments[5], seed: UInt64(arguments[6]) ?? 1, operations: Int(arguments[7]) ?? 50)
    case "sync":
        try await settle(syncEngine)
        say("synced")
    case "write-then-hang" where arguments.count == 6:
        var record = Record(recordType: "Note", recordID: Record.ID(recordName: arguments[5]))
        record["text"] = .string("written before the crash")
        try await syncEngine.save(record)
        say("written")
        while true { try await Task.sleep(for: .seconds(60)) }
    case "asset-then-hang" where arguments.count == 7:
        var record = Record(recordType: "Scan", recordID: Record.ID(recordName: arguments[5]))
        record["file"] = Asset(fileURL: URL(fileURLWithPath: arguments[6])).fieldValue
        try await syncEngine.save(record)
        say("written")
        while true { try await Task.sleep(for: .seconds(60)) }
    case "send":
        for id in try await syncEngine.sendChanges().saved { say("saved \(id.recordName)") }
    default:
        FileHandle.standardError.write(Data("unknown mode or arguments\n".utf8))
        exit(64)
    }
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}
