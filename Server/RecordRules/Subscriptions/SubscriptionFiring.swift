import Foundation
import RecordModel

/// The subscriptions a `records/modify` batch may fire, and the notifications it makes: one per
/// matching record for a query subscription (`fo` 1 created, 2 updated, 3 deleted), one per
/// batch for a zone subscription. A save matches if the record matches after it; a delete (a
/// cascaded one too) if the record matched just before it. Made inside the batch's write
/// transaction, so a notification exists exactly when its change does.
struct SubscriptionFiring {
    /// A subscription that applies to the batch's zone, with its owner.
    struct Applying {
        var stored: StoredSubscription
        var subscription: Subscription
        var firesOn: Set<String>
    }

    /// A record that matched a subscription.
    struct Match: Sendable {
        var subscription: Int
        var recordName: String
        /// 1 created, 2 updated, 3 deleted.
        var reason: Int
    }

    let scope: DatabaseScope
    let zone: ZoneContext
    let containerKey: Int64
    let applying: [Applying]
    /// What each subscriber may read, by user key (``Access``): a notification never announces
    /// a record its subscriber may not read.
    let subscribers: [Int64: Access]

    /// The subscriptions that apply to `zone`, or `nil` when none does (the common case: one
    /// indexed read per batch, besides the zone's shares, `audience`): in the public database,
    /// every user's; in a private zone, its owner's (whoever writes, the owner or a participant),
    /// and the database subscriptions of the shared databases of its shares' accepted participants.
    static func load(scope: DatabaseScope, zone: ZoneContext, audience: [ShareAudience], containerKey: Int64, in transaction: any StorageTransaction) throws -> SubscriptionFiring? {
        let owner = scope.owner ?? scope.user
        var stored = try transaction.subscriptions(inContainer: scope.container, environment: scope.environment,
                                                   kind: scope.kind == .public ? DatabaseKind.public.rawValue : DatabaseKind.private.rawValue,
                                                   user: scope.kind == .public ? nil : owner.id)
        var subscribers: [Int64: Access] = [:]
        var asked: Set<Int64> = []
        for user in audience.flatMap(\.users) where asked.insert(user.id).inserted {
            let theirs = try transaction.subscriptions(inContainer: scope.container, environment: scope.environment, kind: DatabaseKind.shared.rawValue, user: user.id)
            if theirs.isEmpty { continue }
            stored += theirs
            guard let participation = try RecordStore.participation(ofUser: user.id, inZone: zone.key, in: transaction) else { continue }
            subscribers[user.id] = .participant(user, participation)
        }
        guard !stored.isEmpty else { return nil }
        let applying: [Applying] = stored.compactMap { stored in
            guard let subscription = try? JSONValueDecoder().decode(Subscription.self, from: Data(stored.body.utf8)) else { return nil }
            let zoneName = subscription.zoneID?.zoneName
            if subscription.subscriptionType == "database" {
                // Any zone of the database.
            } else if subscription.subscriptionType == "zone" {
                guard (zoneName ?? ZoneID.defaultZoneName) == zone.name else { return nil }
            } else if let zoneName, zoneName != zone.name {
                return nil
            }
            return Applying(stored: stored, subscription: subscription, firesOn: Set(subscription.firesOn ?? ["create", "update", "delete"]))
        }
        guard !applying.isEmpty else { return nil }
        if scope.kind == .public {
            subscribers = try Access.load(publicDatabaseFor: Array(Set(applying.map(\.stored.userKey))), containerKey: containerKey, in: transaction)
        } else {
            subscribers[owner.id] = .owner(owner)
        }
        return SubscriptionFiring(scope: scope, zone: zone, containerKey: containerKey, applying: applying, subscribers: subscribers)
    }

    /// Whether a query subscription fires on deletes (so a delete must be matched before it runs).
    var firesOnDeletes: Bool {
        applying.contains { $0.subscription.subscriptionType == "query" && $0.firesOn.contains("delete") }
    }

    /// The query subscriptions that `names` (of any types) match now, as `reason`.
    func matches(_ names: [String], reason: Int, in transaction: any StorageTransaction) throws -> [Match] {
        guard !names.isEmpty else { return [] }
        let verb = reason == 1 ? "create" : reason == 2 ? "update" : "delete"
        var found: [Match] = []
        for (index, applying) in applying.enumerated() where applying.subscription.subscriptionType == "query" && applying.firesOn.contains(verb) {
            guard let query = applying.subscription.query else { continue }
            let schema = QuerySchema(recordType: query.recordType, types: try transaction.schemas(inContainer: containerKey))
            for start in stride(from: 0, to: names.count, by: 1000) {
                let chunk = Array(names[start..<min(start + 1000, names.count)])
                let matches: [QueryMatch]
                do {
                    matches = try transaction.matches(Self.narrowed(query, to: chunk), inZones: [zone.key: zone.zoneID], schema: schema,
                                                      after: nil, limit: chunk.count, limits: Self.matchingLimits).matches
                } catch let error as RecordSyncError where error.code == .badRequest || error.code == .limitExceeded {
                    // The query no longer compiles against the schema (a filter's type was
                    // fixed otherwise since it was saved, say), or its string matching would
                    // pass the budget: it matches nothing, and never fails the write.
                    // Compiling refuses before any statement is sent; matching only reads.
                    break
                }
                // A subscriber since deleted has no access: nothing is announced to it.
                for match in matches where subscribers[applying.stored.userKey]?.mayRead(match.record) == true {
                    found.append(Match(subscription: index, recordName: match.record.recordName, reason: reason))
                }
            }
        }
        return found
    }

