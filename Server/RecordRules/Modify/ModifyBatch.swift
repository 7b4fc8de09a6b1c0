import Foundation
import RecordModel

/// One `records/modify` request, checked on a reader and then applied inside one write
/// transaction through the storage primitives.
///
/// Saves run first, grouped so that every target is written before the records that reference
/// it (a reference cycle is one group); deletes follow in request order. In an atomic batch the
/// first failure fails everything (the transaction rolls back); otherwise each group runs in a
/// savepoint and a failure undoes only that group. The rules it applies are in plain values:
/// ``SaveRules`` (conflicts, and ``Access``, what the caller may do), ``BatchResults`` (per-record and atomic answers),
/// ``DeleteRounds`` (what `VALIDATE` blocks), `DependencyOrder` (the saving order),
/// ``ZoneFeedWriter`` (numbers and tags).
struct ModifyBatch {
    /// An operation after validation.
    struct Operation: Sendable {
        var type: OperationType
        var name: String
        var recordType: String
        var changeTag: String?
        /// The fields as the request gave them.
        var rawFields: [String: RawFieldValue] = [:]
        /// The fields to set, resolved against the schema (for saves).
        var fields: [String: FieldValue] = [:] {
            didSet {
                references = Record(recordName: name, recordType: recordType, fields: fields).references
                encodedFields = try? JSONValueEncoder().encodeFieldsText(fields)
            }
        }
        /// The references ``fields`` hold, by field name (worked out once per resolution: the
        /// saving order, the reference checks and the write all need them).
        private(set) var references: [(field: String, reference: Reference)] = []
        /// ``fields`` in their stored form, encoded when they are resolved (usually on the
        /// reader that validates the batch, outside the write lock).
        private(set) var encodedFields: String?
        var desiredKeys: [String]?
        /// For a share record: what the save asks of the share beside its fields.
        var share: ShareEdit?
        /// What the save asks of the record's `parent` (`nil`: nothing).
        var parentChange: RecordPayload.ParentChange?
        /// Whether the request gives a value to a field the stored schema lacks (worked out
        /// when prepared, against the stored schema, which the write checks is unchanged): only
        /// such a save can introduce a field's type, so only it looks its fields up again when
        /// written.
        var namesUnstoredFields = false
        /// Fields to remove (an update's `null` values).
        var removals: Set<String> { Set(rawFields.filter { $0.value.value == .null }.keys) }
    }

    /// What the batch has done so far that a failed group or delete round must undo besides
    /// its rows (which its savepoint undoes): one value, saved before and restored after.
    struct Progress: Sendable {
        /// The zone's numbers (locked and read again when the write begins).
        var feed: ZoneFeedWriter
        /// Names an earlier delete's cascade removed (a later delete of one succeeds at once).
        var cascadedNames: Set<String> = []
        /// Record types as stored before the batch (read once each).
        var stored: [String: StoredTypeSchema] = [:]
        /// Field types introduced by the operations written so far, per record type.
        var schema: [String: [String: FieldType]] = [:]
        /// The fields whose schema rows this batch wrote, per record type (written once each).
        var schemaRowsWritten: [String: Set<String>] = [:]
        /// The records saved so far, and whether each was created (for subscriptions).
        var saved: [(name: String, created: Bool)] = []
        /// The records saved, rewritten or deleted so far, when the batch follows record shares
        /// (``shareReach``).
        var written: Set<String> = []
        /// Query subscriptions the deletes so far matched (each before it ran).
        var deleteMatches: [SubscriptionFiring.Match] = []
        /// The record types whose words are indexed (``SearchTypes``), read at the first save
        /// holding text.
        var searchable: Set<String>?
    }

    let transaction: any StorageTransaction
    let scope: DatabaseScope
    /// What the caller may do (the one check).
    var access: Access
    let zone: ZoneContext
    let containerKey: Int64
    let limits: StoreLimits
    let atomic: Bool
    let now = RecordStore.now()
    var operations: [Operation?]
    var results: BatchResults
    var progress: Progress
    /// What the saves know before the first is written (``readBeforeSaving(_:)``): a save
    /// changes only its own row, names are unique in a batch, and every save runs before the
    /// deletes, so this stays true for the whole save phase (a rolled-back group only restores it).
    struct SavePhase {
        var rows: [String: Record]
        var zoneHasTombstones: Bool
        /// The names among those the batch creates that stored records name as their parent.
        var namedAsParent: Set<String> = []
    }
    var savePhase: SavePhase?
    /// What each record share of the zone reached before the batch wrote (`nil`: the zone has
    /// none): the batch writes what they gained and lost (``followShareMoves()``).
    var shareReach: [ShareReach]?
    /// The zone's shares and whom they are shared with, read when the write begins.
    var audience: [ShareAudience] = []
    /// The participants whose shared database the batch changed (once it ran): their database
    /// subscriptions fire and their push streams hear of it.
    private(set) var participantsReached: [User] = []
    /// The subscriptions this batch may fire (``SubscriptionFiring``), `nil` when none applies.
    var firing: SubscriptionFiring?

