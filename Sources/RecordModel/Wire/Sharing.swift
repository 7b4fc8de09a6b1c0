import Foundation

// CloudKit's sharing shapes (docs/protocol.md, "Sharing"): the keys a `cloudkit.share` record
// carries beside its fields, its participants, and the bodies of `records/resolve` and
// `records/accept`. Each is Codable once; the record's reader and writer use these.

/// What a participant (or anyone following a public link) may do with a share's records.
public enum SharePermission: String, Sendable, Hashable, Codable, CaseIterable {
    case none = "NONE"
    case readOnly = "READ_ONLY"
    case readWrite = "READ_WRITE"
    case unknown = "UNKNOWN"
}

/// How a participant takes part in a share.
public enum ShareParticipantType: String, Sendable, Hashable, Codable, CaseIterable {
    case owner = "OWNER"
    case administrator = "ADMINISTRATOR"
    /// Invited by the owner.
    case user = "USER"
    /// Came through the share's public link.
    case publicUser = "PUBLIC_USER"
    case unknown = "UNKNOWN"
}

/// Where a participant is in joining a share.
public enum ShareParticipantStatus: String, Sendable, Hashable, Codable, CaseIterable {
    case invited = "INVITED"
    case accepted = "ACCEPTED"
    case removed = "REMOVED"
    case unknown = "UNKNOWN"
}

/// A participant's identity: how the owner named them (`lookupInfo`), and, once known, their
/// user record name and name.
public struct ShareParticipantIdentity: Sendable, Hashable, Codable {
    public var userRecordName: String?
    public var lookupInfo: UserLookupInfo?
    public var nameComponents: UserNameComponents?

    public init(userRecordName: String? = nil, lookupInfo: UserLookupInfo? = nil, nameComponents: UserNameComponents? = nil) {
        self.userRecordName = userRecordName
        self.lookupInfo = lookupInfo
        self.nameComponents = nameComponents
    }
}

/// A share's participant (Apple's Share Participant dictionary). In a save, only
/// `userIdentity.lookupInfo` and `permission` are read; the server decides the rest.
public struct ShareParticipant: Sendable, Hashable, Codable {
    public var participantId: String?
    public var userIdentity: ShareParticipantIdentity?
    public var permission: SharePermission?
    public var type: ShareParticipantType?
    public var acceptanceStatus: ShareParticipantStatus?

    public init(participantId: String? = nil, userIdentity: ShareParticipantIdentity? = nil, permission: SharePermission? = nil,
                type: ShareParticipantType? = nil, acceptanceStatus: ShareParticipantStatus? = nil) {
        self.participantId = participantId
        self.userIdentity = userIdentity
        self.permission = permission
        self.type = type
        self.acceptanceStatus = acceptanceStatus
    }
}

/// The keys a `cloudkit.share` record answers with beside its fields.
public struct ShareInfo: Sendable, Hashable {
    /// The share's short GUID (what its URL carries).
    public var shortGUID: String
    /// What anyone with the URL may do (`NONE`: invitation only).
    public var publicPermission: SharePermission
    /// The owner.
    public var owner: ShareParticipant
    /// Every participant but the owner, as the caller may see them.
    public var participants: [ShareParticipant]
    /// The caller, as a participant (the owner for the owner).
    public var currentUserParticipant: ShareParticipant?
    /// Extension: the share's URL, under the base the operator sets.
    public var url: String?

    public init(shortGUID: String, publicPermission: SharePermission, owner: ShareParticipant, participants: [ShareParticipant],
                currentUserParticipant: ShareParticipant?, url: String? = nil) {
        self.shortGUID = shortGUID
        self.publicPermission = publicPermission
        self.owner = owner
        self.participants = participants
        self.currentUserParticipant = currentUserParticipant
        self.url = url
    }

    /// The record types a share record may be saved as (Apple's reference spells it
    /// `cloudKit.share`; its clients send `cloudkit.share`, the type stored).
    public static let recordTypes: Set<String> = ["cloudkit.share", "cloudKit.share"]
    /// The type a share record is stored and answered as.
    public static let recordType = "cloudkit.share"
    /// The fields a share record may hold besides those a schema names (CloudKit's
    /// `CKShare.SystemFieldKey`: its title, type and thumbnail).
    public static let fields: Set<String> = ["cloudkit.title", "cloudkit.type", "cloudkit.thumbnailImageData"]
    /// The name of a zone-wide share (the framework's `CKRecordNameZoneWideShare`).
    public static let zoneShareName = "cloudkit.zoneshare"
}

