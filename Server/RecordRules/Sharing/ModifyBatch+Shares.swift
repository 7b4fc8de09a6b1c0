import Foundation
import RecordModel

/// What a record share reached when a batch began: its records' names and types.
struct ShareReach: Sendable {
    var share: StoredShare
    var records: [String: String]
}

/// A share of a zone and the users it is shared with (its accepted participants), read once
/// per write: whose database subscriptions may fire and whose push streams hear of it.
struct ShareAudience: Sendable {
    var share: StoredShare
    var users: [User]

    /// The shares of `zone` and their audiences (none in the public database or a default zone,
    /// which are never shared).
    static func load(zone: ZoneContext, scope: DatabaseScope, in transaction: any StorageTransaction) throws -> [ShareAudience] {
        guard zone.name != ZoneID.defaultZoneName, scope.kind != .public else { return [] }
        return try transaction.shares(inZone: zone.key).map { share in
            ShareAudience(share: share, users: try transaction.participants(ofShare: share.key).filter { $0.status == .accepted }.compactMap(\.user))
        }
    }

    /// The users of `audiences` whose shared database a write changed: all of a zone share's,
    /// and a record share's when the write changed one of its records (`changed` is true of a
    /// record name in its hierarchy before or after the write, or its share record's name).
    static func reached(_ audiences: [ShareAudience], changed: (ShareAudience) -> Bool) -> [User] {
        var seen: Set<Int64> = []
        var users: [User] = []
        for audience in audiences where audience.share.root == nil || changed(audience) {
            for user in audience.users where seen.insert(user.id).inserted { users.append(user) }
        }
        return users
    }
}

extension ModifyBatch {
    /// What each record share of the zone reaches now; `nil` when the zone has none.
    func recordShareReach() throws -> [ShareReach]? {
        let shares = audience.map(\.share).filter { $0.root != nil }
        guard !shares.isEmpty else { return nil }
        return try shares.map { share in
            ShareReach(share: share, records: Dictionary(try transaction.hierarchy(below: share.root ?? "", inZone: zone.key).map { ($0.name, $0.recordType) }) { first, _ in first })
        }
    }

    /// After the batch's writes: each record a record share no longer reaches (moved away,
    /// deleted, cut off from its root) departs it, a deletion in its participants' feeds at a
    /// new place; each it newly reaches without the batch writing it (moved in under a record
    /// that moved) takes a new place in the feed, its tag unchanged, so that participants whose
    /// token is past its last change still get it. Nothing is skipped or said twice: each is one
    /// change at one place of the zone's feed.
    ///
    /// - Returns: what each live record share reaches after the batch, by share key.
    mutating func followShareMoves() throws -> [Int64: Set<String>] {
        guard let before = shareReach else { return [:] }
        let live = Set(try transaction.shares(inZone: zone.key).map(\.key))
        var reachedAfter: [Int64: Set<String>] = [:]
        for reach in before where live.contains(reach.share.key) {
            let after = Set(try transaction.hierarchy(below: reach.share.root ?? "", inZone: zone.key).map(\.name))
            reachedAfter[reach.share.key] = after
            let departed = reach.records.filter { !after.contains($0.key) }.sorted { $0.key < $1.key }.map { (name: $0.key, recordType: $0.value) }
            if !departed.isEmpty {
                try transaction.insertDepartures(departed, ofShare: reach.share.key, firstSequence: progress.feed.take(departed.count))
            }
            let joined = after.filter { reach.records[$0] == nil }.sorted()
            if !joined.isEmpty {
                try transaction.deleteDepartures(named: joined, ofShare: reach.share.key)
                let moved = joined.filter { !progress.written.contains($0) }
                if !moved.isEmpty { try transaction.moveInFeed(moved, inZone: zone.key, firstSequence: progress.feed.take(moved.count)) }
            }
        }
        return reachedAfter
    }

    /// The participants whose shared database the batch changed (``ShareAudience/reached(_:changed:)``),
    /// given what each record share reaches after it (``followShareMoves()``).
    func reachedParticipants(after: [Int64: Set<String>]) -> [User] {
        guard progress.feed.moved else { return [] }
        let before = Dictionary((shareReach ?? []).map { ($0.share.key, $0.records) }) { first, _ in first }
        let written = progress.written
        return ShareAudience.reached(audience) { audience in
            written.contains(audience.share.recordName)
                || before[audience.share.key]?.keys.contains(where: written.contains) == true
                || after[audience.share.key]?.contains(where: written.contains) == true
        }
    }

