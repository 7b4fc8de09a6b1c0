import Foundation
import RecordModel
import Synchronization

extension RecordStore {
    /// How user `user` takes part in the shares of zone `zone` (`nil`: it is an accepted
    /// participant of none): the zone's share, or record shares with the records each reaches.
    static func participation(ofUser user: Int64, inZone zone: Int64, in transaction: any StorageTransaction) throws -> Access.Participation? {
        let found = try transaction.participation(ofUser: user, inZone: zone)
        guard !found.isEmpty else { return nil }
        if let zoneShare = found.first(where: { $0.share.root == nil }) {
            return Access.Participation(permission: zoneShare.participant.permission, share: zoneShare.share.recordName, shareKey: zoneShare.share.key, zoneKey: zone)
        }
        var members: [String: Int] = [:]
        let parts = found.map { Access.Participation.Part(key: $0.share.key, share: $0.share.recordName, root: $0.share.root, permission: $0.participant.permission) }
        for (index, part) in parts.enumerated() {
            // The share record is read by its participants too (only its owner changes it).
            members[part.share] = index
            for record in try transaction.hierarchy(below: part.root ?? "", inZone: zone) { members[record.name] = index }
        }
        return Access.Participation(parts: parts, members: members, zoneKey: zone)
    }

    // MARK: Shares as records

    /// The share `share` with `participants` as `caller` is shown it, with the names of its
    /// owner and participants.
    static func shareInfo(of share: StoredShare, participants: [StoredParticipant], owner: User, caller: User, callerParticipant: String? = nil,
                          urlBase: String?, in transaction: any StorageTransaction) throws -> ShareInfo {
        let recordNames = [owner.userRecordName] + participants.compactMap { $0.user?.userRecordName }
        var names: [String: UserNameComponents] = [:]
        for (user, profile) in try transaction.users(withRecordNames: recordNames) where profile.givenName != nil || profile.familyName != nil {
            names[user.userRecordName] = UserNameComponents(givenName: profile.givenName, familyName: profile.familyName)
        }
        return ShareRules.info(of: share, participants: participants, owner: owner, names: names, caller: caller, callerParticipant: callerParticipant, urlBase: urlBase)
    }

    /// `records`, each share record among them with its share's keys as the caller of `scope`
    /// is shown them (``ShareRules/info(of:participants:owner:names:caller:urlBase:)``), and
    /// each root of a record share with its `share`; the zone's shares are read when the zone
    /// may hold one (a custom zone of a private database).
    func describingShares(_ records: [Record], zone: ZoneContext, scope: DatabaseScope, in transaction: any StorageTransaction) throws -> [Record] {
        // Shares live in custom zones of private databases.
        guard !records.isEmpty, scope.kind != .public, zone.name != ZoneID.defaultZoneName else { return records }
        let stored = try transaction.shares(inZone: zone.key)
        guard !stored.isEmpty else { return records }
        let shares = Dictionary(stored.map { ($0.recordName, $0) }) { first, _ in first }
        let roots = Dictionary(stored.compactMap { share in share.root.map { ($0, share.recordName) } }) { first, _ in first }
        return try records.map { record in
            guard !record.deleted else { return record }
            var record = record
            if let share = roots[record.recordName] { record.share = share }
            guard record.recordType == ShareInfo.recordType, let share = shares[record.recordName] else { return record }
            record.shareInfo = try Self.shareInfo(of: share, participants: try transaction.participants(ofShare: share.key), owner: scope.owner ?? scope.user,
                                                  caller: scope.user, urlBase: limits.shareURLBase, in: transaction)
            return record
        }
    }

    /// Saves `record` again unchanged but for its tag, its place in the feed and its
    /// modification (by `user`, at `now`): its share's participants changed, which its readers
    /// must see as a change.
    static func touch(_ record: Record, zone: Int64, feed: inout ZoneFeedWriter, by user: User, at now: Int64, in transaction: any StorageTransaction) throws {
        let sequence = feed.next()
        let modified = Stamp(timestamp: now, userRecordName: user.userRecordName)
        try transaction.updateRecord(RecordWrite(name: record.recordName, recordType: record.recordType, changeTag: ZoneFeedWriter.changeTag(sequence),
                                                 fields: try JSONValueEncoder().encodeFieldsText(record.fields), created: record.created ?? modified,
                                                 modified: modified, sequence: sequence, assetBytes: nil, parent: record.parent), inZone: zone)
    }

