import Foundation
import PostgresNIO
import RecordModel
import RecordRules

extension PostgresTransaction {
    func subscriptions(inContainer container: String, environment: String, kind: String, user: Int64?) throws -> [StoredSubscription] {
        let rows: [PostgresRow]
        if let user {
            rows = try self.rows("""
                SELECT user_id, id, body, created_at FROM subscriptions
                WHERE container = \(container) AND environment = \(environment) AND kind = \(kind) AND user_id = \(user) ORDER BY id
                """)
        } else {
            rows = try self.rows("""
                SELECT user_id, id, body, created_at FROM subscriptions
                WHERE container = \(container) AND environment = \(environment) AND kind = \(kind) ORDER BY user_id, id
                """)
        }
        return try rows.map {
            let (user, id, body, createdAt) = try $0.decode((Int64, String, String, Int64).self)
            return StoredSubscription(userKey: user, container: container, environment: environment, kind: kind, id: id, body: body, createdAt: createdAt)
        }
    }

    func putSubscription(_ subscription: StoredSubscription) throws {
        try execute("""
            INSERT INTO subscriptions(container, environment, kind, user_id, id, body, created_at)
            VALUES (\(subscription.container), \(subscription.environment), \(subscription.kind), \(subscription.userKey), \(subscription.id),
                    \(subscription.body), \(subscription.createdAt))
            ON CONFLICT (container, environment, kind, user_id, id) DO UPDATE SET body = EXCLUDED.body, created_at = EXCLUDED.created_at
            """)
    }

    func deleteSubscription(user: Int64, container: String, environment: String, kind: String, id: String) throws -> Bool {
        try execute("""
            DELETE FROM subscriptions WHERE container = \(container) AND environment = \(environment) AND kind = \(kind) AND user_id = \(user) AND id = \(id)
            """) > 0
    }

    func insertNotification(user: Int64, container: String, environment: String, payload: String, createdAt: Int64) throws {
        try execute("INSERT INTO notifications(user_id, container, environment, payload, created_at) VALUES (\(user), \(container), \(environment), \(payload), \(createdAt))")
    }

    func latestNotificationNumber() throws -> Int64 {
        try rows("SELECT COALESCE(max(id), 0) FROM notifications")[0].decode(Int64.self)
    }

    func insertPushToken(_ token: StoredPushToken, createdAt: Int64) throws {
        try execute("""
            INSERT INTO push_tokens(token, user_id, container, environment, floor, created_at, polled_at)
            VALUES (\(token.token), \(token.userKey), \(token.container), \(token.environment), \(token.floor), \(createdAt), \(createdAt))
            """)
    }

    func pushToken(_ token: String) throws -> StoredPushToken? {
        try rows("SELECT user_id, container, environment, floor FROM push_tokens WHERE token = \(token)").first.map {
            let (user, container, environment, floor) = try $0.decode((Int64, String, String, Int64).self)
            return StoredPushToken(token: token, userKey: user, container: container, environment: environment, floor: floor)
        }
    }

    func claimNotification(for token: StoredPushToken, at now: Int64) throws -> String? {
        try execute("UPDATE push_tokens SET polled_at = \(now) WHERE token = \(token.token)")
        guard let row = try rows("""
            SELECT n.id, n.payload FROM notifications n
            WHERE n.user_id = \(token.userKey) AND n.container = \(token.container) AND n.environment = \(token.environment) AND n.id > \(token.floor)
              AND NOT EXISTS (SELECT 1 FROM push_deliveries d WHERE d.token = \(token.token) AND d.notification = n.id)
            ORDER BY n.id LIMIT 1
            """).first else { return nil }
        let (id, payload) = try row.decode((Int64, String).self)
        let claimed = try execute("INSERT INTO push_deliveries(token, notification) VALUES (\(token.token), \(id)) ON CONFLICT DO NOTHING")
        return claimed == 1 ? payload : nil
    }

    func deleteNotifications(before cutoff: Int64) throws {
        try execute("""
            DELETE FROM push_deliveries WHERE notification IN (SELECT id FROM notifications WHERE created_at < \(cutoff))
                OR token IN (SELECT token FROM push_tokens WHERE polled_at < \(cutoff))
            """)
        try execute("DELETE FROM notifications WHERE created_at < \(cutoff)")
        try execute("DELETE FROM push_tokens WHERE polled_at < \(cutoff)")
    }

    func doomedNames() throws -> [String] {
        try rows("SELECT name FROM doomed ORDER BY pos").map { try $0.decode(String.self) }
    }
}