    /// Stores what a save of share record `operation` asks of its share (created with the
    /// record: a new short GUID), after the record's row is written (in the savepoint its group
    /// runs in, so that a refusal here undoes the row); returns the share as the caller (its
    /// owner) is shown it.
    ///
    /// - Throws: `BAD_REQUEST` when the zone already has another share, or for an edit the
    ///   rules refuse (``ShareRules/edited(_:publicBefore:publicAfter:requested:owner:name:user:)``).
    mutating func saveShare(_ operation: Operation) throws -> ShareInfo {
        let owner = scope.owner ?? scope.user
        let existing = try transaction.shares(inZone: zone.key)
        var share: StoredShare
        let found = existing.first { $0.recordName == operation.name }
        if let found {
            if let root = operation.share?.forRecord, root != found.root {
                throw RecordSyncError(.badRequest, "share \(NameRules.quoted(found.recordName)) is \(found.root.map { "the share of record \(NameRules.quoted($0))" } ?? "the zone's share"); its forRecord does not change",
                                      recordName: operation.name)
            }
            share = found
        } else {
            try checkNewShare(operation, existing: existing)
            share = StoredShare(zoneKey: zone.key, recordName: operation.name, root: operation.share?.forRecord, shortGUID: ShareRules.newShortGUID(), publicPermission: .none)
            share.key = try transaction.insertShare(share)
        }
        let stored = found == nil ? [] : try transaction.participants(ofShare: share.key)
        let after = operation.share?.publicPermission ?? share.publicPermission
        let transaction = transaction
        let ownerEmails = operation.share?.participants?.isEmpty == false ? try RecordStore.verifiedEmails(of: owner, in: transaction) : []
        let participants = try ShareRules.edited(stored, publicBefore: share.publicPermission, publicAfter: after, requested: operation.share?.participants,
                                                 owner: owner, ownerEmails: ownerEmails, name: operation.name) { try transaction.users(withRecordNames: [$0]).first?.user }
        if after != share.publicPermission {
            try transaction.setPublicPermission(after, ofShare: share.key)
            share.publicPermission = after
        }
        let kept = Set(participants.map(\.id))
        for participant in stored where !kept.contains(participant.id) {
            _ = try transaction.deleteParticipant(participant.id, ofShare: share.key)
        }
        for participant in participants where !stored.contains(participant) {
            try transaction.saveParticipant(participant, ofShare: share.key)
        }
        return try RecordStore.shareInfo(of: share, participants: participants, owner: owner, caller: scope.user, urlBase: limits.shareURLBase, in: transaction)
    }

    /// Refuses a new share that would put a record in two shares: a zone's share of a zone with
    /// any share, a record share of a zone shared as a whole, of a record missing (or a share),
    /// or of a hierarchy above or below another share's root.
    private func checkNewShare(_ operation: Operation, existing: [StoredShare]) throws {
        let name = operation.name
        func alreadyShared(_ other: StoredShare, _ what: String) -> RecordSyncError {
            RecordSyncError(.badRequest, "\(what) is already shared by share \(NameRules.quoted(other.recordName)); a zone and its records belong to at most one share", recordName: name)
        }
        guard let root = operation.share?.forRecord else {
            guard name == ShareInfo.zoneShareName else {
                throw RecordSyncError(.badRequest, "a share without forRecord shares its zone and is named \(ShareInfo.zoneShareName), not \(NameRules.quoted(name))", recordName: name)
            }
            if let other = existing.first { throw alreadyShared(other, "zone \(NameRules.quoted(zone.name))") }
            return
        }
        if let zoneShare = existing.first(where: { $0.root == nil }) { throw alreadyShared(zoneShare, "zone \(NameRules.quoted(zone.name))") }
        guard let stored = try transaction.record(named: root, inZone: zone.key, zoneID: zone.zoneID), stored.recordType != ShareInfo.recordType else {
            throw RecordSyncError(.badRequest, "forRecord \(NameRules.quoted(root)) is not a record of zone \(NameRules.quoted(zone.name))", recordName: name)
        }
        guard !existing.isEmpty else { return }
        let above = Set(try transaction.hierarchy(above: root, inZone: zone.key, limit: Self.maximumHierarchyDepth))
        let below = Set(try transaction.hierarchy(below: root, inZone: zone.key).map(\.name))
        for other in existing {
            guard let otherRoot = other.root, above.contains(otherRoot) || below.contains(otherRoot) else { continue }
            throw alreadyShared(other, "record \(NameRules.quoted(root))" + (otherRoot == root ? "" : " (or its hierarchy)"))
        }
    }

    /// Takes the caller out of the share of its share record `record` (a participant's delete
    /// of the share); the share record changes (its participants did), so its owner and the
    /// other participants see it in their feeds.
    mutating func leaveShare(_ record: Record) throws {
        guard let share = try transaction.shares(inZone: zone.key).first(where: { $0.recordName == record.recordName }) else { return }
        for participant in try transaction.participants(ofShare: share.key) where participant.user?.id == scope.user.id {
            _ = try transaction.deleteParticipant(participant.id, ofShare: share.key)
        }
        try RecordStore.touch(record, zone: zone.key, feed: &progress.feed, by: scope.user, at: now, in: transaction)
        if shareReach != nil { progress.written.insert(record.recordName) }
    }

    /// Deletes the shares whose roots are among `deleted` (records the batch just deleted), with
    /// their share records (as CloudKit does); returns the share records' names.
    mutating func deleteSharesOfRoots(_ deleted: [String]) throws -> [String] {
        guard zone.name != ZoneID.defaultZoneName, scope.kind != .public else { return [] }
        let shares = try transaction.shares(inZone: zone.key)
        guard shares.contains(where: { $0.root != nil }) else { return [] }
        let gone = Set(deleted)
        var removed: [String] = []
        for share in shares {
            guard let root = share.root, gone.contains(root), !gone.contains(share.recordName) else { continue }
            let count = try transaction.collectCascade(from: share.recordName, inZone: zone.key)
            removed += [share.recordName] + (try transaction.deleteCascade(root: share.recordName, inZone: zone.key, firstSequence: progress.feed.take(count)))
            try transaction.deleteShare(share.key)
        }
        return removed
    }

    /// Deletes the share whose share record `name` the batch deleted, with its participants.
    func deleteShare(named name: String) throws {
        if let share = try transaction.shares(inZone: zone.key).first(where: { $0.recordName == name }) {
            try transaction.deleteShare(share.key)
        }
    }
}
