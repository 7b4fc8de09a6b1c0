import Foundation
import RecordClient

// The sharing example of docs/client.md, compiled and run by GuideTests. The text between the
// markers must stay identical to the guide's (GuideTests checks it).

// BEGIN SHARING EXAMPLE
/// Alice shares a grocery list with Bob (read-write) and Carol (read-only); each syncs a cache
/// of their own, edits offline, and they converge. Answers the items each cache holds, and what
/// Carol's cache said when she tried to edit.
func runSharedList(serverURL: URL, tokens: (alice: String, bob: String, carol: String), directory: String) async throws
    -> (alice: [String], bob: [String], carol: [String], carolsRefusal: RecordSyncError?) {
    func container(_ token: String) -> Container {
        Container(serverURL: serverURL, identifier: "iCloud.com.example.Groceries", credentials: .bearerToken(token))
    }
    let (alice, bob, carol) = (container(tokens.alice), container(tokens.bob), container(tokens.carol))

    // Alice: her private database, her cache. A share lives in a custom zone.
    let lists = ZoneID(zoneName: "Lists")
    try await alice.privateCloudDatabase.save(RecordZone(zoneID: lists))
    let alicesEngine = SyncEngine(database: alice.privateCloudDatabase, cache: try RecordCache(path: directory + "/alice.sqlite"))
    var groceries = Record(recordType: "List", recordID: Record.ID(recordName: "groceries", zoneID: lists))
    groceries["title"] = .string("Groceries")
    var milk = Record(recordType: "Item", recordID: Record.ID(recordName: "milk", zoneID: lists))
    milk["title"] = .string("Milk")
    milk.parent = "groceries"                       // in the list's share with it
    try await alicesEngine.save(groceries)
    try await alicesEngine.save(milk)
    try await alicesEngine.sendChanges()

    // She shares the list (and every record whose parent leads to it).
    var share = Share(rootRecord: groceries)
    share.title = "Our groceries"
    share.participants = [.user(try await bob.userRecordID().recordName, permission: .readWrite),
                          .user(try await carol.userRecordID().recordName, permission: .readOnly)]
    share = try await alice.privateCloudDatabase.save(share)
    let link = share.url?.absoluteString ?? share.shortGUID!   // what she sends them

    // Bob and Carol accept, and sync their shared databases, each with a cache of its own.
    var engines: [SyncEngine] = []
    for (participant, name) in [(bob, "bob"), (carol, "carol")] {
        let metadata = try await participant.shareMetadata(for: [link]).first!.get()
        try await participant.accept(metadata)
        let cache = try RecordCache(path: directory + "/\(name)-shared.sqlite", sharedDatabase: true)
        engines.append(SyncEngine(database: participant.sharedCloudDatabase, cache: cache))
        try await engines.last!.fetchChanges()
    }
    let (bobsEngine, carolsEngine) = (engines[0], engines[1])

    // Offline, Bob adds eggs to Alice's list (his zone IDs name her as the owner) and Alice
    // renames the milk; then both sync.
    let theirs = ZoneID(zoneName: "Lists", ownerRecordName: try await alice.userRecordID().recordName)
    var eggs = Record(recordType: "Item", recordID: Record.ID(recordName: "eggs", zoneID: theirs))
    eggs["title"] = .string("Eggs")
    eggs.parent = "groceries"
    try await bobsEngine.save(eggs)
    milk = try await alicesEngine.cache.record(for: milk.recordID)!
    milk["title"] = .string("Oat milk")
    try await alicesEngine.save(milk)
    for engine in [bobsEngine, alicesEngine] { try await engine.sendChanges() }
    for engine in [alicesEngine, bobsEngine, carolsEngine] { try await engine.fetchChanges() }

    // Carol may only read: her cache refuses the edit before queueing it, as the server would.
    var refusal: RecordSyncError?
    var carols = try await carolsEngine.cache.record(for: Record.ID(recordName: "milk", zoneID: theirs))!
    carols["title"] = .string("Chocolate milk")
    do { try await carolsEngine.save(carols) } catch let error as RecordSyncError { refusal = error }

    func items(_ engine: SyncEngine, _ zone: ZoneID) async throws -> [String] {
        try await engine.cache.allRecords(inZoneWith: zone).filter { $0.recordType == "Item" }.compactMap {
            if case .string(let title)? = $0["title"] { title } else { nil }
        }.sorted()
    }
    return (try await items(alicesEngine, lists), try await items(bobsEngine, theirs), try await items(carolsEngine, theirs), refusal)
}
// END SHARING EXAMPLE
