import Foundation
import RecordModel

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
        prepared.rawFields = payload.fields ?? [:]
        if let parent = payload.parent?.name {
            if let problem = NameRules.problem(withName: parent, kind: "parent.recordName") {
                throw RecordSyncError(.badRequest, problem, recordName: name)
            }
            if parent == name { throw RecordSyncError(.badRequest, "record \(NameRules.quoted(name)) cannot be its own parent", recordName: name) }
            if ShareInfo.recordTypes.contains(recordType) || parent == ShareInfo.zoneShareName {
                throw RecordSyncError(.badRequest, "a share record has no parent and is no record's parent", recordName: name)
            }
        }
        prepared.parentChange = payload.parent
        if ShareInfo.recordTypes.contains(recordType) {
            // A share record is CloudKit's system type: no schema declares it or is changed by it.
            try ShareRules.checkSave(named: name, edit: payload.share, zone: zone, scope: scope)
            prepared.recordType = ShareInfo.recordType
            prepared.share = payload.share
        } else {
            if payload.share != nil {
                throw RecordSyncError(.badRequest, "forRecord, publicPermission and participants belong to a share record (recordType \(ShareInfo.recordType)), not to a \(recordType)", recordName: name)
            }
            // Checked against the stored schema here; resolved again when written (``resolveFields``),
            // against the types that operations written before it in this batch introduced.
            try SchemaRules.checkSave(of: recordType, fields: prepared.rawFields.lazy.filter { $0.value.value != .null }.map(\.key),
                                      against: try storedTypeSchema(of: recordType), recordName: name)
        }
        let resolved = try resolveFields(prepared, against: try storedSchema(of: prepared.recordType))
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
            if let problem = NameRules.problem(withFieldName: field), !(recordType == ShareInfo.recordType && ShareInfo.fields.contains(field)) {
                throw RecordSyncError(.badRequest, problem, recordName: name)
            }
            if raw.value == .null { continue }
            let schemaType = known[field]
            if schemaType == nil { namesUnknownFields = true }
            let value = try resolve(raw, field: field, recordType: recordType, schemaType: schemaType, recordName: name)
            // A share changes only by its owner's saves: it holds no reference, and none points
            // at it (a cascade, NULLIFY or VALIDATE would let others change or pin it).
            if recordType == ShareInfo.recordType && !value.references.isEmpty {
                throw RecordSyncError(.badRequest, "field \(NameRules.quoted(field)): a share record holds no references", recordName: name)
            }
            if value.references.contains(where: { $0.recordName == ShareInfo.zoneShareName }) {
                throw RecordSyncError(.badRequest, "field \(NameRules.quoted(field)) references the share \(ShareInfo.zoneShareName); a share cannot be referenced", recordName: name)
            }
            for reference in value.references {
                if let target = reference.zoneID, target.zoneName != zone.name || !isThisZonesOwner(target.ownerRecordName) {
                    throw RecordSyncError(.badRequest, "field \(NameRules.quoted(field)) references \(NameRules.quoted(reference.recordName)) in zone \(NameRules.quoted(target.zoneName)) of \(NameRules.quoted(target.ownerRecordName ?? "")); a reference must stay in its record's zone (\(NameRules.quoted(zone.name)))", recordName: name)
                }
            }
            fields[field] = value
        }
        return (fields, namesUnknownFields)
    }

    /// Whether a reference's `ownerRecordName` may name this zone's owner (the rule of a
    /// request's own zone ID, ``RecordStore/isOwner(_:ofZonesIn:)``).
    private func isThisZonesOwner(_ owner: String?) -> Bool {
        owner.map { RecordStore.isOwner($0, ofZonesIn: scope) } ?? true
    }

    /// The typed value of a raw field: by the type the request gives, else the schema's,
    /// else inferred; a type that disagrees with the schema is `BAD_REQUEST` naming both.
    private func resolve(_ raw: RawFieldValue, field: String, recordType: String, schemaType: FieldType?, recordName: String) throws -> FieldValue {
        if let given = raw.type, let schemaType, !WireForm.reads(given, as: schemaType) {
            throw RecordSyncError(.badRequest, "field \(NameRules.quoted(field)) of \(recordType) is \(schemaType) in the schema, but the request gives \(given)", recordName: recordName)
        }
        do {
            return try FieldValue(json: raw.value, type: schemaType ?? raw.type, numbersMayBeStrings: raw.type != nil)
        } catch let error as RecordSyncError {
            let context = raw.type == nil && schemaType != nil ? " (the schema says \(schemaType!))" : ""
            throw RecordSyncError(.badRequest, "field \(NameRules.quoted(field)): \(error.reason)\(context)", recordName: recordName)
        }
    }

    /// A record type as the stored schema has it (read once per batch).
    mutating func storedTypeSchema(of recordType: String) throws -> StoredTypeSchema {
        if let cached = progress.stored[recordType] { return cached }
        let stored = try transaction.typeSchema(of: recordType, inContainer: containerKey)
        progress.stored[recordType] = stored
        return stored
    }

    /// The stored field types of a record type (read once per batch).
    mutating func storedSchema(of recordType: String) throws -> [String: FieldType] {
        try storedTypeSchema(of: recordType).fields
    }

    /// The schema a write is checked against: stored types plus those of the operations this
    /// batch has written so far (a failed group's additions go when its progress is restored).
    private mutating func writtenSchema(of recordType: String) throws -> [String: FieldType] {
        try storedSchema(of: recordType).merging(progress.schema[recordType] ?? [:]) { stored, _ in stored }
    }

    /// The validated operation at `index` (only those are ever scheduled).
    func prepared(_ index: Int) throws -> Operation {
        guard let operation = operations[index] else {
            throw RecordSyncError(.internalError, "operation \(index) was scheduled without being validated")
        }
        return operation
    }

    // MARK: Saving

    /// What the saves of the batch need to know before any is written, read with three
    /// primitives instead of a lookup (and a tombstone delete) per record: the stored rows of
    /// `names`, whether the zone holds any tombstone, and which new names stored records still
    /// name as their parent.
    func readBeforeSaving(_ names: [String]) throws -> SavePhase {
        var rows: [String: Record] = [:]
        for record in try transaction.records(named: names, inZone: zone.key, zoneID: zone.zoneID) {
            rows[record.recordName] = record
        }
        let created = names.filter { rows[$0] == nil }
        return SavePhase(rows: rows, zoneHasTombstones: try transaction.zoneHasTombstones(zone.key),
                         namedAsParent: created.isEmpty ? [] : try transaction.namedAsParent(created, inZone: zone.key))
    }

    /// Registers the reference field names the saves of `groups` carry (and those of the stored
    /// records they update), sorted by name, before any is written: the order in which field
    /// names were first stored orders a cascade's sources (``CascadeOrder``), and this way it
    /// depends neither on the saving order nor on which saves then fail.
    func registerReferenceFields(_ groups: [[Int]]) throws {
        var names: Set<String> = []
        for index in groups.joined() {
            guard let operation = operations[index] else { continue }
            for (field, _) in operation.references { names.insert(field) }
            for (field, _) in savePhase?.rows[operation.name]?.references ?? [] { names.insert(field) }
        }
        if !names.isEmpty { try transaction.registerReferenceFields(names.sorted()) }
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
            let (record, stored) = try saveOne(&operation, checkingReferencesFirst: single)
            // The stored text stands for the answer's fields when the answer holds them all
            // (a share's answer is written from its record alone).
            let whole = operation.desiredKeys == nil && record.shareInfo == nil
            results.succeed(index, .success(record.restricted(to: operation.desiredKeys)), storedFields: whole ? stored : nil)
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
            if results.failedNames.contains(target) {
                throw RecordSyncError(.validatingReferenceError, "field \(NameRules.quoted(field)) is a \(reference.action.rawValue) reference to \(NameRules.quoted(target)), whose operation in this batch failed", recordName: operation.name)
            }
            // A target the caller may not read is, to it, one that does not exist.
            let exists = access.readsEverything ? try transaction.recordExists(named: target, inZone: zone.key)
                : try transaction.record(named: target, inZone: zone.key, zoneID: zone.zoneID).map(access.mayRead) == true
            if !exists {
                throw RecordSyncError(.validatingReferenceError, "field \(NameRules.quoted(field)) is a \(reference.action.rawValue) reference to \(NameRules.quoted(target)), which does not exist" + (reference.action == .deleteSelf ? " (in the public database an owner must exist)" : ""), recordName: operation.name)
            }
        }
    }

    /// Checks the parent a save gives record `name` (stored as `current`) when it changes: it
    /// exists in the zone, is not below the record (no cycle), and keeps every record in at most
    /// one share; a record share's participant keeps its records in their share (a new record
    /// joins its parent's). Returns, for a participant's new record, the part of its
    /// participation the record joins.
    ///
    /// - Throws: `ACCESS_DENIED` for a participant's parent outside its share;
    ///   `VALIDATING_REFERENCE_ERROR` for a parent that does not exist; `BAD_REQUEST` for a
    ///   cycle or a move that would put a record in two shares.
    private mutating func checkParent(_ parent: String?, of name: String, current: Record?) throws -> Int? {
        var joining: Int?
        if let members = access.participation?.members, let participation = access.participation {
            // Checked before anything is read, so that a hidden parent is refused as an absent one.
            if current == nil {
                guard let parent, let joined = members[parent], participation.parts[joined].permission == .readWrite else {
                    throw RecordSyncError(.accessDenied, "a record a participant creates names a parent in a share it may write (\(parent.map { "parent \(NameRules.quoted($0)) is not" } ?? "no parent given"))",
                                          recordName: name)
                }
                joining = joined
            } else if parent != current?.parent {
                if participation.part(rootedAt: name) != nil {
                    throw RecordSyncError(.accessDenied, "only the owner moves the root of a share (record \(NameRules.quoted(name)))", recordName: name)
                }
                guard let parent, members[parent] != nil, members[parent] == members[name] else {
                    throw RecordSyncError(.accessDenied, "parent of record \(NameRules.quoted(name)) must be a record of its share", recordName: name)
                }
            }
        }
        // A new record takes in the records still naming it as their parent (theirs was deleted).
        let orphans = current == nil && savePhase?.namedAsParent.contains(name) ?? true ? try transaction.children(of: name, inZone: zone.key) : []
        if !orphans.isEmpty, access.participation?.members != nil {
            throw RecordSyncError(.accessDenied, "records outside your share name \(NameRules.quoted(name)) as their parent; a record you create has another name", recordName: name)
        }
        guard let parent, parent != current?.parent else { return joining }
        let above = try transaction.hierarchy(above: parent, inZone: zone.key, limit: Self.maximumHierarchyDepth)
        guard !above.isEmpty else {
            throw RecordSyncError(.validatingReferenceError, "parent \(NameRules.quoted(parent)) of record \(NameRules.quoted(name)) does not exist", recordName: name)
        }
        if above.count > Self.maximumHierarchyDepth {
            throw RecordSyncError(.limitExceeded, "parent \(NameRules.quoted(parent)) is \(above.count) levels deep; a hierarchy has at most \(Self.maximumHierarchyDepth)", recordName: name)
        }
        let shares = try transaction.shares(inZone: zone.key)
        if shares.contains(where: { $0.recordName == parent }) {
            throw RecordSyncError(.badRequest, "parent \(NameRules.quoted(parent)) is a share record; a share record is no record's parent", recordName: name)
        }
        // What the record brings under the parent: itself and what is below it (for a new
        // record, what still names it as its parent).
        var below: Set<String> = [name]
        if current != nil || !orphans.isEmpty {
            for top in current != nil ? [name] : orphans {
                for record in try transaction.hierarchy(below: top, inZone: zone.key) { below.insert(record.name) }
            }
        }
        if above.contains(where: below.contains) {
            throw RecordSyncError(.badRequest, "parent \(NameRules.quoted(parent)) is below record \(NameRules.quoted(name)); a hierarchy has no cycles", recordName: name)
        }
        // A move of a record (and what is below it) under a record share's hierarchy.
        let roots = shares.compactMap { share in share.root.map { ($0, share.recordName) } }
        if below.count > 1, let (_, aboveShare) = roots.first(where: { above.contains($0.0) }),
           let (_, other) = roots.first(where: { below.contains($0.0) }), other != aboveShare {
            throw RecordSyncError(.badRequest, "record \(NameRules.quoted(name)) is in share \(NameRules.quoted(other)); under \(NameRules.quoted(parent)) it would also be in share \(NameRules.quoted(aboveShare)) (a record belongs to at most one share)",
                                  recordName: name)
        }
        return joining
    }

    /// The deepest a hierarchy of parents goes.
    static let maximumHierarchyDepth = 1_000

    /// Writes one record (`operation`, its fields resolved again if this batch changed their
    /// schema); with `checkingReferencesFirst`, checks its references after every other check
    /// and before the first write. The record saved, and its fields' text as stored.
    private mutating func saveOne(_ operation: inout Operation, checkingReferencesFirst: Bool) throws -> (record: Record, storedFields: String) {
        // Resolved against the stored schema when prepared; again only if an operation written
        // before it in this batch introduced the type of one of its fields.
        let isShare = operation.recordType == ShareInfo.recordType
        let storedTypes = operation.namesUnstoredFields && !isShare ? try storedSchema(of: operation.recordType) : [:]
        if operation.namesUnstoredFields && !isShare {
            if let added = progress.schema[operation.recordType], operation.rawFields.keys.contains(where: { storedTypes[$0] == nil && added[$0] != nil }) {
                operation.fields = try resolveFields(operation, against: try writtenSchema(of: operation.recordType)).fields
            }
            // The types this batch introduces (what writtenSchema(of:) adds to the stored ones).
            for (field, value) in operation.fields where storedTypes[field] == nil && progress.schema[operation.recordType]?[field] == nil {
                progress.schema[operation.recordType, default: [:]][field] = value.type
            }
        }
        let name = operation.name
        let current: Record?
        if let savePhase { current = savePhase.rows[name] } else { current = try transaction.record(named: name, inZone: zone.key, zoneID: zone.zoneID) }
        try SaveRules.checkSave(operation.type, name: name, recordType: operation.recordType, changeTag: operation.changeTag, against: current, access: access)

        var (fields, merged) = SaveRules.fields(of: operation.type, given: operation.fields, removals: operation.removals, current: current)
        if let bound = try bindAssets(fields, of: operation, current: current) {
            fields = bound
            merged = true
        }
        let encoded = try merged ? JSONValueEncoder().encodeFieldsText(fields) : operation.encodedFields ?? (try JSONValueEncoder().encodeFieldsText(fields))
        if encoded.utf8.count > limits.maximumRecordBytes {
            throw RecordSyncError(.limitExceeded, "record \(NameRules.quoted(name)) holds \(encoded.utf8.count) bytes of field data; the limit is \(limits.maximumRecordBytes)", recordName: name)
        }

        let parent: String?
        switch operation.parentChange {
        case .set(let name)?: parent = name
        case .remove?: parent = nil
        case nil: parent = operation.type == .update || operation.type == .forceUpdate ? current?.parent : nil
        }
        let joining = try checkParent(parent, of: name, current: current)
        if checkingReferencesFirst { try checkReferences(of: operation) }
        let sequence = progress.feed.next()
        let tag = ZoneFeedWriter.changeTag(sequence)
        let user = scope.user.userRecordName
        // A type the stored schema lacks (adding is idempotent), then only fields it lacks (the
        // batch's own additions included).
        if try !isShare && !storedTypeSchema(of: operation.recordType).exists {
            try transaction.addSchemaType(operation.recordType, grants: SchemaRules.defaultGrants, inContainer: containerKey)
            progress.stored[operation.recordType]?.exists = true
        }
        if operation.namesUnstoredFields && !isShare {
            for (field, value) in operation.fields
            where storedTypes[field] == nil && progress.schemaRowsWritten[operation.recordType]?.contains(field) != true {
                try transaction.addSchemaField(field, type: value.type, of: operation.recordType, inContainer: containerKey)
                progress.schemaRowsWritten[operation.recordType, default: []].insert(field)
            }
        }
        let modified = Stamp(timestamp: now, userRecordName: user)
        let created = current.map { $0.created ?? modified } ?? modified
        let row = RecordWrite(name: name, recordType: operation.recordType, changeTag: tag, fields: encoded, created: created, modified: modified, sequence: sequence,
                              assetBytes: Quota.assetBytes(of: fields), parent: parent,
                              // A participant's record counts in its zone's owner's usage.
                              chargedTo: access.participation == nil ? nil : scope.owner?.userRecordName)
        if let joining { access.participation?.members?[name] = joining }
        if firing != nil { progress.saved.append((name, current == nil)) }
        if shareReach != nil { progress.written.insert(name) }
        if current != nil {
            try transaction.updateRecord(row, inZone: zone.key)
            try transaction.removeReferences(from: name, inZone: zone.key)
        } else {
            try transaction.insertRecord(row, inZone: zone.key)
            if savePhase?.zoneHasTombstones ?? true {
                try transaction.removeTombstone(named: name, inZone: zone.key)
            }
        }
        var record = Record(recordName: name, recordType: operation.recordType, zoneID: zone.zoneID, recordChangeTag: tag,
                            fields: fields, created: created, modified: modified, parent: parent)
        if isShare { record.shareInfo = try saveShare(operation) }
        // An update keeps the stored fields it does not name: their references are worked out here.
        let references = merged ? record.references : operation.references
        if !references.isEmpty {
            try transaction.insertReferences(references, from: name, inZone: zone.key)
        }
        // The search rows change only when the words or places do (not for most updates).
        var words = false
        if SearchIndex.indexes(fields.values) || current.map({ SearchIndex.indexes($0.fields.values) }) == true {
            if progress.searchable == nil { progress.searchable = try transaction.searchableTypes(inContainer: containerKey) }
            words = progress.searchable?.contains(operation.recordType) == true
        }
        let search = SearchIndex(fields: fields, words: words)
        if let current, SearchIndex.indexes(current.fields.values, words: words) {
            if SearchIndex(fields: current.fields, words: words) != search {
                try transaction.removeSearchIndex(of: name, inZone: zone.key)
                if !search.isEmpty { try transaction.insertSearchIndex(search, of: name, inZone: zone.key) }
            }
        } else if !search.isEmpty {
            try transaction.insertSearchIndex(search, of: name, inZone: zone.key)
        }
        return (record, encoded)
    }
}
