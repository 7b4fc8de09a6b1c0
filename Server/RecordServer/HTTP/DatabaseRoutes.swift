import Foundation
import Hummingbird
import Logging
import RecordModel
import RecordRules

/// The CloudKit Web Services endpoints under `/database/1/{container}/{environment}/{database}/`.
struct DatabaseRoutes: Sendable {
    let store: RecordStore
    let limits: StoreLimits
    let maximumBodyBytes: Int
    /// The users of recently seen tokens.
    let tokens = TokenCache()
    /// Change pages read before they are asked for (a service of the application, stopped at
    /// shutdown).
    let readAhead: ChangePageReadAhead<PreparedResponse>
    /// The URL asset URLs begin with, or `nil` for each request's own (``base(of:)``).
    let publicURL: String?
    /// The scheme this server is reached by when no proxy says otherwise: `https` when it
    /// serves TLS itself.
    let scheme: String
    /// How long a webcourier poll waits for a notification.
    let webcourierWait: Duration
    /// Where change-feed pages are counted.
    let metrics: ServerMetrics
    /// How fast each user may send requests, or `nil`.
    let rateLimiter: RateLimiter?
    /// The API tokens (the server's one cache, which ``CORSMiddleware`` shares).
    let apiTokens: APITokenCache
    /// Whether a `ckAPIToken` that is no API token is taken as a user's token (the documented
    /// choice of earlier releases, on by default).
    let userTokensAsAPIToken: Bool
    /// The console's sessions, when the console is on: an operator signed in to it acts as
    /// users as its secret would.
    let console: ConsoleSessions?

    /// The URL the request reached this server at, for the asset URLs an answer carries.
    static var base: String { JSONBody.context.base }

    /// An endpoint: reads its body (if any) for a scope and answers.
    typealias Endpoint = @Sendable (DatabaseRoutes, Data, DatabaseScope) async throws -> Response

