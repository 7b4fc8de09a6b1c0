import Foundation
import GRDB
import RecordModel

extension SQLiteRecordStore {
    public func createUser(named name: String, tokenHash: Data) async throws -> User {
        if let problem = NameRules.problem(withName: name, kind: "user name") {
            throw RecordSyncError(.badRequest, problem)
        }
        return try await pool.write { db in
            if try Int64.fetchOne(db, sql: "SELECT id FROM users WHERE name = ?", arguments: [name]) != nil {
                throw RecordSyncError(.exists, "user \(NameRules.quoted(name)) exists; use 'user token' for another token")
            }
            let recordName = "_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            let now = Self.now()
            try db.execute(sql: "INSERT INTO users(name, record_name, created_at) VALUES (?, ?, ?)",
                           arguments: [name, recordName, now])
            let id = db.lastInsertedRowID
            try db.execute(sql: "INSERT INTO tokens(hash, user_id, created_at) VALUES (?, ?, ?)", arguments: [tokenHash, id, now])
            return User(id: id, name: name, userRecordName: recordName)
        }
    }

    public func addToken(forUserNamed name: String, tokenHash: Data) async throws -> User {
        try await pool.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT id, record_name FROM users WHERE name = ?", arguments: [name]) else {
                throw RecordSyncError(.notFound, "there is no user \(NameRules.quoted(name))")
            }
            try db.execute(sql: "INSERT INTO tokens(hash, user_id, created_at) VALUES (?, ?, ?)",
                           arguments: [tokenHash, row[0] as Int64, Self.now()])
            return User(id: row[0], name: name, userRecordName: row[1])
        }
    }

    public func user(forTokenHash tokenHash: Data) async throws -> User? {
        try await pool.read { db in
            try Row.fetchOne(db.cachedStatement(sql: """
                SELECT u.id, u.name, u.record_name FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = ?
                """), arguments: [tokenHash]).map { User(id: $0[0], name: $0[1], userRecordName: $0[2]) }
        }
    }

    /// Milliseconds since 1970, now.
    static func now() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }
}
