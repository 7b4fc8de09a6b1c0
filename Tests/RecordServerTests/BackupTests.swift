import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GRDB
import RecordModel
import Testing
import TestSupport

/// `recordserver data backup` and `data restore` through real processes: a backup taken while a
/// client writes restores every batch acknowledged before it began, every batch whole or absent,
/// the assets, and a database that passes SQLite's integrity check.
@Suite struct BackupTests {
    /// The batches a writer saw acknowledged.
    final class Acknowledged: @unchecked Sendable {
        private let lock = NSLock()
        private var batches: Set<Int> = []
        private var sent = 0
        private var stopped = false
        func note(_ batch: Int) { lock.withLock { _ = batches.insert(batch) } }
        func stop() { lock.withLock { stopped = true } }
        var isStopped: Bool { lock.withLock { stopped } }
        func noteSent() { lock.withLock { sent += 1 } }
        var snapshot: (acknowledged: Set<Int>, sent: Int) { lock.withLock { (batches, sent) } }
    }

    static let batchSize = 5
    static let zone = #""zoneID":{"zoneName":"Log"}"#

    static func json(_ data: Data) -> JSONValue { (try? JSONValue.parse(data)) ?? .null }

    /// One atomic batch of ``batchSize`` records; whether it was acknowledged.
    static func writeBatch(_ batch: Int, to server: ServerProcess, token: String) async throws -> Bool {
        let records = (0..<batchSize).map { #"{"operationType":"create","record":{"recordName":"b\#(batch)-\#($0)","recordType":"Entry","fields":{"batch":{"value":\#(batch)}}}}"# }
        let answer = try await server.post("records/modify", #"{\#(zone),"atomic":true,"operations":[\#(records.joined(separator: ","))]}"#, token: token)
        return answer.status == 200 && json(answer.data)["records"]?.arrayValue?.allSatisfy { $0["serverErrorCode"] == nil } == true
    }

    /// Every record name in the zone, through the change feed.
    static func names(on server: ServerProcess, token: String) async throws -> [String] {
        var names: [String] = []
        var syncToken: String?
        repeat {
            let body = syncToken.map { #"{\#(zone),"syncToken":"\#($0)"}"# } ?? "{\(zone)}"
            let page = json(try await server.post("records/changes", body, token: token).data)
            names += page["records"]?.arrayValue?.compactMap { $0["deleted"] == .bool(true) ? nil : $0["recordName"]?.stringValue } ?? []
            syncToken = page["syncToken"]?.stringValue
            if page["moreComing"] != .bool(true) { break }
        } while true
        return names
    }

    @Test func aBackupTakenUnderWriteLoadRestoresEveryAcknowledgedBatchWhole() async throws {
        try await withTemporaryDirectory { directory in
            let data = "\(directory)/data", restored = "\(directory)/restored", file = "\(directory)/backup.tar"
            let token = try await ChildProcess.run("recordserver", ["user", "add", "alice", "--data", data]).output.trimmingCharacters(in: .whitespacesAndNewlines)
            let server = try await ServerProcess(data: data)
            defer { Task { _ = await server.stop(signal: SIGKILL) } }
            #expect(try await server.post("zones/modify", #"{"operations":[{"operationType":"create","zone":{\#(Self.zone)}}]}"#, token: token).status == 200)

            // An asset, saved in a record.
            let picture = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            let upload = Self.json(try await server.post("assets/upload", #"{\#(Self.zone),"tokens":[{"recordType":"Picture","fieldName":"image"}]}"#, token: token).data)
            var request = URLRequest(url: URL(string: try #require(upload["tokens"]?[0]?["url"]?.stringValue))!)
            request.httpMethod = "POST"
            request.httpBody = picture
            let receipt = Self.json(try await URLSession.shared.data(for: request).0)["singleFile"]
            let value = try #require(receipt).serializedString()
            let saved = try await server.post("records/modify", #"{\#(Self.zone),"operations":[{"operationType":"create","record":{"recordName":"picture","recordType":"Picture","fields":{"image":{"value":\#(value)}}}}]}"#, token: token)
            #expect(saved.status == 200)

            // A writer that goes on through the backup. It is stopped by a flag, never by
            // cancelling its task: cancelling a request under way in FoundationNetworking's
            // URLSession can deadlock the process.
            let acknowledged = Acknowledged()
            let writer = Task {
                var batch = 0
                while !acknowledged.isStopped {
                    acknowledged.noteSent()
                    if (try? await Self.writeBatch(batch, to: server, token: token)) == true { acknowledged.note(batch) }
                    batch += 1
                }
            }
            try await Task.sleep(for: .milliseconds(400))
            let before = acknowledged.snapshot.acknowledged
            let backup = try await ChildProcess.run("recordserver", ["data", "backup", "--data", data, "--to", file], mergeErrors: true)
            try await Task.sleep(for: .milliseconds(200))
            acknowledged.stop()
            _ = await writer.value
            let after = acknowledged.snapshot
            // Tokens a client took after the backup, of the zone and of the database.
            let zoneToken = try #require(Self.json(try await server.post("records/changes", "{\(Self.zone)}", token: token).data)["syncToken"]?.stringValue)
            let databaseToken = try #require(Self.json(try await server.post("changes/database", "{}", token: token).data)["syncToken"]?.stringValue)
            #expect(backup.status == 0, "\(backup.output)")
            #expect(backup.output.contains("and 1 asset"), "\(backup.output)")
            #expect(!before.isEmpty && after.acknowledged.count > before.count, "\(before.count) before, \(after.acknowledged.count) after")

            // Restoring into a directory a server holds, or one holding data, is refused.
            let busy = try await ChildProcess.run("recordserver", ["data", "restore", "--from", file, "--data", data, "--replace"], mergeErrors: true)
            #expect(busy.status == 1 && busy.output.contains("holds \(data) open"), "\(busy.output)")
            let restore = try await ChildProcess.run("recordserver", ["data", "restore", "--from", file, "--data", restored], mergeErrors: true)
            #expect(restore.status == 0, "\(restore.output)")
            let again = try await ChildProcess.run("recordserver", ["data", "restore", "--from", file, "--data", restored], mergeErrors: true)
            #expect(again.status == 1 && again.output.contains("already holds data"), "\(again.output)")

            let check = try await DatabaseQueue(path: "\(restored)/records.sqlite").read { try String.fetchAll($0, sql: "PRAGMA integrity_check") }
            #expect(check == ["ok"])
            let copy = try await ServerProcess(data: restored)
            defer { Task { _ = await copy.stop(signal: SIGKILL) } }
            var batches: [Int: Int] = [:]
            for name in try await Self.names(on: copy, token: token) where name.hasPrefix("b") {
                batches[Int(name.dropFirst().prefix { $0 != "-" }) ?? -1, default: 0] += 1
            }
            #expect(batches.values.allSatisfy { $0 == Self.batchSize }, "batches not whole: \(batches.filter { $0.value != Self.batchSize })")
            #expect(before.isSubset(of: Set(batches.keys)), "lost: \(before.subtracting(batches.keys).sorted())")
            #expect(Set(batches.keys).isSubset(of: after.acknowledged.union([after.sent - 1])))
            // The zone starts a new history: a token from after the backup expires, and following
            // the database feed from one reports the zone again.
            let expired = Self.json(try await copy.post("records/changes", #"{\#(Self.zone),"syncToken":"\#(zoneToken)"}"#, token: token).data)
            #expect((expired["recordSyncErrorCode"] ?? expired["serverErrorCode"])?.stringValue == "CHANGE_TOKEN_EXPIRED", "\(expired)")
            let zones = Self.json(try await copy.post("changes/database", #"{"syncToken":"\#(databaseToken)"}"#, token: token).data)
            #expect(zones["zones"]?.arrayValue?.compactMap { $0["zoneID"]?["zoneName"]?.stringValue }.contains("Log") == true, "\(zones)")
            let fresh = Self.json(try await copy.post("records/modify", #"{\#(Self.zone),"operations":[{"operationType":"create","record":{"recordName":"fresh","recordType":"Entry"}}]}"#, token: token).data)
            let tag = try #require(fresh["records"]?[0]?["recordChangeTag"]?.stringValue)
            #expect((Int64(tag, radix: 36) ?? 0) > 1 << 32, "\(tag)")
            // The asset came along.
            let lookup = Self.json(try await copy.post("records/lookup", #"{\#(Self.zone),"records":[{"recordName":"picture"}]}"#, token: token).data)
            let link = try #require(lookup["records"]?[0]?["fields"]?["image"]?["value"]?["downloadURL"]?.stringValue).replacingOccurrences(of: "${f}", with: "p.bin")
            #expect(try await URLSession.shared.data(from: URL(string: link)!).0 == picture)

            // A damaged backup is refused, and changes nothing.
            var damaged = try Data(contentsOf: URL(fileURLWithPath: file))
            damaged[damaged.count / 2] ^= 0xFF
            try damaged.write(to: URL(fileURLWithPath: "\(directory)/damaged.tar"))
            let refused = try await ChildProcess.run("recordserver", ["data", "restore", "--from", "\(directory)/damaged.tar", "--data", "\(directory)/other"], mergeErrors: true)
            #expect(refused.status == 1, "\(refused.output)")
            #expect(!FileManager.default.fileExists(atPath: "\(directory)/other/records.sqlite"))
        }
    }

    /// What `data restore` (and `data new-history`, after a PostgreSQL restore) does to the
    /// feeds, on each engine: zone tokens expire, the database feed reports every zone, tags
    /// jump ahead.
    @Test func aNewHistoryExpiresZoneTokensAndReportsEveryZone() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("A", "B")
            _ = try await alice.save([.artist("x")], zone: "A")
            let zoneToken = try await alice.allChanges(zone: "A").token
            let databaseToken = try #require(try await alice.post("changes/database", "{}").json["syncToken"]?.stringValue)
            #expect(try await server.store.startNewHistory() >= 3)
            let expired = try await alice.post("records/changes", #"{"zoneID":{"zoneName":"A"},"syncToken":"\#(zoneToken)"}"#)
            #expect((expired.json["recordSyncErrorCode"] ?? expired.json["serverErrorCode"])?.stringValue == "CHANGE_TOKEN_EXPIRED", "\(expired.json)")
            let zones = try await alice.post("changes/database", #"{"syncToken":"\#(databaseToken)"}"#)
            let reported = Set(zones.json["zones"]?.arrayValue?.compactMap { $0["zoneID"]?["zoneName"]?.stringValue } ?? [])
            #expect(reported.isSuperset(of: ["A", "B"]), "\(zones.json)")
            let fetched = try await alice.allChanges(zone: "A")
            #expect(fetched.records.map(\.recordName) == ["x"])
            let saved = try await alice.save([.artist("y")], zone: "A")
            #expect((Int64(saved.first?.recordChangeTag ?? "", radix: 36) ?? 0) > 1 << 32)
        }
    }
}