    /// Every endpoint: its path under the database, its methods, whether a signed-out visitor
    /// (an API token and no user) may call it in the public database (the reads), and what it
    /// does.
    static let endpoints: [(path: String, methods: [HTTPRequest.Method], visitors: Bool, handler: Endpoint)] = [
        ("records/modify", [.post], false, { routes, body, scope in
            let request = try JSONBody.decode(ModifyRecordsRequest.self, from: body)
            let answer = try await routes.store.modifyRecords(request, in: scope)
            // The request log names the errors of the batch's records (answered with 200).
            let failures = answer.records.compactMap { $0.error?.code.rawValue }
            if !failures.isEmpty { RequestNotes.failed(Set(failures).sorted().joined(separator: " ")) }
            return try JSONBody.response(answer, numbersAsStrings: request.numbersAsStrings == true)
        }),
        ("records/lookup", [.post], true, { routes, body, scope in
            let request = try JSONBody.decode(LookupRecordsRequest.self, from: body)
            let answer = try await routes.store.lookupRecords(request, in: scope)
            return try JSONBody.response(answer, numbersAsStrings: request.numbersAsStrings == true)
        }),
        ("records/query", [.post], true, { routes, body, scope in
            let request = try JSONBody.decode(QueryRecordsRequest.self, from: body)
            let answer = try await routes.store.queryRecords(request, in: scope)
            return try JSONBody.response(answer, numbersAsStrings: request.numbersAsStrings == true)
        }),
        ("records/resolve", [.post], false, { routes, body, scope in try await routes.shareMetadata(body, scope, accept: false) }),
        ("records/accept", [.post], false, { routes, body, scope in try await routes.shareMetadata(body, scope, accept: true) }),
        ("records/backlinks", [.post], true, { routes, body, scope in
            let request = try JSONBody.decode(BacklinksRequest.self, from: body)
            return try JSONBody.response(try await routes.store.backlinks(request, in: scope))
        }),
        ("records/changes", [.post], true, { routes, body, scope in
            let request = try JSONBody.decode(RecordChangesRequest.self, from: body)
            let answer = try await routes.readAhead.answer(request, in: scope, from: routes.store, gzip: JSONBody.acceptsGzip).response
            routes.metrics.changePage(feed: "zone")
            return answer
        }),
        ("changes/zone", [.post], true, { routes, body, scope in
            let request = try JSONBody.decode(ZoneChangesRequest.self, from: body)
            try routes.limits.checkCount(request.zones.count, of: "zones")
            if request.recordSyncCompact != nil || request.zones.contains(where: { $0.recordSyncCompact != nil }) {
                throw RecordSyncError(.badRequest, "recordSyncCompact is taken by records/changes only, not by changes/zone")
            }
            if request.recordSyncCompactVersion != nil || request.zones.contains(where: { $0.recordSyncCompactVersion != nil }) {
                throw RecordSyncError(.badRequest, "recordSyncCompactVersion is taken by records/changes only, not by changes/zone")
            }
            let numbersAsStrings = request.numbersAsStrings == true || request.zones.contains { $0.numbersAsStrings == true }
            var results: [Result<StoredZoneChanges, RecordSyncError>] = []
            for var zone in request.zones {
                if numbersAsStrings { zone.numbersAsStrings = true }
                do {
                    results.append(.success(try await routes.store.recordChangesPage(zone, in: scope).page))
                } catch let error as RecordSyncError {
                    var error = error
                    error.zoneID = error.zoneID ?? zone.zoneID ?? .defaultZone
                    results.append(.failure(error))
                }
            }
            routes.metrics.changePage(feed: "zone", count: results.count)
            return try JSONBody.response(StoredZoneChangesResponse(zones: results), numbersAsStrings: numbersAsStrings)
        }),
        ("changes/database", [.post], true, { routes, body, scope in
            let request = body.isEmpty ? DatabaseChangesRequest() : try JSONBody.decode(DatabaseChangesRequest.self, from: body)
            let answer = try JSONBody.response(try await routes.store.databaseChanges(request, in: scope))
            routes.metrics.changePage(feed: "database")
            return answer
        }),
        ("zones/changes", [.post], true, { routes, body, scope in
            let request = body.isEmpty ? ZonesChangesRequest() : try JSONBody.decode(ZonesChangesRequest.self, from: body)
            let answer = try JSONBody.response(try await routes.store.zonesChanges(request, in: scope))
            routes.metrics.changePage(feed: "database")
            return answer
        }),
        ("zones/list", [.get, .post], true, { routes, _, scope in
            try JSONBody.response(ZonesResponse(zones: try await routes.store.listZones(in: scope).map(ZoneResult.success)))
        }),
        ("zones/lookup", [.post], true, { routes, body, scope in
            try JSONBody.response(ZonesResponse(zones: try await routes.store.lookupZones(JSONBody.decode(LookupZonesRequest.self, from: body).zones, in: scope)))
        }),
        ("zones/modify", [.post], false, { routes, body, scope in
            try JSONBody.response(ZonesResponse(zones: try await routes.store.modifyZones(JSONBody.decode(ModifyZonesRequest.self, from: body), in: scope)))
        }),
        ("assets/upload", [.post], false, { routes, body, scope in
            let request = try JSONBody.decode(AssetUploadRequest.self, from: body)
            return try JSONBody.response(try await routes.store.assetUploadURLs(request, in: scope, base: DatabaseRoutes.base))
        }),
        ("assets/rereference", [.post], false, { routes, body, scope in
            let request = try JSONBody.decode(AssetRereferenceRequest.self, from: body)
            return try JSONBody.response(try await routes.store.rereferenceAssets(request, in: scope))
        }),
        ("subscriptions/modify", [.post], false, { routes, body, scope in
            try JSONBody.response(try await routes.store.modifySubscriptions(JSONBody.decode(ModifySubscriptionsRequest.self, from: body), in: scope))
        }),
        ("subscriptions/list", [.get, .post], false, { routes, _, scope in
            try JSONBody.response(try await routes.store.listSubscriptions(in: scope))
        }),
        ("subscriptions/lookup", [.post], false, { routes, body, scope in
            try JSONBody.response(try await routes.store.lookupSubscriptions(JSONBody.decode(LookupSubscriptionsRequest.self, from: body), in: scope))
        }),
        ("tokens/create", [.post], false, { routes, body, scope in try await routes.pushToken(body, scope, register: false) }),
        ("tokens/register", [.post], false, { routes, body, scope in try await routes.pushToken(body, scope, register: true) }),
        ("users/current", [.get, .post], false, { routes, _, scope in try await routes.caller(scope) }),
        ("users/caller", [.get, .post], false, { routes, _, scope in try await routes.caller(scope) }),
        // GET (and a body without lookupInfos) asks for the caller's address-book contacts,
        // which RecordSync does not have: no users.
        ("users/discover", [.get, .post], false, { routes, body, scope in
            let infos = body.isEmpty ? [] : try JSONBody.decode(DiscoverUsersRequest.self, from: body).lookupInfos
            let found = try await routes.store.discoverUsers(infos, by: scope.user)
            return try JSONBody.response(UserIdentitiesResponse(users: found.map { $0.profile.identity($0.user, foundBy: $0.info) }))
        }),
        ("users/lookup/email", [.post], false, { routes, body, scope in
            let request = try JSONBody.decode(LookupUsersRequest.self, from: body)
            for (index, info) in request.users.enumerated() where info.emailAddress == nil {
                throw RecordSyncError(.badRequest, "users[\(index)]: emailAddress is missing")
            }
            let found = try await routes.store.discoverUsers(request.users.map { UserLookupInfo(emailAddress: $0.emailAddress) }, by: scope.user)
            return try JSONBody.response(UsersResponse(users: found.map { $0.profile.userInfo($0.user, withEmail: true) }))
        }),
        ("users/lookup/id", [.post], false, { routes, body, scope in
            let request = try JSONBody.decode(LookupUsersRequest.self, from: body)
            for (index, info) in request.users.enumerated() where info.userRecordName == nil {
                throw RecordSyncError(.badRequest, "users[\(index)]: userRecordName is missing")
            }
            let found = try await routes.store.discoverUsers(request.users.map { UserLookupInfo(userRecordName: $0.userRecordName) }, by: scope.user)
            return try JSONBody.response(UsersResponse(users: found.map { $0.profile.userInfo($0.user, withEmail: false) }))
        }),
        ("users/discoverability", [.post], false, { routes, body, scope in
            let request = try JSONBody.decode(UserDiscoverabilityRequest.self, from: body)
            let profile = try await routes.store.setDiscoverable(request.discoverable, for: scope.user)
            return try JSONBody.response(UserIdentitiesResponse(users: [profile.identity(scope.user)]))
        }),
    ]

