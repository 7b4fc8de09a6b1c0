/// The operators' schema API's answers (docs/protocol.md, "The schema API").

/// One import, deploy, reset or lock of an environment's schema.
public struct SchemaHistoryEntry: Sendable, Hashable, Codable {
    /// `development` or `production`.
    public var environment: String
    /// In milliseconds since 1970.
    public var at: Int64
    /// The operator who did it.
    public var operatorName: String
    /// `import`, `deploy`, `reset` or `lock`.
    public var action: String
    /// What changed, one change a line.
    public var summary: String
    /// The schema after it, in the schema language.
    public var schema: String

    public init(environment: String, at: Int64, operatorName: String, action: String, summary: String, schema: String) {
        self.environment = environment
        self.at = at
        self.operatorName = operatorName
        self.action = action
        self.summary = summary
        self.schema = schema
    }
}

/// A record of an environment, where it is: what a schema change that drops its type or one
/// of its fields would leave without a schema.
public struct SchemaRecordInUse: Sendable, Hashable, Codable {
    /// `public` or `private`.
    public var database: String
    /// The private database's owner (a user record name); empty for the public database.
    public var owner: String
    public var zoneName: String
    public var recordName: String
    public var recordType: String
    /// The user who created it (a user record name).
    public var creator: String

    public init(database: String, owner: String, zoneName: String, recordName: String, recordType: String, creator: String) {
        self.database = database
        self.owner = owner
        self.zoneName = zoneName
        self.recordName = recordName
        self.recordType = recordType
        self.creator = creator
    }
}

/// What an import, deploy or reset does, or would do (`dryRun`): the changes to the schema, the
/// records it deletes (the first thousand), and how many.
public struct SchemaPlan: Sendable, Hashable, Codable {
    public var changes: [SchemaChange]
    public var records: [SchemaRecordInUse]
    public var recordCount: Int
    /// Whether it was applied (`false` for a dry run).
    public var applied: Bool

    public init(changes: [SchemaChange], records: [SchemaRecordInUse] = [], recordCount: Int = 0, applied: Bool) {
        self.changes = changes
        self.records = records
        self.recordCount = recordCount
        self.applied = applied
    }
}
