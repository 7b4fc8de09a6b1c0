import Foundation
import GRDB
import RecordModel
import RecordSQL

extension ModifyBatch {
    // MARK: Validation

    /// Checks an operation and resolves its fields against the schema, without writing.
    mutating func prepare(_ operation: RecordOperation, desiredKeys: [String]?) throws -> Operation {
        let payload = operation.record
        let type = operation.operationType
        let name: String
        if let given = payload.recordName {
            name = given
        } else if type == .create || type == .forceUpdate || type == .forceReplace {
            name = UUID().uuidString
        } else {
            throw RecordSyncError(.badRequest, "\(type.rawValue) needs record.recordName")
        }
        if let problem = NameRules.problem(withName: name, kind: "recordName") {
            throw RecordSyncError(.badRequest, problem)
        }
        if type.checksChangeTag && payload.recordChangeTag == nil {
            throw RecordSyncError(.badRequest, "\(type.rawValue) of \(NameRules.quoted(name)) needs record.recordChangeTag (or use force\(type.rawValue.prefix(1).uppercased() + type.rawValue.dropFirst()))", recordName: name)
        }
        var prepared = Operation(type: type, name: name, recordType: "", changeTag: payload.recordChangeTag, desiredKeys: desiredKeys)
        guard !type.isDelete else { return prepared }

        guard let recordType = payload.recordType else {
            throw RecordSyncError(.badRequest, "\(type.rawValue) of \(NameRules.quoted(name)) needs record.recordType", recordName: name)
        }
        if let problem = NameRules.problem(withName: recordType, kind: "recordType") {
            throw RecordSyncError(.badRequest, problem, recordName: name)
        }
        prepared.recordType = recordType
        // Checked against the stored schema here; resolved again when written (``resolveFields``),
        // against the types that operations written before it in this batch introduced.
        prepared.rawFields = payload.fields ?? [:]
        let resolved = try resolveFields(prepared, against: try storedSchema(of: recordType))
        prepared.fields = resolved.fields
        prepared.namesUnstoredFields = resolved.namesUnknownFields
        return prepared
    }

    /// Resolves an operation's raw fields against `known` types; checks names and zones.
    ///
    /// - Returns: the fields, and whether a field with a value has no type in `known`.
    ///
    /// The fields are resolved in any order; if one is refused, they are resolved again in name
    /// order, so the error names the first bad field by name, whatever order the request gave.
    func resolveFields(_ operation: Operation, against known: [String: FieldType]) throws -> (fields: [String: FieldValue], namesUnknownFields: Bool) {
        do {
            return try resolveFields(operation.rawFields, of: operation, against: known)
        } catch {
            return try resolveFields(operation.rawFields.sorted { $0.key < $1.key }, of: operation, against: known)
        }
    }

    private func resolveFields<Fields: Sequence<(key: String, value: RawFieldValue)>>(
        _ rawFields: Fields, of operation: Operation, against known: [String: FieldType]
    ) throws -> (fields: [String: FieldValue], namesUnknownFields: Bool) {
        let name = operation.name
        let recordType = operation.recordType
        var fields: [String: FieldValue] = [:]
        var namesUnknownFields = false
        fields.reserveCapacity(operation.rawFields.count)
        for (field, raw) in rawFields {
            if let problem = NameRules.problem(withFieldName: field) {
                throw RecordSyncError(.badRequest, problem, recordName: name)
            }
            if raw.value == .null { continue }
            let schemaType = known[field]
            if schemaType == nil { namesUnknownFields = true }
            let value = try resolve(raw, field: field, recordType: recordType, schemaType: schemaType, recordName: name)
            for reference in value.references {
                if let target = reference.zoneID, target.zoneName != zone.name || !isThisZonesOwner(target.ownerRecordName) {
                    throw RecordSyncError(.badRequest, "field \(NameRules.quoted(field)) references \(NameRules.quoted(reference.recordName)) in zone \(NameRules.quoted(target.zoneName)) of \(NameRules.quoted(target.ownerRecordName ?? "")); a reference must stay in its record's zone (\(NameRules.quoted(zone.name)))", recordName: name)
                }
            }
            fields[field] = value
        }
        return (fields, namesUnknownFields)
    }

    /// Whether a reference's `ownerRecordName` names this zone's owner (or is a placeholder).
    private func isThisZonesOwner(_ owner: String?) -> Bool {
        guard let owner, owner != "__defaultOwner__" else { return true }
        return owner == zone.zoneID.ownerRecordName
    }

