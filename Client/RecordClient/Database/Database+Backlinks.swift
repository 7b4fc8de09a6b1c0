import Foundation
import RecordModel

/// A record that refers to another, with each reference it holds to it (a record may refer to
/// the same record from several fields).
public struct ReferencingRecord: Sendable, Hashable {
    /// The referring record.
    public var record: Record
    /// Its references to the record asked about: field and action.
    public var references: [Backlink]

    public init(record: Record, references: [Backlink]) {
        self.record = record
        self.references = references
    }
}

extension Database {
    /// Every record of the zone that refers to the record `id`, whatever its type and field,
    /// each with its references and their actions, in name order (an extension:
    /// `records/backlinks`). Follows the server's pages.
    ///
    /// - Throws: `ZONE_NOT_FOUND`, `BAD_REQUEST` for a bad name, ….
    public func records(referencing id: Record.ID, desiredKeys: [String]? = nil) async throws -> [ReferencingRecord] {
        var found: [ReferencingRecord] = []
        var marker: String?
        repeat {
            let request = BacklinksRequest(recordName: id.recordName, zoneID: id.zoneID, continuationMarker: marker, desiredKeys: desiredKeys)
            let answer = try await transport.post("records/backlinks", request, as: BacklinksResponse.self)
            let references = Dictionary(grouping: answer.backlinks, by: \.recordName)
            found += answer.records.map { ReferencingRecord(record: $0, references: references[$0.recordName] ?? []) }
            marker = answer.continuationMarker
        } while marker != nil
        return found
    }
}
