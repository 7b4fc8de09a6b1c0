import Foundation
import RecordModel
import RecordStorage

/// What an operator may do through the API (docs/deploying.md, "Operators").
public enum OperatorScope: String, Sendable, Hashable, CaseIterable, Codable {
    /// Read any database as any user (`X-RecordSync-Act-As`), and the users' list.
    case read
    /// Read, and write as any user: what they save is theirs (`modifiedBy`), the audit log
    /// names the operator.
    case write
    /// The containers' schemas.
    case schema
    /// Users and accounts: list, delete, invite, verify.
    case users
    /// Everything, the audit log included.
    case all
}

/// How long a web console's session lasts (docs/console.md, "Signing in").
public struct ConsoleSessionLimits: Sendable, Hashable {
    /// However it is used, a session ends this long after the sign-in.
    public var lifetime: Duration = .seconds(12 * 60 * 60)
    /// A session unused this long ends.
    public var idle: Duration = .seconds(30 * 60)

    public init(lifetime: Duration = .seconds(12 * 60 * 60), idle: Duration = .seconds(30 * 60)) {
        self.lifetime = lifetime
        self.idle = idle
    }
}

/// An operator, as a request's secret proved it.
public struct Operator: Sendable, Hashable {
    public var name: String
    public var scopes: Set<OperatorScope>

    public init(name: String, scopes: Set<OperatorScope>) {
        self.name = name
        self.scopes = scopes
    }

    /// Whether the operator may do what `scope` covers (`all` covers everything; `write`
    /// covers `read`).
    public func allows(_ scope: OperatorScope) -> Bool {
        scopes.contains(.all) || scopes.contains(scope) || (scope == .read && scopes.contains(.write))
    }

    /// `ACCESS_DENIED` naming the scope unless the operator holds it.
    public func require(_ scope: OperatorScope, for what: String) throws {
        guard allows(scope) else {
            throw RecordSyncError(.accessDenied, "operator \(NameRules.quoted(name)) may not \(what): that needs the scope \(scope.rawValue) (it has \(scopes.map(\.rawValue).sorted().joined(separator: ", ")))")
        }
    }
}

extension RecordStore {
    /// Makes a named operator holding the secret whose SHA-256 is `secretHash`.
    ///
    /// - Throws: `EXISTS` for a name taken; `BAD_REQUEST` for a bad name or no scope.
    @discardableResult
    public func createOperator(named name: String, secretHash: Data, scopes: Set<OperatorScope>) async throws -> Operator {
        if let problem = NameRules.problem(withName: name, kind: "operator name") { throw RecordSyncError(.badRequest, problem) }
        guard !scopes.isEmpty else { throw RecordSyncError(.badRequest, "an operator needs a scope: read, write, schema, users or all") }
        let now = Self.now()
        return try await engine.write { transaction in
            if try transaction.storedOperators().contains(where: { $0.name == name }) {
                throw RecordSyncError(.exists, "there is an operator \(NameRules.quoted(name)) already; revoke it first or choose another name")
            }
            try transaction.insertOperator(StoredOperator(name: name, secretHash: secretHash, scopes: scopes.map(\.rawValue).sorted(), createdAt: now))
            return .commit(Operator(name: name, scopes: scopes))
        }
    }

    /// Every operator, by name, with when it was made.
    public func operators() async throws -> [(operator: Operator, createdAt: Int64)] {
        try await engine.read { transaction in
            try transaction.storedOperators().map { (Self.operatorValue($0), $0.createdAt) }
        }
    }

    /// Revokes an operator: its secret is refused from the next request on, on every server
    /// (operators' secrets are read from the store at each request, never kept).
    ///
    /// - Throws: `NOT_FOUND` for no such operator.
    public func revokeOperator(named name: String) async throws {
        try await engine.write { transaction in
            guard try transaction.deleteOperator(named: name) else {
                throw RecordSyncError(.notFound, "there is no operator \(NameRules.quoted(name))")
            }
            _ = try transaction.deleteConsoleSessions(endedBefore: Self.now(), idleSince: 0, ofOperator: name)
            return .commit(())
        }
    }

