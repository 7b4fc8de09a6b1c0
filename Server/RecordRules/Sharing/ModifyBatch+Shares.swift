import Foundation
import RecordModel

extension ModifyBatch {
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
            share = found
        } else {
            if let other = existing.first {
                throw RecordSyncError(.badRequest, "zone \(NameRules.quoted(zone.name)) is already shared by share \(NameRules.quoted(other.recordName)); a zone and its records belong to at most one share",
                                      recordName: operation.name)
            }
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

    /// Takes the caller out of the share of its share record `record` (a participant's delete
    /// of the share); the share record changes (its participants did), so its owner and the
    /// other participants see it in their feeds.
    mutating func leaveShare(_ record: Record) throws {
        guard let share = try transaction.shares(inZone: zone.key).first(where: { $0.recordName == record.recordName }) else { return }
        for participant in try transaction.participants(ofShare: share.key) where participant.user?.id == scope.user.id {
            _ = try transaction.deleteParticipant(participant.id, ofShare: share.key)
        }
        try RecordStore.touch(record, zone: zone.key, feed: &progress.feed, by: scope.user, at: now, in: transaction)
    }

    /// Deletes the share whose share record `name` the batch deleted, with its participants.
    func deleteShare(named name: String) throws {
        if let share = try transaction.shares(inZone: zone.key).first(where: { $0.recordName == name }) {
            try transaction.deleteShare(share.key)
        }
    }
}