    /// Registers every endpoint on `router`.
    func register(on router: Router<RequestContextWithAddress>) {
        router.get("/database/1/:container/:environment/:database/notifications") { request, context in
            do {
                let scope = try await self.scope(of: request, context: context, visitors: false)
                RequestNotes.sender(scope.user)
                // The request read to its end: a connection whose request is still being read
                // counts as idle, and would be closed under a stream that goes on.
                try await Self.drain(request)
                return await NotificationRoute(notifier: self.store.notifier).respond(to: scope)
            } catch let error as RecordSyncError {
                return JSONBody.response(for: error)
            }
        }
        // tokens/* without a database segment, as Apple's page and other clients send them.
        for prefix in ["database", "device"] {
            for name in ["create", "register"] {
                router.post(RouterPath("/\(prefix)/1/:container/:environment/tokens/\(name)")) { request, context in
                    try await self.handle(request, context: context, database: "private", visitors: false) { routes, body, scope in
                        try await routes.pushToken(body, scope, register: name == "register")
                    }
                }
            }
        }
        router.get("/webcourier/1/:token") { request, context in
            try await Self.drain(request)
            let payload = try await self.store.nextNotification(forPushToken: context.parameters.get("token") ?? "", wait: self.webcourierWait)
            // A keep-alive is JSON `null`, which CloudKit JS takes as no notification (an empty
            // body would be a parse error it logs).
            return Response(status: .ok, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
                            body: ResponseBody(byteBuffer: ByteBuffer(string: payload ?? "null")))
        }
        for endpoint in Self.endpoints {
            for method in endpoint.methods {
                let writes = Self.writingEndpoints.contains(endpoint.path)
                router.on(RouterPath("/database/1/:container/:environment/:database/\(endpoint.path)"), method: method) { request, context in
                    try await self.handle(request, context: context, visitors: endpoint.visitors, writes: writes, endpoint.handler)
                }
            }
        }
    }