    // MARK: Resolve and accept

    /// `records/resolve` (`accept` false) and `records/accept`: for each short GUID, the share's
    /// metadata as the caller sees it, or a per-item error. A share the caller may not see (not
    /// its owner, not invited, no public link) is `NOT_FOUND`, as a missing one. Accepting makes
    /// the caller an `ACCEPTED` participant: an invited one (by user, or by an address the caller
    /// has verified), or, through a public link, a `PUBLIC_USER` with the link's permission.
    public func shareMetadata(_ request: ShareMetadataRequest, accept: Bool, in scope: DatabaseScope) async throws -> ShareMetadataResponse {
        try limits.checkCount(request.shortGUIDs.count, of: "shortGUIDs")
        guard scope.user != .visitor else {
            throw RecordSyncError(.authenticationRequired, "sign in to \(accept ? "accept" : "resolve") a share")
        }
        try shareLookups.take(request.shortGUIDs.count, by: scope.user.id, perMinute: limits.shareLookupsPerMinute)
        let caller = scope.user
        let now = Self.now()
        let urlBase = limits.shareURLBase
        let (results, changed) = try await engine.write { transaction in
            var emails: Set<String>?
            var results: [ShareMetadataResult] = []
            var changed: [(owner: DatabaseScope, zone: ZoneID, participants: [User])] = []
            for item in request.shortGUIDs {
                let missing = RecordSyncError(.notFound, "there is no share with shortGUID \(NameRules.quoted(item.value)) that you may see in \(scope.container) (\(scope.environment))")
                guard let located = try transaction.share(shortGUID: item.value), located.container == scope.container, located.environment == scope.environment,
                      !located.zone.deleted else {
                    results.append(.failure(missing))
                    continue
                }
                let share = located.share
                var participants = try transaction.participants(ofShare: share.key)
                let owns = located.owner.id == caller.id
                var index = participants.firstIndex { $0.user?.id == caller.id }
                if index == nil, !owns {
                    if emails == nil { emails = try Self.verifiedEmails(of: caller, in: transaction) }
                    index = participants.firstIndex { $0.user == nil && $0.email.map { emails!.contains($0) } == true }
                }
                guard owns || index != nil || share.publicPermission != .none else {
                    results.append(.failure(missing))
                    continue
                }
                let zoneID = ZoneID(zoneName: located.zone.name, ownerRecordName: located.owner.userRecordName)
                guard var record = try transaction.record(named: share.recordName, inZone: share.zoneKey, zoneID: zoneID) else {
                    results.append(.failure(missing))
                    continue
                }
                if accept && !owns && (index == nil || participants[index!].status != .accepted || participants[index!].user?.id != caller.id) {
                    if let found = index {
                        participants[found].status = .accepted
                        participants[found].user = caller
                    } else {
                        guard participants.count < ShareRules.maximumParticipants else {
                            results.append(.failure(RecordSyncError(.limitExceeded, "the share has \(ShareRules.maximumParticipants) participants, its most; its owner must remove some first")))
                            continue
                        }
                        participants.append(StoredParticipant(id: UUID().uuidString, user: caller, email: nil, permission: share.publicPermission, type: .publicUser, status: .accepted))
                        index = participants.count - 1
                    }
                    try transaction.saveParticipant(participants[index!], ofShare: share.key)
                    var feed = try ZoneFeedWriter.locking(zone: share.zoneKey, database: located.databaseKey, in: transaction)
                    try Self.touch(record, zone: share.zoneKey, feed: &feed, by: caller, at: now, in: transaction)
                    try feed.finish(in: transaction)
                    record = try transaction.record(named: share.recordName, inZone: share.zoneKey, zoneID: zoneID) ?? record
                    // The owner's database subscriptions and those of this share's participants
                    // (the new one's included) fire, as for any change of its share record.
                    let ownerScope = DatabaseScope(container: located.container, environment: located.environment, kind: .private, user: located.owner)
                    let zone = ZoneContext(key: share.zoneKey, databaseKey: located.databaseKey, name: located.zone.name, uid: located.zone.uid,
                                           sequence: feed.last, zoneID: zoneID)
                    let audience = try ShareAudience.load(zone: zone, scope: ownerScope, in: transaction)
                    let reached = ShareAudience.reached(audience) { $0.share.key == share.key }
                    try SubscriptionFiring.load(scope: ownerScope, zone: zone, audience: audience, containerKey: located.containerKey, in: transaction)?
                        .notify([], changed: true, participants: Set(reached.map(\.id)), now: now, in: transaction)
                    changed.append((ownerScope, zoneID, reached))
                }
                record.shareInfo = try Self.shareInfo(of: share, participants: participants, owner: located.owner, caller: caller,
                                                      callerParticipant: index.map { participants[$0].id }, urlBase: urlBase, in: transaction)
                let participant = index.map { participants[$0] }
                // The root of a record share, when asked for, as its participants read it.
                var rootRecord: Record?
                if item.shouldFetchRootRecord == true, let root = share.root,
                   var found = try transaction.record(named: root, inZone: share.zoneKey, zoneID: zoneID) {
                    found.share = share.recordName
                    rootRecord = found.restricted(to: item.rootRecordDesiredKeys)
                }
                let ownerNames = try transaction.users(withRecordNames: [located.owner.userRecordName]).first?.profile
                results.append(.success(ShareMetadata(
                    containerIdentifier: located.container, environment: located.environment, databaseScope: owns ? "PRIVATE" : "SHARED", zoneID: zoneID,
                    shortGUID: share.shortGUID, rootRecordName: share.root, rootRecord: rootRecord, share: record,
                    ownerIdentity: ShareParticipantIdentity(userRecordName: located.owner.userRecordName, lookupInfo: UserLookupInfo(userRecordName: located.owner.userRecordName),
                                                            nameComponents: ownerNames.flatMap { $0.givenName == nil && $0.familyName == nil ? nil : UserNameComponents(givenName: $0.givenName, familyName: $0.familyName) }),
                    participantPermission: owns ? .readWrite : participant?.permission ?? share.publicPermission,
                    participantStatus: owns ? .accepted : participant?.status ?? .invited,
                    participantType: owns ? .owner : participant?.type ?? .publicUser)))
            }
            return .commit((results, changed))
        }
        for (owner, zoneID, participants) in changed {
            await notifier.publish([zoneID], in: owner)
            await announce(zoneID.zoneName, toParticipants: participants, in: owner)
        }
        return ShareMetadataResponse(results: results)
    }

