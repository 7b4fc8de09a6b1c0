import Foundation
import Hummingbird
import NIOCore
import RecordModel
import RecordRules

/// The operators' API (docs/protocol.md, "Operators"), under `/admin/1/`, for a named
/// operator's secret (`Authorization: Bearer rsop_…`) or a web console's session
/// (``ConsoleSessions``) only; each request is checked against the operator's scopes and
/// recorded in the audit log with its name. (On the database API an operator acts as a user:
/// ``DatabaseRoutes``.)
struct AdminRoutes: Sendable {
    let store: RecordStore
    let accounts: Accounts
    /// The console's sessions, when the console is on.
    let console: ConsoleSessions?
    /// The request log this node writes, when the console is on.
    let journal: RequestJournal?
    /// The identity providers users sign in with, by name, and whether the web sign-in page
    /// offers each.
    var providers: [AdminProvider] = []

    func register(on router: Router<RequestContextWithAddress>) {
        route(router, .get, "operator", needs: nil) { caller, _, _ in
            try JSONBody.response(OperatorInfo(name: caller.name, scopes: caller.scopes.map(\.rawValue).sorted()))
        }
        route(router, .get, "containers", needs: nil) { _, _, _ in
            let containers = try await store.containers().map { AdminContainer(name: $0.name, environment: $0.environment, schemaLocked: $0.locked) }
            return try JSONBody.response(["containers": containers])
        }
        // The request log (with the console): the newest requests of every node, filtered.
        route(router, .get, "requests", needs: .read) { _, _, request in
            guard let journal else {
                throw RecordSyncError(.badRequest, "this server keeps no request log: it is kept with the console (recordserver serve --console)")
            }
            // What this node holds yet is written first, so that a request just answered is found.
            await journal.flush()
            let query = request.uri.queryParameters
            let text = { (name: String) -> String? in query.get(name).flatMap { $0.isEmpty ? nil : $0 } }
            let filter = RequestLogFilter(user: text("user"), path: text("path"), status: text("status").flatMap { Int($0) }, errorCode: text("code"),
                                          before: text("before").flatMap { Int64($0) }, limit: text("limit").flatMap { Int($0) } ?? 100)
            return try JSONBody.response(AdminRequests(node: journal.node, requests: try await store.requestLog(matching: filter)))
        }
        // The charts' figures (with the console): the last `minutes` (60) minutes of every node.
        route(router, .get, "metrics", needs: .read) { _, _, request in
            guard let journal else {
                throw RecordSyncError(.badRequest, "this server keeps no figures for charts: they are kept with the console (recordserver serve --console)")
            }
            let minutes = request.uri.queryParameters.get("minutes").flatMap { Int($0) } ?? 60
            guard (1...1440).contains(minutes) else { throw RecordSyncError(.badRequest, "minutes must be between 1 and 1440, not \(minutes)") }
            return try JSONBody.response(try await store.metrics(lastMinutes: minutes, current: journal.currentMinutes()))
        }
        // Who there is to act as: for reading as a user (`read`) as for managing users.
        route(router, .get, "users", needs: .users, or: .read) { _, _, _ in
            var users: [AdminUser] = []
            for (user, createdAt, tokens) in try await store.users() {
                users.append(AdminUser(name: user.name, userRecordName: user.userRecordName, createdAt: createdAt, tokens: tokens,
                                       signsInWith: try await store.signInMethods(of: user)))
            }
            return try JSONBody.response(["users": users])
        }
        // One user: how they sign in, their tokens and keys, what they store against the quota.
        route(router, .get, "users/detail", needs: .users) { _, _, request in
            guard let name = request.uri.queryParameters.get("name"), let user = try await store.user(named: name) else {
                throw RecordSyncError(.notFound, "there is no user \(NameRules.quoted(request.uri.queryParameters.get("name") ?? ""))")
            }
            let usage = try await store.usage(ofUserNamed: name)
            let quota = store.limits.quota
            return try JSONBody.response(AdminUserDetail(
                name: user.name, userRecordName: user.userRecordName, signsInWith: try await store.signInMethods(of: user),
                identities: try await store.identities(of: user).map { AdminIdentity(provider: $0.provider, email: $0.email, emailVerified: $0.emailVerified, createdAt: $0.createdAt) },
                tokens: try await store.tokens(ofUserNamed: name).map { AdminToken(name: $0.name, createdAt: $0.createdAt, expiresAt: $0.expiresAt) },
                serverKeys: try await store.serverKeys(ofUserNamed: name).map { AdminServerKey(id: $0.id, name: $0.name, createdAt: $0.createdAt) },
                usage: AdminUsage(records: usage.records, bytes: usage.bytes), quota: AdminQuota(records: quota.records, bytes: quota.bytes)))
        }
        // A new user, and their first token (shown once, in this answer only).
        route(router, .post, "users/create", needs: .users) { _, body, _ in
            let request = try JSONBody.decode(AdminTokenRequest.self, from: body)
            let token = Credentials.newToken()
            let user = try await store.createUser(named: request.name, tokenHash: Credentials.hash(token), tokenName: request.tokenName,
                                                  expiresAt: try Self.expiry(days: request.days))
            return try JSONBody.response(AdminIssuedToken(name: user.name, userRecordName: user.userRecordName, tokenName: request.tokenName ?? "token-1", token: token))
        }
        // Another named token (shown once), and revoking one: it stops working on every node.
        route(router, .post, "users/tokens/create", needs: .users) { _, body, _ in
            let request = try JSONBody.decode(AdminTokenRequest.self, from: body)
            let token = Credentials.newToken()
            let tokenName = try await store.addToken(forUserNamed: request.name, tokenHash: Credentials.hash(token), tokenName: request.tokenName,
                                                     expiresAt: try Self.expiry(days: request.days))
            guard let user = try await store.user(named: request.name) else { throw RecordSyncError(.notFound, "there is no user \(NameRules.quoted(request.name))") }
            return try JSONBody.response(AdminIssuedToken(name: user.name, userRecordName: user.userRecordName, tokenName: tokenName, token: token))
        }
        route(router, .post, "users/tokens/revoke", needs: .users) { _, body, _ in
            let request = try JSONBody.decode(AdminTokenRequest.self, from: body)
            guard let tokenName = request.tokenName else { throw RecordSyncError(.badRequest, "missing field tokenName") }
            try await store.revokeToken(named: tokenName, ofUserNamed: request.name)
            return try JSONBody.response(["revoked": tokenName])
        }
        // `?dryRun=true`: what would go, nothing deleted.
        route(router, .post, "users/delete", needs: .users) { _, body, request in
            let given = try JSONBody.decode(AdminNamedRequest.self, from: body)
            let deletion = try await store.deleteUser(named: given.name, dryRun: Self.flag("dryRun", of: request))
            return try JSONBody.response(AdminUserDeletion(deleted: deletion.user.userRecordName, databases: deletion.databases, zones: deletion.zones,
                                                           assets: deletion.assets.count, applied: !Self.flag("dryRun", of: request)))
        }
        route(router, .post, "accounts/invite", needs: .users) { _, body, _ in
            let request = try JSONBody.decode(AdminInviteRequest.self, from: body)
            let days = request.days ?? 7
            guard (1...365).contains(days) else { throw RecordSyncError(.badRequest, "days must be between 1 and 365, not \(days)") }
            return try JSONBody.response(["invitation": try await accounts.invite(email: request.email, lifetime: .seconds(days * 24 * 60 * 60))])
        }
        route(router, .post, "accounts/verify", needs: .users) { _, body, _ in
            let request = try JSONBody.decode(ResetRequest.self, from: body)
            return try JSONBody.response(["user": try await accounts.verifyWithoutCode(email: request.email).name])
        }
        // Another user's identities and account moved into a user (`user link`).
        route(router, .post, "users/link", needs: .users) { _, body, _ in
            let request = try JSONBody.decode(AdminLinkRequest.self, from: body)
            let moved = try await store.linkUser(named: request.source, into: request.name)
            return try JSONBody.response(AdminLinked(name: request.name, source: request.source, identities: moved.identities, account: moved.account))
        }
        // A user's server-to-server keys (docs/protocol.md, "Server-to-server keys").
        route(router, .post, "users/keys/add", needs: .users) { _, body, _ in
            let request = try JSONBody.decode(AdminKeyRequest.self, from: body)
            guard let pem = request.publicKeyPEM else { throw RecordSyncError(.badRequest, "missing field publicKeyPEM (the key's public half, -----BEGIN PUBLIC KEY-----)") }
            let id = try await store.addServerKey(forUserNamed: request.name, keyName: request.keyName, publicKeyPEM: pem)
            return try JSONBody.response(["keyID": id])
        }
        route(router, .post, "users/keys/revoke", needs: .users) { _, body, _ in
            let request = try JSONBody.decode(AdminKeyRequest.self, from: body)
            guard let keyName = request.keyName else { throw RecordSyncError(.badRequest, "missing field keyName") }
            try await store.revokeServerKey(named: keyName, ofUserNamed: request.name)
            return try JSONBody.response(["revoked": keyName])
        }
        // How users get in: the sign-up mode, the identity providers, the API tokens.
        route(router, .get, "access", needs: .users, or: .read) { _, _, _ in
            let tokens = try await store.apiTokens().map {
                AdminAPIToken(name: $0.name, container: $0.container, environment: $0.environment, origins: $0.origins, signInCallback: $0.signInCallback,
                              createdAt: $0.createdAt)
            }
            return try JSONBody.response(AdminAccess(signUp: accounts.settings.signUp.rawValue, providers: providers, apiTokens: tokens))
        }
        // API tokens: what every page using one may do is the container's to decide (`all`).
        route(router, .post, "apitokens/create", needs: .all) { _, body, _ in
            let request = try JSONBody.decode(AdminAPITokenRequest.self, from: body)
            let token = Credentials.newAPIToken()
            let stored = try await store.createAPIToken(named: request.name, container: request.container, environment: request.environment,
                                                        origins: request.origins ?? [], signInCallback: request.signInCallback, tokenHash: Credentials.hash(token))
            return try JSONBody.response(AdminIssuedAPIToken(name: stored.name, container: stored.container, environment: stored.environment, token: token))
        }
        route(router, .post, "apitokens/revoke", needs: .all) { _, body, _ in
            let request = try JSONBody.decode(AdminAPITokenRequest.self, from: body)
            guard let name = request.name else { throw RecordSyncError(.badRequest, "missing field name") }
            try await store.revokeAPIToken(named: name, container: request.container, environment: request.environment)
            return try JSONBody.response(["revoked": name])
        }
        // Operators: only one holding `all` sees or changes them.
        route(router, .get, "operators", needs: .all) { _, _, _ in
            let operators = try await store.operators().map {
                AdminOperator(name: $0.operator.name, scopes: $0.operator.scopes.map(\.rawValue).sorted(), createdAt: $0.createdAt)
            }
            return try JSONBody.response(["operators": operators])
        }
        route(router, .post, "operators/create", needs: .all) { _, body, _ in
            let request = try JSONBody.decode(AdminOperatorRequest.self, from: body)
            var scopes = Set<OperatorScope>()
            for name in request.scopes ?? [] {
                guard let scope = OperatorScope(rawValue: name) else {
                    throw RecordSyncError(.badRequest, "\(NameRules.quoted(name)) is not a scope: read, write, schema, users or all")
                }
                scopes.insert(scope)
            }
            let secret = Credentials.newOperatorSecret()
            let made = try await store.createOperator(named: request.name, secretHash: Credentials.hash(secret), scopes: scopes)
            return try JSONBody.response(AdminIssuedSecret(name: made.name, scopes: made.scopes.map(\.rawValue).sorted(), secret: secret))
        }
        route(router, .post, "operators/revoke", needs: .all) { caller, body, _ in
            let request = try JSONBody.decode(AdminNamedRequest.self, from: body)
            guard request.name != caller.name else {
                throw RecordSyncError(.badRequest, "an operator cannot revoke itself: sign in as another operator holding all to revoke \(NameRules.quoted(caller.name))")
            }
            try await store.revokeOperator(named: request.name)
            return try JSONBody.response(["revoked": request.name])
        }
        route(router, .get, "audit", needs: .all) { _, _, request in
            let limit = request.uri.queryParameters.get("limit").flatMap { Int($0) } ?? 100
            let entries = try await store.auditLog(limit: limit).map { AdminAuditEntry(operator: $0.operatorName, at: $0.at, action: $0.action, target: $0.target) }
            return try JSONBody.response(["entries": entries])
        }
        // The schema as it is: for reading records (`read`) as for changing it.
        route(router, .get, ":container/:environment/schema", needs: .schema, or: .read) { _, _, request in
            let (container, environment) = try Self.containerAndEnvironment(of: request)
            // `?format=ckdb`: the schema in CloudKit's schema language, as cktool exports it.
            if request.uri.queryParameters.get("format") == "ckdb" {
                return Self.schemaFile(try await store.cloudKitSchema(ofContainer: container, environment: environment))
            }
            let schema = try await store.schema(ofContainer: container, environment: environment)
            let types = schema.keys.sorted().map { type in
                AdminRecordType(name: type, fields: schema[type, default: [:]].keys.sorted().map { AdminField(name: $0, type: schema[type]![$0]!.description) })
            }
            return try JSONBody.response(["recordTypes": types])
        }
        // The schema lifecycle (docs/protocol.md, "The schema API"): a schema file in, a plan out.
        route(router, .post, ":container/:environment/schema/validate", needs: .schema, maximumBody: Self.maximumSchemaBytes) { _, body, request in
            _ = try Self.containerAndEnvironment(of: request)
            let schema = try RecordStore.readSchema(String(decoding: body, as: UTF8.self))
            return try JSONBody.response(SchemaValidation(recordTypes: schema.recordTypes.count, roles: schema.roles.count))
        }
        route(router, .post, ":container/:environment/schema/import", needs: .schema, maximumBody: Self.maximumSchemaBytes) { caller, body, request in
            let container = try Self.containerAndEnvironment(of: request, only: "development", for: "import (import into development, then deploy to production)")
            let schema = try RecordStore.readSchema(String(decoding: body, as: UTF8.self))
            return try JSONBody.response(try await store.importSchema(schema, intoContainer: container, by: caller.name, dryRun: Self.flag("dryRun", of: request),
                                                                      deletingRecords: Self.flag("deleteRecords", of: request)))
        }
        route(router, .post, ":container/:environment/schema/reset", needs: .schema) { caller, _, request in
            let container = try Self.containerAndEnvironment(of: request, only: "development", for: "reset (development is reset to production's schema)")
            return try JSONBody.response(try await store.resetSchema(ofContainer: container, by: caller.name, dryRun: Self.flag("dryRun", of: request)))
        }
        route(router, .get, ":container/:environment/schema/diff", needs: .schema) { _, _, request in
            let container = try Self.containerAndEnvironment(of: request, only: "production", for: "diff (what deploying development's schema to production changes)")
            return try JSONBody.response(SchemaPlan(changes: try await store.deploymentChanges(ofContainer: container), applied: false))
        }
        route(router, .post, ":container/:environment/schema/deploy", needs: .schema) { caller, _, request in
            let container = try Self.containerAndEnvironment(of: request, only: "production", for: "deploy (development's schema is deployed to production)")
            return try JSONBody.response(try await store.deploySchema(ofContainer: container, by: caller.name, confirmed: Self.flag("confirm", of: request)))
        }
        route(router, .post, ":container/:environment/schema/lock", needs: .schema) { caller, _, request in
            let (container, environment) = try Self.containerAndEnvironment(of: request)
            try await store.lockSchema(ofContainer: container, environment: environment, by: caller.name)
            return try JSONBody.response(["locked": true])
        }
        // Security roles (docs/protocol.md, "Security roles"): who holds each role of the schema.
        route(router, .get, ":container/:environment/roles", needs: .users) { _, _, request in
            let (container, environment) = try Self.containerAndEnvironment(of: request)
            return try JSONBody.response(["roles": try await store.roles(ofContainer: container, environment: environment)])
        }
        for (path, held) in [("give", true), ("take", false)] {
            route(router, .post, ":container/:environment/roles/\(path)", needs: .users) { _, body, request in
                let (container, environment) = try Self.containerAndEnvironment(of: request)
                let given = try JSONBody.decode(AdminRoleRequest.self, from: body)
                let changed = try await store.setRole(given.role, held: held, user: given.name, container: container, environment: environment)
                return try JSONBody.response(["changed": changed])
            }
        }
        route(router, .get, ":container/:environment/schema/history", needs: .schema) { _, _, request in
            let (container, environment) = try Self.containerAndEnvironment(of: request)
            let limit = request.uri.queryParameters.get("limit").flatMap { Int($0) } ?? 100
            return try JSONBody.response(["history": try await store.schemaHistory(ofContainer: container, environment: environment, limit: limit)])
        }
    }

