import Foundation

/// A page of a zone's changes as a store read it, each record's fields possibly still the JSON
/// text the store keeps: the wire form of `fields` (`{"NAME": {"type": …, "value": …}}`, keys
/// sorted). Written to the wire, that text is copied as is instead of being decoded into
/// ``FieldValue``s and encoded again, which was most of the server's work per record on the
/// change feed. The server's `records/changes` answer; ``decoded()`` gives the ``ZoneChanges``
/// it stands for.
package struct StoredZoneChanges: Sendable {
    /// A record of the page.
    package struct Entry: Sendable {
        /// The record; its ``Record/fields`` are empty when ``fieldsJSON`` holds them.
        package var record: Record
        /// The stored JSON text of the record's fields, or `nil` when ``record`` carries them.
        package var fieldsJSON: String?

        package init(record: Record, fieldsJSON: String? = nil) {
            self.record = record
            self.fieldsJSON = fieldsJSON
        }
    }

    package var zoneID: ZoneID
    package var entries: [Entry]
    package var syncToken: String
    package var moreComing: Bool

    package init(zoneID: ZoneID, entries: [Entry], syncToken: String, moreComing: Bool) {
        self.zoneID = zoneID
        self.entries = entries
        self.syncToken = syncToken
        self.moreComing = moreComing
    }

    /// A page whose records carry their fields.
    package init(_ changes: ZoneChanges) {
        self.init(zoneID: changes.zoneID, entries: changes.records.map { Entry(record: $0) },
                  syncToken: changes.syncToken, moreComing: changes.moreComing)
    }

    /// The page with every record's fields decoded.
    ///
    /// - Throws: when stored text is not the JSON form of fields.
    package func decoded() throws -> ZoneChanges {
        ZoneChanges(zoneID: zoneID, records: try entries.map { entry in
            var record = entry.record
            if let text = entry.fieldsJSON { record.fields = try Record.fields(fromJSON: text) }
            return record
        }, syncToken: syncToken, moreComing: moreComing)
    }
}

extension Record {
    /// Fields from the JSON text of their wire form (`{"NAME": {"type": …, "value": …}}`).
    package static func fields(fromJSON text: String) throws -> [String: FieldValue] {
        var text = text
        if let stored = text.withUTF8({ try? JSONParser.decodeDirectly(StoredFields.self, from: $0) }) { return stored.fields }
        return try JSONValueDecoder().decode([String: FieldValue].self, from: JSONValue.parse(text))
    }
}

/// Encodes as the ``ZoneChanges`` it stands for; ``JSONValueEncoder`` writes it directly,
/// copying stored field text.
extension StoredZoneChanges: Encodable {
    package func encode(to encoder: any Encoder) throws {
        try decoded().encode(to: encoder)
    }
}