    /// Tells the push streams of `participants`' shared databases that the zone named `zoneName`
    /// of the zone owner's database (`scope`, the owner's or a participant's in that zone) changed.
    func announce(_ zoneName: String, toParticipants participants: [User], in scope: DatabaseScope) async {
        let owner = scope.kind == .shared ? scope.owner ?? scope.user : scope.user
        let zoneID = ZoneID(zoneName: zoneName, ownerRecordName: owner.userRecordName)
        for participant in participants {
            await notifier.publish([zoneID], in: DatabaseScope(container: scope.container, environment: scope.environment, kind: .shared, user: participant))
        }
    }

    /// The addresses `user` has verified: its profile's (an operator's, or one verified when
    /// signing in: no other is stored there), its account's, and those its identity providers
    /// vouch for, lower-cased.
    static func verifiedEmails(of user: User, in transaction: any StorageTransaction) throws -> Set<String> {
        var emails = Set(try transaction.identities(ofUser: user.id).filter(\.emailVerified).compactMap { $0.email?.lowercased() })
        if let account = try transaction.account(ofUser: user.id) { emails.insert(account.email.lowercased()) }
        if let email = try transaction.profile(ofUser: user.id).email { emails.insert(email.lowercased()) }
        return emails
    }

    // MARK: The shared database

    /// The zones of the caller's shared database (`scope`), each once.
    private func sharedZones(in scope: DatabaseScope) async throws -> [SharedZone] {
        let zones = try await engine.read { try $0.sharedZones(ofUser: scope.user.id, container: scope.container, environment: scope.environment) }
        var seen: Set<Int64> = []
        return zones.filter { seen.insert($0.zone.key).inserted }
    }

    private static func describe(_ shared: SharedZone) -> Zone {
        Zone(zoneID: ZoneID(zoneName: shared.zone.name, ownerRecordName: shared.owner.userRecordName),
             syncToken: ZoneChangeToken(zoneUID: shared.zone.uid, sequence: shared.zone.sequence, tombstoneFloor: shared.zone.sequence).string)
    }

