import Foundation
import RecordModel
@testable import RecordRules
import RecordServer
import RecordSQL
import RecordStorage
import RecordStorageSQL
import TestSupport
import Testing

/// The set-based work an engine does itself, checked against what the storage protocol says it
/// must return, for every engine of ``Backend/all``: the cascade walk (``CascadeOrder``) and
/// the change feed's pages (``StorageTransaction/changes(inZone:zoneID:after:tombstonesAfter:recordTypes:limit:)``);
/// and a batch checked in one transaction and written in another, over each engine.
@Suite struct StorageProtocolTests {
    /// A store of each engine, with alice's private database.
    func withStores(_ body: (Backend, RecordStore, DatabaseScope) async throws -> Void) async throws {
        for backend in Backend.all {
            try await withTemporaryDirectory { directory in
                try await backend.withStore(directory) { store in
                    let alice = try await store.createUser(named: "alice", tokenHash: Data([1]))
                    try await body(backend, store, DatabaseScope(container: "iCloud.test", environment: "development", kind: .private, user: alice))
                }
            }
        }
    }

    /// A deterministic pick in `0..<bound` for the `n`th choice of a run (a multiplicative hash,
    /// so a failing seed replays the same graph).
    static func pick(_ n: Int, seed: UInt64, _ bound: Int) -> Int {
        Int(((UInt64(n) &+ seed &* 0x9E37_79B9) &* 0x9E37_79B9_7F4A_7C15) >> 33) % bound
    }

