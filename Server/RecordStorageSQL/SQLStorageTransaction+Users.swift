import Foundation
import RecordSQL
import RecordStorage

extension SQLStorageTransaction {
    public func user(named name: String) throws -> User? {
        try fetch("SELECT id, record_name FROM users WHERE name = \(name)").first
            .map { User(id: try $0.int64(0), name: name, userRecordName: try $0.string(1)) }
    }

    public func users() throws -> [(user: User, createdAt: Int64, tokens: Int)] {
        try fetch("""
            SELECT u.id, u.name, u.record_name, u.created_at, (SELECT COUNT(*) FROM tokens t WHERE t.user_id = u.id)
            FROM users u ORDER BY u.name
            """).map { (User(id: try $0.int64(0), name: try $0.string(1), userRecordName: try $0.string(2)), try $0.int64(3), try $0.int(4)) }
    }

    public func insertUser(named name: String, recordName: String, createdAt: Int64) throws -> User {
        let id = try fetch("INSERT INTO users(name, record_name, created_at) VALUES (\(name), \(recordName), \(createdAt)) RETURNING id")[0].int64(0)
        return User(id: id, name: name, userRecordName: recordName)
    }

    public func insertToken(hash: Data, userKey: Int64, name: String, createdAt: Int64, expiresAt: Int64?) throws {
        try run("INSERT INTO tokens(hash, user_id, name, created_at, expires_at) VALUES (\(hash), \(userKey), \(name), \(createdAt), \(expiresAt))")
    }

    public func token(forHash hash: Data) throws -> (user: User, expiresAt: Int64?)? {
        try fetch("SELECT u.id, u.name, u.record_name, t.expires_at FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = \(hash)").first
            .map { (User(id: try $0.int64(0), name: try $0.string(1), userRecordName: try $0.string(2)), try $0.optionalInt64(3)) }
    }

    public func tokens(ofUser key: Int64) throws -> [StoredToken] {
        try fetch("SELECT name, created_at, expires_at FROM tokens WHERE user_id = \(key) ORDER BY name")
            .map { StoredToken(name: try $0.string(0), createdAt: try $0.int64(1), expiresAt: try $0.optionalInt64(2)) }
    }

    public func deleteToken(named name: String, ofUser key: Int64) throws -> Bool {
        try run("DELETE FROM tokens WHERE user_id = \(key) AND name = \(name)") > 0
    }

    public func deleteToken(hash: Data) throws -> Bool {
        try run("DELETE FROM tokens WHERE hash = \(hash)") > 0
    }

    public func revocationSequence() throws -> Int64 {
        try fetch("SELECT seq FROM token_revocations WHERE id = 1").first?.int64(0) ?? 0
    }

    public func advanceRevocationSequence() throws {
        try run("UPDATE token_revocations SET seq = seq + 1 WHERE id = 1")
    }

    public func usage(ofUser userRecordName: String) throws -> Usage {
        try fetch("SELECT records, bytes FROM user_usage WHERE user_record = \(userRecordName)").first
            .map { Usage(records: try $0.int64(0), bytes: try $0.int64(1)) } ?? .zero
    }

    public func user(withIdentityIssuer issuer: String, subject: String) throws -> User? {
        try fetch("""
            SELECT u.id, u.name, u.record_name FROM identities i JOIN users u ON u.id = i.user_id
            WHERE i.issuer = \(issuer) AND i.subject = \(subject)
            """).first.map { User(id: try $0.int64(0), name: try $0.string(1), userRecordName: try $0.string(2)) }
    }

    public func insertIdentity(_ identity: StoredIdentity, userKey: Int64) throws {
        try run("""
            INSERT INTO identities(issuer, subject, user_id, provider, email, email_verified, created_at)
            VALUES (\(identity.issuer), \(identity.subject), \(userKey), \(identity.provider), \(identity.email),
                    \(identity.emailVerified), \(identity.createdAt))
            """)
    }