    /// The endpoints that change what the server holds: an operator acting as a user needs the
    /// `write` scope for them, `read` for the others.
    static let writingEndpoints: Set<String> = [
        "records/modify", "records/accept", "zones/modify", "assets/upload", "assets/rereference", "subscriptions/modify", "tokens/create", "tokens/register",
        "users/discoverability",
    ]

    private func handle(_ request: Request, context: RequestContextWithAddress, database: String? = nil, visitors: Bool, writes: Bool = true,
                        _ endpoint: Endpoint) async throws -> Response {
        do {
            var body: Data
            do {
                body = Data(buffer: try await request.body.collect(upTo: maximumBodyBytes))
            } catch {
                throw RecordSyncError(.limitExceeded, "the request body is larger than the limit of \(maximumBodyBytes) bytes")
            }
            let scope = try await self.scope(of: request, context: context, database: database, body: body, visitors: visitors, writes: writes)
            RequestNotes.sender(scope.user)
            if let rateLimiter, scope.user != .visitor, let wait = rateLimiter.admit(scope.user.id) {
                throw RecordSyncError(.throttled, "too many requests: at most \(rateLimiter.limit.rate.formatted()) a second per user; try again in \(wait.formatted(.number.precision(.fractionLength(0...2)))) s",
                                      retryAfter: wait)
            }
            body = try Self.decoded(body, encoding: request.headers[.contentEncoding], limit: maximumBodyBytes)
            let base = publicURL ?? Self.base(of: request, scheme: scheme)
            let context = JSONBody.Context(acceptsGzip: JSONBody.acceptsGzip(request.headers[.acceptEncoding]), base: base,
                                           assetLinks: try await store.assetLinks(base: base, participant: scope.kind == .shared ? scope.user.id : nil))
            return try await JSONBody.$context.withValue(context) {
                try await endpoint(self, body, scope)
            }
        } catch let error as RecordSyncError {
            if error.code == .internalError {
                context.logger.error("request failed", metadata: ["error.reason": "\(error.reason)"])
            }
            return JSONBody.response(for: error)
        }
    }

    /// Reads what is left of a request that carries no body worth reading (a `GET`), so that
    /// the connection is no longer reading a request while the answer goes on.
    static func drain(_ request: Request) async throws {
        do {
            _ = try await request.body.collect(upTo: 64 * 1024)
        } catch {
            throw RecordSyncError(.limitExceeded, "this request takes no body")
        }
    }

    /// The body as sent: `Content-Encoding: gzip` (an extension) is decompressed, to at most
    /// `limit` bytes; no encoding (or `identity`) is the body itself.
    ///
    /// - Throws: `BAD_REQUEST` for another encoding or a body that is not gzip;
    ///   `LIMIT_EXCEEDED` when the decompressed body is larger than `limit`.
    static func decoded(_ body: Data, encoding: String?, limit: Int) throws -> Data {
        if body.isEmpty { return body }  // nothing was encoded (a GET, say)
        switch encoding?.trimmingCharacters(in: .whitespaces).lowercased() {
        case nil, "", "identity":
            return body
        case "gzip"?:
            do {
                return try Gzip.decompress(body, limit: limit)
            } catch Gzip.Failure.tooLarge {
                throw RecordSyncError(.limitExceeded, "the request body is larger than the limit of \(limit) bytes once decompressed")
            } catch {
                throw RecordSyncError(.badRequest, "the request body is not valid gzip (Content-Encoding: gzip): \(error)")
            }
        case let other?:
            throw RecordSyncError(.badRequest, "Content-Encoding \(NameRules.quoted(other)) is not supported; send the body as is or with gzip")
        }
    }

