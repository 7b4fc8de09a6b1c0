import RecordModel
import RecordStorage

/// What a save may add to its environment's schema (docs/protocol.md, "Development and
/// production"): an unlocked schema (development; production before its first deploy) takes
/// new types and fields from saves, a locked one only what it declares.
enum SchemaRules {
    /// The types the server itself keeps or CloudKit defines in every schema: never refused,
    /// whatever a schema says.
    static let builtInTypes: Set<String> = ["Users", "cloudkit.share", "cloudKit.share"]

    /// The grants CloudKit gives a type a save creates: the creator writes, signed-in users
    /// create, everyone reads.
    static let defaultGrants = [SchemaGrant(permissions: [.write], grantee: "_creator"), SchemaGrant(permissions: [.create], grantee: "_icloud"),
                                SchemaGrant(permissions: [.read], grantee: "_world")]

    /// Refuses a save of `recordType` with `fields` (those given a value) that a locked schema
    /// lacks, in CloudKit's words.
    static func checkSave(of recordType: String, fields: some Sequence<String>, against stored: StoredTypeSchema, recordName: String) throws {
        guard stored.locked, !builtInTypes.contains(recordType) else { return }
        guard stored.exists else {
            throw RecordSyncError(.badRequest, "Cannot create new type \(recordType) in production schema", recordName: recordName)
        }
        // The first by name, whatever order the request gave.
        if let field = fields.filter({ stored.fields[$0] == nil }).min() {
            throw RecordSyncError(.badRequest, "Cannot create or modify field '\(field)' in record '\(recordType)' in production schema", recordName: recordName)
        }
    }
}