    public func identities(ofUser key: Int64) throws -> [StoredIdentity] {
        try fetch("""
            SELECT issuer, subject, provider, email, email_verified, created_at FROM identities
            WHERE user_id = \(key) ORDER BY issuer, subject
            """).map {
            StoredIdentity(issuer: try $0.string(0), subject: try $0.string(1), provider: try $0.string(2), email: try $0.optionalString(3),
                           emailVerified: try $0.bool(4), createdAt: try $0.int64(5))
        }
    }

    public func account(withEmail email: String) throws -> (account: StoredAccount, user: User)? {
        try fetch("""
            SELECT a.password_hash, a.created_at, a.password_changed_at, u.id, u.name, u.record_name
            FROM accounts a JOIN users u ON u.id = a.user_id WHERE a.email = \(email)
            """).first.map {
            (StoredAccount(email: email, passwordHash: try $0.string(0), createdAt: try $0.int64(1), passwordChangedAt: try $0.int64(2)),
             User(id: try $0.int64(3), name: try $0.string(4), userRecordName: try $0.string(5)))
        }
    }

    public func account(ofUser key: Int64) throws -> StoredAccount? {
        try fetch("SELECT email, password_hash, created_at, password_changed_at FROM accounts WHERE user_id = \(key)").first.map {
            StoredAccount(email: try $0.string(0), passwordHash: try $0.string(1), createdAt: try $0.int64(2), passwordChangedAt: try $0.int64(3))
        }
    }

    public func insertAccount(_ account: StoredAccount, userKey: Int64) throws {
        try run("""
            INSERT INTO accounts(user_id, email, password_hash, created_at, password_changed_at)
            VALUES (\(userKey), \(account.email), \(account.passwordHash), \(account.createdAt), \(account.passwordChangedAt))
            """)
    }

    public func setPasswordHash(_ hash: String, ofUser key: Int64, at time: Int64) throws {
        try run("UPDATE accounts SET password_hash = \(hash), password_changed_at = \(time) WHERE user_id = \(key)")
    }

    public func deleteTokens(ofUser key: Int64, keeping: Data?) throws -> Int {
        guard let keeping else { return try run("DELETE FROM tokens WHERE user_id = \(key)") }
        return try run("DELETE FROM tokens WHERE user_id = \(key) AND hash <> \(keeping)")
    }

    public func insertAccountCode(_ code: StoredAccountCode, now: Int64) throws {
        try run("DELETE FROM account_codes WHERE expires_at < \(now)")
        try run("""
            INSERT INTO account_codes(hash, kind, email, password_hash, invitation, created_at, expires_at)
            VALUES (\(code.hash), \(code.kind), \(code.email), \(code.passwordHash), \(code.invitation), \(code.createdAt), \(code.expiresAt))
            """)
    }

    public func accountCode(hash: Data) throws -> StoredAccountCode? {
        try fetch("SELECT kind, email, password_hash, invitation, created_at, expires_at FROM account_codes WHERE hash = \(hash)").first.map {
            StoredAccountCode(hash: hash, kind: try $0.string(0), email: try $0.optionalString(1), passwordHash: try $0.optionalString(2),
                              invitation: try $0.optionalData(3), createdAt: try $0.int64(4), expiresAt: try $0.int64(5))
        }
    }

    public func deleteAccountCode(hash: Data) throws -> Bool {
        try run("DELETE FROM account_codes WHERE hash = \(hash)") > 0
    }

    public func accountCodes(kind: String, email: String) throws -> [StoredAccountCode] {
        try fetch("""
            SELECT hash, password_hash, invitation, created_at, expires_at FROM account_codes WHERE kind = \(kind) AND email = \(email)
            ORDER BY created_at DESC, hash
            """).map {
            StoredAccountCode(hash: try $0.data(0), kind: kind, email: email, passwordHash: try $0.optionalString(1), invitation: try $0.optionalData(2),
                              createdAt: try $0.int64(3), expiresAt: try $0.int64(4))
        }
    }