    init(request: ModifyRecordsRequest, scope: DatabaseScope, access: Access, zone: ZoneContext, containerKey: Int64, limits: StoreLimits,
         transaction: any StorageTransaction) {
        self.transaction = transaction
        self.scope = scope
        self.access = access
        self.zone = zone
        self.containerKey = containerKey
        self.limits = limits
        self.atomic = request.atomic ?? true
        self.operations = Array(repeating: nil, count: request.operations.count)
        self.results = BatchResults(count: request.operations.count, zoneID: zone.zoneID)
        self.progress = Progress(feed: ZoneFeedWriter(zone: zone.key, database: zone.databaseKey, start: zone.sequence))
    }

    /// Each operation's record name, if it was validated (over a copy of the operations, so that
    /// it can be passed to a mutation of ``results``).
    var names: @Sendable (Int) -> String? {
        let operations = operations
        return { operations[$0]?.name }
    }

    /// What checking a request's operations found, before anything is written: the validated
    /// operations, the failures, and the stored schema they were resolved against.
    struct Validation: Sendable {
        var operations: [Operation?]
        var results: BatchResults
        var stored: [String: StoredTypeSchema]
        /// The saves' groups in saving order (``savingGroups()``), worked out on the reader too.
        var savingGroups: [[Int]]
    }

    /// An atomic batch that failed validation: its answer.
    struct AtomicFailure: Error, Sendable {
        var response: RecordsResponse
    }

    /// Checks every operation and resolves its fields against the stored schema, writing
    /// nothing (so it can run on a reader, outside the write lock).
    ///
    /// - Returns: the validation, or the answer when an atomic batch already failed.
    mutating func validate(_ request: ModifyRecordsRequest) throws -> Result<Validation, AtomicFailure> {
        var seen: Set<String> = []
        for (index, operation) in request.operations.enumerated() {
            do {
                let prepared = try prepare(operation, desiredKeys: operation.desiredKeys ?? request.desiredKeys)
                guard seen.insert(prepared.name).inserted else {
                    throw RecordSyncError(.badRequest, "record \(NameRules.quoted(prepared.name)) appears in more than one operation", recordName: prepared.name)
                }
                operations[index] = prepared
            } catch let error as RecordSyncError {
                results.fail(index, error, name: operation.record.recordName)
                if atomic { return .failure(AtomicFailure(response: results.atomicFailure(names: names))) }
            }
        }
        return .success(Validation(operations: operations, results: results, stored: progress.stored, savingGroups: savingGroups()))
    }

    /// The validated saves, as groups of operation indices (a single record, or a reference
    /// cycle), every group after the groups whose records it references.
    func savingGroups() -> [[Int]] { Self.savingGroups(of: operations) }

    /// The saves among `operations` (`nil`: failed validation, left out), as groups of their
    /// indices (a single record, or a reference cycle), every group after the groups whose
    /// records it references; groups that do not depend on each other keep request order.
    static func savingGroups(of operations: [Operation?]) -> [[Int]] {
        let saves = operations.indices.filter { operations[$0].map { !$0.type.isDelete } ?? false }
        let order = DependencyOrder.savingOrder(saves.compactMap { index in
            operations[index].map { ($0.name, $0.references.map(\.reference.recordName) + [$0.parentChange?.name].compactMap { $0 }) }
        })
        return order.map { group in group.map { saves[$0] } }
    }