    /// When a token given `days` ends (`nil`: never).
    static func expiry(days: Int?) throws -> Int64? {
        guard let days else { return nil }
        guard (1...3650).contains(days) else { throw RecordSyncError(.badRequest, "days must be between 1 and 3650, not \(days)") }
        return Int64((Date().timeIntervalSince1970 + Double(days) * 86_400) * 1000)
    }

    /// The largest schema file taken (a few thousand types).
    static let maximumSchemaBytes = 4 << 20

    /// The container and environment the path names, percent-decoded (the router's own
    /// parameters are as sent), each checked.
    static func containerAndEnvironment(of request: Request) throws -> (String, String) {
        let parts = request.uri.path.split(separator: "/").map { $0.removingPercentEncoding ?? String($0) }
        let (container, environment) = (parts[2], parts[3])
        if let problem = NameRules.problem(withName: container, kind: "container") { throw RecordSyncError(.badRequest, problem) }
        guard ["development", "production"].contains(environment) else {
            throw RecordSyncError(.badRequest, "the environment must be development or production, not \(NameRules.quoted(environment))")
        }
        return (container, environment)
    }

    /// The container the path names, for an action only `environment` takes.
    static func containerAndEnvironment(of request: Request, only environment: String, for action: String) throws -> String {
        let (container, given) = try containerAndEnvironment(of: request)
        guard given == environment else { throw RecordSyncError(.badRequest, "\(action) is a route of \(environment), not \(given)") }
        return container
    }