    func modify(_ store: RecordStore, _ scope: DatabaseScope, _ operations: [RecordOperation]) async throws -> [RecordResult] {
        let results = try await store.modifyRecords(ModifyRecordsRequest(operations: operations), in: scope).records
        for result in results { #expect(result.error == nil, "\(result.error?.description ?? "")") }
        return results
    }

    /// The changes of alice's default zone after `token`, every page.
    func changes(_ store: RecordStore, _ scope: DatabaseScope, since token: String?) async throws -> (records: [Record], token: String) {
        var token = token
        var records: [Record] = []
        while true {
            let page = try await store.recordChanges(RecordChangesRequest(syncToken: token, resultsLimit: 7), in: scope)
            records += page.records
            token = page.syncToken
            if !page.moreComing { return (records, page.syncToken) }
        }
    }

    /// Reference-field keys (``SQLStorageTransaction/fieldKey(_:)``): added in the order names
    /// are first stored, the same key for a name ever after, and one added in a savepoint that
    /// is undone forgotten with its row, so the transaction adds the name again.
    @Test func referenceFieldKeysAreStoredOnceAndForgottenWithAnUndoneSavepoint() async throws {
        try await withStores { backend, store, _ in
            let first = try await store.engine.write { transaction -> WriteOutcome<[Int64]> in
                guard let sql = transaction as? any SQLStorageTransaction else { return .rollback([]) }
                let owner = try sql.fieldKey("owner")
                let keeper = try sql.fieldKey("keeper")
                return .commit([owner, keeper, try sql.fieldKey("owner")])
            }
            #expect(first.count == 3 && first[0] < first[1] && first[2] == first[0], "\(backend): \(first)")
            let second = try await store.engine.write { transaction -> WriteOutcome<[Int64]> in
                guard let sql = transaction as? any SQLStorageTransaction else { return .rollback([]) }
                var undone: Int64 = 0
                try sql.savepoint {
                    undone = try sql.fieldKey("undone")
                    return false
                }
                let again = try sql.fieldKey("undone")
                let stored = try sql.fetch("SELECT id FROM ref_fields WHERE name = \("undone")").map { try $0.int64(0) }
                return .commit([try sql.fieldKey("keeper"), undone, again] + stored)
            }
            #expect(second.count == 4 && second[0] == first[1] && second[1] > first[1] && second[3] == second[2], "\(backend): \(second)")
        }
    }

    @Test(arguments: [1, 2, 5, 7, 8] as [UInt64])
    func aCascadeRemovesRecordsInTheContractsOrder(seed: UInt64) async throws {
        try await withStores { backend, store, scope in
            // Reference field names are stored in this order: it orders each record's sources.
            let fields = ["owner", "keeper", "owners"]
            for (index, field) in fields.enumerated() {
                _ = try await modify(store, scope, [RecordOperation(.forceReplace, RecordPayload(Record(recordName: "seed\(index)", recordType: "Seed", fields: [
                    field: field == "owners" ? .list(.reference, [.reference(Reference(recordName: "nobody", action: .none))]) : .reference(Reference(recordName: "nobody", action: .none)),
                ])))])
            }
            // 80 records owning each other at random (cycles included), through single references
            // and lists, some references NONE (which a cascade does not follow).
            var choice = 0
            func pick(_ bound: Int) -> Int {
                choice += 1
                return Self.pick(choice, seed: seed, bound)
            }
            let count = 80
            var sources: [String: [(field: Int, source: String)]] = [:]
            var records: [Record] = []
            for index in 0..<count {
                let name = String(format: "n%02d", index)
                var recordFields: [String: FieldValue] = [:]
                for (fieldIndex, field) in fields.enumerated() where pick(3) > 0 || index == 0 {
                    let targets = (0..<(field == "owners" ? 1 + pick(3) : 1)).map { _ in
                        String(format: "n%02d", pick(count))
                    }
                    let references = targets.map { target in
                        Reference(recordName: target, action: pick(4) == 0 ? .none : .deleteSelf)
                    }
                    for reference in references where reference.action == .deleteSelf {
                        sources[reference.recordName, default: []].append((fieldIndex, name))
                    }
                    recordFields[field] = field == "owners" ? .list(.reference, references.map { .reference($0) }) : .reference(references[0])
                }
                records.append(Record(recordName: name, recordType: "Node", fields: recordFields))
            }
            _ = try await modify(store, scope, records.map { RecordOperation(.forceReplace, RecordPayload($0)) })
            let before = try await changes(store, scope, since: nil).token

            let root = "n00"
            let expected = CascadeOrder.doomed(root: root) { target in
                (sources[target] ?? []).sorted { ($0.field, $0.source) < ($1.field, $1.source) }.map(\.source)
            }
            // The graph is one worth checking: the cascade goes several levels and leaves records.
            #expect(expected.count > 10 && expected.count < count, "\(expected.count) doomed")
            // The engine's walk (SQLite's own) and the walk written once doom the same records
            // in the same order.
            let zoneKey = try await store.engine.read { transaction in
                try RecordStore.zone(nil, database: RecordStore.database(scope, in: transaction, create: false).key, scope: scope, in: transaction).key
            }
            let walks = try await store.engine.write { transaction -> WriteOutcome<[[String]]> in
                guard let sql = transaction as? any SQLStorageTransaction else { return .rollback([]) }
                _ = try sql.collectCascade(from: root, inZone: zoneKey)
                let engines = try sql.doomedNames()
                _ = try sql.collectCascadeLevels(from: root, inZone: zoneKey)
                return .rollback([engines, try sql.doomedNames()])
            }
            #expect(walks == [expected, expected], "\(backend), seed \(seed)")
            let deleted = try await modify(store, scope, [RecordOperation(.forceDelete, RecordPayload(recordName: root))])
            guard case .success(_, let cascaded)? = deleted.first else {
                Issue.record("\(backend): the delete failed")
                return
            }
            #expect(cascaded == expected.dropFirst().sorted(), "\(backend), seed \(seed)")
            let feed = try await changes(store, scope, since: before).records
            #expect(feed.allSatisfy { $0.deleted })
            #expect(feed.map(\.recordName) == expected, "\(backend), seed \(seed)")
            // What the cascade did not reach is still there.
            let fetched = try await changes(store, scope, since: nil).records
            var left: [String] = []
            for record in fetched where record.recordType == "Node" { left.append(record.recordName) }
            left.sort()
            #expect(left == records.map(\.recordName).filter { !expected.contains($0) }, "\(backend): \(fetched.map { "\($0.recordName)/\($0.recordType)/\($0.deleted)" })")
        }
    }

    @Test func aChangePageIsTheFeedAfterItsPlaceInNumberOrder() async throws {
        try await withStores { backend, store, scope in
            let artists = (0..<12).map { Record.artist("a\($0)") }
            let artworks = (0..<12).map { Record.artwork("w\($0)", by: "a\($0)", action: .none) }
            _ = try await modify(store, scope, (artists + artworks).map { RecordOperation(.forceReplace, RecordPayload($0)) })
            _ = try await modify(store, scope, ["a3", "w5", "a7", "w8"].map { RecordOperation(.forceDelete, RecordPayload(recordName: $0)) })
            _ = try await modify(store, scope, [RecordOperation(.forceReplace, RecordPayload(Record.artist("a3"))),
                                                RecordOperation(.forceReplace, RecordPayload(Record.artwork("w1", by: "a2", action: .none)))])
            let (zoneKey, zoneID) = try await store.engine.read { transaction in
                let database = try RecordStore.database(scope, in: transaction, create: false)
                let zone = try RecordStore.zone(nil, database: database.key, scope: scope, in: transaction)
                return (zone.key, zone.zoneID)
            }
            func page(after: Int64, tombstonesAfter: Int64, types: [String]?, limit: Int) async throws -> [FeedChange] {
                try await store.engine.read { transaction in
                    try transaction.changes(inZone: zoneKey, zoneID: zoneID, after: after, tombstonesAfter: tombstonesAfter, recordTypes: types, limit: limit)
                }
            }
            let all = try await page(after: 0, tombstonesAfter: 0, types: nil, limit: 1_000)
            // Every live record once and every deleted one once, in strictly increasing numbers;
            // a record's number is its change tag's.
            #expect(all.count == 21 + 3, "\(backend)")
            #expect(zip(all, all.dropFirst()).allSatisfy { $0.sequence < $1.sequence }, "\(backend)")
            #expect(Set(all.map(\.entry.record.recordName)).count == all.count)
            #expect(all.filter(\.entry.record.deleted).map(\.entry.record.recordName).sorted() == ["a7", "w5", "w8"], "\(backend)")
            for change in all where !change.entry.record.deleted {
                #expect(change.entry.record.recordChangeTag == String(change.sequence, radix: 36) && change.entry.fieldsJSON != nil)
            }
            for after in [0, 5, 20, 30] as [Int64] {
                for tombstonesAfter in [after, after + 10] {
                    for types in [nil, ["Artist"], ["Artwork", "Artist"], ["Nothing"]] as [[String]?] {
                        for limit in [1, 4, 100] {
                            let expected = all.filter { change in
                                let record = change.entry.record
                                return change.sequence > (record.deleted ? tombstonesAfter : after) && (types?.contains(record.recordType) ?? true)
                            }.prefix(limit)
                            let got = try await page(after: after, tombstonesAfter: tombstonesAfter, types: types, limit: limit)
                            #expect(got.map(\.sequence) == expected.map(\.sequence), "\(backend): after \(after), tombstones after \(tombstonesAfter), \(types ?? []), limit \(limit)")
                            // The engine's own page (its override) is the generic statement's.
                            let generic = try await store.engine.read { transaction in
                                try (transaction as! any SQLStorageTransaction).changePage(inZone: zoneKey, zoneID: zoneID, after: after, tombstonesAfter: tombstonesAfter,
                                                                                          recordTypes: types, limit: limit)
                            }
                            #expect(got.map(Self.changeSummary) == generic.map(Self.changeSummary), "\(backend): after \(after), \(types ?? []), limit \(limit)")
                        }
                    }
                }
            }
        }
    }

    /// Every value of a change.
    @Sendable static func changeSummary(_ change: FeedChange) -> String {
        let record = change.entry.record
        return "\(change.sequence) \(record.recordName) \(record.recordType) \(record.deleted) \(record.recordChangeTag ?? "-") \(change.entry.fieldsJSON ?? "-") "
            + "\(record.created.map { "\($0.timestamp) \($0.userRecordName) \($0.deviceID ?? "-")" } ?? "-") "
            + "\(record.modified.map { "\($0.timestamp) \($0.userRecordName) \($0.deviceID ?? "-")" } ?? "-")"
    }

    /// A record's rows written by the engine (PostgreSQL's batched pending writes) are the rows
    /// the generic statements write (``SQLStorageTransaction/insertRecordRow(_:inZone:)`` and
    /// the rest), for the same sequence of writes in two zones of one transaction: inserts,
    /// updates with and without asset bytes, references removed and written again (a target
    /// twice), search rows replaced, a tombstone removed.
    @Test func aRecordsRowsWrittenByTheEngineAreWhatTheGenericStatementsWrite() async throws {
        try await withStores { backend, store, scope in
            _ = try await store.modifyZones(ModifyZonesRequest(operations: [.init(.create, ZoneID(zoneName: "Engine")), .init(.create, ZoneID(zoneName: "Generic"))]), in: scope)
            let address = DatabaseAddress(scope)
            let tables: [(String, String)] = [
                ("records", "name, type, tag, fields, created_at, created_by, created_device, modified_at, modified_by, modified_device, seq, asset_bytes"),
                ("refs", "source, field, target, action"), ("tombstones", "name, type, seq"),
                ("search_tokens", "name, field, token"), ("search_locations", "name, field, cell, x, y, z"),
            ]
            let (engine, generic) = try await store.engine.write { transaction -> WriteOutcome<([String], [String])> in
                let sql = transaction as! any SQLStorageTransaction
                let database = try transaction.database(at: address)!
                let engineZone = try transaction.zone(named: "Engine", in: database.key)!.key, genericZone = try transaction.zone(named: "Generic", in: database.key)!.key
                for zone in [engineZone, genericZone] {
                    try sql.run("INSERT INTO tombstones(zone_id, name, type, seq) VALUES (\(zone), 'b', 'Artist', 1), (\(zone), 'c', 'Artist', 2)")
                }
                func fields(_ title: String, _ latitude: Double) -> [String: FieldValue] {
                    ["title": .string(title), "place": .location(Location(latitude: latitude, longitude: 2.35))]
                }
                func row(_ name: String, _ sequence: Int64, _ fields: [String: FieldValue], assetBytes: Int64?) throws -> RecordWrite {
                    RecordWrite(name: name, recordType: "Artwork", changeTag: String(sequence, radix: 36), fields: try RecordRow.encodeFields(fields),
                                created: Stamp(timestamp: 10, userRecordName: "_alice"), modified: Stamp(timestamp: 10 + sequence, userRecordName: "_bob"),
                                sequence: sequence, assetBytes: assetBytes)
                }
                let references: [(field: String, reference: Reference)] = [
                    ("artist", Reference(recordName: "monet", action: .deleteSelf)), ("seen", Reference(recordName: "x", action: .nullify)),
                    ("seen", Reference(recordName: "x", action: .nullify)), ("seen", Reference(recordName: "y", action: .validate)),
                ]
                func write(_ zone: Int64, generic: Bool) throws {
                    for (name, sequence) in [("a", 3), ("b", 4), ("c", 5)] as [(String, Int64)] {
                        let values = fields("Water lilies \(name)", 48.0)
                        if generic { try sql.deleteTombstoneRow(named: name, inZone: zone) } else { try transaction.removeTombstone(named: name, inZone: zone) }
                        let written = try row(name, sequence, values, assetBytes: sequence * 100)
                        if generic { try sql.insertRecordRow(written, inZone: zone) } else { try transaction.insertRecord(written, inZone: zone) }
                        if generic { try sql.insertReferenceRows(references, from: name, inZone: zone) } else { try transaction.insertReferences(references, from: name, inZone: zone) }
                        let index = SearchIndex(fields: values)
                        if generic { try sql.insertSearchRows(index, of: name, inZone: zone) } else { try transaction.insertSearchIndex(index, of: name, inZone: zone) }
                    }
                    // a: updated keeping its asset bytes; b: updated with new ones; both get new references and search rows.
                    for (name, sequence, bytes) in [("a", 6, nil), ("b", 7, 9)] as [(String, Int64, Int64?)] {
                        let values = fields("Haystacks \(name) at noon", -33.9)
                        let written = try row(name, sequence, values, assetBytes: bytes)
                        if generic { try sql.updateRecordRow(written, inZone: zone) } else { try transaction.updateRecord(written, inZone: zone) }
                        let kept = Array(references.prefix(name == "a" ? 1 : 4).reversed())
                        if generic { try sql.deleteReferenceRows(from: name, inZone: zone) } else { try transaction.removeReferences(from: name, inZone: zone) }
                        if generic { try sql.insertReferenceRows(kept, from: name, inZone: zone) } else { try transaction.insertReferences(kept, from: name, inZone: zone) }
                        if generic { try sql.deleteSearchRows(of: name, inZone: zone) } else { try transaction.removeSearchIndex(of: name, inZone: zone) }
                        let index = SearchIndex(fields: values)
                        if generic { try sql.insertSearchRows(index, of: name, inZone: zone) } else { try transaction.insertSearchIndex(index, of: name, inZone: zone) }
                    }
                }
                try write(engineZone, generic: false)
                try write(genericZone, generic: true)
                func contents(_ zone: Int64) throws -> [String] {
                    try tables.flatMap { table, columns in
                        try sql.fetch("SELECT \(raw: columns) FROM \(raw: table) WHERE zone_id = \(zone) ORDER BY \(raw: columns)").map { "\(table): \($0.cells)" }
                    }
                }
                return .rollback((try contents(engineZone), try contents(genericZone)))
            }
            #expect(engine.filter { $0.hasPrefix("records:") }.count == 3 && engine.contains { $0.hasPrefix("search_locations:") }
                    && engine.contains { $0.hasPrefix("refs:") } && engine.filter { $0.hasPrefix("tombstones:") }.isEmpty, "\(backend): \(engine)")
            #expect(engine == generic, "\(backend)")
        }
    }

