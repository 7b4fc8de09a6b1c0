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

    /// The mark of a zone's feed now, read on its own (``StorageEngine/database(at:withZoneNamed:)``).
    ///
    /// - Throws: `ZONE_NOT_FOUND` for a zone (or database) that does not exist, `BAD_REQUEST`
    ///   for a bad name.
    public func changeFeedMark(of zoneID: ZoneID?, in scope: DatabaseScope) async throws -> ChangeFeedMark {
        let zoneID = try Self.addressable(zoneID, in: scope)
        let found = try await engine.database(at: DatabaseAddress(scope), withZoneNamed: zoneID.zoneName)
        guard let zone = found?.zone, !zone.deleted else {
            throw RecordSyncError(.zoneNotFound, "zone \(NameRules.quoted(zoneID.zoneName)) does not exist", zoneID: zoneID)
        }
        return ChangeFeedMark(zoneUID: zone.uid, sequence: zone.sequence)
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
        try await recordChangesPages(request, in: scope, count: 1)[0]
    }

    /// Up to `count` consecutive pages from `request` on, read in one snapshot: the page it asks
    /// for, then (while more is coming) the page the request with that page's token asks for,
    /// and so on, each as ``recordChangesPage(_:in:)`` would read it in that snapshot.
    public func recordChangesPages(_ request: RecordChangesRequest, in scope: DatabaseScope, count: Int) async throws -> [(page: StoredZoneChanges, mark: ChangeFeedMark)] {
        let limit = try limits.changeResultsLimit(request.resultsLimit)
        let count = max(1, count)
        let scope = try await sharedZoneScope(scope, zoneID: request.zoneID)
        let include = Set(request.include ?? [])
        let includeDepth = request.includeDepth ?? 1
        guard (1...limits.maximumIncludeDepth).contains(includeDepth) else {
            throw RecordSyncError(.badRequest, "includeDepth must be between 1 and \(limits.maximumIncludeDepth), not \(includeDepth)")
        }
        let given = try request.syncToken.map { try ZoneChangeToken(string: $0) }
        for type in request.desiredRecordTypes ?? [] {
            if let problem = NameRules.problem(withName: type, kind: "desiredRecordTypes entry") { throw RecordSyncError(.badRequest, problem) }
        }
        return try await read(scope, zone: request.zoneID, bounded: true) { transaction, database, zone in
            let access = try Access.load(scope, zone: zone, containerKey: database.containerKey, kept: self.accessInputs, in: transaction)
            let token = try given.map { try Self.check($0, for: zone, in: transaction) }
                ?? ZoneChangeToken(zoneUID: zone.uid, sequence: 0, tombstoneFloor: zone.sequence)
            // A record share's participant reads what its shares reach; a token it read with
            // other shares (one joined or left since) cannot say what changed for it.
            let reach = access.participation?.members == nil ? 0 : Self.reach(of: access.participation?.parts.map(\.key) ?? [])
            if reach != 0, given != nil, token.reach != reach {
                throw RecordSyncError(.changeTokenExpired, "the shares of zone \(NameRules.quoted(zone.name)) you take part in changed since this syncToken; fetch the zone again without a token",
                                      zoneID: zone.zoneID)
            }
            // A record share's participant learns of deletions from its shares' departures (a
            // record deleted, moved away or cut off from its root), never from the zone's
            // tombstones, which say nothing of a share.
            // Its records are read by name (what its shares reach), never by walking the zone.
            let departing = access.participation?.members == nil ? nil : access.participation?.parts.map(\.key)
            var changes: [FeedChange]
            if let members = access.participation?.members {
                changes = try transaction.changes(ofRecords: members.keys.sorted(), inZone: zone.key, zoneID: zone.zoneID, after: token.sequence,
                                                  recordTypes: request.desiredRecordTypes, limit: limit * count + 1)
            } else {
                changes = try transaction.changes(inZone: zone.key, zoneID: zone.zoneID, after: token.sequence,
                                                  tombstonesAfter: max(token.sequence, token.tombstoneFloor),
                                                  recordTypes: request.desiredRecordTypes, limit: limit * count + 1)
            }
            if let departing {
                // A first fetch has nothing to be told of; a record that left one of the caller's
                // shares for another is not gone for it.
                let members = access.participation?.members ?? [:]
                let departures = given == nil ? [] : try transaction.departures(ofShares: departing, zoneID: zone.zoneID, after: token.sequence,
                                                                                 recordTypes: request.desiredRecordTypes, limit: limit * count + 1)
                    .filter { members[$0.entry.record.recordName] == nil }
                if !departures.isEmpty {
                    changes = Array((changes + departures).sorted { $0.sequence < $1.sequence }.prefix(limit * count + 1))
                }
            }
            let mark = ChangeFeedMark(zoneUID: zone.uid, sequence: zone.sequence)
            var pages: [(page: StoredZoneChanges, mark: ChangeFeedMark)] = []
            var start = 0
            var sequence = token.sequence
            // Every change after the token was read (else a page reaching past the rows read
            // could not tell whether more come).
            let readAll = changes.count <= limit * count
            while true {
                var page = changes[start..<min(start + limit, changes.count)]
                var more = changes.count > start + limit
                // A page ends where its records' field text reaches the byte limit.
                var bytes = 0
                if let end = page.indices.first(where: { index in
                    bytes += page[index].entry.fieldsJSON?.utf8.count ?? 0
                    return bytes > self.limits.maximumChangePageBytes && index > page.startIndex
                }) {
                    page = page[..<end]
                    more = true
                }
                var included: [Record]?
                if !include.isEmpty {
                    // The page and what it includes fit the limit: the page is cut, never refused.
                    let roots = try page.map { change in
                        var record = change.entry.record
                        if let text = change.entry.fieldsJSON { record.fields = try Record.fields(fromJSON: text) }
                        return (record, zone.key, zone.zoneID)
                    }
                    let found = try Self.including(roots, fields: include, depth: includeDepth, cap: limit, access: access, in: transaction)
                    if found.kept < page.count {
                        page = page.prefix(found.kept)
                        more = true
                    }
                    included = found.included.map { $0.restricted(to: request.desiredKeys) }
                }
                var entries: [StoredZoneChanges.Entry] = []
                entries.reserveCapacity(page.count)
                // The changes of records the caller may not read are left out (the token still
                // moves past them).
                // Roots of record shares answer with their `share`.
                let roots = page.isEmpty || scope.kind == .public || zone.name == ZoneID.defaultZoneName ? [:]
                    : Dictionary(try transaction.shares(inZone: zone.key).compactMap { share in share.root.map { ($0, share.recordName) } }) { first, _ in first }
                for change in page where access.readsEverything || access.mayRead(change.entry.record) || (departing != nil && change.entry.record.deleted) {
                    if change.entry.record.recordType == ShareInfo.recordType && !change.entry.record.deleted {
                        // A share record answers with its share's keys as this caller sees them.
                        var record = change.entry.record
                        if let text = change.entry.fieldsJSON { record.fields = try Record.fields(fromJSON: text) }
                        record = try self.describingShares([record], zone: zone, scope: scope, in: transaction)[0]
                        entries.append(.init(record: request.desiredKeys.map { record.restricted(to: $0) } ?? record))
                    } else if let text = change.entry.fieldsJSON,
                       request.desiredKeys != nil || !WireForm.storedFieldsAnswerAsTheyAre(text, numbersAsStrings: request.numbersAsStrings == true) {
                        // Decoded to be restricted, or to be written in today's wire form, with
                        // numbers as strings, or with assets' download links.
                        var record = change.entry.record
                        record.fields = try Record.fields(fromJSON: text)
                        entries.append(.init(record: request.desiredKeys.map { record.restricted(to: $0) } ?? record))
                    } else {
                        entries.append(change.entry)
                    }
                }
                if !roots.isEmpty {
                    for index in entries.indices where !entries[index].record.deleted {
                        entries[index].record.share = roots[entries[index].record.recordName]
                    }
                }
                sequence = more ? (page.last?.sequence ?? sequence) : zone.sequence
                let next = ZoneChangeToken(zoneUID: zone.uid, sequence: sequence, tombstoneFloor: token.tombstoneFloor, reach: reach)
                pages.append((StoredZoneChanges(zoneID: zone.zoneID, entries: entries, syncToken: next.string, moreComing: more, includedRecords: included), mark))
                start += page.count
                guard more, pages.count < count, readAll || start + limit < changes.count else { return pages }
            }
        }
    }

    /// Checks that a token belongs to this incarnation of this zone.
    ///
    /// - Throws: `CHANGE_TOKEN_EXPIRED` for a token of an earlier incarnation (the zone was
    ///   deleted and recreated); `BAD_REQUEST` for a token of another zone or from the future.
    /// A token's digest of the record shares `keys` (never 0).
    static func reach(of keys: [Int64]) -> Int64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for key in keys.sorted() {
            for byte in withUnsafeBytes(of: key.littleEndian, Array.init) {
                hash ^= UInt64(byte)
                hash = hash &* 0x100_0000_01B3
            }
        }
        return Int64(bitPattern: hash & UInt64(Int64.max)) | 1
    }

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
