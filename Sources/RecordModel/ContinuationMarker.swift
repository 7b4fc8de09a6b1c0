import Foundation

/// Where a query page ended: the sort-key values and identity of its last record, so the next
/// page starts right after it (keyset paging: stable while records are added or removed).
public struct ContinuationMarker: Sendable, Hashable, Codable {
    /// A fingerprint of the query; a marker is only valid for the query that issued it.
    public var query: String
    /// The last record's values of the query's sort keys, in order.
    public var values: [JSONValue]
    /// The last record's zone key (server-internal) and name: the final tie-breakers.
    public var zone: Int64
    public var name: String

    /// Creates a marker.
    public init(query: String, values: [JSONValue], zone: Int64, name: String) {
        self.query = query
        self.values = values
        self.zone = zone
        self.name = name
    }

    enum CodingKeys: String, CodingKey { case query = "q", values = "v", zone = "z", name = "n" }

    /// The wire string.
    public var string: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Base64URL.encode((try? encoder.encode(self)) ?? Data())
    }

    /// Reads a wire string.
    ///
    /// - Throws: ``RecordSyncError`` with ``ServerErrorCode/badRequest`` when the string is not
    ///   a marker.
    public init(string: String) throws {
        guard string.utf8.count <= 64 * 1024, let data = Base64URL.decode(string),
              let marker = try? JSONDecoder().decode(ContinuationMarker.self, from: data)
        else {
            throw RecordSyncError(.badRequest, "continuationMarker is not a marker issued by this server")
        }
        self = marker
    }
}
