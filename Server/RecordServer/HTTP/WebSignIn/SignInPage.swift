import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import RecordModel
import RecordRules

/// CloudKit's web sign-in flow (docs/protocol.md, "The web sign-in page"): the page an
/// `AUTHENTICATION_REQUIRED` answer's `redirectURL` names, which CloudKit JS opens from its
/// sign-in button, signs the user in (a built-in account, or an identity provider's button)
/// and hands the app its token as the app's API token says: posted to the app's window
/// (Post Message) or sent to its callback URL (URL Redirect).
///
/// Routes: `GET /signin/1/{container}/{environment}?token=NAME[&origin=ORIGIN][&view=…]` (the
/// page), the account forms' `POST`s under it (`password`, `signup`, `verify`, `reset`,
/// `reset/complete`), `POST …/provider/{name}` (leaves for the provider) and
/// `GET|POST /signin/callback/{provider}` (the provider's answer).
struct SignInPage: Sendable {
    let store: RecordStore
    let apiTokens: APITokenCache
    let accounts: Accounts
    let mailer: Mailer?
    /// The providers offered on the page (those with ``WebSignInSettings``), in their order.
    let providers: [IdentityProvider]
    let sessionLifetime: Duration
    let trustedProxies: TrustedProxies
    let publicURL: String?
    let scheme: String

    /// The browser's cookie that forms and provider sign-ins are bound to: over HTTPS with the
    /// `__Host-` prefix, which browsers take only from this host over HTTPS with `Path=/` and no
    /// `Domain` (so no other subdomain, and nobody on the network answering plain HTTP, can
    /// plant one whose CSRF field they know).
    func cookieName(_ request: Request) -> String {
        base(of: request).hasPrefix("https://") ? "__Host-recordsync_signin" : "recordsync_signin"
    }