    /// `tokens/create` and `tokens/register`: a `webcourierURL` delivering the caller's
    /// notifications in the container and environment. Register (whose answer Apple does not
    /// document) needs both keys and answers as create does: APNs is out of reach, so the token
    /// it registers is kept only as given back.
    func pushToken(_ body: Data, _ scope: DatabaseScope, register: Bool) async throws -> Response {
        let request = body.isEmpty ? PushTokenRequest() : try JSONBody.decode(PushTokenRequest.self, from: body)
        if register, request.apnsEnvironment == nil || request.apnsToken == nil {
            throw RecordSyncError(.badRequest, "tokens/register needs apnsEnvironment and apnsToken")
        }
        let environment = request.apnsEnvironment ?? "development"
        guard environment == "development" || environment == "production" else {
            throw RecordSyncError(.badRequest, "apnsEnvironment must be development or production, not \(NameRules.quoted(environment))")
        }
        let token = try await store.createPushToken(for: scope.user, container: scope.container, environment: scope.environment)
        return try JSONBody.response(PushTokenResponse(apnsEnvironment: environment, apnsToken: request.apnsToken ?? Data(token.utf8.suffix(32)).base64EncodedString(),
                                                       webcourierURL: "\(Self.base)/webcourier/1/\(token)"))
    }

    /// `scheme://host` as the request reached the server: `X-Forwarded-Proto` (from a proxy)
    /// or this server's own scheme, and the `Host` header.
    static func base(of request: Request, scheme own: String) -> String {
        let scheme = request.headers[values: .init("X-Forwarded-Proto")!].first?.split(separator: ",").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        let host = request.head.authority ?? "localhost"
        return "\(scheme.map { $0 == "https" ? "https" : "http" } ?? own)://\(host)"
    }

