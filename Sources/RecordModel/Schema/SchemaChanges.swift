/// One difference between two schemas (``CloudKitSchema/changes(to:keeping:)``), and what a
/// deploy does with it (docs/protocol.md, "Deploying").
public struct SchemaChange: Sendable, Hashable, Codable, CustomStringConvertible {
    /// What a deploy of the change to production does.
    public enum Effect: String, Sendable, Hashable, Codable {
        /// Adds to what production takes: deployed.
        case adds
        /// Takes away what production's clients may rely on (a grant, an index, a role):
        /// deployed only when confirmed.
        case tightens
        /// Would lose or break production's data (a type or field removed, a field's type
        /// changed): never deployed.
        case refused
    }

    /// The change, in words: `add field Note.title STRING`, `revoke WRITE on Note from _creator`.
    public var change: String
    public var effect: Effect
    /// The record type it concerns, if one.
    public var recordType: String?
    /// The field it concerns, if one.
    public var field: String?

    public init(_ change: String, _ effect: Effect, recordType: String? = nil, field: String? = nil) {
        self.change = change
        self.effect = effect
        self.recordType = recordType
        self.field = field
    }

    public var description: String { "\(change) (\(effect.rawValue))" }
}

extension CloudKitSchema {
    /// What makes this schema `target`, in a stable order: roles, then types by name, each
    /// type's fields by name, then its grants. Record types in `keeping` (the built-in ones)
    /// are never reported removed, nor their fields.
    public func changes(to target: CloudKitSchema, keeping: Set<String> = []) -> [SchemaChange] {
        let from = withSystemFields(), to = target.withSystemFields()
        var changes: [SchemaChange] = []
        for role in to.roles where !from.roles.contains(role) { changes.append(SchemaChange("create role \(role)", .adds)) }
        for role in from.roles where !to.roles.contains(role) { changes.append(SchemaChange("drop role \(role)", .tightens)) }
        let names = Set(from.recordTypes.map(\.name)).union(to.recordTypes.map(\.name)).sorted(by: Self.byteOrder)
        for name in names {
            switch (from.recordType(name), to.recordType(name)) {
            case (nil, let added?):
                changes.append(SchemaChange("add record type \(name)", .adds, recordType: name))
                changes += SchemaRecordType(name: name).fieldChanges(to: added, keeping: false)
            case (let removed?, nil):
                if !keeping.contains(name) { changes.append(SchemaChange("remove record type \(removed.name)", .refused, recordType: name)) }
            case (let old?, let new?):
                changes += old.fieldChanges(to: new, keeping: keeping.contains(name))
            case (nil, nil):
                break
            }
        }
        return changes
    }
}

extension CloudKitSchema {
    /// The schema with every system field in every type (those a file leaves out, unmarked, as
    /// every record type has them), normalized.
    public func withSystemFields() -> CloudKitSchema {
        var schema = self
        for index in schema.recordTypes.indices {
            for system in SchemaField.systemFields where schema.recordTypes[index].field(system.name) == nil {
                schema.recordTypes[index].fields.append(SchemaField(name: system.name, type: system.type))
            }
        }
        return schema.normalized()
    }
}

extension SchemaRecordType {
    /// The changes to fields, indexes and grants that make this type `target`.
    func fieldChanges(to target: SchemaRecordType, keeping: Bool) -> [SchemaChange] {
        var changes: [SchemaChange] = []
        let names = Set(fields.map(\.name)).union(target.fields.map(\.name)).sorted(by: CloudKitSchema.byteOrder)
        for fieldName in names {
            let path = "\(name).\(fieldName)"
            let old = field(fieldName), new = target.field(fieldName)
            switch (old, new) {
            case (nil, let added?):
                // A system field comes with every type: only its indexes are news.
                if !added.isSystem { changes.append(SchemaChange("add field \(path) \(added.typeText)", .adds, recordType: name, field: fieldName)) }
                changes += SchemaField(name: fieldName, type: added.type).indexChanges(to: added, path: path, recordType: name)
            case (let removed?, nil):
                if !keeping { changes.append(SchemaChange("remove field \(path) \(removed.typeText)", .refused, recordType: name, field: fieldName)) }
            case (let old?, let new?):
                if old.type != new.type || old.encrypted != new.encrypted {
                    changes.append(SchemaChange("change field \(path) from \(old.typeText) to \(new.typeText)", .refused, recordType: name, field: fieldName))
                }
                changes += old.indexChanges(to: new, path: path, recordType: name)
            case (nil, nil):
                break
            }
        }
        var before: [String: Set<SchemaPermission>] = [:], after: [String: Set<SchemaPermission>] = [:]
        for grant in grants { before[grant.grantee, default: []].formUnion(grant.permissions) }
        for grant in target.grants { after[grant.grantee, default: []].formUnion(grant.permissions) }
        for grantee in Set(before.keys).union(after.keys).sorted(by: SchemaGrant.granteeOrder) {
            let added = after[grantee, default: []].subtracting(before[grantee, default: []]).sorted()
            let removed = before[grantee, default: []].subtracting(after[grantee, default: []]).sorted()
            if !added.isEmpty {
                changes.append(SchemaChange("grant \(added.map(\.rawValue).joined(separator: ", ")) on \(name) to \(grantee)", .adds, recordType: name))
            }
            if !removed.isEmpty {
                changes.append(SchemaChange("revoke \(removed.map(\.rawValue).joined(separator: ", ")) on \(name) from \(grantee)", .tightens, recordType: name))
            }
        }
        return changes
    }
}

extension SchemaField {
    /// The field's type as the schema language writes it.
    var typeText: String { SchemaWriter.spelling(type, encrypted: encrypted) }

    /// The indexes added and dropped that make this field's `target`.
    func indexChanges(to target: SchemaField, path: String, recordType: String) -> [SchemaChange] {
        var changes: [SchemaChange] = []
        for (index, had, has) in [("QUERYABLE", queryable, target.queryable), ("SORTABLE", sortable, target.sortable), ("SEARCHABLE", searchable, target.searchable)] where had != has {
            changes.append(has ? SchemaChange("add index \(index) to \(path)", .adds, recordType: recordType, field: name)
                               : SchemaChange("drop index \(index) from \(path)", .tightens, recordType: recordType, field: name))
        }
        return changes
    }
}
