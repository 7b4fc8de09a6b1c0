import Foundation
import RecordModel

/// CloudKit's sharing rules as plain functions of a share's stored state and a request
/// (docs/protocol.md, "Sharing"): what a save of a share record may ask, how it edits the
/// participants, and what each caller is shown.
enum ShareRules {
    /// A new short GUID: 26 characters of a 32-letter alphabet (130 random bits).
    static func newShortGUID() -> String {
        var generator = SystemRandomNumberGenerator()
        return String((0..<26).map { _ in alphabet[Int(generator.next(upperBound: UInt32(alphabet.count)))] })
    }

    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567")

    /// The most participants a share has besides its owner (CloudKit's limit too).
    static let maximumParticipants = 100

    /// Checks a save of a share record named `name` (its type one of ``ShareInfo/recordTypes``)
    /// before anything is read: the zone and the name a share may have, and what it may ask.
    ///
    /// - Throws: `BAD_REQUEST` naming the bad part.
    static func checkSave(named name: String, edit: ShareEdit?, zone: ZoneContext, scope: DatabaseScope) throws {
        guard scope.kind != .public else {
            throw RecordSyncError(.badRequest, "shares live in their owner's private database, not in the public database", recordName: name)
        }
        guard zone.name != ZoneID.defaultZoneName else {
            throw RecordSyncError(.badRequest, "_defaultZone cannot be shared: a share lives in a custom zone", recordName: name)
        }
        if let root = edit?.forRecord {
            if let problem = NameRules.problem(withName: root, kind: "forRecord.recordName") {
                throw RecordSyncError(.badRequest, problem, recordName: name)
            }
            guard name != ShareInfo.zoneShareName else {
                throw RecordSyncError(.badRequest, "\(ShareInfo.zoneShareName) shares the whole zone and has no forRecord; a record share has another name", recordName: name)
            }
        }
        if let count = edit?.participants?.count, count > maximumParticipants {
            throw RecordSyncError(.limitExceeded, "participants lists \(count) participants; a share has at most \(maximumParticipants)", recordName: name)
        }
        if let permission = edit?.publicPermission, permission == .unknown {
            throw RecordSyncError(.badRequest, "publicPermission must be NONE, READ_ONLY or READ_WRITE, not UNKNOWN", recordName: name)
        }
        for (index, participant) in (edit?.participants ?? []).enumerated() where participant.type != .owner {
            if let permission = participant.permission, permission != .readOnly && permission != .readWrite {
                throw RecordSyncError(.badRequest, "participants[\(index)].permission must be READ_ONLY or READ_WRITE, not \(permission.rawValue)", recordName: name)
            }
            if participant.participantId == nil && invitee(participant) == nil {
                throw RecordSyncError(.badRequest, "participants[\(index)] names no one: give userIdentity.lookupInfo.emailAddress or userRecordName (RecordSync keeps no phone numbers)", recordName: name)
            }
        }
    }

    /// Whom a participant entry names: an address (lower-cased) or a user record name.
    static func invitee(_ participant: ShareParticipant) -> (email: String?, userRecordName: String?)? {
        let info = participant.userIdentity?.lookupInfo
        if let email = info?.emailAddress?.trimmingCharacters(in: .whitespaces).lowercased(), !email.isEmpty { return (email, nil) }
        if let name = info?.userRecordName ?? participant.userIdentity?.userRecordName, !name.isEmpty { return (nil, name) }
        return nil
    }

