import Foundation
import RecordModel

/// A share (CloudKit's `CKShare`): a `cloudkit.share` record in its owner's private database,
/// in a custom zone, sharing a record and every record whose `parent` leads to it (a record
/// share) or a whole zone (a zone share, named `cloudkit.zoneshare`) with the participants it
/// invites, or with anyone who has its URL (docs/protocol.md, "Sharing").
///
/// Save it with ``Database/save(_:)-(Share)``; the server fills in its owner, its short GUID
/// and URL, and each participant's type and status.
public struct Share: Sendable, Hashable {
    /// The share record's ID.
    public let recordID: Record.ID
    /// The root of a record share, when known (a share made here, or read from its metadata);
    /// `nil` for a zone share.
    public let rootRecordName: String?
    /// What anyone with the URL may do; ``SharePermission/none``: by invitation only. Changing
    /// it removes the invited participants who have not accepted; back to `.none`, it removes
    /// everyone who came through the link.
    public var publicPermission: SharePermission
    /// The participants besides the owner: set the ones to invite (``ShareParticipant/user(_:permission:)``,
    /// ``ShareParticipant/email(_:permission:)``), edited only while ``publicPermission`` is
    /// `.none`; the server answers each with its identity, type and acceptance status.
    public var participants: [ShareParticipant]
    /// The share's title (`cloudkit.title`), as apps show it.
    public var title: String?
    /// The change tag of the version last read or saved; `nil` before it is first saved.
    public var recordChangeTag: String?
    /// The owner, as the server answers it.
    public private(set) var owner: ShareParticipant?
    /// The signed-in user, as a participant of the share (the owner for the owner).
    public private(set) var currentUserParticipant: ShareParticipant?
    /// The short GUID the share's URL carries (what ``Container/shareMetadata(for:fetchingRootRecords:)`` resolves).
    public private(set) var shortGUID: String?
    /// The share's URL, when the server's operator set a base for share URLs.
    public private(set) var url: URL?

    /// A new share of `rootRecord` (saved in a custom zone) and the records below it, named
    /// `recordName` (a new UUID by default).
    public init(rootRecord: Record, recordName: String = UUID().uuidString) {
        recordID = Record.ID(recordName: recordName, zoneID: rootRecord.recordID.zoneID)
        rootRecordName = rootRecord.recordName
        publicPermission = .none
        participants = []
    }

    /// A new share of the whole zone `zoneID` (a custom zone).
    public init(recordZoneID zoneID: ZoneID) {
        recordID = Record.ID(recordName: ShareInfo.zoneShareName, zoneID: zoneID)
        rootRecordName = nil
        publicPermission = .none
        participants = []
    }

    /// The share a share record describes; `nil` for a record that is not a share's.
    public init?(_ record: Record, rootRecordName: String? = nil) {
        guard ShareInfo.recordTypes.contains(record.recordType), let info = record.shareInfo else { return nil }
        recordID = record.recordID
        self.rootRecordName = record.recordName == ShareInfo.zoneShareName ? nil : rootRecordName
        publicPermission = info.publicPermission
        participants = info.participants
        if case .string(let title)? = record.fields["cloudkit.title"] { self.title = title }
        recordChangeTag = record.recordChangeTag
        owner = info.owner
        currentUserParticipant = info.currentUserParticipant
        shortGUID = info.shortGUID
        url = info.url.flatMap(URL.init(string:))
    }

    /// Whether it shares a whole zone.
    public var isZoneShare: Bool { recordID.recordName == ShareInfo.zoneShareName }

    /// What the signed-in user may do with the share's records: the owner reads and writes.
    public var currentUserPermission: SharePermission {
        if currentUserParticipant?.type == .owner { return .readWrite }
        return currentUserParticipant?.permission ?? .none
    }

    /// The operation that saves it: a create the first time, then an update of the version
    /// last seen (a stale one is a `CONFLICT`).
    var operation: RecordOperation {
        var fields: [String: RawFieldValue] = [:]
        if let title { fields["cloudkit.title"] = RawFieldValue(value: .string(title), type: FieldType(.string)) }
        // The server reads a participant's ID (one it answered), how it is named, and its permission.
        let invited = participants.map { participant in
            ShareParticipant(participantId: participant.participantId,
                             userIdentity: participant.userIdentity.map { ShareParticipantIdentity(lookupInfo: $0.lookupInfo ?? UserLookupInfo(userRecordName: $0.userRecordName)) },
                             permission: participant.permission)
        }
        let edit = ShareEdit(forRecord: recordChangeTag == nil ? rootRecordName : nil, publicPermission: publicPermission,
                             participants: publicPermission == .none ? invited : nil)
        return RecordOperation(recordChangeTag == nil ? .create : .update,
                               RecordPayload(recordName: recordID.recordName, recordType: ShareInfo.recordType, recordChangeTag: recordChangeTag, fields: fields, share: edit))
    }
}

