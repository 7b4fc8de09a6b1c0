import Foundation
import GRDB
import RecordModel
import RecordSQL

/// One `records/modify` request being applied inside one write transaction.
///
/// Saves run first, grouped so that every target is written before the records that
/// reference it (a reference cycle is one group); deletes follow in request order. In an
/// atomic batch the first failure fails everything; otherwise each group runs in a savepoint
/// and a failure undoes only that group.
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
                encodedFields = try? RecordRow.encodeFields(fields)
            }
        }
        /// The references ``fields`` hold, by field name (worked out once per resolution: the
        /// saving order, the reference checks and the write all need them).
        private(set) var references: [(field: String, reference: Reference)] = []
        /// ``fields`` in their stored form, encoded when they are resolved (usually on the
        /// reader that validates the batch, outside the write lock).
        private(set) var encodedFields: String?
        var desiredKeys: [String]?
        /// Whether the request gives a value to a field the stored schema lacks (worked out
        /// when prepared, against the stored schema, which the write checks is unchanged): only
        /// such a save can introduce a field's type, so only it looks its fields up again when
        /// written.
        var namesUnstoredFields = false
        /// Fields to remove (an update's `null` values).
        var removals: Set<String> { Set(rawFields.filter { $0.value.value == .null }.keys) }
    }

    let db: Database
    let scope: DatabaseScope
    let zone: SQLiteRecordStore.ZoneRow
    let containerID: Int64
    let limits: StoreLimits
    let atomic: Bool
    let now = SQLiteRecordStore.now()
    var operations: [Operation?]
    var results: [RecordResult?]
    var sequence: Int64
    /// What the saves know before the first is written (``readBeforeSaving(_:)``): a save
    /// changes only its own row, names are unique in a batch, and every save runs before the
    /// deletes, so this stays true for the whole save phase (a rolled-back group only restores it).
    struct SavePhase {
        var rows: [String: Record]
        var zoneHasTombstones: Bool
    }
    var savePhase: SavePhase?
    var failedNames: Set<String> = []
    var cascadedNames: Set<String> = []
    /// Field types stored before the batch, per record type.
    var stored: [String: [String: FieldType]] = [:]
    /// Field types introduced by the operations written so far, per record type.
    var schema: [String: [String: FieldType]] = [:]
    /// The keys of reference field names in `ref_fields` (what `refs.field` holds), read or
    /// added in this transaction (``fieldKey(_:)``).
    var fieldKeys: [String: Int64] = [:]

    init(request: ModifyRecordsRequest, scope: DatabaseScope, zone: SQLiteRecordStore.ZoneRow, containerID: Int64, limits: StoreLimits, db: Database) {
        self.db = db
        self.scope = scope
        self.zone = zone
        self.containerID = containerID
        self.limits = limits
        self.atomic = request.atomic ?? true
        self.sequence = zone.sequence
        self.operations = Array(repeating: nil, count: request.operations.count)
        self.results = Array(repeating: nil, count: request.operations.count)
    }

    /// What checking a request's operations found, before anything is written: the validated
    /// operations, the failures, and the stored schema they were resolved against.
    struct Validation: Sendable {
        var operations: [Operation?]
        var results: [RecordResult?]
        var failedNames: Set<String>
        var stored: [String: [String: FieldType]]
        /// The saves' groups in saving order (``savingGroups()``), worked out on the reader too.
        var savingGroups: [[Int]]
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
                fail(index, error, name: operation.record.recordName)
                if atomic { return .failure(AtomicFailure(response: atomicFailure())) }
            }
        }
        return .success(Validation(operations: operations, results: results, failedNames: failedNames, stored: stored,
                                   savingGroups: savingGroups()))
    }

    /// The validated saves, as groups of operation indices (a single record, or a reference
    /// cycle), every group after the groups whose records it references.
    func savingGroups() -> [[Int]] {
        let saves = operations.indices.filter { operations[$0].map { !$0.type.isDelete } ?? false }
        let order = DependencyOrder.savingOrder(saves.compactMap { index in
            operations[index].map { ($0.name, $0.references.map(\.reference.recordName)) }
        })
        return order.map { group in group.map { saves[$0] } }
    }

    /// An atomic batch that failed validation: its answer.
    struct AtomicFailure: Error, Sendable {
        var response: RecordsResponse
    }

    /// Applies the batch.
    ///
    /// - Parameter validation: what ``validate(_:)`` found on a reader before the write began;
    ///   used when the stored schema it resolved fields against is still the same, else the
    ///   operations are validated again here.
    /// - Returns: the per-record results, and whether the transaction should commit.
    mutating func run(_ request: ModifyRecordsRequest, validated validation: Validation? = nil) throws -> (RecordsResponse, commit: Bool) {
        let groups: [[Int]]
        if let validation, try validation.stored.allSatisfy({ type, schema in try storedSchema(of: type) == schema }) {
            operations = validation.operations
            results = validation.results
            failedNames = validation.failedNames
            groups = validation.savingGroups
        } else {
            stored = [:]
            operations = Array(repeating: nil, count: request.operations.count)
            results = Array(repeating: nil, count: request.operations.count)
            failedNames = []
            switch try validate(request) {
            case .failure(let failure): return (failure.response, false)
            case .success(let validation): groups = validation.savingGroups
            }
        }

        if !groups.isEmpty {
            savePhase = try readBeforeSaving(groups.flatMap { $0 }.compactMap { operations[$0]?.name })
            // The keys of the reference fields the saves will write, before any savepoint: a key
            // added inside one that is rolled back would be remembered but gone.
            var names: Set<String> = []
            for index in groups.joined() {
                guard let name = operations[index]?.name else { continue }
                for (field, _) in operations[index]?.references ?? [] { names.insert(field) }
                for (field, _) in savePhase?.rows[name]?.references ?? [] { names.insert(field) }
            }
            for name in names.sorted() { _ = try fieldKey(name) }
        }
        for indices in groups {
            // A single record is checked completely before it is written, so a failure leaves
            // nothing to undo and needs no savepoint; a cycle is checked after writing.
            guard try attempt(indices, savepoint: indices.count > 1, { batch in try batch.save(indices) }) else { return (atomicFailure(), false) }
        }
        savePhase = nil
        let deletes = operations.indices.filter { operations[$0]?.type.isDelete ?? false }
        guard try runDeletes(deletes) else { return (atomicFailure(), false) }

        if sequence != zone.sequence {
            let databaseSequence = try SQLiteRecordStore.nextDatabaseSequence(zone.databaseID, in: db)
            try db.cachedStatement(sql: "UPDATE zones SET seq = ?, db_seq = ? WHERE id = ?").execute(arguments: [sequence, databaseSequence, zone.id])
        }
        return (RecordsResponse(records: results.map { $0 ?? .failure(RecordSyncError(.internalError, "operation was not applied")) }), true)
    }

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
                failGroup(indices, error)
                return false
            }
        }
        // What the body may change, saved so that a failure can undo it. (Copying the whole
        // batch instead would copy every result of the request once per group.)
        var failure: RecordSyncError?
        let savedSequence = sequence
        let savedCascaded = cascadedNames
        let savedSchema = schema
        let savedStored = stored
        let savedFieldKeys = fieldKeys
        if savepoint {
            try db.inSavepoint {
                do {
                    try body(&self)
                    return .commit
                } catch let error as RecordSyncError {
                    failure = error
                    return .rollback
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
            sequence = savedSequence
            cascadedNames = savedCascaded
            schema = savedSchema
            stored = savedStored
            fieldKeys = savedFieldKeys
            for index in indices { results[index] = nil }
            failGroup(indices, failure)
        }
        return true
    }

    /// Records `error` against the operation it names (or the group's first) and a cycle
    /// error against the rest of the group.
    private mutating func failGroup(_ indices: [Int], _ error: RecordSyncError) {
        let culprit = indices.first { operations[$0]?.name == error.recordName } ?? indices[0]
        fail(culprit, error, name: operations[culprit]?.name)
        for index in indices where index != culprit {
            let name = operations[index]?.name
            fail(index, RecordSyncError(error.code == .validatingReferenceError ? .validatingReferenceError : .atomicError,
                                        "not saved: it is in a reference cycle with \(NameRules.quoted(operations[culprit]?.name ?? "")), which failed",
                                        recordName: name), name: name)
        }
    }

    mutating func fail(_ index: Int, _ error: RecordSyncError, name: String?) {
        var error = error
        error.recordName = error.recordName ?? name
        error.zoneID = zone.zoneID
        results[index] = .failure(error)
        if let name { failedNames.insert(name) }
    }

    /// Every result an error: the failures keep theirs, the rest are `ATOMIC_ERROR`.
    private func atomicFailure() -> RecordsResponse {
        let culprit = results.compactMap { $0?.error }.first
        let reason = "not applied: the atomic batch failed" + (culprit.map { " (\($0.recordName.map(NameRules.quoted) ?? "an operation"): \($0.code))" } ?? "")
        return RecordsResponse(records: results.indices.map { index in
            if let error = results[index]?.error { return .failure(error) }
            return .failure(RecordSyncError(.atomicError, reason, recordName: operations[index]?.name, zoneID: zone.zoneID))
        })
    }
}