extension RecordSyncError {
    /// The refusal of `permission` on record `recordName` to a participant (`user`, the name it
    /// was created with) of share `share` that may not do it there: the server's answer, and the
    /// client cache's when it refuses a read-only participant's local edit before queueing it.
    public static func participantRefused(_ permission: SchemaPermission, recordName: String, user: String, share: String, sharePermission: SharePermission) -> RecordSyncError {
        RecordSyncError(.accessDenied, "\(permission.rawValue) permission on record \(NameRules.quoted(recordName)) is not granted: user \(NameRules.quoted(user)) takes part in share \(NameRules.quoted(share)) "
                        + (sharePermission == .readOnly ? "read-only" : "with permission \(sharePermission.rawValue)"), recordName: recordName)
    }
}

/// What a save of a share record asks for, beside its fields.
public struct ShareEdit: Sendable, Hashable {
    /// The root of a record share (`forRecord`); `nil` for a zone share.
    public var forRecord: String?
    public var publicPermission: SharePermission?
    /// The participants the owner invites (`nil`: unchanged).
    public var participants: [ShareParticipant]?

    public init(forRecord: String? = nil, publicPermission: SharePermission? = nil, participants: [ShareParticipant]? = nil) {
        self.forRecord = forRecord
        self.publicPermission = publicPermission
        self.participants = participants
    }

    /// Whether the save names anything of a share.
    public var isEmpty: Bool { forRecord == nil && publicPermission == nil && participants == nil }
}

/// The body of `records/resolve` and `records/accept`.
public struct ShareMetadataRequest: Sendable, Hashable, Codable {
    public struct Item: Sendable, Hashable, Codable {
        public var value: String
        public var shouldFetchRootRecord: Bool?
        public var rootRecordDesiredKeys: [String]?

        public init(value: String, shouldFetchRootRecord: Bool? = nil, rootRecordDesiredKeys: [String]? = nil) {
            self.value = value
            self.shouldFetchRootRecord = shouldFetchRootRecord
            self.rootRecordDesiredKeys = rootRecordDesiredKeys
        }
    }

    public var shortGUIDs: [Item]

    public init(shortGUIDs: [Item]) { self.shortGUIDs = shortGUIDs }
}

/// A share as `records/resolve` and `records/accept` describe it to the caller.
public struct ShareMetadata: Sendable, Hashable, Codable {
    public var containerIdentifier: String
    public var environment: String
    /// `PRIVATE` for the owner, `SHARED` for anyone else.
    public var databaseScope: String
    public var zoneID: ZoneID
    public var shortGUID: String
    /// The root of a record share; `nil` for a zone share.
    public var rootRecordName: String?
    public var rootRecord: Record?
    public var share: Record
    public var ownerIdentity: ShareParticipantIdentity
    public var participantPermission: SharePermission
    public var participantStatus: ShareParticipantStatus
    public var participantType: ShareParticipantType

    public init(containerIdentifier: String, environment: String, databaseScope: String, zoneID: ZoneID, shortGUID: String, rootRecordName: String?,
                rootRecord: Record?, share: Record, ownerIdentity: ShareParticipantIdentity, participantPermission: SharePermission,
                participantStatus: ShareParticipantStatus, participantType: ShareParticipantType) {
        self.containerIdentifier = containerIdentifier
        self.environment = environment
        self.databaseScope = databaseScope
        self.zoneID = zoneID
        self.shortGUID = shortGUID
        self.rootRecordName = rootRecordName
        self.rootRecord = rootRecord
        self.share = share
        self.ownerIdentity = ownerIdentity
        self.participantPermission = participantPermission
        self.participantStatus = participantStatus
        self.participantType = participantType
    }
}

/// One result of `records/resolve` or `records/accept`: the share's metadata, or an error in
/// CloudKit's per-item form.
public enum ShareMetadataResult: Sendable, Hashable, Codable {
    case success(ShareMetadata)
    case failure(RecordSyncError)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: ProbeKeys.self)
        if container.contains(.serverErrorCode) {
            self = .failure(try ErrorBody(from: decoder).error)
        } else {
            self = .success(try ShareMetadata(from: decoder))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .success(let metadata): try metadata.encode(to: encoder)
        case .failure(let error): try ErrorBody(error).encode(to: encoder)
        }
    }

    private enum ProbeKeys: String, CodingKey { case serverErrorCode }
}

/// The answer to `records/resolve` and `records/accept`: one result per short GUID, in order.
public struct ShareMetadataResponse: Sendable, Hashable, Codable {
    public var results: [ShareMetadataResult]
    public init(results: [ShareMetadataResult]) { self.results = results }
}
