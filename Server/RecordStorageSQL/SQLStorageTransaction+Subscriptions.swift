import RecordSQL
import RecordStorage

extension SQLStorageTransaction {
    public func subscriptions(inContainer container: String, environment: String, kind: String, user: Int64?) throws -> [StoredSubscription] {
        let owner: SQLStatement = user.map { "AND user_id = \($0) ORDER BY id" } ?? "ORDER BY user_id, id"
        return try fetch("""
            SELECT user_id, id, body, created_at FROM subscriptions WHERE container = \(container) AND environment = \(environment) AND kind = \(kind) \(owner)
            """).map {
            StoredSubscription(userKey: try $0.int64(0), container: container, environment: environment, kind: kind, id: try $0.string(1),
                               body: try $0.string(2), createdAt: try $0.int64(3))
        }
    }

    public func putSubscription(_ subscription: StoredSubscription) throws {
        try run("""
            INSERT INTO subscriptions(container, environment, kind, user_id, id, body, created_at)
            VALUES (\(subscription.container), \(subscription.environment), \(subscription.kind), \(subscription.userKey), \(subscription.id),
                    \(subscription.body), \(subscription.createdAt))
            ON CONFLICT (container, environment, kind, user_id, id) DO UPDATE SET body = excluded.body, created_at = excluded.created_at
            """)
    }

    public func deleteSubscription(user: Int64, container: String, environment: String, kind: String, id: String) throws -> Bool {
        try run("""
            DELETE FROM subscriptions WHERE container = \(container) AND environment = \(environment) AND kind = \(kind) AND user_id = \(user) AND id = \(id)
            """) > 0
    }

    public func insertNotification(user: Int64, container: String, environment: String, payload: String, createdAt: Int64) throws {
        try run("""
            INSERT INTO notifications(user_id, container, environment, payload, created_at) VALUES (\(user), \(container), \(environment), \(payload), \(createdAt))
            """)
    }

    public func latestNotificationNumber() throws -> Int64 {
        // SQLite's AUTOINCREMENT keeps the highest number given in sqlite_sequence (the rows
        // may be gone); a PostgreSQL sequence's numbers are not transactional, so the highest
        // number committed is the highest row's.
        let statement: SQLStatement = dialect == .sqlite
            ? "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'notifications'), 0)"
            : "SELECT COALESCE(max(id), 0) FROM notifications"
        return try fetch(statement)[0].int64(0)
    }

    public func insertPushToken(_ token: StoredPushToken, createdAt: Int64) throws {
        try run("""
            INSERT INTO push_tokens(token, user_id, container, environment, floor, created_at, polled_at)
            VALUES (\(token.token), \(token.userKey), \(token.container), \(token.environment), \(token.floor), \(createdAt), \(createdAt))
            """)
    }

    public func pushToken(_ token: String) throws -> StoredPushToken? {
        try fetch("SELECT user_id, container, environment, floor FROM push_tokens WHERE token = \(token)").first.map {
            StoredPushToken(token: token, userKey: try $0.int64(0), container: try $0.string(1), environment: try $0.string(2), floor: try $0.int64(3))
        }
    }

    public func claimNotification(for token: StoredPushToken, at now: Int64) throws -> String? {
        try run("UPDATE push_tokens SET polled_at = \(now) WHERE token = \(token.token)")
        guard let row = try fetch("""
            SELECT n.id, n.payload FROM notifications n
            WHERE n.user_id = \(token.userKey) AND n.container = \(token.container) AND n.environment = \(token.environment) AND n.id > \(token.floor)
              AND NOT EXISTS (SELECT 1 FROM push_deliveries d WHERE d.token = \(token.token) AND d.notification = n.id)
            ORDER BY n.id LIMIT 1
            """).first else { return nil }
        let claimed = try run("INSERT INTO push_deliveries(token, notification) VALUES (\(token.token), \(try row.int64(0))) ON CONFLICT DO NOTHING")
        return claimed == 1 ? try row.string(1) : nil
    }

    public func deleteNotifications(before cutoff: Int64) throws {
        try run("""
            DELETE FROM push_deliveries WHERE notification IN (SELECT id FROM notifications WHERE created_at < \(cutoff))
                OR token IN (SELECT token FROM push_tokens WHERE polled_at < \(cutoff))
            """)
        try run("DELETE FROM notifications WHERE created_at < \(cutoff)")
        try run("DELETE FROM push_tokens WHERE polled_at < \(cutoff)")
    }
}
