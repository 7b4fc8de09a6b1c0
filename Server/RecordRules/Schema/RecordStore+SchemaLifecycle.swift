import Foundation
import RecordModel
import RecordStorage

/// The schema lifecycle (docs/protocol.md, "The schema API"): each environment's schema as
/// stored, imports into development, deploys to production, resets of development, locks and
/// their history. Saves check against it in ``SchemaRules``.
extension RecordStore {
    /// The most records a plan lists (it counts them all).
    static let plannedRecordsListed = 1000

    /// `text` read as a schema file; `BAD_REQUEST` naming the line and column where it does not.
    public static func readSchema(_ text: String) throws -> CloudKitSchema {
        do {
            return try CloudKitSchema.read(text)
        } catch let error as SchemaSyntaxError {
            throw RecordSyncError(.badRequest, "the schema file does not read: \(error)")
        }
    }

    /// The schema of `container` in `environment`, as stored (with `Users`, which CloudKit's
    /// schemas always hold).
    public func cloudKitSchema(ofContainer container: String, environment: String) async throws -> CloudKitSchema {
        try await engine.read { transaction in
            let key = try transaction.containerKey(named: container, environment: environment)
            return Self.withUsers(try key.map { try transaction.storedSchema(inContainer: $0) } ?? CloudKitSchema())
        }
    }

    /// Whether the schema of `container` in `environment` is locked.
    public func isSchemaLocked(ofContainer container: String, environment: String) async throws -> Bool {
        try await engine.read { transaction in
            try transaction.containerKey(named: container, environment: environment).map { try transaction.isSchemaLocked(inContainer: $0) }
                ?? (environment == "production")
        }
    }

    /// Makes development's schema `schema`. Records of development that the change would leave
    /// without a type or field (dropped, or retyped) are listed, and the import refused, unless
    /// `deletingRecords` deletes them first; a dry run only answers the plan.
    public func importSchema(_ schema: CloudKitSchema, intoContainer container: String, by operatorName: String, dryRun: Bool, deletingRecords: Bool) async throws -> SchemaPlan {
        defer { accessInputs.forgetAll() }  // grants and roles may change
        let complete = schema.withSystemFields()
        return try await replaceDevelopmentSchema(ofContainer: container, by: operatorName, action: "import", dryRun: dryRun, deletingRecords: deletingRecords) { _ in complete }
    }

    /// Puts development's schema back to production's, deleting development's records of what
    /// production lacks (as CloudKit's reset does); a dry run only answers the plan.
    public func resetSchema(ofContainer container: String, by operatorName: String, dryRun: Bool) async throws -> SchemaPlan {
        defer { accessInputs.forgetAll() }  // grants and roles may change
        return try await replaceDevelopmentSchema(ofContainer: container, by: operatorName, action: "reset", dryRun: dryRun, deletingRecords: true) { transaction in
            try transaction.containerKey(named: container, environment: "production").map { try transaction.storedSchema(inContainer: $0) } ?? CloudKitSchema()
        }
    }

    /// What deploying development's schema to production would change.
    public func deploymentChanges(ofContainer container: String) async throws -> [SchemaChange] {
        try await engine.read { transaction in try Self.deployment(ofContainer: container, in: transaction).changes }
    }