    /// A database and its zone read together (in a transaction, and as a read of their own) are
    /// what reading each gives: for a live zone, a deleted one, a missing one, and a database
    /// not stored yet.
    @Test func aDatabaseAndItsZoneReadTogetherAreWhatReadingEachGives() async throws {
        try await withStores { backend, store, scope in
            _ = try await store.modifyZones(ModifyZonesRequest(operations: [.init(.create, ZoneID(zoneName: "Z")), .init(.create, ZoneID(zoneName: "Gone"))]), in: scope)
            _ = try await store.modifyZones(ModifyZonesRequest(operations: [.init(.delete, ZoneID(zoneName: "Gone"))]), in: scope)
            let address = DatabaseAddress(scope)
            let summary = Self.summary
            for name in [ZoneID.defaultZoneName, "Z", "Gone", "Missing"] {
                let (each, together) = try await store.engine.read { transaction -> (String, String) in
                    let database = try transaction.database(at: address)
                    let each = summary(try database.map { ($0, try transaction.zone(named: name, in: $0.key)) })
                    return (each, summary(try transaction.database(at: address, withZoneNamed: name)))
                }
                #expect(each.hasSuffix(name == "Missing" ? ", no zone" : name == "Gone" ? " true" : " false"), "\(backend): \(each)")
                #expect(together == each, "\(backend): \(name)")
                #expect(summary(try await store.engine.database(at: address, withZoneNamed: name)) == each, "\(backend): \(name)")
            }
            let elsewhere = DatabaseAddress(DatabaseScope(container: "iCloud.other", environment: scope.environment, kind: scope.kind, user: scope.user))
            #expect(summary(try await store.engine.database(at: elsewhere, withZoneNamed: ZoneID.defaultZoneName)) == "no database", "\(backend)")
            let inTransaction = try await store.engine.read { summary(try $0.database(at: elsewhere, withZoneNamed: ZoneID.defaultZoneName)) }
            #expect(inTransaction == "no database", "\(backend)")
        }
    }

