import Foundation
import GRDB
import RecordModel
import RecordRules

extension SQLiteTransaction {
    func subscriptions(inContainer container: String, environment: String, kind: String, user: Int64?) throws -> [StoredSubscription] {
        let rows: [Row]
        if let user {
            rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT user_id, id, body, created_at FROM subscriptions WHERE container = ? AND environment = ? AND kind = ? AND user_id = ? ORDER BY id
                """), arguments: [container, environment, kind, user])
        } else {
            rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT user_id, id, body, created_at FROM subscriptions WHERE container = ? AND environment = ? AND kind = ? ORDER BY user_id, id
                """), arguments: [container, environment, kind])
        }
        return rows.map { StoredSubscription(userKey: $0[0], container: container, environment: environment, kind: kind, id: $0[1], body: $0[2], createdAt: $0[3]) }
    }

    func putSubscription(_ subscription: StoredSubscription) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO subscriptions(container, environment, kind, user_id, id, body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                       arguments: [subscription.container, subscription.environment, subscription.kind, subscription.userKey, subscription.id,
                                   subscription.body, subscription.createdAt])
    }

    func deleteSubscription(user: Int64, container: String, environment: String, kind: String, id: String) throws -> Bool {
        try db.execute(sql: "DELETE FROM subscriptions WHERE container = ? AND environment = ? AND kind = ? AND user_id = ? AND id = ?",
                       arguments: [container, environment, kind, user, id])
        return db.changesCount > 0
    }

    func insertNotification(user: Int64, container: String, environment: String, payload: String, createdAt: Int64) throws {
        try db.execute(sql: "INSERT INTO notifications(user_id, container, environment, payload, created_at) VALUES (?, ?, ?, ?, ?)",
                       arguments: [user, container, environment, payload, createdAt])
    }

    func latestNotificationNumber() throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'notifications'") ?? 0
    }

    func insertPushToken(_ token: StoredPushToken, createdAt: Int64) throws {
        try db.execute(sql: "INSERT INTO push_tokens(token, user_id, container, environment, floor, created_at, polled_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                       arguments: [token.token, token.userKey, token.container, token.environment, token.floor, createdAt, createdAt])
    }

    func pushToken(_ token: String) throws -> StoredPushToken? {
        try Row.fetchOne(db, sql: "SELECT user_id, container, environment, floor FROM push_tokens WHERE token = ?", arguments: [token])
            .map { StoredPushToken(token: token, userKey: $0[0], container: $0[1], environment: $0[2], floor: $0[3]) }
    }

    func claimNotification(for token: StoredPushToken, at now: Int64) throws -> String? {
        try db.execute(sql: "UPDATE push_tokens SET polled_at = ? WHERE token = ?", arguments: [now, token.token])
        guard let row = try Row.fetchOne(db, sql: """
            SELECT n.id, n.payload FROM notifications n
            WHERE n.user_id = ? AND n.container = ? AND n.environment = ? AND n.id > ?
              AND NOT EXISTS (SELECT 1 FROM push_deliveries d WHERE d.token = ? AND d.notification = n.id)
            ORDER BY n.id LIMIT 1
            """, arguments: [token.userKey, token.container, token.environment, token.floor, token.token]) else { return nil }
        try db.execute(sql: "INSERT OR IGNORE INTO push_deliveries(token, notification) VALUES (?, ?)", arguments: [token.token, row[0] as Int64])
        return db.changesCount == 1 ? row[1] : nil
    }

    func deleteNotifications(before cutoff: Int64) throws {
        try db.execute(sql: """
            DELETE FROM push_deliveries WHERE notification IN (SELECT id FROM notifications WHERE created_at < ?)
                OR token IN (SELECT token FROM push_tokens WHERE polled_at < ?);
            DELETE FROM notifications WHERE created_at < ?;
            DELETE FROM push_tokens WHERE polled_at < ?;
            """, arguments: [cutoff, cutoff, cutoff, cutoff])
    }

    func doomedNames() throws -> [String] {
        try String.fetchAll(db, sql: "SELECT name FROM temp.doomed ORDER BY pos")
    }
}