    /// The page's URL for a container and environment, under `base` (`scheme://host`), naming
    /// the API token whose app it signs users in for and the app's origin.
    static func url(base: String, container: String, environment: String, apiToken: String? = nil, origin: String? = nil) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove("/")
        let container = container.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
        let environment = environment.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
        var url = "\(base)/signin/1/\(container)/\(environment)"
        var query: [String] = []
        if let apiToken { query.append("token=\(OIDCClient.formEncoded(apiToken))") }
        if let origin { query.append("origin=\(OIDCClient.formEncoded(origin))") }
        if !query.isEmpty { url += "?" + query.joined(separator: "&") }
        return url
    }

    // MARK: Where the token goes

    /// The app a sign-in is for: its API token, and how the token reaches it.
    struct Destination: Sendable {
        var container: String
        var environment: String
        var apiToken: StoredAPIToken
        /// The origin the token is posted to (Post Message), or `nil` in URL Redirect mode.
        var origin: String?

        /// The fields every form carries so that the next page knows the app.
        var hiddenFields: String {
            SignInHTML.hidden("token", apiToken.name) + SignInHTML.hidden("origin", origin)
        }

        /// The page's own query naming the app, for links between its views.
        var query: String {
            var query = "token=\(OIDCClient.formEncoded(apiToken.name))"
            if let origin { query += "&origin=\(OIDCClient.formEncoded(origin))" }
            return query
        }
    }

    /// What refuses a page: an error page's status, title, what went wrong and what to do.
    struct Refusal: Error {
        var status: HTTPResponse.Status
        var title: String
        var what: String
        var todo: String

        var response: Response { SignInHTML.error(status, title: title, what, todo: todo) }
    }

    /// The app the page signs users in for: the API token `token` names in the container and
    /// environment, and (Post Message) the origin to post to, which the token must list: the
    /// `origin` given, or the token's only origin. A token for any origin (`*`) hands no
    /// token over by message: any site could then open the page and receive it.
    func destination(container: String, environment: String, token name: String?, origin: String?) async throws -> Destination {
        guard ["development", "production"].contains(environment) else {
            throw Refusal(status: .notFound, title: "No such page", what: "There is no sign-in page for the environment \(NameRules.quoted(environment)).",
                          todo: "Open this page from the app's sign-in button.")
        }
        guard let name, !name.isEmpty else {
            throw Refusal(status: .badRequest, title: "Open this page from the app",
                          what: "This page signs people in to web apps, and its address does not say which app.",
                          todo: "Go back to the app and use its sign-in button.")
        }
        let named = { (token: StoredAPIToken) in token.container == container && token.environment == environment && token.name == name }
        // The kept tokens, else the store's (a token issued since they were read).
        var found = try await apiTokens.all(from: store).values.first(where: named)
        if found == nil { found = try await store.apiTokens().first(where: named) }
        guard let token = found else {
            throw Refusal(status: .notFound, title: "This app cannot sign you in",
                          what: "The app's key for \(container) (\(environment)) is not valid any more.",
                          todo: "Reload the app and try again; if it keeps happening, tell the app's developer (its API token was revoked).")
        }
        if token.signInCallback != nil {
            return Destination(container: container, environment: environment, apiToken: token, origin: nil)
        }
        let listed = token.origins.filter { $0 != "*" }
        let chosen: String?
        if let origin, !origin.isEmpty {
            chosen = listed.contains(origin.lowercased()) ? origin.lowercased() : nil
        } else {
            chosen = listed.count == 1 ? listed[0] : nil
        }
        guard let chosen else {
            throw Refusal(status: .forbidden, title: "This app cannot sign you in here",
                          what: origin.map { "The site \($0) is not one this app's key lists, so this page will not send it your sign-in." }
                              ?? "This page cannot tell which site of the app opened it.",
                          todo: "Use the sign-in button on the app's own site. If you are its developer: list the site with 'recordserver api-token add --origin'.")
        }
        return Destination(container: container, environment: environment, apiToken: token, origin: chosen)
    }

    // MARK: Routes

    func register(on router: Router<RequestContextWithAddress>) {
        SignInHTML.registerAssets(on: router)
        router.get("/signin/1/:container/:environment") { request, context in
            await page(request, context) { destination, browser in
                let query = request.uri.queryParameters
                let view = query.get("view").flatMap(View.init(rawValue:)) ?? .signIn
                return render(view, destination, browser: browser, base: base(of: request), email: query.get("email"))
            }
        }
        form(router, "password") { fields, destination, browser, request, client in
            let token = Credentials.newToken()
            do {
                let signIn = try await accounts.signIn(email: fields["email"] ?? "", password: fields["password"] ?? "", deviceName: nil,
                                                       tokenHash: Credentials.hash(token), lifetime: sessionLifetime, client: client)
                return handOver(token, signIn, to: destination)
            } catch let error as RecordSyncError where [.authenticationFailed, .throttled, .badRequest].contains(error.code) {
                return render(.signIn, destination, browser: browser, base: base(of: request), email: fields["email"], error: Self.words(error))
            }
        }
        form(router, "signup") { fields, destination, browser, request, client in
            do {
                let mail = try await accounts.signUp(email: fields["email"] ?? "", password: fields["password"] ?? "",
                                                     invitation: fields["invitation"].flatMap { $0.isEmpty ? nil : $0 }, client: client)
                try await send(mail)
                return render(.verify, destination, browser: browser, base: base(of: request), email: mail.to,
                              notice: "We sent a code to \(mail.to). Enter it here to finish signing up.")
            } catch let error as RecordSyncError where [.authenticationFailed, .throttled, .badRequest, .accessDenied].contains(error.code) {
                return render(.signUp, destination, browser: browser, base: base(of: request), email: fields["email"], error: Self.words(error))
            }
        }
        form(router, "verify") { fields, destination, browser, request, client in
            let token = Credentials.newToken()
            do {
                let signIn = try await accounts.verify(email: fields["email"] ?? "", code: fields["code"] ?? "", deviceName: nil, givenName: nil,
                                                       familyName: nil, tokenHash: Credentials.hash(token), lifetime: sessionLifetime, client: client)
                return handOver(token, signIn, to: destination)
            } catch let error as RecordSyncError where [.authenticationFailed, .throttled, .badRequest].contains(error.code) {
                return render(.verify, destination, browser: browser, base: base(of: request), email: fields["email"], error: Self.words(error))
            }
        }
        form(router, "reset") { fields, destination, browser, request, client in
            do {
                guard mailer != nil else { throw RecordSyncError(.notSupported, "this server sends no mail, so it resets no password: ask its operator") }
                let mail = try await accounts.requestReset(email: fields["email"] ?? "", client: client)
                try await send(mail)
                return render(.resetComplete, destination, browser: browser, base: base(of: request), email: fields["email"],
                              notice: "If \(fields["email"] ?? "") has an account, we sent it a code. Enter it here with a new password.")
            } catch let error as RecordSyncError where [.throttled, .badRequest, .notSupported].contains(error.code) {
                return render(.reset, destination, browser: browser, base: base(of: request), email: fields["email"], error: Self.words(error))
            }
        }
        form(router, "reset/complete") { fields, destination, browser, request, client in
            let token = Credentials.newToken()
            do {
                let signIn = try await accounts.completeReset(email: fields["email"] ?? "", code: fields["code"] ?? "",
                                                              newPassword: fields["password"] ?? "", deviceName: nil,
                                                              tokenHash: Credentials.hash(token), lifetime: sessionLifetime, client: client)
                return handOver(token, signIn, to: destination)
            } catch let error as RecordSyncError where [.authenticationFailed, .throttled, .badRequest].contains(error.code) {
                return render(.resetComplete, destination, browser: browser, base: base(of: request), email: fields["email"], error: Self.words(error))
            }
        }
        form(router, "provider/:provider") { _, destination, browser, request, _ in
            // The path's provider: the form route's context is not at hand here, so it is read
            // from the path's last segment.
            let name = String(request.uri.path.split(separator: "/").last ?? "").removingPercentEncoding ?? ""
            guard let client = client(named: name) else {
                throw Refusal(status: .notFound, title: "No such way to sign in", what: "This server offers no sign-in with \(NameRules.quoted(name)).",
                              todo: "Go back and choose another way to sign in.")
            }
            let state = OIDCClient.randomValue(), nonce = OIDCClient.randomValue(), verifier = OIDCClient.randomValue()
            try await store.beginSignInFlow(StoredSignInFlow(
                stateHash: Data(SHA256.hash(data: Data(state.utf8))), container: destination.container, environment: destination.environment,
                apiToken: destination.apiToken.name, origin: destination.origin, provider: name, nonce: nonce, verifier: verifier,
                browserHash: Data(SHA256.hash(data: Data(browser.utf8))), createdAt: Int64(Date().timeIntervalSince1970 * 1000)))
            let url = client.authorizationURL(redirectURI: callbackURL(name, base: base(of: request)), state: state, nonce: nonce, verifier: verifier)
            var headers = SignInHTML.headers()
            headers[.location] = url
            return Response(status: .seeOther, headers: headers)
        }
        router.get("/signin/callback/:provider") { request, context in
            await callback(request, context, fields: Self.formFields(request.uri.query ?? ""))
        }
        // A provider answering with `form_post` (Sign in with Apple) posts from its own site,
        // so the browser sends no `SameSite=Lax` cookie with it: the answer goes on as a `GET`
        // of this server's, which the browser sends it with (Apple's `user`, the person's name
        // at their first sign-in only, goes on too).
        router.post("/signin/callback/:provider") { request, context in
            let body = (try? await request.body.collect(upTo: 64 * 1024)).map { String(buffer: $0) } ?? ""
            let fields = Self.formFields(body)
            let query = ["code", "state", "error", "user"].compactMap { name in
                fields[name].map { "\(name)=\(OIDCClient.formEncoded($0))" }
            }.joined(separator: "&")
            let provider = (context.parameters.get("provider") ?? "").removingPercentEncoding ?? ""
            var headers = SignInHTML.headers()
            headers[.location] = "/signin/callback/\(OIDCClient.formEncoded(provider))?\(query)"
            return Response(status: .seeOther, headers: headers)
        }
    }

    /// The views of the page.
    enum View: String {
        case signIn = "signin", signUp = "signup", verify, reset, resetComplete = "reset-complete"
    }

    // MARK: Handling

    /// A `GET` of the page: the app resolved, the browser's cookie set if it has none.
    private func page(_ request: Request, _ context: RequestContextWithAddress,
                      _ handle: (Destination, String) async throws -> Response) async -> Response {
        let (browser, isNew) = browserCookie(request)
        var response: Response
        do {
            let query = request.uri.queryParameters
            let destination = try await destination(container: context.parameters.get("container") ?? "", environment: context.parameters.get("environment") ?? "",
                                                    token: query.get("token"), origin: query.get("origin"))
            response = try await handle(destination, browser)
        } catch {
            response = Self.refusal(error).response
        }
        if isNew { response.headers.append(HTTPField(name: .setCookie, value: setCookie(browser, request: request))) }
        return response
    }

    /// A form's `POST` route under the page: the CSRF field checked against the browser's
    /// cookie before anything else, the app resolved from the form's fields.
    private func form(_ router: Router<RequestContextWithAddress>, _ path: String,
                      _ handle: @escaping @Sendable ([String: String], Destination, String, Request, String?) async throws -> Response) {
        router.post("/signin/1/:container/:environment/\(path)") { request, context in
            let client = trustedProxies.client(of: request, peer: context.remoteAddress)
            do {
                try await accounts.checkThrottle(client: client)
                let body = try await request.body.collect(upTo: 64 * 1024)
                let fields = Self.formFields(String(buffer: body))
                guard let browser = Self.cookie(cookieName(request), in: request), let given = fields["csrf"],
                      IdentityProvider.constantTimeEqual(given, Self.csrfToken(browser)) else {
                    try await accounts.countFailure(client: client)
                    throw Refusal(status: .forbidden, title: "Please try again",
                                  what: "This form was not sent from this sign-in page (it expired, came from another site, or your browser blocks this site's cookies).",
                                  todo: "Go back, reload the page and send the form again. Signing in needs cookies for this site.")
                }
                let destination = try await destination(container: context.parameters.get("container") ?? "",
                                                        environment: context.parameters.get("environment") ?? "",
                                                        token: fields["token"], origin: fields["origin"])
                return try await handle(fields, destination, browser, request, client)
            } catch {
                return Self.refusal(error).response
            }
        }
    }

    /// The provider's answer: the flow its `state` names taken (once), checked to be this
    /// browser's and this provider's, its code exchanged with the flow's verifier, the ID
    /// token checked with the flow's nonce; then the user is signed in and the token handed
    /// over to the flow's app.
    private func callback(_ request: Request, _ context: RequestContextWithAddress, fields: [String: String]) async -> Response {
        let name = (context.parameters.get("provider") ?? "").removingPercentEncoding ?? ""
        let address = trustedProxies.client(of: request, peer: context.remoteAddress)
        do {
            try await accounts.checkThrottle(client: address)
            if let error = fields["error"] {
                throw Refusal(status: .unauthorized, title: "Not signed in",
                              what: "The sign-in with \(name) did not finish (\(error == "access_denied" || error == "user_cancelled_authorize" ? "it was cancelled" : error)).",
                              todo: "Close this window and use the app's sign-in button again.")
            }
            guard let client = client(named: name), let state = fields["state"], let code = fields["code"] else {
                throw Refusal(status: .badRequest, title: "Not signed in", what: "This is not an answer from a sign-in this server began.",
                              todo: "Close this window and use the app's sign-in button again.")
            }
            let flow = try await store.takeSignInFlow(state: state)
            guard flow.provider == name else {
                throw RecordSyncError(.authenticationFailed, "the answer came from another provider than the one the sign-in began with")
            }
            guard let browser = Self.cookie(cookieName(request), in: request),
                  Data(SHA256.hash(data: Data(browser.utf8))) == flow.browserHash else {
                throw Refusal(status: .forbidden, title: "Not signed in", what: "This sign-in began in another browser, or this browser's cookies were cleared.",
                              todo: "Close this window and use the app's sign-in button again, in this browser.")
            }
            let destination = try await destination(container: flow.container, environment: flow.environment, token: flow.apiToken, origin: flow.origin)
            let identity = try await client.identity(code: code, verifier: flow.verifier, redirectURI: callbackURL(name, base: base(of: request)), nonce: flow.nonce)
            let token = Credentials.newToken()
            let names = Self.appleUserNames(fields["user"])
            let signIn = try await store.signIn(with: identity, tokenHash: Credentials.hash(token), deviceName: nil, givenName: names.given,
                                                familyName: names.family, lifetime: sessionLifetime)
            return handOver(token, signIn, to: destination)
        } catch {
            // A refused answer (a state, browser, nonce or code that does not fit) counts
            // against the client's address, as a failed sign-in does; a cancelled one does not.
            if fields["error"] == nil, error is Refusal || (error as? RecordSyncError)?.code == .authenticationFailed {
                try? await accounts.countFailure(client: address)
            }
            return Self.refusal(error).response
        }
    }

    /// Hands a signed-in user's token to the app: a redirect to its callback with
    /// `ckWebAuthToken` and `ckSession` (URL Redirect), or a page whose script posts it to the
    /// app's window at its origin (Post Message).
    private func handOver(_ token: String, _ signIn: SignIn, to destination: Destination) -> Response {
        if let callback = destination.apiToken.signInCallback {
            let separator = callback.contains("?") ? "&" : "?"
            let encoded = OIDCClient.formEncoded(token)
            var headers = SignInHTML.headers()
            headers[.location] = "\(callback)\(separator)ckWebAuthToken=\(encoded)&ckSession=\(encoded)"
            return Response(status: .seeOther, headers: headers)
        }
        return SignInHTML.response(title: "Signed in", body: """
            <h1>Signed in</h1>
            <p id="handoff" class="notice" data-origin="\(SignInHTML.escaped(destination.origin ?? ""))" data-session="\(SignInHTML.escaped(token))">\
            You are signed in. Returning you to the app…</p>
            <noscript><p class="error">Handing your sign-in to the app needs JavaScript: turn it on and sign in again.</p></noscript>
            """)
    }

    /// The page in `view`.
    private func render(_ view: View, _ destination: Destination, browser: String, base: String, email: String? = nil,
                        error: String? = nil, notice: String? = nil) -> Response {
        let action = "/signin/1/\(OIDCClient.formEncoded(destination.container))/\(destination.environment)"
        let link = { (view: View) in "\(action)?\(destination.query)&view=\(view.rawValue)" }
        let common = SignInHTML.hidden("csrf", Self.csrfToken(browser)) + destination.hiddenFields
        let emailField = """
            <label for="email">Email</label>
            <input id="email" name="email" type="email" autocomplete="email" required value="\(SignInHTML.escaped(email ?? ""))">
            """
        // Codes are letters and digits (`8AD6-Z5RD`).
        let codeField = """
            <label for="code">Code from the mail</label>
            <input id="code" name="code" type="text" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" required>
            """
        let signUpOpen = accounts.settings.signUp != .closed && mailer != nil
        var body = ""
        let title: String
        switch view {
        case .signIn:
            title = "Sign in"
            body = """
                <form method="post" action="\(action)/password">\(common)
                \(emailField)
                <label for="password">Password</label>
                <input id="password" name="password" type="password" autocomplete="current-password" required>
                <button type="submit">Sign in</button>
                </form>
                <p class="links"><a href="\(SignInHTML.escaped(link(.reset)))">Forgot your password?</a>\
                \(signUpOpen ? "<a href=\"\(SignInHTML.escaped(link(.signUp)))\">Create an account</a>" : "")</p>
                """
            let buttons = providers.map { provider in
                let words = provider.settings.web?.buttonTitle ?? "Sign in with \(provider.settings.name)"
                return """
                    <form method="post" action="\(action)/provider/\(OIDCClient.formEncoded(provider.settings.name))">\(common)\
                    <button class="provider" type="submit">\(SignInHTML.escaped(words))</button></form>
                    """
            }
            if !buttons.isEmpty { body += "\n<p class=\"divider\">or</p>\n" + buttons.joined(separator: "\n") }
        case .signUp:
            title = "Create an account"
            body = signUpOpen ? """
                <form method="post" action="\(action)/signup">\(common)
                \(emailField)
                <label for="password">Password</label>
                <input id="password" name="password" type="password" autocomplete="new-password" minlength="8" required>
                \(accounts.settings.signUp == .invitation ? "<label for=\"invitation\">Invitation code</label>\n<input id=\"invitation\" name=\"invitation\" type=\"text\" autocomplete=\"off\" required>" : "")
                <button type="submit">Create account</button>
                </form>
                <p class="links"><a href="\(SignInHTML.escaped(link(.signIn)))">I have an account</a><a href="\(SignInHTML.escaped(link(.verify)))">I have a code</a></p>
                """ : """
                <p class="notice">This app's accounts are made by its operator: you cannot sign up here.</p>
                <p class="links"><a href="\(SignInHTML.escaped(link(.signIn)))">Sign in</a></p>
                """
        case .verify:
            title = "Enter your code"
            body = """
                <form method="post" action="\(action)/verify">\(common)
                \(emailField)
                \(codeField)
                <button type="submit">Verify and sign in</button>
                </form>
                <p class="links"><a href="\(SignInHTML.escaped(link(.signIn)))">Sign in instead</a></p>
                """
        case .reset:
            title = "Reset your password"
            body = """
                <form method="post" action="\(action)/reset">\(common)
                \(emailField)
                <button type="submit">Mail me a code</button>
                </form>
                <p class="links"><a href="\(SignInHTML.escaped(link(.signIn)))">Back to sign in</a><a href="\(SignInHTML.escaped(link(.resetComplete)))">I have a code</a></p>
                """
        case .resetComplete:
            title = "Choose a new password"
            body = """
                <form method="post" action="\(action)/reset/complete">\(common)
                \(emailField)
                \(codeField)
                <label for="password">New password</label>
                <input id="password" name="password" type="password" autocomplete="new-password" minlength="8" required>
                <button type="submit">Set password and sign in</button>
                </form>
                <p class="links"><a href="\(SignInHTML.escaped(link(.signIn)))">Back to sign in</a></p>
                """
        }
        let messages = (error.map { "<p class=\"error\" role=\"alert\">\(SignInHTML.escaped($0))</p>\n" } ?? "")
            + (notice.map { "<p class=\"notice\" role=\"status\">\(SignInHTML.escaped($0))</p>\n" } ?? "")
        // Forms may lead (by redirect) to a provider's sign-in page or to the app's callback.
        var targets = providers.compactMap { $0.settings.web.flatMap { Self.origin(of: $0.authorizationEndpoint) } }
        if let callback = destination.apiToken.signInCallback, let origin = Self.origin(of: callback) { targets.append(origin) }
        return SignInHTML.response(title: "\(title) – \(destination.container)", body: """
            <h1>\(SignInHTML.escaped(title))</h1>
            <p class="app">to \(SignInHTML.escaped(destination.container))\(destination.environment == "development" ? " (development)" : "")</p>
            \(messages)\(body)
            """, formTargets: targets)
    }

    // MARK: Pieces

    private func client(named name: String) -> OIDCClient? {
        guard let provider = providers.first(where: { $0.settings.name == name }), let web = provider.settings.web else { return nil }
        return OIDCClient(provider: provider, web: web)
    }

    private func send(_ mail: AccountMail) async throws {
        guard let mailer else { throw RecordSyncError(.notSupported, "this server sends no mail: its operator makes the accounts") }
        try await mailer.send(mail)
    }

    private func base(of request: Request) -> String {
        publicURL ?? DatabaseRoutes.base(of: request, scheme: scheme)
    }

    /// The `redirect_uri` registered with a provider: `{base}/signin/callback/{provider}`.
    func callbackURL(_ provider: String, base: String) -> String {
        "\(base)/signin/callback/\(OIDCClient.formEncoded(provider))"
    }

    /// The browser's sign-in cookie, or a new one to set.
    private func browserCookie(_ request: Request) -> (String, isNew: Bool) {
        if let value = Self.cookie(cookieName(request), in: request), value.count >= 32 { return (value, false) }
        return (OIDCClient.randomValue(), true)
    }

    /// The cookie's `Set-Cookie`: no script reads it (`HttpOnly`), sent with this site's own
    /// requests and top-level navigations (`SameSite=Lax`); over HTTPS, `__Host-` with `Secure`
    /// and `Path=/` (the prefix asks for both), else `Path=/signin`.
    private func setCookie(_ value: String, request: Request) -> String {
        let secure = base(of: request).hasPrefix("https://")
        return "\(cookieName(request))=\(value); Path=\(secure ? "/; Secure" : "/signin"); HttpOnly; SameSite=Lax"
    }

    /// The CSRF field of a browser's forms: the SHA-256 of its cookie, which another site can
    /// neither read nor compute.
    static func csrfToken(_ browser: String) -> String {
        Base64URL.encode(Data(SHA256.hash(data: Data("csrf:\(browser)".utf8))))
    }

    /// A cookie's value in a request.
    static func cookie(_ name: String, in request: Request) -> String? {
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return nil
    }

    /// The fields of a form body or query (`application/x-www-form-urlencoded`); of a repeated
    /// name, the first.
    static func formFields(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (part: Substring) in part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
            let name = decode(parts[0])
            if fields[name] == nil { fields[name] = parts.count == 2 ? decode(parts[1]) : "" }
        }
        return fields
    }

    /// The names in Sign in with Apple's `user` field (`{"name": {"firstName", "lastName"},
    /// "email"}`), sent at a person's first sign-in only; unverified, as the app's are.
    static func appleUserNames(_ field: String?) -> (given: String?, family: String?) {
        guard let data = field?.data(using: .utf8), let user = try? JSONDecoder().decode(JSONValue.self, from: data),
              case .object(let name)? = user["name"] else { return (nil, nil) }
        let text = { (value: JSONValue?) -> String? in
            if case .string(let text)? = value, !text.isEmpty, text.utf8.count <= 255 { return text }
            return nil
        }
        return (text(name["firstName"]), text(name["lastName"]))
    }

    /// `scheme://host[:port]` of a URL.
    static func origin(of url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host else { return nil }
        return "\(scheme)://\(host)\(components.port.map { ":\($0)" } ?? "")"
    }

    /// An error's page: a refusal as it is; a store's error by its reason.
    static func refusal(_ error: any Error) -> Refusal {
        if let refusal = error as? Refusal { return refusal }
        if let error = error as? RecordSyncError {
            switch error.code {
            case .throttled:
                return Refusal(status: .tooManyRequests, title: "Too many attempts", what: words(error), todo: "Wait a few minutes, then try again.")
            case .tryAgainLater, .internalError:
                return Refusal(status: .serviceUnavailable, title: "Not signed in", what: words(error), todo: "Try again in a moment.")
            default:
                return Refusal(status: .unauthorized, title: "Not signed in", what: words(error), todo: "Close this window and use the app's sign-in button again.")
            }
        }
        return Refusal(status: .internalServerError, title: "Something went wrong", what: "The server could not finish this sign-in.", todo: "Try again in a moment.")
    }

    /// A store's reason as a sentence.
    static func words(_ error: RecordSyncError) -> String {
        let reason = error.reason
        guard let first = reason.first else { return "That did not work." }
        var sentence = first.uppercased() + reason.dropFirst()
        if error.code == .throttled, let after = error.retryAfter { sentence += " (try again in \(Int(after.rounded(.up))) seconds)" }
        return sentence.hasSuffix(".") ? sentence : sentence + "."
    }
}
