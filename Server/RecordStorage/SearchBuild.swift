/// A searchable record type whose stored records are still being indexed (`search_builds`):
/// where the build has come to and since when it runs.
public struct SearchBuild: Sendable, Equatable {
    /// The container (key of its row for one environment).
    public var container: Int64
    public var recordType: String
    /// The last record indexed, by zone key and name; `nil` before the first.
    public var after: Position?
    /// How many records the build has indexed so far.
    public var indexed: Int64
    /// When the type was marked, in milliseconds since 1970.
    public var startedAt: Int64

    public struct Position: Sendable, Equatable {
        public var zone: Int64
        public var name: String

        public init(zone: Int64, name: String) {
            self.zone = zone
            self.name = name
        }
    }

    public init(container: Int64, recordType: String, after: Position? = nil, indexed: Int64 = 0, startedAt: Int64) {
        self.container = container
        self.recordType = recordType
        self.after = after
        self.indexed = indexed
        self.startedAt = startedAt
    }
}

/// One row of `search_tokens`: a word of a text field of a record.
public struct SearchTokenRow: Sendable, Equatable {
    public var zone: Int64
    public var name: String
    public var field: String
    public var token: String

    public init(zone: Int64, name: String, field: String, token: String) {
        self.zone = zone
        self.name = name
        self.field = field
        self.token = token
    }
}