    /// What matching one subscription against one write may cost: string matching is bounded
    /// far below a query's budget, so that no subscription (the public database's are anyone's)
    /// slows others' writes much; one that passes it matches nothing for that write.
    static var matchingLimits: StoreLimits {
        var limits = StoreLimits()
        limits.maximumMatchSteps = 1_000_000
        return limits
    }

    /// `query` limited to the records named `names` (how a subscription is matched).
    static func narrowed(_ query: Query, to names: [String]) -> Query {
        var narrowed = query
        narrowed.sortBy = nil
        narrowed.filterBy = (query.filterBy ?? []) + [QueryFilter(system: .recordName, .in, RawFieldValue(value: .array(names.map(JSONValue.string))))]
        return narrowed
    }

    /// Queues the notifications of `matches` (and of every zone and database subscription, when
    /// `changed`: a participant's database subscription only when the change reached it, its
    /// user's key among `participants`), and removes the `firesOnce` subscriptions that fired.
    func notify(_ matches: [Match], changed: Bool, participants: Set<Int64>, now: Int64, in transaction: any StorageTransaction) throws {
        var fired: Set<Int> = []
        // Numbered as CloudKit JS reads `dbs` (its isPublicDatabase is `dbs === 0`): 0 public,
        // 1 private, 2 shared (a participant's database subscription).
        let database = scope.kind == .public ? 0 : 1
        let owner = zone.zoneID.ownerRecordName ?? scope.ownerRecordName
        func queue(_ index: Int, _ kind: String, _ body: [String: JSONValue]) throws {
            let applying = applying[index]
            var payload: [String: JSONValue] = ["ck": .object(["nid": .string(UUID().uuidString.lowercased()), "cid": .string(scope.container), kind: .object(body)])]
            if let aps = Self.aps(applying.subscription.notificationInfo) { payload["aps"] = aps }
            try transaction.insertNotification(user: applying.stored.userKey, container: scope.container, environment: scope.environment,
                                               payload: try JSONValue.object(payload).serializedString(), createdAt: now)
            fired.insert(index)
        }
        for match in matches {
            try queue(match.subscription, "qry", ["sid": .string(applying[match.subscription].stored.id), "rid": .string(match.recordName),
                                                  "zid": .string(zone.name), "zoid": .string(owner), "dbs": .int(Int64(database)), "fo": .int(Int64(match.reason))])
        }
        if changed {
            for (index, applying) in applying.enumerated() where applying.subscription.subscriptionType == "zone" {
                try queue(index, "fet", ["sid": .string(applying.stored.id), "zid": .string(zone.name), "zoid": .string(owner), "dbs": .int(Int64(database))])
            }
            // A database notification names no zone: its subscriber fetches changes/database.
            for (index, applying) in applying.enumerated() where applying.subscription.subscriptionType == "database" {
                if applying.stored.kind == DatabaseKind.shared.rawValue, !participants.contains(applying.stored.userKey) { continue }
                try queue(index, "fet", ["sid": .string(applying.stored.id), "dbs": .int(applying.stored.kind == DatabaseKind.shared.rawValue ? 2 : Int64(database))])
            }
        }
        for index in fired where applying[index].subscription.firesOnce == true {
            let stored = applying[index].stored
            _ = try transaction.deleteSubscription(user: stored.userKey, container: stored.container, environment: stored.environment, kind: stored.kind, id: stored.id)
        }
    }

    /// The payload's `aps` from a subscription's Notification Info (as APNs would carry it).
    static func aps(_ info: JSONValue?) -> JSONValue? {
        guard case .object(let members)? = info else { return nil }
        var aps: [String: JSONValue] = [:]
        var alert: [String: JSONValue] = [:]
        if let body = members["alertBody"] { alert["body"] = body }
        if let key = members["alertLocalizationKey"] { alert["loc-key"] = key }
        if let arguments = members["alertLocalizationArgs"] { alert["loc-args"] = arguments }
        if let key = members["alertActionLocalizationKey"] { alert["action-loc-key"] = key }
        if let image = members["alertLaunchImage"] { alert["launch-image"] = image }
        // Always a dictionary: CloudKit JS reads `alert.body` and the localisation keys from it.
        if !alert.isEmpty { aps["alert"] = .object(alert) }
        if let sound = members["soundName"] { aps["sound"] = sound }
        if members["shouldBadge"] == .bool(true) { aps["badge"] = .int(1) }
        if members["shouldSendContentAvailable"] == .bool(true) { aps["content-available"] = .int(1) }
        if let category = members["category"] { aps["category"] = category }
        return aps.isEmpty ? nil : .object(aps)
    }
}