    public func deleteAccountCodes(kind: String, email: String) throws {
        try run("DELETE FROM account_codes WHERE kind = \(kind) AND email = \(email)")
    }

    public func signInAttempts(key: String) throws -> (attempts: Int64, windowStart: Int64)? {
        try fetch("SELECT attempts, window_start FROM sign_in_attempts WHERE key = \(key)").first.map { (try $0.int64(0), try $0.int64(1)) }
    }

    public func countSignInAttempt(key: String, now: Int64, windowStart: Int64) throws {
        try run("DELETE FROM sign_in_attempts WHERE window_start < \(windowStart)")
        try run("""
            INSERT INTO sign_in_attempts(key, attempts, window_start) VALUES (\(key), 1, \(now))
            ON CONFLICT (key) DO UPDATE SET attempts = sign_in_attempts.attempts + 1
            """)
    }

    public func clearSignInAttempts(key: String) throws {
        try run("DELETE FROM sign_in_attempts WHERE key = \(key)")
    }

    public func moveSignIns(fromUser from: Int64, toUser to: Int64) throws -> (identities: Int, account: Bool) {
        let identities = try run("UPDATE identities SET user_id = \(to) WHERE user_id = \(from)")
        let account = try run("UPDATE accounts SET user_id = \(to) WHERE user_id = \(from)") > 0
        return (identities, account)
    }

    public func insertOperator(_ stored: StoredOperator) throws {
        try run("""
            INSERT INTO operators(name, secret_hash, scopes, created_at)
            VALUES (\(stored.name), \(stored.secretHash), \(stored.scopes.joined(separator: " ")), \(stored.createdAt))
            """)
    }

    public func storedOperator(secretHash: Data) throws -> StoredOperator? {
        try fetch("SELECT name, scopes, created_at FROM operators WHERE secret_hash = \(secretHash)").first.map {
            StoredOperator(name: try $0.string(0), secretHash: secretHash, scopes: try $0.string(1).split(separator: " ").map(String.init),
                           createdAt: try $0.int64(2))
        }
    }

    public func storedOperators() throws -> [StoredOperator] {
        try fetch("SELECT name, secret_hash, scopes, created_at FROM operators ORDER BY name").map {
            StoredOperator(name: try $0.string(0), secretHash: try $0.data(1), scopes: try $0.string(2).split(separator: " ").map(String.init),
                           createdAt: try $0.int64(3))
        }
    }

    public func deleteOperator(named name: String) throws -> Bool {
        try run("DELETE FROM operators WHERE name = \(name)") > 0
    }

    public func insertConsoleSession(_ session: StoredConsoleSession) throws {
        try run("""
            INSERT INTO console_sessions(token_hash, operator, created_at, seen_at, expires_at)
            VALUES (\(session.tokenHash), \(session.operatorName), \(session.createdAt), \(session.seenAt), \(session.expiresAt))
            """)
    }

    public func consoleSession(tokenHash: Data) throws -> (session: StoredConsoleSession, operator: StoredOperator)? {
        try fetch("""
            SELECT s.operator, s.created_at, s.seen_at, s.expires_at, o.secret_hash, o.scopes, o.created_at
            FROM console_sessions s JOIN operators o ON o.name = s.operator WHERE s.token_hash = \(tokenHash)
            """).first.map {
            (StoredConsoleSession(tokenHash: tokenHash, operatorName: try $0.string(0), createdAt: try $0.int64(1), seenAt: try $0.int64(2), expiresAt: try $0.int64(3)),
             StoredOperator(name: try $0.string(0), secretHash: try $0.data(4), scopes: try $0.string(5).split(separator: " ").map(String.init), createdAt: try $0.int64(6)))
        }
    }