    /// The typed value of a raw field: by the type the request gives, else the schema's,
    /// else inferred; a type that disagrees with the schema is `BAD_REQUEST` naming both.
    private func resolve(_ raw: RawFieldValue, field: String, recordType: String, schemaType: FieldType?, recordName: String) throws -> FieldValue {
        if let given = raw.type, let schemaType, given != schemaType {
            throw RecordSyncError(.badRequest, "field \(NameRules.quoted(field)) of \(recordType) is \(schemaType) in the schema, but the request gives \(given)", recordName: recordName)
        }
        do {
            return try FieldValue(json: raw.value, type: raw.type ?? schemaType)
        } catch let error as RecordSyncError {
            let context = raw.type == nil && schemaType != nil ? " (the schema says \(schemaType!))" : ""
            throw RecordSyncError(.badRequest, "field \(NameRules.quoted(field)): \(error.reason)\(context)", recordName: recordName)
        }
    }

    /// The stored schema of a record type (read once per batch).
    mutating func storedSchema(of recordType: String) throws -> [String: FieldType] {
        if let cached = stored[recordType] { return cached }
        var types: [String: FieldType] = [:]
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT field, type FROM schema_fields WHERE container_id = ? AND record_type = ?"),
                                    arguments: [containerID, recordType]) {
            if let type = FieldType(rawValue: row[1]) { types[row[0]] = type }
        }
        stored[recordType] = types
        return types
    }

    /// The schema a write is checked against: stored types plus those of the operations this
    /// batch has written so far (a failed group's additions vanish with its savepoint copy).
    private mutating func writtenSchema(of recordType: String) throws -> [String: FieldType] {
        try storedSchema(of: recordType).merging(schema[recordType] ?? [:]) { stored, _ in stored }
    }

    /// The validated operation at `index` (only those are ever scheduled).
    func prepared(_ index: Int) throws -> Operation {
        guard let operation = operations[index] else {
            throw RecordSyncError(.internalError, "operation \(index) was scheduled without being validated")
        }
        return operation
    }

    // MARK: Saving

    private func existing(_ name: String) throws -> Record? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(RecordRow.columns) FROM records WHERE zone_id = ? AND name = ?"),
                         arguments: [zone.id, name]).map { try RecordRow.record(from: $0, zoneID: zone.zoneID) }
    }

    /// The stored rows (``RecordRow/columns``) of the names in a JSON array (first argument) in
    /// a zone (second). CROSS JOIN keeps the list as the outer loop, so each name is one search
    /// of the table's `(name, zone_id)` key rather than a walk of the zone.
    static let storedRowsSQL = """
        SELECT \(RecordRow.columns(alias: "r")) FROM json_each(?) AS j CROSS JOIN records r ON r.zone_id = ? AND r.name = j.value
        """

    /// What the saves of the batch need to know before any is written, read with two queries
    /// instead of a lookup (and a tombstone delete) per record: the stored rows of `names`, and
    /// whether the zone holds any tombstone.
    func readBeforeSaving(_ names: [String]) throws -> SavePhase {
        var rows: [String: Record] = [:]
        let cursor = try Row.fetchCursor(db.cachedStatement(sql: Self.storedRowsSQL),
                                         arguments: [try JSONValue.array(names.map(JSONValue.string)).serializedString(), zone.id])
        while let row = try cursor.next() {
            let record = try RecordRow.record(from: row, zoneID: zone.zoneID)
            rows[record.recordName] = record
        }
        let tombstones = try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM tombstones WHERE zone_id = ?)"), arguments: [zone.id]) ?? true
        return SavePhase(rows: rows, zoneHasTombstones: tombstones)
    }

    /// Saves the operations of one group (a single record, or a reference cycle) and checks
    /// their `VALIDATE` references: a single record's before it is written (so that a failure
    /// writes nothing), a cycle's after (its members reference each other).
    mutating func save(_ indices: [Int]) throws {
        let single = indices.count == 1
        for index in indices {
            var operation = try prepared(index)
            // A single record's references are checked after its own checks (so a stale tag is
            // still CONFLICT with the server record) and before its first write.
            let record = try saveOne(&operation, checkingReferencesFirst: single)
            results[index] = .success(record.restricted(to: operation.desiredKeys))
        }
        if indices.count > 1 {
            for index in indices { try checkReferences(of: try prepared(index)) }
        }
    }

    /// Checks that the targets of an operation's `VALIDATE` references (and, in the public
    /// database, `DELETE_SELF` ones) exist or are the record itself, and were not failed by this
    /// batch.
    private func checkReferences(of operation: Operation) throws {
        // In the public database a DELETE_SELF target must exist too: otherwise another
        // user could create the missing target later and delete it, taking this record along.
        let deleteSelfMustExist = scope.kind == .public
        for (field, reference) in operation.references where reference.action == .validate || (deleteSelfMustExist && reference.action == .deleteSelf) {
            let target = reference.recordName
            if target == operation.name { continue }
            if failedNames.contains(target) {
                throw RecordSyncError(.validatingReferenceError, "field \(NameRules.quoted(field)) is a \(reference.action.rawValue) reference to \(NameRules.quoted(target)), whose operation in this batch failed", recordName: operation.name)
            }
            if try Int.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM records WHERE zone_id = ? AND name = ?"), arguments: [zone.id, target]) == nil {
                throw RecordSyncError(.validatingReferenceError, "field \(NameRules.quoted(field)) is a \(reference.action.rawValue) reference to \(NameRules.quoted(target)), which does not exist" + (reference.action == .deleteSelf ? " (in the public database an owner must exist)" : ""), recordName: operation.name)
            }
        }
    }

    /// Writes one record (`operation`, its fields resolved again if this batch changed their
    /// schema); with `checkingReferencesFirst`, checks its references after every other check
    /// and before the first write.
    private mutating func saveOne(_ operation: inout Operation, checkingReferencesFirst: Bool) throws -> Record {
        // Resolved against the stored schema when prepared; again only if an operation written
        // before it in this batch introduced the type of one of its fields.
        let storedTypes = operation.namesUnstoredFields ? try storedSchema(of: operation.recordType) : [:]
        if operation.namesUnstoredFields {
            if let added = schema[operation.recordType], operation.rawFields.keys.contains(where: { storedTypes[$0] == nil && added[$0] != nil }) {
                operation.fields = try resolveFields(operation, against: try writtenSchema(of: operation.recordType)).fields
            }
            // The types this batch introduces (what writtenSchema(of:) adds to the stored ones).
            for (field, value) in operation.fields where storedTypes[field] == nil && schema[operation.recordType]?[field] == nil {
                schema[operation.recordType, default: [:]][field] = value.type
            }
        }
        let name = operation.name
        let current: Record?
        if let savePhase { current = savePhase.rows[name] } else { current = try existing(name) }
        if let current {
            if operation.type == .create {
                throw RecordSyncError(.exists, "record \(NameRules.quoted(name)) already exists", recordName: name, serverRecord: current)
            }
            if operation.type.checksChangeTag, operation.changeTag != current.recordChangeTag {
                throw RecordSyncError(.conflict, "record \(NameRules.quoted(name)) has changed on the server: recordChangeTag \(operation.changeTag ?? "") is stale, the server's is \(current.recordChangeTag ?? "")", recordName: name, serverRecord: current)
            }
            if scope.kind == .public, current.created?.userRecordName != scope.user.userRecordName {
                throw RecordSyncError(.accessDenied, "record \(NameRules.quoted(name)) of the public database belongs to another user", recordName: name)
            }
            if current.recordType != operation.recordType {
                throw RecordSyncError(.badRequest, "record \(NameRules.quoted(name)) is a \(current.recordType), not a \(operation.recordType)", recordName: name)
            }
        } else if operation.type == .update || operation.type == .replace {
            throw RecordSyncError(.notFound, "record \(NameRules.quoted(name)) does not exist", recordName: name)
        }

        var fields = operation.fields
        var merged = false
        if let current, operation.type == .update || operation.type == .forceUpdate {
            fields = current.fields.filter { !operation.removals.contains($0.key) }.merging(operation.fields) { $1 }
            merged = true
        }
        let encoded = try merged ? RecordRow.encodeFields(fields) : operation.encodedFields ?? RecordRow.encodeFields(fields)
        if encoded.utf8.count > limits.maximumRecordBytes {
            throw RecordSyncError(.limitExceeded, "record \(NameRules.quoted(name)) holds \(encoded.utf8.count) bytes of field data; the limit is \(limits.maximumRecordBytes)", recordName: name)
        }

        if checkingReferencesFirst { try checkReferences(of: operation) }
        sequence += 1
        let tag = RecordRow.changeTag(sequence)
        let user = scope.user.userRecordName
        // Only fields the stored schema lacks (the batch's own additions included: the insert is idempotent).
        if operation.namesUnstoredFields {
            for (field, value) in operation.fields where storedTypes[field] == nil {
                try db.cachedStatement(sql: "INSERT OR IGNORE INTO schema_fields(container_id, record_type, field, type) VALUES (?, ?, ?, ?)")
                    .execute(arguments: [containerID, operation.recordType, field, value.type.rawValue])
            }
        }
        let created: Stamp
        if let current {
            created = current.created ?? Stamp(timestamp: now, userRecordName: user)
            try db.cachedStatement(sql: "UPDATE records SET tag = ?, fields = ?, modified_at = ?, modified_by = ?, modified_device = NULL, seq = ? WHERE zone_id = ? AND name = ?")
                .execute(arguments: [tag, encoded, now, user, sequence, zone.id, name])
            try db.cachedStatement(sql: "DELETE FROM refs WHERE zone_id = ? AND source = ?").execute(arguments: [zone.id, name])
        } else {
            created = Stamp(timestamp: now, userRecordName: user)
            try db.cachedStatement(sql: """
                INSERT INTO records(zone_id, name, type, tag, fields, created_at, created_by, modified_at, modified_by, seq)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """).run(in: db) { row in
                    row.bind(zone.id); row.bind(name); row.bind(operation.recordType); row.bind(tag); row.bind(encoded)
                    row.bind(now); row.bind(user); row.bind(now); row.bind(user); row.bind(sequence)
                }
            if savePhase?.zoneHasTombstones ?? true {
                try db.cachedStatement(sql: "DELETE FROM tombstones WHERE zone_id = ? AND name = ?").execute(arguments: [zone.id, name])
            }
        }
        let record = Record(recordName: name, recordType: operation.recordType, zoneID: zone.zoneID, recordChangeTag: tag,
                            fields: fields, created: created, modified: Stamp(timestamp: now, userRecordName: user))
        // An update keeps the stored fields it does not name: their references are worked out here.
        for (field, reference) in merged ? record.references : operation.references {
            let key = try fieldKey(field)
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO refs(zone_id, source, field, target, action) VALUES (?, ?, ?, ?, ?)").run(in: db) { row in
                row.bind(zone.id); row.bind(name); row.bind(key); row.bind(reference.recordName); row.bind(RecordRow.code(reference.action))
            }
        }
        return record
    }

    /// The key of the reference field `name` in `ref_fields` (what `refs.field` holds), added
    /// if the store has none yet. ``run(_:validated:)`` reads the keys a batch needs before
    /// any savepoint; a key added later inside one is forgotten with it (``attempt(_:savepoint:_:)``).
    mutating func fieldKey(_ name: String) throws -> Int64 {
        if let key = fieldKeys[name] { return key }
        let select = try db.cachedStatement(sql: "SELECT id FROM ref_fields WHERE name = ?")
        let key: Int64
        if let stored = try Int64.fetchOne(select, arguments: [name]) {
            key = stored
        } else {
            try db.cachedStatement(sql: "INSERT INTO ref_fields(name) VALUES (?)").execute(arguments: [name])
            key = db.lastInsertedRowID
        }
        fieldKeys[name] = key
        return key
    }

    // MARK: Deleting

    /// For each delete operation of the batch, one record left in the zone (argument) that holds
    /// a `VALIDATE` reference to a record it deleted. CROSS JOIN keeps the noted names the outer
    /// loop, each one search of `refs_by_target`; otherwise SQLite walked every `VALIDATE`
    /// reference of the zone, even with nothing noted.
    static let blockersSQL = """
        SELECT b.operation, refs.source, refs.target FROM temp.batch_deleted b CROSS JOIN refs
        ON refs.zone_id = ? AND refs.target = b.name AND refs.action = 2
        GROUP BY b.operation
        """

    /// Runs the deletes, then checks that no record left holds a `VALIDATE` reference to a record
    /// the batch deleted. If one does, every delete is undone, the operations that deleted a
    /// blocked record fail, and the rest run again (in a non-atomic batch; an atomic one stops).
    ///
    /// Checking after all deletes lets a batch delete a target and its `VALIDATE` sources in any
    /// order, and never trusts a later delete that then fails.
    ///
    /// In a zone without `VALIDATE` references (one probe of `refs_validating`; deletes never
    /// add references) nothing can block a delete, so the deletes run without savepoints: a
    /// delete throws only before it writes. A savepoint makes SQLite keep a copy of every page
    /// the deletes change, which made a cascade of 100,001 records take a third longer
    /// (docs/performance.md, step 40).
    ///
    /// - Returns: `false` when an atomic batch must stop.
    mutating func runDeletes(_ indices: [Int]) throws -> Bool {
        if indices.isEmpty { return true }
        if try Bool.fetchOne(db.cachedStatement(sql: Cascade.anyValidatingSQL), arguments: [zone.id]) != true {
            for index in indices {
                guard try attempt([index], savepoint: false, { batch in try batch.delete(index, isLast: index == indices.last) }) else { return false }
            }
            return true
        }
        var excluded: Set<Int> = []
        while true {
            let before = self
            var blockers: [(operation: Int, source: String, target: String)] = []
            var stop = false
            try db.inSavepoint {
                try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS batch_deleted(name TEXT PRIMARY KEY, operation INTEGER NOT NULL) WITHOUT ROWID")
                try db.execute(sql: "DELETE FROM temp.batch_deleted")
                let active = indices.filter { !excluded.contains($0) }
                for index in active {
                    guard try attempt([index], { batch in try batch.delete(index, isLast: index == active.last) }) else {
                        stop = true
                        return .rollback
                    }
                }
                blockers = try Row.fetchAll(db, sql: Self.blockersSQL, arguments: [zone.id]).map { ($0[0], $0[1], $0[2]) }
                return blockers.isEmpty ? .commit : .rollback
            }
            if stop { return false }
            if blockers.isEmpty { return true }
            self = before
            for blocker in blockers {
                excluded.insert(blocker.operation)
                fail(blocker.operation, RecordSyncError(
                    .validatingReferenceError,
                    "cannot delete \(NameRules.quoted(blocker.target)): \(NameRules.quoted(blocker.source)) holds a VALIDATE reference to it (delete that record in the same batch)",
                    recordName: operations[blocker.operation]?.name), name: operations[blocker.operation]?.name)
            }
            if atomic { return false }
        }
    }

    /// Deletes one record and everything its `DELETE_SELF` cascade reaches, noting them in
    /// `temp.batch_deleted` for the `VALIDATE` check of ``runDeletes(_:)``.
    /// `isLast`: no delete of the batch runs after this one. Its errors (`NOT_FOUND`, `CONFLICT`,
    /// `ACCESS_DENIED`, `INTERNAL_ERROR` for an operation never validated) are thrown before it
    /// writes anything.
    mutating func delete(_ index: Int, isLast: Bool = false) throws {
        let operation = try prepared(index)
        let name = operation.name
        if cascadedNames.contains(name) {
            results[index] = .success(Record(recordName: name, recordType: "", zoneID: zone.zoneID, deleted: true), cascadedRecordNames: [])
            return
        }
        guard let current = try existing(name) else {
            throw RecordSyncError(.notFound, "record \(NameRules.quoted(name)) does not exist", recordName: name)
        }
        if operation.type == .delete, operation.changeTag != current.recordChangeTag {
            throw RecordSyncError(.conflict, "record \(NameRules.quoted(name)) has changed on the server: recordChangeTag \(operation.changeTag ?? "") is stale, the server's is \(current.recordChangeTag ?? "")", recordName: name, serverRecord: current)
        }
        if scope.kind == .public, current.created?.userRecordName != scope.user.userRecordName {
            throw RecordSyncError(.accessDenied, "record \(NameRules.quoted(name)) of the public database belongs to another user", recordName: name)
        }
        let count = try Cascade.collect(root: name, zoneKey: zone.id, in: db)
        // Only the doomed records that something holds a VALIDATE reference to can block the
        // batch (references are only removed while deleting, never added), so only they are
        // noted; in a zone without VALIDATE references (one probe of `refs_validating`) none are.
        if try Bool.fetchOne(db.cachedStatement(sql: Cascade.anyValidatingSQL), arguments: [zone.id]) == true {
            try db.execute(sql: Cascade.noteValidatedSQL, arguments: [index, zone.id])
        }
        let cascaded = try Cascade.deleteDoomed(root: name, zoneKey: zone.id, firstSequence: sequence + 1, in: db)
        sequence += Int64(count)
        // Later deletes of the batch skip what this one cascaded to; the last needs no note.
        if !isLast { cascadedNames.formUnion(cascaded) }
        results[index] = .success(Record(recordName: name, recordType: current.recordType, zoneID: zone.zoneID, deleted: true),
                                  cascadedRecordNames: cascaded)
    }
}
