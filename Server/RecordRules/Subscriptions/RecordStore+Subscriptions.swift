import Foundation
import RecordModel

extension RecordStore {
    /// `subscriptions/modify`: creates (or replaces), updates (must exist) and deletes the
    /// caller's subscriptions of this database, one result each, in one transaction.
    public func modifySubscriptions(_ request: ModifySubscriptionsRequest, in scope: DatabaseScope) async throws -> SubscriptionsResponse {
        try limits.checkCount(request.operations.count, of: "operations")
        let now = Self.now()
        return try await markingSearchTypes { try await engine.write { transaction in
            // The shared database has no row of its own (its zones are their owners').
            let database = scope.kind == .shared ? nil : try Self.database(scope, in: transaction)
            var results: [SubscriptionResult] = []
            for (index, operation) in request.operations.enumerated() {
                let id = operation.subscription.subscriptionID
                do {
                    if let problem = NameRules.problem(withName: id, kind: "operations[\(index)].subscription.subscriptionID") {
                        throw RecordSyncError(.badRequest, problem)
                    }
                    switch operation.operationType {
                    case "delete":
                        guard try transaction.deleteSubscription(user: scope.user.id, container: scope.container, environment: scope.environment,
                                                                 kind: scope.kind.rawValue, id: id) else {
                            throw RecordSyncError(.notFound, "there is no subscription \(NameRules.quoted(id))")
                        }
                        results.append(.deleted(id))
                    case "create", "update":
                        let subscription = try Self.checked(operation.subscription, index: index, scope: scope, database: database, in: transaction)
                        if operation.operationType == "update",
                           try !transaction.subscriptions(inContainer: scope.container, environment: scope.environment, kind: scope.kind.rawValue,
                                                          user: scope.user.id).contains(where: { $0.id == id }) {
                            throw RecordSyncError(.notFound, "there is no subscription \(NameRules.quoted(id)) to update")
                        }
                        try transaction.putSubscription(StoredSubscription(
                            userKey: scope.user.id, container: scope.container, environment: scope.environment, kind: scope.kind.rawValue,
                            id: id, body: String(decoding: try JSONValueEncoder().encode(subscription), as: UTF8.self), createdAt: now))
                        results.append(.success(subscription))
                    default:
                        throw RecordSyncError(.badRequest, "operations[\(index)].operationType: unknown value \(NameRules.quoted(operation.operationType)); use create, update or delete")
                    }
                } catch let error as RecordSyncError {
                    results.append(.failure(id, error))
                }
            }
            return .commit(SubscriptionsResponse(subscriptions: results))
        } }
    }

    /// `subscriptions/list`: the caller's subscriptions of this database, by ID.
    public func listSubscriptions(in scope: DatabaseScope) async throws -> SubscriptionsResponse {
        let stored = try await engine.read { transaction in
            try transaction.subscriptions(inContainer: scope.container, environment: scope.environment, kind: scope.kind.rawValue, user: scope.user.id)
        }
        return SubscriptionsResponse(subscriptions: try stored.map { .success(try JSONValueDecoder().decode(Subscription.self, from: Data($0.body.utf8))) })
    }

    /// `subscriptions/lookup`: one result per ID, `NOT_FOUND` for one the caller does not have.
    public func lookupSubscriptions(_ request: LookupSubscriptionsRequest, in scope: DatabaseScope) async throws -> SubscriptionsResponse {
        try limits.checkCount(request.subscriptions.count, of: "subscriptions")
        let all = try await listSubscriptions(in: scope).subscriptions.compactMap(\.subscription)
        return SubscriptionsResponse(subscriptions: request.subscriptions.map { entry in
            all.first { $0.subscriptionID == entry.subscriptionID }.map(SubscriptionResult.success)
                ?? .failure(entry.subscriptionID, RecordSyncError(.notFound, "there is no subscription \(NameRules.quoted(entry.subscriptionID))"))
        })
    }