    /// Deploys development's schema to production in one transaction and locks production's:
    /// only additions, and what `confirmed` allows of tightened grants, dropped indexes and
    /// roles; a removed type or field, or a changed field type, refuses the whole deploy
    /// (`BAD_REQUEST` naming each).
    public func deploySchema(ofContainer container: String, by operatorName: String, confirmed: Bool) async throws -> SchemaPlan {
        defer { accessInputs.forgetAll() }  // grants and roles may change
        let now = Self.now()
        return try await engine.write { transaction in
            let key = try transaction.ensureContainer(named: container, environment: "production")
            try transaction.lockSchema(inContainer: key, exclusive: true)
            let (changes, target) = try Self.deployment(ofContainer: container, in: transaction)
            let refused = changes.filter { $0.effect == .refused }
            if !refused.isEmpty {
                throw RecordSyncError(.badRequest, "the deploy would lose or break production's data, so nothing was deployed: \(refused.map(\.change).joined(separator: "; "))")
            }
            let tightening = changes.filter { $0.effect == .tightens }
            if !tightening.isEmpty, !confirmed {
                throw RecordSyncError(.badRequest, "the deploy takes away what production's clients may use; deploy again confirmed (confirm=true) to apply: \(tightening.map(\.change).joined(separator: "; "))")
            }
            let wasLocked = try transaction.isSchemaLocked(inContainer: key)
            guard !changes.isEmpty || !wasLocked else { return .rollback(SchemaPlan(changes: [], applied: false)) }
            try transaction.replaceSchema(with: target, inContainer: key)
            try Self.indexWords(of: target, inContainer: key, in: transaction)
            try transaction.setSchemaLocked(true, inContainer: key)
            try transaction.appendSchemaHistory(SchemaHistoryEntry(environment: "production", at: now, operatorName: operatorName, action: "deploy",
                                                                   summary: Self.summary(changes, locking: !wasLocked), schema: target.written), inContainer: key)
            return .commit(SchemaPlan(changes: changes, applied: true))
        }
    }

    /// Locks the schema of `container` in `environment`: it takes no new type or field from
    /// saves. Development is never locked (CloudKit's development infers).
    public func lockSchema(ofContainer container: String, environment: String, by operatorName: String) async throws {
        guard environment == "production" else {
            throw RecordSyncError(.badRequest, "only production's schema locks; development's takes what saves add, as CloudKit's does")
        }
        let now = Self.now()
        try await engine.write { transaction in
            let key = try transaction.ensureContainer(named: container, environment: environment)
            try transaction.lockSchema(inContainer: key, exclusive: true)
            guard try !transaction.isSchemaLocked(inContainer: key) else { return .rollback(()) }
            try transaction.setSchemaLocked(true, inContainer: key)
            try transaction.appendSchemaHistory(SchemaHistoryEntry(environment: environment, at: now, operatorName: operatorName, action: "lock",
                                                                   summary: "lock the schema", schema: try transaction.storedSchema(inContainer: key).written), inContainer: key)
            return .commit(())
        }
    }

    /// The latest imports, deploys, resets and locks of the container's schemas in
    /// `environment` (both when `nil`), newest first.
    public func schemaHistory(ofContainer container: String, environment: String?, limit: Int) async throws -> [SchemaHistoryEntry] {
        try await engine.read { transaction in
            try transaction.schemaHistory(ofContainer: container, environment: environment, limit: max(1, min(limit, 1000)))
        }
    }

    // MARK: Development's schema replaced