    /// The participants after a save: a change of `publicPermission` drops pending
    /// invitations, `NONE` drops everyone who came through the link (and another public
    /// permission becomes theirs); `requested` (when given) is the whole list: those it lacks
    /// leave, those it names keep their place (their permission as asked), the others are
    /// invited, which only a share without a public link may do.
    ///
    /// - Parameters:
    ///   - ownerEmails: the owner's verified addresses (an invitation to one is the owner's).
    ///   - user: the user of a user record name (`nil`: none).
    /// - Throws: `BAD_REQUEST` for an invitation to a share with a public link, of the owner,
    ///   or of a user record name no user has.
    static func edited(_ stored: [StoredParticipant], publicBefore: SharePermission, publicAfter: SharePermission, requested: [ShareParticipant]?,
                       owner: User, ownerEmails: Set<String>, name: String, user: (String) throws -> User?) throws -> [StoredParticipant] {
        var result = stored
        var dropped: [StoredParticipant] = []
        if publicAfter != publicBefore {
            dropped = result.filter { $0.status == .invited && $0.type == .user }
            if publicAfter == .none { dropped += result.filter { $0.type == .publicUser } }
            let droppedIDs = Set(dropped.map(\.id))
            result = result.filter { !droppedIDs.contains($0.id) }.map { participant in
                var participant = participant
                if participant.type == .publicUser { participant.permission = publicAfter }
                return participant
            }
        }
        guard let requested else { return result }
        func matches(_ entry: ShareParticipant, _ participant: StoredParticipant) -> Bool {
            if let id = entry.participantId { return id == participant.id }
            guard let invitee = invitee(entry) else { return false }
            if let email = invitee.email { return participant.email == email }
            return participant.user?.userRecordName == invitee.userRecordName
        }
        var kept: [StoredParticipant] = []
        for (index, entry) in requested.enumerated() where entry.type != .owner {
            if let existing = result.first(where: { matches(entry, $0) }) {
                guard !kept.contains(where: { $0.id == existing.id }) else { continue }
                var existing = existing
                if existing.type == .user, let permission = entry.permission { existing.permission = permission }
                kept.append(existing)
                continue
            }
            // An entry for someone the save just dropped (a client sending back the list it
            // read) or an unknown participant ID is left out.
            if dropped.contains(where: { matches(entry, $0) }) || entry.participantId != nil && invitee(entry) == nil { continue }
            guard let invitee = invitee(entry) else { continue }
            guard publicAfter == .none else {
                throw RecordSyncError(.badRequest, "participants[\(index)]: a share with a public link (publicPermission \(publicAfter.rawValue)) takes no invitations; set publicPermission to NONE to invite", recordName: name)
            }
            var invited: User?
            if let recordName = invitee.userRecordName {
                guard let found = try user(recordName) else {
                    throw RecordSyncError(.badRequest, "participants[\(index)]: there is no user with userRecordName \(NameRules.quoted(recordName))", recordName: name)
                }
                invited = found
            }
            if invited?.id == owner.id || invitee.email.map(ownerEmails.contains) == true {
                throw RecordSyncError(.badRequest, "participants[\(index)]: the owner is not a participant of their own share", recordName: name)
            }
            let participant = StoredParticipant(id: UUID().uuidString, user: invited, email: invitee.email, permission: entry.permission ?? .readOnly, type: .user, status: .invited)
            if !kept.contains(where: { ($0.email != nil && $0.email == participant.email) || ($0.user != nil && $0.user?.id == participant.user?.id) }) {
                kept.append(participant)
            }
        }
        return kept
    }

    /// A share as `caller` is shown it: the owner sees every participant as invited; a
    /// participant sees the others' user record names, names, permissions, types and
    /// statuses, and its own lookup info (never another participant's address).
    ///
    /// - Parameter callerParticipant: the caller's participant ID when it was matched otherwise
    ///   than by user (an invitation by address, before it is accepted).
    static func info(of share: StoredShare, participants: [StoredParticipant], owner: User, names: [String: UserNameComponents], caller: User,
                     callerParticipant: String? = nil, urlBase: String?) -> ShareInfo {
        let ownerParticipant = ShareParticipant(participantId: owner.userRecordName,
                                                userIdentity: ShareParticipantIdentity(userRecordName: owner.userRecordName, lookupInfo: UserLookupInfo(userRecordName: owner.userRecordName),
                                                                                       nameComponents: names[owner.userRecordName]),
                                                permission: .readWrite, type: .owner, acceptanceStatus: .accepted)
        let callerOwns = caller.id == owner.id
        var current: ShareParticipant? = callerOwns ? ownerParticipant : nil
        let shown = participants.map { participant in
            let own = participant.user?.id == caller.id || participant.id == callerParticipant
            let recordName = participant.user?.userRecordName
            let lookupInfo = callerOwns || own ? UserLookupInfo(emailAddress: participant.email, userRecordName: participant.email == nil ? recordName : nil)
                : recordName.map { UserLookupInfo(userRecordName: $0) }
            let entry = ShareParticipant(participantId: participant.id,
                                         userIdentity: ShareParticipantIdentity(userRecordName: recordName, lookupInfo: lookupInfo, nameComponents: recordName.flatMap { names[$0] }),
                                         permission: participant.permission, type: participant.type, acceptanceStatus: participant.status)
            if own { current = entry }
            return entry
        }
        return ShareInfo(shortGUID: share.shortGUID, publicPermission: share.publicPermission, owner: ownerParticipant, participants: shown,
                         currentUserParticipant: current, url: urlBase.map { $0 + share.shortGUID })
    }
}