    /// The database a request addresses and the user making it: the holder of its bearer
    /// token, or of the server-to-server key that signed it (`body` as it came), which reaches
    /// public databases only; or, for a request with an API token and no user, a signed-out
    /// visitor (``User/visitor``), who may call the endpoints that allow `visitors` in the
    /// public database only.
    ///
    /// - Throws: `AUTHENTICATION_FAILED` for a token, API token or signature that is not valid;
    ///   `AUTHENTICATION_REQUIRED`, with the `redirectURL` of the sign-in page, for a request
    ///   that needs a user and has none.
    func scope(of request: Request, context: RequestContextWithAddress, database given: String? = nil, body: Data = Data(), visitors: Bool,
               writes: Bool = false) async throws -> DatabaseScope {
        if let signed = try Credentials.signedRequest(request, body: body) {
            let user = try await store.verify(signed)
            let scope = try scope(of: context, user: user, database: given)
            guard scope.kind == .public else {
                throw RecordSyncError(.accessDenied, "server-to-server keys reach only the public database")
            }
            return scope
        }
        if request.headers[.authorization] == nil, let console, let found = try await console.caller(of: request, peer: context.remoteAddress?.ipAddress) {
            return try scope(of: context, user: try await actingUser(request, operator: found, writes: writes), database: given)
        }
        let (token, apiToken) = try Credentials.token(in: request, userTokensAsAPIToken: userTokensAsAPIToken)
        var app: StoredAPIToken?
        if let apiToken {
            guard let found = try await apiTokens.token(hash: Credentials.hash(apiToken), from: store) else {
                throw RecordSyncError(.authenticationFailed, "the API token (ckAPIToken) is not valid (never issued, or revoked)")
            }
            let container = context.parameters.get("container") ?? "", environment = context.parameters.get("environment") ?? ""
            guard found.container == container, found.environment == environment else {
                throw RecordSyncError(.authenticationFailed, "the API token (ckAPIToken) is for \(NameRules.quoted(found.container)) (\(found.environment)), not \(NameRules.quoted(container)) (\(environment))")
            }
            app = found
        }
        guard let token else {
            guard app != nil else {
                throw signInRequired(request, context, "sign in: send 'Authorization: Bearer TOKEN' or the ckWebAuthToken query parameter", app: app)
            }
            guard visitors, (given ?? context.parameters.get("database")) == DatabaseKind.public.rawValue else {
                throw signInRequired(request, context, "this request needs a signed-in user; a signed-out visitor (an API token alone) reads the public database only", app: app)
            }
            return try scope(of: context, user: .visitor, database: given)
        }
        let hash = Credentials.hash(token)
        if Credentials.isOperatorSecret(token) {
            guard let found = try await store.checkOperator(secretHash: hash) else {
                throw RecordSyncError(.authenticationFailed, "the operator's secret is not valid (never issued, or revoked)")
            }
            return try scope(of: context, user: try await actingUser(request, operator: found, writes: writes), database: given)
        }
        let user: User
        switch try await tokens.check(hash, revocations: { try await store.revocationSequence() }, revoked: { await store.notifier.endStreams() },
                                      lookUp: { try await store.checkToken(hash: hash) }) {
        case .valid(let valid, _): user = valid
        case .expired(let at):
            let date = Date(timeIntervalSince1970: Double(at) / 1000).formatted(.iso8601)
            // A web app's request (it carries the app's API token) is asked to sign in again,
            // as CloudKit JS expects: AUTHENTICATION_FAILED would leave it no sign-in button.
            if app != nil { throw signInRequired(request, context, "the token expired at \(date): sign in again", app: app) }
            throw RecordSyncError(.authenticationFailed, "the token expired at \(date)")
        case .unknown:
            if app != nil { throw signInRequired(request, context, "the token is not valid (signed out, revoked, or its user deleted): sign in again", app: app) }
            throw RecordSyncError(.authenticationFailed, "the token is not valid (never issued, revoked, or its user deleted)")
        }
        return try scope(of: context, user: user, database: given)
    }

    /// The user an operator acts as (`X-RecordSync-Act-As: NAME`), once its scope is checked
    /// (`write` for an endpoint that writes, else `read`) and the request is in the audit log
    /// under its name. An operator's secret (or console session) is read from the store at
    /// every request, so a revoked one is refused at once on every server.
    private func actingUser(_ request: Request, operator found: Operator, writes: Bool) async throws -> User {
        RequestNotes.sender(operator: found.name)
        try found.require(writes ? .write : .read, for: writes ? "write as a user" : "read as a user")
        guard let name = request.headers[Credentials.actAsHeader], !name.isEmpty else {
            throw RecordSyncError(.badRequest, "an operator acts as a user on the database API: name them in X-RecordSync-Act-As")
        }
        guard let user = try await store.user(named: name) else {
            throw RecordSyncError(.notFound, "there is no user \(NameRules.quoted(name)) to act as")
        }
        try await store.audit(found.name, action: "\(request.method.rawValue) \(request.uri.path)", target: "as \(user.name)")
        return user
    }

    /// `AUTHENTICATION_REQUIRED` with `reason`, and the `redirectURL` of the sign-in page for
    /// this container and environment (``SignInPage``), naming the app's API token and the
    /// origin of the page that asked, when the token lists it.
    private func signInRequired(_ request: Request, _ context: RequestContextWithAddress, _ reason: String, app: StoredAPIToken?) -> RecordSyncError {
        let base = publicURL ?? Self.base(of: request, scheme: scheme)
        let origin = request.headers[.origin].flatMap { origin in app?.origins.contains(origin.lowercased()) == true ? origin.lowercased() : nil }
        let url = SignInPage.url(base: base, container: context.parameters.get("container") ?? "", environment: context.parameters.get("environment") ?? "",
                                 apiToken: app?.name, origin: origin)
        return RecordSyncError(.authenticationRequired, reason, redirectURL: url)
    }