    /// A query flag: `true`, `1` or present without a value.
    static func flag(_ name: String, of request: Request) -> Bool {
        guard let value = request.uri.queryParameters.get(name) else { return false }
        return ["", "1", "true", "yes"].contains(value.lowercased())
    }

    /// A schema as a file of the schema language.
    static func schemaFile(_ schema: CloudKitSchema) -> Response {
        Response(status: .ok, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
                 body: ResponseBody(byteBuffer: ByteBuffer(string: schema.written)))
    }

    /// A route for operators holding `scope` (`nil`: any operator), or `orScope` beside it,
    /// recorded in the audit log.
    private func route(_ router: Router<RequestContextWithAddress>, _ method: HTTPRequest.Method, _ path: String, needs scope: OperatorScope?,
                       or orScope: OperatorScope? = nil, maximumBody: Int = 64 * 1024,
                       _ handle: @escaping @Sendable (Operator, Data, Request) async throws -> Response) {
        router.on(RouterPath("/admin/1/\(path)"), method: method) { request, context in
            let body = Data(buffer: try await request.body.collect(upTo: maximumBody))
            let caller = try await Self.caller(of: request, peer: context.remoteAddress?.ipAddress, store: store, console: console)
            RequestNotes.sender(operator: caller.name)
            if let scope, !(orScope.map(caller.allows) ?? false) { try caller.require(scope, for: "\(method.rawValue) /admin/1/\(path)") }
            try await store.audit(caller.name, action: "\(method.rawValue) \(request.uri.path)", target: Self.target(of: body))
            return try await handle(caller, body, request)
        }
    }