extension ShareParticipant {
    /// A participant to invite by user record name.
    public static func user(_ userRecordName: String, permission: SharePermission) -> ShareParticipant {
        ShareParticipant(userIdentity: ShareParticipantIdentity(lookupInfo: UserLookupInfo(userRecordName: userRecordName)), permission: permission)
    }

    /// A participant to invite by email address: whoever signs in with that address verified
    /// accepts it.
    public static func email(_ address: String, permission: SharePermission) -> ShareParticipant {
        ShareParticipant(userIdentity: ShareParticipantIdentity(lookupInfo: UserLookupInfo(emailAddress: address)), permission: permission)
    }
}

extension Database {
    /// Saves a share (CloudKit's saving a `CKShare`): creates it, or updates the version it was
    /// read as. Only the owner saves a share, in its private database.
    ///
    /// - Returns: the share as the server answers it (owner, short GUID, URL, participants).
    /// - Throws: the save's error (`BAD_REQUEST` naming another share when the record or zone
    ///   is already shared, `CONFLICT` for a stale version, …).
    @discardableResult
    public func save(_ share: Share) async throws -> Share {
        let results = try await modify([share.operation], inZoneWith: share.recordID.zoneID)
        guard let result = results.first?.result else { throw RecordSyncError(.internalError, "the server did not answer for share \(NameRules.quoted(share.recordID.recordName))") }
        let saved = try result.get()
        guard let answered = Share(saved, rootRecordName: share.rootRecordName) else {
            throw RecordSyncError(.internalError, "the server answered share \(NameRules.quoted(share.recordID.recordName)) without its share keys")
        }
        return answered
    }

    /// The share `record` belongs to as its root (`record.share`), or `nil` when it is no
    /// share's root.
    public func share(of record: Record) async throws -> Share? {
        guard let name = record.share else { return nil }
        return Share(try await self.record(for: Record.ID(recordName: name, zoneID: record.recordID.zoneID)), rootRecordName: record.recordName)
    }

    /// The share of the whole zone `zoneID`, or `nil` when it has none.
    public func zoneShare(of zoneID: ZoneID) async throws -> Share? {
        do {
            return Share(try await record(for: Record.ID(recordName: ShareInfo.zoneShareName, zoneID: zoneID)))
        } catch let error as RecordSyncError where error.code == .notFound {
            return nil
        }
    }

    /// Deletes a share: by its owner, the share goes, and its participants lose the zone (or the
    /// records) it shared; by a participant (in the shared database), the participant leaves it.
    public func delete(_ share: Share) async throws {
        try await deleteRecord(withID: share.recordID)
    }
}

extension Container {
    /// What the shares behind `urls` are (CloudKit's `fetchShareMetadata`): each a share's URL
    /// or its short GUID. One result per entry, in order; a share the user may not see (not
    /// invited, and not public) is `NOT_FOUND`, as a missing one is.
    public func shareMetadata(for urls: [String], fetchingRootRecords: Bool = false) async throws -> [Result<ShareMetadata, RecordSyncError>] {
        try await resolve(urls, accept: false, fetchingRootRecords: fetchingRootRecords)
    }

    /// Accepts the shares behind `urls` (URLs or short GUIDs): the signed-in user becomes an
    /// accepted participant (invited, by user or by a verified address, or through a public
    /// link), and each share's zone joins its shared database.
    public func acceptShares(_ urls: [String]) async throws -> [Result<ShareMetadata, RecordSyncError>] {
        try await resolve(urls, accept: true, fetchingRootRecords: false)
    }

    /// Accepts one share (CloudKit's `accept(_:)`).
    @discardableResult
    public func accept(_ metadata: ShareMetadata) async throws -> ShareMetadata {
        guard let result = try await acceptShares([metadata.shortGUID]).first else {
            throw RecordSyncError(.internalError, "the server did not answer for share \(NameRules.quoted(metadata.shortGUID))")
        }
        return try result.get()
    }

    private func resolve(_ urls: [String], accept: Bool, fetchingRootRecords: Bool) async throws -> [Result<ShareMetadata, RecordSyncError>] {
        let request = ShareMetadataRequest(shortGUIDs: urls.map { ShareMetadataRequest.Item(value: Self.shortGUID(in: $0), shouldFetchRootRecord: fetchingRootRecords ? true : nil) })
        let answer = try await publicCloudDatabase.transport.post(accept ? "records/accept" : "records/resolve", request, as: ShareMetadataResponse.self)
        return answer.results.map { result in
            switch result {
            case .success(let metadata): .success(metadata)
            case .failure(let error): .failure(error)
            }
        }
    }

    /// The short GUID a share URL ends with (a short GUID is returned as it is).
    static func shortGUID(in url: String) -> String {
        let trimmed = url.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let separator = trimmed.lastIndex(where: { "/=#?".contains($0) }) else { return trimmed }
        return String(trimmed[trimmed.index(after: separator)...])
    }
}