    /// A subscription as stored: its type, query (run once against the database, so a query
    /// `records/query` would refuse is refused here), zone and `firesOn` checked, defaults filled.
    private static func checked(_ subscription: Subscription, index: Int, scope: DatabaseScope, database: StoredDatabase?,
                                in transaction: any StorageTransaction) throws -> Subscription {
        var subscription = subscription
        let at = "operations[\(index)].subscription"
        if scope.kind == .shared && subscription.subscriptionType != "database" {
            throw RecordSyncError(.badRequest, "\(at).subscriptionType: the shared database takes database subscriptions only, as CloudKit's")
        }
        if subscription.subscriptionType == "database" {
            guard scope.kind != .public else {
                throw RecordSyncError(.badRequest, "\(at).subscriptionType: database subscriptions are for the private and shared databases, as CloudKit's")
            }
            subscription.zoneID = nil
            subscription.query = nil
            subscription.firesOn = nil
            subscription.firesOnce = nil
            subscription.zoneWide = nil
            return subscription
        }
        guard let database else { throw RecordSyncError(.internalError, "\(at): no database") }
        if let zoneID = subscription.zoneID {
            if let problem = NameRules.problem(withName: zoneID.zoneName, kind: "\(at).zoneID.zoneName") { throw RecordSyncError(.badRequest, problem) }
            _ = try addressable(zoneID, in: scope)
            subscription.zoneID = ZoneID(zoneName: zoneID.zoneName, ownerRecordName: scope.ownerRecordName)
        }
        switch subscription.subscriptionType {
        case "query"?:
            guard let query = subscription.query else { throw RecordSyncError(.badRequest, "\(at): a query subscription needs query") }
            if let problem = NameRules.problem(withName: query.recordType, kind: "\(at).query.recordType") { throw RecordSyncError(.badRequest, problem) }
            let firesOn = subscription.firesOn ?? ["create", "update", "delete"]
            guard !firesOn.isEmpty, firesOn.allSatisfy(["create", "update", "delete"].contains) else {
                throw RecordSyncError(.badRequest, "\(at).firesOn must list create, update or delete")
            }
            subscription.firesOn = firesOn
            // Matching adds one filter (the records written) to the query's own.
            let comparisons = (query.filterBy ?? []).reduce(0) { $0 + $1.comparisonCount }
            if comparisons >= FilterPlan.maximumComparisons {
                throw RecordSyncError(.badRequest, "\(at).query has \(comparisons) comparisons; a subscription's query takes at most \(FilterPlan.maximumComparisons - 1)")
            }
            subscription.firesOnce = subscription.firesOnce ?? false
            if subscription.zoneWide == true { subscription.zoneID = nil }
            subscription.zoneWide = subscription.zoneID == nil
            // Its filters need their indexes, as a query's do (marked now in development).
            try SchemaIndexes.require(query, inContainer: database.containerKey, in: transaction)
            let schema = QuerySchema(recordType: query.recordType, types: try transaction.schemas(inContainer: database.containerKey))
            // A word search fires by the stored words: its types' words must all be indexed
            // (``markingSearchTypes(_:)`` marks them and runs their builds, then runs this again).
            if QueryFilter.searchWords(query.filterBy ?? []),
               let types = try? QueryFilter.wordSearchTypes(query.filterBy ?? [], recordType: query.recordType, schema: schema) {
                try SearchTypes.require(types, inContainer: database.containerKey, in: transaction)
            }
            do {
                // As it is matched (narrowed to named records), over no zone (no key is
                // negative): only whether it runs counts.
                _ = try transaction.query(SubscriptionFiring.narrowed(query, to: ["-"]), inZones: [-1: ZoneID(zoneName: ZoneID.defaultZoneName)],
                                          schema: schema, after: nil, limit: 1)
            } catch let error as RecordSyncError {
                throw RecordSyncError(.badRequest, "\(at).query: \(error.reason)")
            }
        case "zone"?:
            subscription.zoneID = subscription.zoneID ?? ZoneID(zoneName: ZoneID.defaultZoneName, ownerRecordName: scope.ownerRecordName)
            subscription.query = nil
            subscription.firesOn = nil
            subscription.firesOnce = nil
            subscription.zoneWide = nil
        default:
            throw RecordSyncError(.badRequest, "\(at).subscriptionType must be query, zone or database, not \(subscription.subscriptionType.map(NameRules.quoted) ?? "missing")")
        }
        return subscription
    }

    // MARK: Webcourier

    /// `tokens/create` (and `tokens/register`): a webcourier token for the caller's notifications
    /// in this container and environment, delivering those made from now on.
    public func createPushToken(for user: User, container: String, environment: String) async throws -> String {
        let token = "rsw1_" + Self.randomToken()
        let now = Self.now()
        try await engine.write { transaction in
            try transaction.insertPushToken(StoredPushToken(token: token, userKey: user.id, container: container, environment: environment,
                                                            floor: try transaction.latestNotificationNumber()), createdAt: now)
            return .commit(())
        }
        return token
    }

    /// The next notification a webcourier token has not delivered, waiting up to `wait` for
    /// one (looking again every `interval`); `nil` when none came.
    ///
    /// - Throws: `AUTHENTICATION_FAILED` for an unknown (or expired) token.
    public func nextNotification(forPushToken token: String, wait: Duration, interval: Duration = .milliseconds(200)) async throws -> String? {
        guard let stored = try await engine.read({ try $0.pushToken(token) }) else {
            throw RecordSyncError(.authenticationFailed, "the webcourier URL is not valid (unknown, or unpolled for too long); ask tokens/create for another")
        }
        let deadline = ContinuousClock.now + wait
        var seen: Int64 = -1
        while true {
            // A claim is a write: made only when a notification was added since the last look
            // (and on the first), so an idle poll costs reads.
            let latest = try await engine.read { try $0.latestNotificationNumber() }
            if latest != seen {
                seen = latest
                let now = Self.now()
                if let payload = try await engine.write({ .commit(try $0.claimNotification(for: stored, at: now)) }) { return payload }
            }
            guard ContinuousClock.now + interval < deadline, !Task.isCancelled else { return nil }
            try await Task.sleep(for: interval)
        }
    }

    /// Removes notifications older than `retention`, and webcourier tokens unpolled for as long.
    public func collectNotifications(retention: Duration) async throws {
        let cutoff = Self.now() - retention.milliseconds
        try await engine.write { transaction in
            try transaction.deleteNotifications(before: cutoff)
            return .commit(())
        }
    }
}