    /// The operator whose secret the request carries, else whose console session (with the
    /// console's CSRF header) it carries.
    static func caller(of request: Request, peer: String?, store: RecordStore, console: ConsoleSessions?) async throws -> Operator {
        guard let header = request.headers[.authorization] else {
            if let console, let found = try await console.caller(of: request, peer: peer) { return found }
            throw RecordSyncError(.authenticationRequired, "the operators' API needs an operator's secret: 'Authorization: Bearer rsop_…' (recordserver operator add)")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].isEmpty else {
            throw RecordSyncError(.authenticationFailed, "the Authorization header must be 'Bearer SECRET'")
        }
        let secret = String(parts[1])
        guard Credentials.isOperatorSecret(secret) else {
            throw RecordSyncError(.accessDenied, "a user's token cannot use the operators' API: it needs an operator's secret (rsop_…)")
        }
        guard let found = try await store.checkOperator(secretHash: Credentials.hash(secret)) else {
            throw RecordSyncError(.authenticationFailed, "the operator's secret is not valid (never issued, or revoked)")
        }
        return found
    }

    /// What an audit entry says a request was about: its body's `name` or `email`, if any.
    static func target(of body: Data) -> String {
        guard case .object(let members)? = try? JSONDecoder().decode(JSONValue.self, from: body) else { return "" }
        for key in ["name", "email"] {
            if case .string(let value)? = members[key] { return value }
        }
        return ""
    }
}