    /// Applies the batch.
    ///
    /// - Parameter validation: what ``validate(_:)`` found on a reader before the write began;
    ///   used when the stored schema it resolved fields against is still the same, else the
    ///   operations are validated again here.
    /// - Returns: the per-record results, and whether the transaction should commit.
    mutating func run(_ request: ModifyRecordsRequest, validated validation: Validation? = nil) throws -> (RecordsResponse, commit: Bool) {
        progress.feed = try .locking(zone: zone.key, database: zone.databaseKey, in: transaction)
        if access.participation?.members != nil {
            // What a record share's participant reaches, read again under the zone's lock: a move
            // the owner committed since the zone was resolved is seen.
            guard let participation = try RecordStore.participation(ofUser: scope.user.id, inZone: zone.key, in: transaction) else {
                throw RecordSyncError(.zoneNotFound, "zone \(NameRules.quoted(zone.name)) is no longer shared with you", zoneID: zone.zoneID)
            }
            access.participation = participation
        }
        // The schema is checked (and added to) under the container's schema lock, so an
        // import, deploy or lock is wholly before or after this write.
        try transaction.lockSchema(inContainer: containerKey, exclusive: false)
        audience = try ShareAudience.load(zone: zone, scope: scope, in: transaction)
        firing = try SubscriptionFiring.load(scope: scope, zone: zone, audience: audience, containerKey: containerKey, in: transaction)
        // A participant's writes count in the zone's owner's usage, against the owner's quota.
        let charged = access.participation == nil ? scope.user : scope.owner ?? scope.user
        let user = charged.userRecordName
        let usage = limits.quota.limits ? try transaction.usage(ofUser: user) : nil
        let groups: [[Int]]
        if let validation, try validation.stored.allSatisfy({ type, schema in try storedTypeSchema(of: type) == schema }) {
            operations = validation.operations
            results = validation.results
            groups = validation.savingGroups
        } else {
            progress.stored = [:]
            operations = Array(repeating: nil, count: request.operations.count)
            results = BatchResults(count: request.operations.count, zoneID: zone.zoneID)
            switch try validate(request) {
            case .failure(let failure): return (failure.response, false)
            case .success(let validation): groups = validation.savingGroups
            }
        }

        shareReach = try recordShareReach()
        if !groups.isEmpty {
            savePhase = try readBeforeSaving(groups.flatMap { $0 }.compactMap { operations[$0]?.name })
            try registerReferenceFields(groups)
        }
        for indices in groups {
            // A single record is checked completely before it is written, so a failure leaves
            // nothing to undo and needs no savepoint; a cycle is checked after writing, and a
            // share's participants after its record.
            let savepoint = indices.count > 1 || indices.contains { operations[$0]?.recordType == ShareInfo.recordType }
            guard try attempt(indices, savepoint: savepoint, { batch in try batch.save(indices) }) else {
                return (results.atomicFailure(names: names), false)
            }
        }
        savePhase = nil
        // Saves match subscriptions as they are now, before any delete of the batch runs.
        var saveMatches: [SubscriptionFiring.Match] = []
        if let firing {
            saveMatches = try firing.matches(progress.saved.filter(\.created).map(\.name), reason: 1, in: transaction)
                + firing.matches(progress.saved.filter { !$0.created }.map(\.name), reason: 2, in: transaction)
        }
        let deletes = operations.indices.filter { operations[$0]?.type.isDelete ?? false }
        guard try runDeletes(deletes) else { return (results.atomicFailure(names: names), false) }
        participantsReached = reachedParticipants(after: try followShareMoves())
        if let firing {
            try firing.notify(saveMatches + progress.deleteMatches, changed: progress.feed.moved, participants: Set(participantsReached.map(\.id)), now: now, in: transaction)
        }
        if let usage, progress.feed.moved {
            try limits.quota.check(from: usage, to: try transaction.usage(ofUser: user), user: charged.name)
        }
        try progress.feed.finish(in: transaction)
        return (results.response(), true)
    }

    /// Whether the batch wrote anything (its zone's feed moved).
    var changedZone: Bool { progress.feed.moved }

    // MARK: Running groups

    /// Runs `body` for the operations `indices`; on failure records the error against them.
    /// In a non-atomic batch the work runs in a savepoint that a failure rolls back, unless
    /// `savepoint` is false: the caller promises that `body` throws only before it writes.
    ///
    /// - Returns: `false` when an atomic batch must stop.
    mutating func attempt(_ indices: [Int], savepoint: Bool = true, _ body: (inout ModifyBatch) throws -> Void) throws -> Bool {
        if atomic {
            do {
                try body(&self)
                return true
            } catch let error as RecordSyncError {
                results.failGroup(indices, error, names: names)
                return false
            }
        }
        var failure: RecordSyncError?
        let saved = progress
        if savepoint {
            try transaction.savepoint {
                do {
                    try body(&self)
                    return true
                } catch let error as RecordSyncError {
                    failure = error
                    return false
                }
            }
        } else {
            do {
                try body(&self)
            } catch let error as RecordSyncError {
                failure = error
            }
        }
        if let failure {
            progress = saved
            results.forget(indices)
            results.failGroup(indices, failure, names: names)
        }
        return true
    }
}
