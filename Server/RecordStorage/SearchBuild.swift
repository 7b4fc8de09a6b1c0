import RecordModel

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

/// The words of records a search index build step indexed in one zone: a word block
/// (`search_blocks`, `search_postings`, `search_members`).
public struct SearchWordBlock: Sendable, Equatable {
    public var zone: Int64
    /// The records indexed, in byte order.
    public var names: [String]
    /// Each word of each field, in the order of token then field (bytes), with the names of
    /// the records holding it, in byte order.
    public var postings: [Posting]

    public struct Posting: Sendable, Equatable {
        public var token: String
        public var field: String
        public var names: [String]

        public init(token: String, field: String, names: [String]) {
            self.token = token
            self.field = field
            self.names = names
        }
    }

    public init(zone: Int64, names: [String], postings: [Posting]) {
        self.zone = zone
        self.names = names
        self.postings = postings
    }

    /// A posting's names as stored (`search_postings.names`): a JSON array of strings.
    public static func encodedNames(_ names: [String]) -> String {
        // Strings always serialise (only a non-finite double cannot).
        (try? JSONValue.array(names.map(JSONValue.string)).serializedString()) ?? "[]"
    }
}