    /// `zones/list` of the shared database: the zones shared with the caller that it accepted.
    func listSharedZones(in scope: DatabaseScope) async throws -> [Zone] {
        try await sharedZones(in: scope).map(Self.describe)
    }

    /// `zones/lookup` of the shared database.
    func lookupSharedZones(_ zoneIDs: [ZoneID], in scope: DatabaseScope) async throws -> [ZoneResult] {
        let zones = try await sharedZones(in: scope)
        return zoneIDs.map { zoneID in
            guard let found = zones.first(where: { $0.zone.name == zoneID.zoneName && $0.owner.userRecordName == zoneID.ownerRecordName }) else {
                return .failure(RecordSyncError(.zoneNotFound, "zone \(NameRules.quoted(zoneID.zoneName)) of \(NameRules.quoted(zoneID.ownerRecordName ?? "")) is not in your shared database", zoneID: zoneID))
            }
            return .success(Self.describe(found))
        }
    }

    /// A page of the shared database's feed after `token` (`changes/database`,
    /// `zones/changes`): the zones shared with the caller that are new or changed since, and
    /// those no longer shared with it (`deleted`). Its token lists the zones it had and where
    /// each stood, so a zone that leaves is reported once, and one shared again comes back.
    func sharedDatabaseChanges(after token: String?, in scope: DatabaseScope) async throws -> (zones: [(zone: Zone, deleted: Bool)], token: String) {
        let given = try token.map { try SharedDatabaseToken(string: $0) }
        let zones = try await sharedZones(in: scope)
        var now = SharedDatabaseToken()
        var changed: [(zone: Zone, deleted: Bool)] = []
        for shared in zones {
            let entry = SharedDatabaseToken.Entry(owner: shared.owner.userRecordName, zone: shared.zone.name, uid: shared.zone.uid, sequence: shared.zone.sequence)
            now.zones[String(shared.zone.key)] = entry
            if given?.zones[String(shared.zone.key)] != entry { changed.append((Self.describe(shared), false)) }
        }
        for (key, entry) in given?.zones ?? [:] where now.zones[key] == nil {
            changed.append((Zone(zoneID: ZoneID(zoneName: entry.zone, ownerRecordName: entry.owner), atomic: nil, deleted: true), true))
        }
        return (changed, try now.string)
    }
}

/// Where a shared database's feed was read (``RecordStore/sharedDatabaseChanges(after:in:)``):
/// each zone it held and the zone's incarnation and last change.
struct SharedDatabaseToken: Codable, Equatable {
    struct Entry: Codable, Equatable {
        var owner: String
        var zone: String
        var uid: UUID
        var sequence: Int64
    }

    /// By zone key.
    var zones: [String: Entry] = [:]

    private static let prefix = "sdb1."

    init() {}

    init(string: String) throws {
        guard string.hasPrefix(Self.prefix), let data = Data(base64URLEncoded: String(string.dropFirst(Self.prefix.count))),
              let token = try? JSONDecoder().decode(Self.self, from: data) else {
            throw RecordSyncError(.badRequest, "syncToken is not a token of the shared database")
        }
        self = token
    }

    var string: String {
        get throws {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return Self.prefix + (try encoder.encode(self)).base64URLEncoded()
        }
    }
}

/// How many short GUIDs each caller sent to `records/resolve` and `records/accept` in the
/// current minute.
final class ShareLookupThrottle: Sendable {
    private let counts = Mutex<(minute: Int64, byUser: [Int64: Int])>((0, [:]))

    /// Counts `count` lookups by user `user`; `THROTTLED` past `perMinute` in this minute.
    func take(_ count: Int, by user: Int64, perMinute: Int) throws {
        let minute = Int64(Date().timeIntervalSince1970 / 60)
        let allowed = counts.withLock { state -> Bool in
            if state.minute != minute { state = (minute, [:]) }
            let total = state.byUser[user, default: 0] + count
            guard total <= perMinute else { return false }
            state.byUser[user] = total
            return true
        }
        guard allowed else {
            let retry = Double(60 - Int64(Date().timeIntervalSince1970) % 60)
            throw RecordSyncError(.throttled, "more than \(perMinute) share lookups a minute; try again in \(Int(retry)) s", retryAfter: retry)
        }
    }
}
