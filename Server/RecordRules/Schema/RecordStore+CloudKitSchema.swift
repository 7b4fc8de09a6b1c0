import Foundation
import RecordModel
import RecordStorage

/// A container environment's schema in CloudKit's schema language (docs/protocol.md, "The
/// schema language"), as the store holds it today: the types and fields saves inferred, each
/// marked with what the server lets queries do with it, and CloudKit's default grants.
extension RecordStore {
    /// The schema of `container` in `environment`: every record type saves made (and `Users`,
    /// which CloudKit's schemas always hold), each with the system fields; a field
    /// `QUERYABLE` when it can be compared (not `ASSET` or `NESTED`), `SORTABLE` when it is a
    /// single value that orders (not a list, `ASSET`, `BYTES` or `NESTED`), `SEARCHABLE` when it
    /// is text of a type whose words are indexed (a word search ran on it); the grants
    /// CloudKit gives a type made in development (`_creator` writes, `_icloud` creates, `_world`
    /// reads), which is the rule every type follows today.
    public func cloudKitSchema(ofContainer container: String, environment: String) async throws -> CloudKitSchema {
        let (types, searchable) = try await engine.read { transaction -> ([String: [String: FieldType]], Set<String>) in
            guard let key = try transaction.containerKey(named: container, environment: environment) else { return ([:], []) }
            return (try transaction.schemas(inContainer: key), try transaction.searchableTypes(inContainer: key))
        }
        var all = types
        if all["Users"] == nil { all["Users"] = [:] }
        let system = SchemaField.systemFields.map { field in
            SchemaField(name: field.name, type: field.type, queryable: field.name != "___etag", sortable: field.name != "___etag")
        }
        let grants = [SchemaGrant(permissions: [.write], grantee: "_creator"), SchemaGrant(permissions: [.create], grantee: "_icloud"),
                      SchemaGrant(permissions: [.read], grantee: "_world")]
        return CloudKitSchema(recordTypes: all.map { name, fields in
            SchemaRecordType(name: name, fields: system + fields.filter { !$0.key.hasPrefix("___") }.map { fieldName, type in
                let scalar = type.scalar
                return SchemaField(name: fieldName, type: type, queryable: ![.asset, .nested].contains(scalar),
                                   sortable: !type.isList && ![.asset, .bytes, .nested].contains(scalar),
                                   searchable: scalar == .string && searchable.contains(name))
            }, grants: grants)
        }).normalized()
    }
}