    /// Import and reset: development's schema made `target` (the built-in types kept as
    /// development has them where `target` lacks them), after deleting what it strands when
    /// `deletingRecords`.
    private func replaceDevelopmentSchema(ofContainer container: String, by operatorName: String, action: String, dryRun: Bool, deletingRecords: Bool,
                                          target makeTarget: @escaping @Sendable (any StorageTransaction) throws -> CloudKitSchema) async throws -> SchemaPlan {
        let plan = try await engine.read { transaction -> (SchemaPlan, CloudKitSchema) in
            let current = try transaction.containerKey(named: container, environment: "development").map { try transaction.storedSchema(inContainer: $0) } ?? CloudKitSchema()
            let target = Self.keepingBuiltInTypes(of: current, in: try makeTarget(transaction))
            let stranded = try transaction.containerKey(named: container, environment: "development").map {
                try Self.recordsStranded(from: current, to: target, inContainer: $0, in: transaction)
            } ?? []
            return (SchemaPlan(changes: current.changes(to: target, keeping: SchemaRules.builtInTypes), records: Array(stranded.prefix(Self.plannedRecordsListed)),
                               recordCount: stranded.count, applied: false), target)
        }
        if dryRun { return plan.0 }
        if plan.0.recordCount > 0 {
            guard deletingRecords else {
                let listed = plan.0.records.prefix(20).map { "\($0.recordType) \(NameRules.quoted($0.recordName)) in \($0.database)/\($0.zoneName)" }
                throw RecordSyncError(.badRequest, "development holds \(plan.0.recordCount) record(s) of types or fields the schema file drops or retypes, so nothing was imported (import with deleteRecords=true to delete them; dryRun=true lists them all): \(listed.joined(separator: ", "))")
            }
            try await deleteStranded(inContainer: container) { transaction in
                guard let key = try transaction.containerKey(named: container, environment: "development") else { return [] }
                let current = try transaction.storedSchema(inContainer: key)
                return try Self.recordsStranded(from: current, to: Self.keepingBuiltInTypes(of: current, in: try makeTarget(transaction)), inContainer: key, in: transaction)
            }
        }
        let now = Self.now()
        return try await engine.write { transaction in
            let key = try transaction.ensureContainer(named: container, environment: "development")
            try transaction.lockSchema(inContainer: key, exclusive: true)
            if let production = try transaction.containerKey(named: container, environment: "production") {
                try transaction.lockSchema(inContainer: production, exclusive: false)
            }
            let current = try transaction.storedSchema(inContainer: key)
            let target = Self.keepingBuiltInTypes(of: current, in: try makeTarget(transaction))
            let stranded = try Self.recordsStranded(from: current, to: target, inContainer: key, in: transaction)
            if !stranded.isEmpty {
                throw RecordSyncError(.tryAgainLater, "records of what the schema drops were saved meanwhile; \(action) again", retryAfter: 1)
            }
            let changes = current.changes(to: target, keeping: SchemaRules.builtInTypes)
            try transaction.replaceSchema(with: target, inContainer: key)
            try Self.indexWords(of: target, inContainer: key, in: transaction)
            try transaction.appendSchemaHistory(SchemaHistoryEntry(environment: "development", at: now, operatorName: operatorName, action: action,
                                                                   summary: Self.summary(changes, deleted: plan.0.recordCount), schema: target.written), inContainer: key)
            return .commit(SchemaPlan(changes: changes, records: plan.0.records, recordCount: plan.0.recordCount, applied: true))
        }
    }