    /// The operator holding the secret whose SHA-256 is `secretHash`, or `nil`.
    public func checkOperator(secretHash: Data) async throws -> Operator? {
        try await engine.read { transaction in try transaction.storedOperator(secretHash: secretHash).map(Self.operatorValue) }
    }

    // MARK: Console sessions

    /// Signs an operator in to the web console: when `name` holds the secret whose SHA-256 is
    /// `secretHash`, stores a session for the cookie whose SHA-256 is `tokenHash` (ending after
    /// `limits.lifetime`, or `limits.idle` unused), records the sign-in in the audit log and
    /// answers the operator; else `nil`, storing nothing. Sessions that ended are removed on
    /// the way.
    public func openConsoleSession(operatorName name: String, secretHash: Data, tokenHash: Data, limits: ConsoleSessionLimits) async throws -> Operator? {
        let now = Self.now()
        return try await engine.write { transaction in
            guard let stored = try transaction.storedOperator(secretHash: secretHash), stored.name == name else { return .rollback(nil) }
            _ = try transaction.deleteConsoleSessions(endedBefore: now, idleSince: now - limits.idle.milliseconds, ofOperator: nil)
            try transaction.insertConsoleSession(StoredConsoleSession(tokenHash: tokenHash, operatorName: name, createdAt: now, seenAt: now,
                                                                      expiresAt: now + limits.lifetime.milliseconds))
            try transaction.insertAuditEntry(AuditEntry(operatorName: name, at: now, action: "console sign-in", target: ""))
            return .commit(Self.operatorValue(stored))
        }
    }

    /// The operator a console session signed in, as stored now (its scopes of this moment), or
    /// `nil` when the session is unknown, ended, idle past `limits.idle` or its operator revoked.
    /// A session used more than a minute after its last use is marked used now.
    public func consoleOperator(tokenHash: Data, limits: ConsoleSessionLimits) async throws -> Operator? {
        let now = Self.now()
        guard let (session, stored) = try await engine.read({ transaction in try transaction.consoleSession(tokenHash: tokenHash) }),
              session.expiresAt > now, session.seenAt > now - limits.idle.milliseconds else { return nil }
        if session.seenAt < now - 60_000 {
            try await engine.write { transaction in
                try transaction.touchConsoleSession(tokenHash: tokenHash, at: now)
                return .commit(())
            }
        }
        return Self.operatorValue(stored)
    }

    /// Ends a console session (signing out), recording it in the audit log; `false` when there
    /// was none.
    @discardableResult
    public func closeConsoleSession(tokenHash: Data) async throws -> Bool {
        let now = Self.now()
        return try await engine.write { transaction in
            guard let (session, _) = try transaction.consoleSession(tokenHash: tokenHash), try transaction.deleteConsoleSession(tokenHash: tokenHash) else {
                return .rollback(false)
            }
            try transaction.insertAuditEntry(AuditEntry(operatorName: session.operatorName, at: now, action: "console sign-out", target: ""))
            return .commit(true)
        }
    }

    /// Records what an operator did through the API.
    public func audit(_ operatorName: String, action: String, target: String) async throws {
        let entry = AuditEntry(operatorName: operatorName, at: Self.now(), action: action, target: target)
        try await engine.write { transaction in
            try transaction.insertAuditEntry(entry)
            return .commit(())
        }
    }

    /// The newest `limit` entries of the audit log, newest first.
    public func auditLog(limit: Int) async throws -> [AuditEntry] {
        try await engine.read { transaction in try transaction.auditEntries(limit: max(1, min(limit, 10_000))) }
    }

    /// Every container in each environment something was stored in, by name, and whether its
    /// schema is locked.
    public func containers() async throws -> [(name: String, environment: String, locked: Bool)] {
        try await engine.read { transaction in try transaction.containerNames() }
    }

    /// The schema of a container in an environment: each record type's fields and their types,
    /// as records saved so far made them.
    public func schema(ofContainer container: String, environment: String) async throws -> [String: [String: FieldType]] {
        try await engine.read { transaction in
            guard let key = try transaction.containerKey(named: container, environment: environment) else { return [:] }
            return try transaction.schemas(inContainer: key)
        }
    }

    private static func operatorValue(_ stored: StoredOperator) -> Operator {
        Operator(name: stored.name, scopes: Set(stored.scopes.compactMap(OperatorScope.init(rawValue:))))
    }
}
