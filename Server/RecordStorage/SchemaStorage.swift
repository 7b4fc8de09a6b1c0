import RecordModel

/// A record type as a save checks it against its environment's schema (docs/protocol.md,
/// "Development and production").
public struct StoredTypeSchema: Sendable, Hashable {
    /// Whether the environment's schema is locked: it takes no type or field it lacks.
    public var locked: Bool
    /// Whether the schema has the type.
    public var exists: Bool
    /// The type's fields (not the system fields), with their types.
    public var fields: [String: FieldType]

    public init(locked: Bool, exists: Bool, fields: [String: FieldType]) {
        self.locked = locked
        self.exists = exists
        self.fields = fields
    }
}
