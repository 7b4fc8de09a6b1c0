import Foundation

/// A page of a zone's changes as a store read it, each record's fields possibly still the JSON
/// text the store keeps: the wire form of `fields` (`{"NAME": {"type": …, "value": …}}`, keys
/// sorted). Written to the wire, that text is copied as is instead of being decoded into
/// ``FieldValue``s and encoded again, which was most of the server's work per record on the
/// change feed. The server's `records/changes` answer; ``decoded()`` gives the ``ZoneChanges``
/// it stands for.
public struct StoredZoneChanges: Sendable {
    /// A record of the page.
    public struct Entry: Sendable {
        /// The record. On the server its ``Record/fields`` are left empty when ``fieldsJSON``
        /// holds them; read by a client (``decode(_:)``) it carries both.
        public var record: Record
        /// The JSON text of the record's fields (stored, or as it arrived), or `nil` when only
        /// ``record`` carries them.
        public var fieldsJSON: String?
        /// Read by a client skimming the page (``decode(_:skimmingFields:)``): the types and
        /// references of the fields ``fieldsJSON`` holds, ``record`` carrying none of them.
        package var fieldsSummary: FieldsSummary?

        public init(record: Record, fieldsJSON: String? = nil) {
            self.record = record
            self.fieldsJSON = fieldsJSON
        }
    }

    public var zoneID: ZoneID
    public var entries: [Entry]
    public var syncToken: String
    public var moreComing: Bool
    /// The records `include` reached from the page's, targets first (an extension).
    public var includedRecords: [Record]?
    /// Whether the page is written in the compact form (``RecordChangesRequest/recordSyncCompact``).
    public var compact = false
    /// Whether a compact page gives each record's fields as an array of values by position
    /// (``RecordChangesRequest/recordSyncCompactVersion`` 2) rather than an object.
    public var compactFieldsByPosition = false

    public init(zoneID: ZoneID, entries: [Entry], syncToken: String, moreComing: Bool, includedRecords: [Record]? = nil) {
        self.zoneID = zoneID
        self.entries = entries
        self.syncToken = syncToken
        self.moreComing = moreComing
        self.includedRecords = includedRecords
    }

    /// A page whose records carry their fields.
    package init(_ changes: ZoneChanges) {
        self.init(zoneID: changes.zoneID, entries: changes.records.map { Entry(record: $0) },
                  syncToken: changes.syncToken, moreComing: changes.moreComing, includedRecords: changes.includedRecords)
    }

    /// The page with every record's fields decoded.
    ///
    /// - Throws: when stored text is not the JSON form of fields.
    public func decoded() throws -> ZoneChanges {
        ZoneChanges(zoneID: zoneID, records: try entries.map { entry in
            var record = entry.record
            if let text = entry.fieldsJSON, record.fields.isEmpty { record.fields = try Record.fields(fromJSON: text) }
            return record
        }, syncToken: syncToken, moreComing: moreComing, includedRecords: includedRecords)
    }

    /// Reads a `records/changes` answer, keeping each record's fields both decoded and as the
    /// text that carried them (a client cache stores that text as it is), or with
    /// `skimmingFields`, as that text and a summary of it (``Entry/fieldsSummary``) instead of
    /// decoded.
    ///
    /// - Throws: what decoding a ``ZoneChanges`` throws.
    package static func decode(_ data: Data, skimmingFields: Bool = false) throws -> StoredZoneChanges {
        try data.withUnsafeBytes { raw in
            let bytes = UnsafeBufferPointer(start: raw.baseAddress?.assumingMemoryBound(to: UInt8.self), count: raw.count)
            return skimmingFields ? try JSONWire.decode(StoredZoneChangesText.Skimmed.self, from: bytes).page
                : try JSONWire.decode(StoredZoneChangesText.self, from: bytes).page
        }
    }
}

/// What a client cache needs of a record's fields besides their text: each field's type, the
/// references they hold (in ``Record/references`` order), and its `LOCATION` fields.
package struct FieldsSummary: Sendable {
    package var types: [(field: String, type: FieldType)]
    package var references: [(field: String, reference: Reference)]
    /// The `LOCATION` fields, indexed for every record type (``SearchIndex``); a text's words,
    /// indexed for searchable types only, are read from the fields' text when needed.
    package var locations: [(key: String, value: FieldValue)]
}