    /// `records/resolve` and `records/accept`, on the public database's path (as CloudKit has
    /// them): the shares of short GUIDs.
    func shareMetadata(_ body: Data, _ scope: DatabaseScope, accept: Bool) async throws -> Response {
        guard scope.kind == .public else {
            throw RecordSyncError(.badRequest, "records/\(accept ? "accept" : "resolve") is on the public database's path (…/public/records/\(accept ? "accept" : "resolve")), as in CloudKit")
        }
        let request = try JSONBody.decode(ShareMetadataRequest.self, from: body)
        let metadata = try await store.shareMetadata(request, accept: accept, in: scope)
        // A root record's download URLs are made for the caller as a participant (unless it owns
        // every share answered): checked again when used, they work while the caller takes part
        // in the share (once it accepted).
        let owns = metadata.results.allSatisfy { if case .success(let share) = $0 { share.databaseScope == "PRIVATE" } else { true } }
        var context = JSONBody.context
        context.assetLinks = try await store.assetLinks(base: context.base, participant: owns ? nil : scope.user.id)
        return try JSONBody.$context.withValue(context) { try JSONBody.response(metadata) }
    }

    /// `users/caller` and `users/current`: the caller's identity at the top level and in `users`.
    func caller(_ scope: DatabaseScope) async throws -> Response {
        let profile = try await store.profile(of: scope.user)
        return try JSONBody.response(CallerIdentityResponse(identity: profile.identity(scope.user),
                                                            user: profile.userInfo(scope.user, withEmail: false, toSelf: true, userName: scope.user.name)))
    }

    /// The database the path addresses, for `user`.
    private func scope(of context: RequestContextWithAddress, user: User, database given: String?) throws -> DatabaseScope {
        let container = context.parameters.get("container") ?? ""
        if let problem = NameRules.problem(withName: container, kind: "container") {
            throw RecordSyncError(.badRequest, problem)
        }
        let environment = context.parameters.get("environment") ?? ""
        guard environment == "development" || environment == "production" else {
            throw RecordSyncError(.badRequest, "environment must be development or production, not \(NameRules.quoted(environment))")
        }
        let database = given ?? context.parameters.get("database") ?? ""
        guard let kind = DatabaseKind(rawValue: database) else {
            throw RecordSyncError(.badRequest, "database must be public, private or shared, not \(NameRules.quoted(database))")
        }
        return DatabaseScope(container: container, environment: environment, kind: kind, user: user)
    }
}

extension ChangePageReadAhead where Answer == PreparedResponse {
    /// The answer to a `records/changes` request as the server sends it: JSON, gzipped when the
    /// request accepts it (``JSONBody``).
    func answer(_ request: RecordChangesRequest, in scope: DatabaseScope, from store: RecordStore, gzip: Bool) async throws -> PreparedResponse {
        var context = JSONBody.context
        context.acceptsGzip = gzip
        context.numbersAsStrings = request.numbersAsStrings == true
        let compact = request.recordSyncCompact == true
        if let version = request.recordSyncCompactVersion, version < 1 {
            throw RecordSyncError(.badRequest, "recordSyncCompactVersion must be 1 or more, not \(version)")
        }
        let byPosition = (request.recordSyncCompactVersion ?? 1) >= 2
        // The base is part of the variant: asset URLs in the page are written with it, and
        // pages kept for one request are served to others of the same user (every signed-out
        // visitor is one user) only when they reached the server at the same URL.
        return try await answer(request, in: scope, from: store, variant: "\(gzip ? "gzip" : "identity") \(context.base)") { [context] page in
            var page = page
            page.compact = compact
            page.compactFieldsByPosition = byPosition
            return try JSONBody.$context.withValue(context) { try JSONBody.prepared(page) }
        }
    }
}