struct OperatorInfo: Codable { var name: String; var scopes: [String] }
struct AdminUser: Codable { var name, userRecordName: String; var createdAt: Int64; var tokens: Int; var signsInWith: [String] }
struct AdminRequests: Encodable { var node: String; var requests: [StoredRequest] }
struct AdminContainer: Codable { var name, environment: String; var schemaLocked: Bool }
struct AdminNamedRequest: Codable { var name: String }
struct AdminUserDeletion: Codable { var deleted: String; var databases, zones, assets: Int; var applied: Bool }
struct AdminTokenRequest: Codable { var name: String; var tokenName: String?; var days: Int? }
struct AdminIssuedToken: Codable { var name, userRecordName, tokenName, token: String }
struct AdminUserDetail: Codable {
    var name, userRecordName: String
    var signsInWith: [String]
    var identities: [AdminIdentity]
    var tokens: [AdminToken]
    var serverKeys: [AdminServerKey]
    var usage: AdminUsage
    var quota: AdminQuota
}
struct AdminIdentity: Codable { var provider: String; var email: String?; var emailVerified: Bool; var createdAt: Int64 }
struct AdminToken: Codable { var name: String; var createdAt: Int64; var expiresAt: Int64? }
struct AdminServerKey: Codable { var id, name: String; var createdAt: Int64 }
struct AdminUsage: Codable { var records, bytes: Int64 }
struct AdminQuota: Codable { var records, bytes: Int64? }
struct AdminRoleRequest: Codable { var name, role: String }
struct AdminLinkRequest: Codable { var name, source: String }
struct AdminLinked: Codable { var name, source: String; var identities: Int; var account: Bool }
struct AdminKeyRequest: Codable { var name: String; var keyName, publicKeyPEM: String? }
struct AdminProvider: Codable { var name: String; var web: Bool }
struct AdminAPIToken: Codable { var name, container, environment: String; var origins: [String]; var signInCallback: String?; var createdAt: Int64 }
struct AdminAccess: Codable { var signUp: String; var providers: [AdminProvider]; var apiTokens: [AdminAPIToken] }
struct AdminAPITokenRequest: Codable { var name: String?; var container, environment: String; var origins: [String]?; var signInCallback: String? }
struct AdminIssuedAPIToken: Codable { var name, container, environment, token: String }
struct AdminOperator: Codable { var name: String; var scopes: [String]; var createdAt: Int64 }
struct AdminOperatorRequest: Codable { var name: String; var scopes: [String]? }
struct AdminIssuedSecret: Codable { var name: String; var scopes: [String]; var secret: String }
struct AdminInviteRequest: Codable { var email: String?; var days: Int? }
struct AdminAuditEntry: Codable { var `operator`: String; var at: Int64; var action, target: String }
struct AdminRecordType: Codable { var name: String; var fields: [AdminField] }
struct AdminField: Codable { var name, type: String }
struct SchemaValidation: Codable { var recordTypes, roles: Int }