    /// Deletes the records `stranded` finds, zone by zone, as their owner (private databases)
    /// or creator (the public database) would, with their cascades, until none is left.
    private func deleteStranded(inContainer container: String, _ stranded: @escaping @Sendable (any StorageTransaction) throws -> [SchemaRecordInUse]) async throws {
        var previous: SchemaRecordInUse?
        while true {
            let (records, users) = try await engine.read { transaction -> ([SchemaRecordInUse], [String: User]) in
                let records = Array(try stranded(transaction).prefix(2000))
                let names = Set(records.map { $0.database == DatabaseKind.private.rawValue ? $0.owner : $0.creator })
                return (records, Dictionary(try transaction.users(withRecordNames: Array(names)).map { ($0.user.userRecordName, $0.user) }) { a, _ in a })
            }
            if records.isEmpty { return }
            // A round that deleted nothing would come back to the same records for ever.
            if records.first == previous {
                throw RecordSyncError(.internalError, "record \(NameRules.quoted(records[0].recordName)) was not deleted; nothing more was")
            }
            previous = records.first
            let groups = Dictionary(grouping: records) { record in
                [record.database, record.database == DatabaseKind.private.rawValue ? record.owner : record.creator, record.zoneName]
            }
            for (group, members) in groups.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
                guard let kind = DatabaseKind(rawValue: group[0]), let user = users[group[1]] else {
                    throw RecordSyncError(.badRequest, "record \(NameRules.quoted(members[0].recordName)) belongs to user \(NameRules.quoted(group[1])), who no longer exists; delete it first")
                }
                let scope = DatabaseScope(container: container, environment: "development", kind: kind, user: user)
                for chunk in stride(from: 0, to: members.count, by: 200).map({ Array(members[$0..<min($0 + 200, members.count)]) }) {
                    let response = try await modifyRecords(ModifyRecordsRequest(
                        operations: chunk.map { RecordOperation(.forceDelete, RecordPayload(recordName: $0.recordName)) },
                        zoneID: ZoneID(zoneName: group[2]), atomic: false), in: scope)
                    for (record, result) in zip(chunk, response.records) {
                        if case .failure(let error) = result, error.code != .notFound {
                            throw RecordSyncError(.badRequest, "record \(NameRules.quoted(record.recordName)) could not be deleted: \(error.reason)")
                        }
                    }
                }
            }
        }
    }

    // MARK: Rules

    /// What a deploy makes production: development's schema, with the built-in types as
    /// production has them where development lacks them, and the changes that takes.
    static func deployment(ofContainer container: String, in transaction: any StorageTransaction) throws -> (changes: [SchemaChange], target: CloudKitSchema) {
        // Development's schema as one import or reset left it, not half of one.
        if let development = try transaction.containerKey(named: container, environment: "development") {
            try transaction.lockSchema(inContainer: development, exclusive: false)
        }
        let production = try transaction.containerKey(named: container, environment: "production").map { try transaction.storedSchema(inContainer: $0) } ?? CloudKitSchema()
        let development = try transaction.containerKey(named: container, environment: "development").map { try transaction.storedSchema(inContainer: $0) } ?? CloudKitSchema()
        let target = keepingBuiltInTypes(of: production, in: development)
        return (production.changes(to: target, keeping: SchemaRules.builtInTypes), target)
    }

    /// `target`, with each built-in type's fields of `current` it lacks (a built-in type is the
    /// server's: a schema file may add to it but not take from it).
    static func keepingBuiltInTypes(of current: CloudKitSchema, in target: CloudKitSchema) -> CloudKitSchema {
        var result = target
        for type in current.recordTypes where SchemaRules.builtInTypes.contains(type.name) {
            if let index = result.recordTypes.firstIndex(where: { $0.name == type.name }) {
                result.recordTypes[index].fields += type.fields.filter { result.recordTypes[index].field($0.name) == nil }
            } else {
                result.recordTypes.append(type)
            }
        }
        return result.normalized()
    }

    /// The records of the container that `target` leaves without their type, or holding a
    /// field it drops or retypes.
    static func recordsStranded(from current: CloudKitSchema, to target: CloudKitSchema, inContainer key: Int64, in transaction: any StorageTransaction) throws -> [SchemaRecordInUse] {
        var stranded: [SchemaRecordInUse] = []
        for type in current.recordTypes where !SchemaRules.builtInTypes.contains(type.name) {
            guard let kept = target.recordType(type.name) else {
                stranded += try transaction.records(ofType: type.name, holding: nil, inContainer: key, limit: .max)
                continue
            }
            var seen: Set<String> = []
            for field in type.fields where !field.isSystem {
                if let now = kept.field(field.name), now.type == field.type, now.encrypted == field.encrypted { continue }
                for record in try transaction.records(ofType: type.name, holding: field.name, inContainer: key, limit: .max) where seen.insert(record.recordName + "\u{0}" + record.zoneName + "\u{0}" + record.owner).inserted {
                    stranded.append(record)
                }
            }
        }
        return stranded
    }

    /// Indexes the words of the types with a `SEARCHABLE` field whose words are not indexed yet.
    static func indexWords(of schema: CloudKitSchema, inContainer key: Int64, in transaction: any StorageTransaction) throws {
        try SearchTypes.mark(Set(schema.recordTypes.filter { $0.fields.contains(where: \.searchable) }.map(\.name)), inContainer: key, at: now(), in: transaction)
    }

    static func withUsers(_ schema: CloudKitSchema) -> CloudKitSchema {
        guard schema.recordType("Users") == nil else { return schema }
        var schema = schema
        schema.recordTypes.append(SchemaRecordType(name: "Users", fields: SchemaField.systemFields.map { SchemaField(name: $0.name, type: $0.type) },
                                                   grants: SchemaRules.defaultGrants))
        return schema.normalized()
    }

    static func summary(_ changes: [SchemaChange], deleted: Int = 0, locking: Bool = false) -> String {
        var lines = changes.map(\.change)
        if deleted > 0 { lines.append("delete \(deleted) record(s)") }
        if locking { lines.append("lock the schema") }
        return lines.isEmpty ? "no change" : lines.joined(separator: "\n")
    }
}