    public func touchConsoleSession(tokenHash: Data, at: Int64) throws {
        try run("UPDATE console_sessions SET seen_at = \(at) WHERE token_hash = \(tokenHash)")
    }

    public func deleteConsoleSession(tokenHash: Data) throws -> Bool {
        try run("DELETE FROM console_sessions WHERE token_hash = \(tokenHash)") > 0
    }

    public func deleteConsoleSessions(endedBefore now: Int64, idleSince: Int64, ofOperator operatorName: String?) throws -> Int {
        let ended = try run("DELETE FROM console_sessions WHERE expires_at < \(now) OR seen_at < \(idleSince)")
        guard let operatorName else { return ended }
        return ended + (try run("DELETE FROM console_sessions WHERE operator = \(operatorName)"))
    }

    public func insertRequests(_ requests: [StoredRequest]) throws {
        for request in requests {
            try run("""
                INSERT INTO request_log(at, node, request_id, method, path, endpoint, user_record, user_name, operator, status, error_code, micros)
                VALUES (\(request.at), \(request.node), \(request.requestID), \(request.method), \(request.path), \(request.endpoint), \(request.userRecordName),
                        \(request.userName), \(request.operatorName), \(request.status), \(request.errorCode), \(request.micros))
                """)
        }
    }

    public func requests(matching filter: RequestLogFilter) throws -> [StoredRequest] {
        var statement: SQLStatement = """
            SELECT id, at, node, request_id, method, path, endpoint, user_record, user_name, operator, status, error_code, micros FROM request_log
            WHERE id < \(filter.before ?? Int64.max)
            """
        if let user = filter.user { statement = "\(statement) AND (user_name = \(user) OR user_record = \(user))" }
        if let path = filter.path { statement = "\(statement) AND path LIKE \("%" + Self.likeEscaped(path) + "%") ESCAPE '!'" }
        if let status = filter.status {
            statement = status < 10 ? "\(statement) AND status >= \(status * 100) AND status < \(status * 100 + 100)" : "\(statement) AND status = \(status)"
        }
        if let code = filter.errorCode { statement = "\(statement) AND error_code LIKE \("%" + Self.likeEscaped(code) + "%") ESCAPE '!'" }
        statement = "\(statement) ORDER BY id DESC LIMIT \(filter.limit)"
        return try fetch(statement).map {
            StoredRequest(id: try $0.int64(0), at: try $0.int64(1), node: try $0.string(2), requestID: try $0.string(3), method: try $0.string(4), path: try $0.string(5),
                          endpoint: try $0.string(6), userRecordName: try $0.string(7), userName: try $0.string(8), operatorName: try $0.string(9),
                          status: Int(try $0.int64(10)), errorCode: try $0.string(11), micros: try $0.int64(12))
        }
    }

