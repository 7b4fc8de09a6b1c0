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
        let known = try schemaTypes(of: recordType)
        for (field, raw) in (payload.fields ?? [:]).sorted(by: { $0.key < $1.key }) {
            if let problem = NameRules.problem(withFieldName: field) {
                throw RecordSyncError(.badRequest, problem, recordName: name)
            }
            if raw.value == .null {
                prepared.removals.insert(field)
                continue
            }
            let value = try resolve(raw, field: field, recordType: recordType, schemaType: known[field], recordName: name)
            for reference in value.references {
                if let target = reference.zoneID, target.zoneName != zone.name {
                    throw RecordSyncError(.badRequest, "field \(NameRules.quoted(field)) references \(NameRules.quoted(reference.recordName)) in zone \(NameRules.quoted(target.zoneName)); a reference must stay in its record's zone (\(NameRules.quoted(zone.name)))", recordName: name)
                }
            }
            prepared.fields[field] = value
            if known[field] == nil { schema[recordType, default: [:]][field] = value.type }
        }
        return prepared
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

    /// The schema of a record type: stored types plus those this batch has introduced.
    private mutating func schemaTypes(of recordType: String) throws -> [String: FieldType] {
        if let cached = schema[recordType] { return cached }
        var types: [String: FieldType] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT field, type FROM schema_fields WHERE container_id = ? AND record_type = ?",
                                    arguments: [containerID, recordType]) {
            if let type = FieldType(rawValue: row[1]) { types[row[0]] = type }
        }
        schema[recordType] = types
        return types
    }

    // MARK: Saving

    /// The stored state of a record that a save or delete needs.
    private struct Existing {
        var id: Int64
        var record: Record
    }

    private func existing(_ name: String) throws -> Existing? {
        try Row.fetchOne(db, sql: "SELECT id, \(RecordRow.columns) FROM records WHERE zone_id = ? AND name = ?",
                         arguments: [zone.id, name]).map { row in
            Existing(id: row[0], record: try RecordRow.record(from: row, zoneID: zone.zoneID, offset: 1))
        }
    }

    /// Saves the operations of one group (a single record, or a reference cycle), then checks
    /// their `VALIDATE` references.
    mutating func save(_ indices: [Int]) throws {
        for index in indices {
            let record = try saveOne(operations[index]!)
            results[index] = .success(record.restricted(to: operations[index]!.desiredKeys))
        }
        for index in indices {
            let operation = operations[index]!
            for (field, reference) in operation.references where reference.action == .validate {
                let target = reference.recordName
                if failedNames.contains(target) {
                    throw RecordSyncError(.validatingReferenceError, "field \(NameRules.quoted(field)) is a VALIDATE reference to \(NameRules.quoted(target)), whose operation in this batch failed", recordName: operation.name)
                }
                if try Int.fetchOne(db, sql: "SELECT 1 FROM records WHERE zone_id = ? AND name = ?", arguments: [zone.id, target]) == nil {
                    throw RecordSyncError(.validatingReferenceError, "field \(NameRules.quoted(field)) is a VALIDATE reference to \(NameRules.quoted(target)), which does not exist", recordName: operation.name)
                }
            }
        }
    }

    private mutating func saveOne(_ operation: Operation) throws -> Record {
        let name = operation.name
        let current = try existing(name)
        if let current {
            if operation.type == .create {
                throw RecordSyncError(.exists, "record \(NameRules.quoted(name)) already exists", recordName: name)
            }
            if operation.type.checksChangeTag, operation.changeTag != current.record.recordChangeTag {
                throw RecordSyncError(.conflict, "record \(NameRules.quoted(name)) has changed on the server: recordChangeTag \(operation.changeTag ?? "") is stale, the server's is \(current.record.recordChangeTag ?? "")", recordName: name, serverRecord: current.record)
            }
            if scope.kind == .public, current.record.created?.userRecordName != scope.user.userRecordName {
                throw RecordSyncError(.accessDenied, "record \(NameRules.quoted(name)) of the public database belongs to another user", recordName: name)
            }
            if current.record.recordType != operation.recordType {
                throw RecordSyncError(.badRequest, "record \(NameRules.quoted(name)) is a \(current.record.recordType), not a \(operation.recordType)", recordName: name)
            }
        } else if operation.type == .update || operation.type == .replace {
            throw RecordSyncError(.notFound, "record \(NameRules.quoted(name)) does not exist", recordName: name)
        }

        var fields = operation.fields
        if let current, operation.type == .update || operation.type == .forceUpdate {
            fields = current.record.fields.filter { !operation.removals.contains($0.key) }.merging(operation.fields) { $1 }
        }
        let encoded = try RecordRow.encodeFields(fields)
        if encoded.utf8.count > limits.maximumRecordBytes {
            throw RecordSyncError(.limitExceeded, "record \(NameRules.quoted(name)) holds \(encoded.utf8.count) bytes of field data; the limit is \(limits.maximumRecordBytes)", recordName: name)
        }

        sequence += 1
        let tag = RecordRow.changeTag(sequence)
        let user = scope.user.userRecordName
        for (field, value) in operation.fields {
            try db.execute(sql: "INSERT OR IGNORE INTO schema_fields(container_id, record_type, field, type) VALUES (?, ?, ?, ?)",
                           arguments: [containerID, operation.recordType, field, value.type.rawValue])
        }
        let created: Stamp
        if let current {
            created = current.record.created ?? Stamp(timestamp: now, userRecordName: user)
            try db.execute(sql: "UPDATE records SET tag = ?, fields = ?, modified_at = ?, modified_by = ?, modified_device = NULL, seq = ? WHERE id = ?",
                           arguments: [tag, encoded, now, user, sequence, current.id])
            try db.execute(sql: "DELETE FROM refs WHERE zone_id = ? AND source = ?", arguments: [zone.id, name])
        } else {
            created = Stamp(timestamp: now, userRecordName: user)
            try db.execute(sql: """
                INSERT INTO records(zone_id, name, type, tag, fields, created_at, created_by, modified_at, modified_by, seq)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [zone.id, name, operation.recordType, tag, encoded, now, user, now, user, sequence])
            try db.execute(sql: "DELETE FROM tombstones WHERE zone_id = ? AND name = ?", arguments: [zone.id, name])
        }
        let record = Record(recordName: name, recordType: operation.recordType, zoneID: zone.zoneID, recordChangeTag: tag,
                            fields: fields, created: created, modified: Stamp(timestamp: now, userRecordName: user))
        for (field, reference) in record.references {
            try db.execute(sql: "INSERT OR REPLACE INTO refs(zone_id, source, field, target, action) VALUES (?, ?, ?, ?, ?)",
                           arguments: [zone.id, name, field, reference.recordName, RecordRow.code(reference.action)])
        }
        return record
    }

    // MARK: Deleting

    /// Deletes one record and everything its `DELETE_SELF` cascade reaches.
    mutating func delete(_ index: Int) throws {
        let operation = operations[index]!
        let name = operation.name
        if cascadedNames.contains(name) {
            results[index] = .success(Record(recordName: name, recordType: "", zoneID: zone.zoneID, deleted: true), cascadedRecordNames: [])
            return
        }
        guard let current = try existing(name) else {
            throw RecordSyncError(.notFound, "record \(NameRules.quoted(name)) does not exist", recordName: name)
        }
        if operation.type == .delete, operation.changeTag != current.record.recordChangeTag {
            throw RecordSyncError(.conflict, "record \(NameRules.quoted(name)) has changed on the server: recordChangeTag \(operation.changeTag ?? "") is stale, the server's is \(current.record.recordChangeTag ?? "")", recordName: name, serverRecord: current.record)
        }
        if scope.kind == .public, current.record.created?.userRecordName != scope.user.userRecordName {
            throw RecordSyncError(.accessDenied, "record \(NameRules.quoted(name)) of the public database belongs to another user", recordName: name)
        }
        let count = try Cascade.collect(root: name, zoneKey: zone.id, in: db)
        // Sources that this batch also deletes (and that have not failed) do not block the delete.
        let laterDeletes = Set(operations[index...].compactMap { $0?.type.isDelete == true ? $0?.name : nil }).subtracting(failedNames)
        let blocking = try Cascade.validatingSources(zoneKey: zone.id, limit: laterDeletes.count + 1, in: db)
            .first { !laterDeletes.contains($0.source) }
        if let blocking {
            throw RecordSyncError(.validatingReferenceError, "cannot delete \(NameRules.quoted(blocking.target)): \(NameRules.quoted(blocking.source)) holds a VALIDATE reference to it (delete it in the same batch)", recordName: name)
        }
        let cascaded = try Cascade.deleteDoomed(root: name, zoneKey: zone.id, firstSequence: sequence + 1, in: db)
        sequence += Int64(count)
        cascadedNames.formUnion(cascaded)
        results[index] = .success(Record(recordName: name, recordType: current.record.recordType, zoneID: zone.zoneID, deleted: true),
                                  cascadedRecordNames: cascaded)
    }
}