    /// A database and its zone, told apart by every value.
    @Sendable static func summary(_ found: (database: StoredDatabase, zone: StoredZone?)?) -> String {
        guard let found else { return "no database" }
        let database = "\(found.database.key) \(found.database.containerKey) \(found.database.uid) \(found.database.sequence)"
        guard let zone = found.zone else { return database + ", no zone" }
        return database + ", \(zone.key) \(zone.name) \(zone.uid) \(zone.sequence) \(zone.deleted)"
    }

    /// A batch is validated on a reader before it takes the write lock; if another write
    /// changed the stored schema in between, the batch is validated again against the new one.
    @Test func aBatchValidatedAgainstAnOlderSchemaIsValidatedAgainWhenWritten() async throws {
        try await withStores { _, store, scope in
            let engine = store.engine
            _ = try await store.modifyRecords(ModifyRecordsRequest(operations: [RecordOperation(.create, RecordPayload(Record.artist("first")))]), in: scope)
            // Untyped "1853": a STRING while the schema has no `born`.
            let request = ModifyRecordsRequest(operations: [RecordOperation(.create, RecordPayload(recordName: "x", recordType: "Artist",
                                                                                                   fields: ["born": RawFieldValue(value: .string("1853"))]))])
            let limits = store.limits
            let validation = try await engine.read { transaction in
                let database = try RecordStore.database(scope, in: transaction, create: false)
                let zone = try RecordStore.zone(nil, database: database.key, scope: scope, in: transaction)
                var batch = ModifyBatch(request: request, scope: scope, access: .owner(scope.user), zone: zone, containerKey: database.containerKey, limits: limits, transaction: transaction)
                return try batch.validate(request).get()
            }
            #expect(validation.operations.first??.fields["born"] == .string("1853"))
            // Meanwhile another write makes `born` an INT64.
            _ = try await store.modifyRecords(ModifyRecordsRequest(operations: [RecordOperation(.create, RecordPayload(recordName: "y", recordType: "Artist",
                                                                                                                     fields: ["born": RawFieldValue(FieldValue.int64(1840))]))]), in: scope)
            let response = try await engine.write { transaction in
                let database = try RecordStore.database(scope, in: transaction)
                let zone = try RecordStore.zone(nil, database: database.key, scope: scope, in: transaction)
                var batch = ModifyBatch(request: request, scope: scope, access: .owner(scope.user), zone: zone, containerKey: database.containerKey, limits: limits, transaction: transaction)
                return .commit(try batch.run(request, validated: validation).0)
            }
            let error = try #require(response.records.first?.error)
            #expect(error.code == .badRequest && error.reason.contains("INT64"), "\(error.reason)")
        }
    }
}