    /// `text` with `LIKE`'s wildcards and the escape `!` escaped by `!`.
    static func likeEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "!", with: "!!").replacingOccurrences(of: "%", with: "!%").replacingOccurrences(of: "_", with: "!_")
    }

    public func deleteRequests(before: Int64, keepingAtMost: Int64) throws -> Int {
        let old = try run("DELETE FROM request_log WHERE at < \(before)")
        guard let top = try fetch("SELECT max(id) FROM request_log").first?.optionalInt64(0) else { return old }
        return old + (try run("DELETE FROM request_log WHERE id <= \(top - keepingAtMost)"))
    }

    public func insertMetricMinutes(_ minutes: [StoredMetricMinute]) throws {
        for minute in minutes {
            let errors = String(decoding: (try? JSONEncoder().encode(minute.errors)) ?? Data("{}".utf8), as: UTF8.self)
            let latency = "[" + minute.latency.map(String.init).joined(separator: ",") + "]"
            try run("""
                INSERT INTO metric_minutes(node, minute, endpoint, requests, errors, latency)
                VALUES (\(minute.node), \(minute.minute), \(minute.endpoint), \(minute.requests), \(errors), \(latency))
                ON CONFLICT (node, minute, endpoint) DO UPDATE SET requests = excluded.requests, errors = excluded.errors, latency = excluded.latency
                """)
        }
    }

    public func metricMinutes(since minute: Int64) throws -> [StoredMetricMinute] {
        try fetch("SELECT node, minute, endpoint, requests, errors, latency FROM metric_minutes WHERE minute >= \(minute) ORDER BY minute").map {
            StoredMetricMinute(node: try $0.string(0), minute: try $0.int64(1), endpoint: try $0.string(2), requests: try $0.int64(3),
                               errors: (try? JSONDecoder().decode([String: Int64].self, from: Data(try $0.string(4).utf8))) ?? [:],
                               latency: (try? JSONDecoder().decode([Int64].self, from: Data(try $0.string(5).utf8))) ?? [])
        }
    }

    public func storedTotals() throws -> (records: Int64, bytes: Int64) {
        let row = try fetch("SELECT CAST(coalesce(sum(records), 0) AS BIGINT), CAST(coalesce(sum(bytes), 0) AS BIGINT) FROM user_usage").first
        return (try row?.int64(0) ?? 0, try row?.int64(1) ?? 0)
    }

    public func setStorageSample(minute: Int64, records: Int64, bytes: Int64) throws {
        try run("""
            INSERT INTO storage_samples(minute, records, bytes) VALUES (\(minute), \(records), \(bytes))
            ON CONFLICT (minute) DO UPDATE SET records = excluded.records, bytes = excluded.bytes
            """)
    }

    public func storageSamples(since minute: Int64) throws -> [(minute: Int64, records: Int64, bytes: Int64)] {
        try fetch("SELECT minute, records, bytes FROM storage_samples WHERE minute >= \(minute) ORDER BY minute").map {
            (try $0.int64(0), try $0.int64(1), try $0.int64(2))
        }
    }

    public func seeNode(_ node: String, startedAt: Int64, now: Int64) throws {
        try run("""
            INSERT INTO nodes(name, started_at, seen_at) VALUES (\(node), \(startedAt), \(now))
            ON CONFLICT (name) DO UPDATE SET seen_at = excluded.seen_at
            """)
    }

    public func nodes(seenSince since: Int64) throws -> [(name: String, startedAt: Int64, seenAt: Int64)] {
        try fetch("SELECT name, started_at, seen_at FROM nodes WHERE seen_at >= \(since) ORDER BY seen_at DESC, name").map {
            (try $0.string(0), try $0.int64(1), try $0.int64(2))
        }
    }

    public func deleteMetrics(before: Int64) throws {
        try run("DELETE FROM metric_minutes WHERE minute < \(before / 60_000)")
        try run("DELETE FROM storage_samples WHERE minute < \(before / 60_000)")
        try run("DELETE FROM nodes WHERE seen_at < \(before)")
    }

    public func insertAuditEntry(_ entry: AuditEntry) throws {
        try run("INSERT INTO operator_audit(operator, at, action, target) VALUES (\(entry.operatorName), \(entry.at), \(entry.action), \(entry.target))")
    }

    public func auditEntries(limit: Int) throws -> [AuditEntry] {
        try fetch("SELECT operator, at, action, target FROM operator_audit ORDER BY id DESC LIMIT \(limit)").map {
            AuditEntry(operatorName: try $0.string(0), at: try $0.int64(1), action: try $0.string(2), target: try $0.string(3))
        }
    }

    public func containerKey(named name: String, environment: String) throws -> Int64? {
        try fetch("SELECT id FROM containers WHERE name = \(name) AND environment = \(environment)").first?.int64(0)
    }

    public func containerNames() throws -> [(name: String, environment: String, locked: Bool)] {
        try fetch("SELECT name, environment, schema_locked FROM containers ORDER BY name, environment").map {
            (try $0.string(0), try $0.string(1), try $0.bool(2))
        }
    }

    public func deleteUser(_ key: Int64) throws {
        try run("DELETE FROM request_log WHERE user_record = (SELECT record_name FROM users WHERE id = \(key))")
        try run("DELETE FROM user_usage WHERE user_record = (SELECT record_name FROM users WHERE id = \(key))")
        try run("DELETE FROM tokens WHERE user_id = \(key)")
        try run("DELETE FROM identities WHERE user_id = \(key)")
        try run("DELETE FROM account_codes WHERE email = (SELECT email FROM accounts WHERE user_id = \(key))")
        try run("DELETE FROM accounts WHERE user_id = \(key)")
        try run("DELETE FROM server_keys WHERE user_id = \(key)")
        try run("DELETE FROM subscriptions WHERE user_id = \(key)")
        try run("DELETE FROM push_deliveries WHERE token IN (SELECT token FROM push_tokens WHERE user_id = \(key))")
        try run("DELETE FROM push_tokens WHERE user_id = \(key)")
        try run("DELETE FROM notifications WHERE user_id = \(key)")
        try run("DELETE FROM asset_receipts WHERE user_id = \(key)")
        try run("DELETE FROM user_roles WHERE user_id = \(key)")
        try run("DELETE FROM share_participants WHERE user_id = \(key)")
        try run("DELETE FROM users WHERE id = \(key)")
    }

    public func insertServerKey(_ key: StoredServerKey, userKey: Int64) throws {
        try run("""
            INSERT INTO server_keys(id, user_id, name, public_key, created_at) VALUES (\(key.id), \(userKey), \(key.name), \(key.publicKey), \(key.createdAt))
            """)
    }

    public func serverKey(id: String) throws -> (key: StoredServerKey, user: User)? {
        try fetch("""
            SELECT k.name, k.public_key, k.created_at, u.id, u.name, u.record_name FROM server_keys k JOIN users u ON u.id = k.user_id WHERE k.id = \(id)
            """).first.map {
            (StoredServerKey(id: id, name: try $0.string(0), publicKey: try $0.data(1), createdAt: try $0.int64(2)),
             User(id: try $0.int64(3), name: try $0.string(4), userRecordName: try $0.string(5)))
        }
    }

    public func serverKeys(ofUser key: Int64) throws -> [StoredServerKey] {
        try fetch("SELECT id, name, public_key, created_at FROM server_keys WHERE user_id = \(key) ORDER BY name")
            .map { StoredServerKey(id: try $0.string(0), name: try $0.string(1), publicKey: try $0.data(2), createdAt: try $0.int64(3)) }
    }

    public func deleteServerKey(named name: String, ofUser key: Int64) throws -> Bool {
        try run("DELETE FROM server_keys WHERE user_id = \(key) AND name = \(name)") > 0
    }

    public func insertAPIToken(_ token: StoredAPIToken) throws {
        try run("""
            INSERT INTO api_tokens(hash, container, environment, name, origins, created_at, sign_in_callback)
            VALUES (\(token.hash), \(token.container), \(token.environment), \(token.name), \(token.originsText), \(token.createdAt),
                    \(token.signInCallback))
            """)
    }

    public func apiToken(forHash hash: Data) throws -> StoredAPIToken? {
        try fetch("SELECT hash, name, container, environment, origins, created_at, sign_in_callback FROM api_tokens WHERE hash = \(hash)").first.map(Self.apiToken)
    }

    public func apiTokens() throws -> [StoredAPIToken] {
        try fetch("SELECT hash, name, container, environment, origins, created_at, sign_in_callback FROM api_tokens ORDER BY container, environment, name").map(Self.apiToken)
    }

    static func apiToken(_ row: SQLRow) throws -> StoredAPIToken {
        StoredAPIToken(hash: try row.data(0), name: try row.string(1), container: try row.string(2), environment: try row.string(3),
                       origins: StoredAPIToken.origins(fromText: try row.string(4)), createdAt: try row.int64(5),
                       signInCallback: try row.optionalString(6))
    }

    public func deleteAPIToken(named name: String, container: String, environment: String) throws -> Bool {
        try run("DELETE FROM api_tokens WHERE container = \(container) AND environment = \(environment) AND name = \(name)") > 0
    }

    public func insertSignInFlow(_ flow: StoredSignInFlow, forgetBefore: Int64) throws {
        try run("DELETE FROM sign_in_flows WHERE created_at < \(forgetBefore)")
        try run("""
            INSERT INTO sign_in_flows(state_hash, container, environment, api_token, origin, provider, nonce, verifier, browser_hash, created_at)
            VALUES (\(flow.stateHash), \(flow.container), \(flow.environment), \(flow.apiToken), \(flow.origin), \(flow.provider), \(flow.nonce),
                    \(flow.verifier), \(flow.browserHash), \(flow.createdAt))
            """)
    }

    public func takeSignInFlow(stateHash: Data) throws -> StoredSignInFlow? {
        let flow = try fetch("""
            SELECT container, environment, api_token, origin, provider, nonce, verifier, browser_hash, created_at FROM sign_in_flows
            WHERE state_hash = \(stateHash)
            """).first.map {
            StoredSignInFlow(stateHash: stateHash, container: try $0.string(0), environment: try $0.string(1), apiToken: try $0.string(2),
                             origin: try $0.optionalString(3), provider: try $0.string(4), nonce: try $0.string(5), verifier: try $0.string(6),
                             browserHash: try $0.data(7), createdAt: try $0.int64(8))
        }
        // Taken once: of two requests with the same state, only the one that deletes the row
        // gets the flow.
        guard let flow, try run("DELETE FROM sign_in_flows WHERE state_hash = \(stateHash)") > 0 else { return nil }
        return flow
    }

    public func noteSignature(_ hash: Data, now: Int64, forgetBefore: Int64) throws -> Bool {
        try run("DELETE FROM signatures_seen WHERE seen_at < \(forgetBefore)")
        return try run("INSERT INTO signatures_seen(hash, seen_at) VALUES (\(hash), \(now)) ON CONFLICT DO NOTHING") > 0
    }

    public func profile(ofUser key: Int64) throws -> UserProfile {
        try fetch("SELECT email, given_name, family_name, discoverable FROM users WHERE id = \(key)").first.map {
            UserProfile(email: try $0.optionalString(0), givenName: try $0.optionalString(1), familyName: try $0.optionalString(2), discoverable: try $0.bool(3))
        } ?? UserProfile()
    }

    public func setProfile(_ profile: UserProfile, ofUser key: Int64) throws {
        try run("""
            UPDATE users SET email = \(profile.email), given_name = \(profile.givenName), family_name = \(profile.familyName),
                discoverable = \(profile.discoverable) WHERE id = \(key)
            """)
    }

    public func users(withEmails emails: [String]) throws -> [(user: User, profile: UserProfile)] {
        try users(where: "email", in: emails)
    }

    public func users(withRecordNames names: [String]) throws -> [(user: User, profile: UserProfile)] {
        try users(where: "record_name", in: names)
    }

    private func users(where column: String, in values: [String]) throws -> [(user: User, profile: UserProfile)] {
        guard !values.isEmpty else { return [] }
        return try fetch("""
            SELECT id, name, record_name, email, given_name, family_name, discoverable FROM users WHERE \(SQLStatement.member(column, of: values, in: dialect))
            """).map {
            (User(id: try $0.int64(0), name: try $0.string(1), userRecordName: try $0.string(2)),
             UserProfile(email: try $0.optionalString(3), givenName: try $0.optionalString(4), familyName: try $0.optionalString(5), discoverable: try $0.bool(6)))
        }
    }
}
