import Foundation
import RecordModel

/// Where a zone's change feed stood when it was read: the zone's incarnation and its last
/// change. While a zone's mark stays the same, nothing in the zone changed, so a page read
/// again would read the same.
public struct ChangeFeedMark: Sendable, Hashable {
    /// The zone's incarnation.
    public var zoneUID: UUID
    /// The zone's last feed number.
    public var sequence: Int64

    /// A mark.
    public init(zoneUID: UUID, sequence: Int64) {
        self.zoneUID = zoneUID
        self.sequence = sequence
    }
}

extension RecordStore {
    /// `records/changes` (and each zone of `changes/zone`): one page of a zone's change feed.
    public func recordChanges(_ request: RecordChangesRequest, in scope: DatabaseScope) async throws -> ZoneChanges {
        try await recordChangesPage(request, in: scope).page.decoded()
    }

    /// The mark of a zone's feed now.
    ///
    /// - Throws: what reading the zone throws (`ZONE_NOT_FOUND`, say).
    public func changeFeedMark(of zoneID: ZoneID?, in scope: DatabaseScope) async throws -> ChangeFeedMark {
        try await read(scope, zone: zoneID) { _, _, zone in
            ChangeFeedMark(zoneUID: zone.uid, sequence: zone.sequence)
        }
    }

    /// The page ``recordChanges(_:in:)`` returns, its records' fields left as the stored text
    /// (decoded only to apply `desiredKeys`), and the mark of the feed it was read at (read in
    /// the same transaction).
    ///
    /// A zone token is (incarnation, last number delivered, tombstone floor): a page holds the
    /// changes numbered after the token's number (tombstones also after its floor, so a client
    /// fetching from scratch is not sent the deletions of records it never had), in number
    /// order. A page that reaches the end covers everything up to the zone's last number.
    public func recordChangesPage(_ request: RecordChangesRequest, in scope: DatabaseScope) async throws -> (page: StoredZoneChanges, mark: ChangeFeedMark) {
        let limit = try limits.resultsLimit(request.resultsLimit)
        let given = try request.syncToken.map { try ZoneChangeToken(string: $0) }
        for type in request.desiredRecordTypes ?? [] {
            if let problem = NameRules.problem(withName: type, kind: "desiredRecordTypes entry") { throw RecordSyncError(.badRequest, problem) }
        }
        return try await read(scope, zone: request.zoneID) { transaction, _, zone in
            let token = try given.map { try Self.check($0, for: zone, in: transaction) }
                ?? ZoneChangeToken(zoneUID: zone.uid, sequence: 0, tombstoneFloor: zone.sequence)
            let changes = try transaction.changes(inZone: zone.key, zoneID: zone.zoneID, after: token.sequence,
                                                  tombstonesAfter: max(token.sequence, token.tombstoneFloor),
                                                  recordTypes: request.desiredRecordTypes, limit: limit + 1)
            let more = changes.count > limit
            let page = changes.prefix(limit)
            var entries: [StoredZoneChanges.Entry] = []
            entries.reserveCapacity(page.count)
            for change in page {
                if let desiredKeys = request.desiredKeys, let text = change.entry.fieldsJSON {
                    var record = change.entry.record
                    record.fields = try Record.fields(fromJSON: text)
                    entries.append(.init(record: record.restricted(to: desiredKeys)))
                } else {
                    entries.append(change.entry)
                }
            }
            let next = ZoneChangeToken(zoneUID: zone.uid, sequence: more ? (page.last?.sequence ?? token.sequence) : zone.sequence,
                                       tombstoneFloor: token.tombstoneFloor)
            return (StoredZoneChanges(zoneID: zone.zoneID, entries: entries, syncToken: next.string, moreComing: more),
                    ChangeFeedMark(zoneUID: zone.uid, sequence: zone.sequence))
        }
    }

    /// Checks that a token belongs to this incarnation of this zone.
    ///
    /// - Throws: `CHANGE_TOKEN_EXPIRED` for a token of an earlier incarnation (the zone was
    ///   deleted and recreated); `BAD_REQUEST` for a token of another zone or from the future.
    static func check(_ token: ZoneChangeToken, for zone: ZoneContext, in transaction: any StorageTransaction) throws -> ZoneChangeToken {
        if token.zoneUID != zone.uid {
            if try transaction.zone(ofIncarnation: token.zoneUID) == zone.key {
                throw RecordSyncError(.changeTokenExpired, "syncToken is from an earlier incarnation of zone \(NameRules.quoted(zone.name)), which was deleted; fetch the zone again without a token", zoneID: zone.zoneID)
            }
            throw RecordSyncError(.badRequest, "syncToken belongs to another zone, not \(NameRules.quoted(zone.name))", zoneID: zone.zoneID)
        }
        guard token.sequence <= zone.sequence else {
            throw RecordSyncError(.badRequest, "syncToken is ahead of zone \(NameRules.quoted(zone.name)); it was not issued for this zone's history", zoneID: zone.zoneID)
        }
        return token
    }
}
