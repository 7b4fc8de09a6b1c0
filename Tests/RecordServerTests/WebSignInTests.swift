import AsyncHTTPClient
import Crypto
import Foundation
import HTTPTypes
import RecordModel
@testable import RecordRules
@testable import RecordServer
import Testing
import TestSupport

/// The web sign-in page over HTTP (docs/protocol.md, "The web sign-in page"): the account
/// forms, the handing over in both modes, the page's headers and CSRF checks, and the
/// OpenID Connect flow against a real provider of the tests' own (Authlib): `state`, `nonce`
/// and PKCE mismatches, a replayed code, another browser; Sign in with Apple's `form_post` and
/// signed client secret.
@Suite(.serialized) struct WebSignInTests {
    static let container = "iCloud.test.Gallery"
    static let page = "/signin/1/iCloud.test.Gallery/development"
    static let app = "https://gallery.example.com"

    /// A browser's sign-in cookie and the CSRF field its forms carry.
    struct Browser {
        var cookie: String
        var csrf: String
    }

    /// Opens the page (`query` after `?`) in a new browser, or in `browser`.
    static func open(_ server: TestServer, _ query: String, in browser: Browser? = nil) async throws -> (Reply, Browser) {
        var headers: HTTPFields = [:]
        if let browser { headers[.cookie] = "recordsync_signin=\(browser.cookie)" }
        let reply = try await server.send(.get, "\(page)?\(query)", headers: headers)
        let cookie = browser?.cookie ?? reply.headers[.setCookie].flatMap { $0.split(separator: ";").first }.map { String($0.split(separator: "=", maxSplits: 1)[1]) } ?? ""
        return (reply, Browser(cookie: cookie, csrf: attribute(in: reply, after: #"name="csrf" value=""#) ?? ""))
    }

    /// Sends a form to `path` under the page (the browser's cookie unless `cookie` is false).
    static func submit(_ server: TestServer, _ path: String, _ fields: [(String, String)], as browser: Browser, cookie: Bool = true) async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
        if cookie { headers[.cookie] = "recordsync_signin=\(browser.cookie)" }
        let body = fields.map { "\(OIDCClient.formEncoded($0.0))=\(OIDCClient.formEncoded($0.1))" }.joined(separator: "&")
        return try await server.send(.post, path.hasPrefix("/") ? path : "\(page)/\(path)", headers: headers, body: body)
    }

    /// The text after `marker` up to the next `"`, HTML's escapes undone.
    static func attribute(in reply: Reply, after marker: String) -> String? {
        let html = String(decoding: reply.data, as: UTF8.self)
        guard let start = html.range(of: marker) else { return nil }
        let rest = html[start.upperBound...]
        return String(rest[..<(rest.firstIndex(of: "\"") ?? rest.endIndex)]).replacingOccurrences(of: "&quot;", with: "\"")
            .replacingOccurrences(of: "&#39;", with: "'").replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    /// The token and origin a Post Message page hands over, if it is one.
    static func handoff(_ reply: Reply) -> (token: String, origin: String)? {
        guard reply.status == 200, let token = attribute(in: reply, after: #"data-session=""#), let origin = attribute(in: reply, after: #"data-origin=""#) else { return nil }
        return (token, origin)
    }

    /// Makes a verified account, as `recordserver account verify` does.
    static func account(_ email: String, password: String, in store: RecordStore) async throws {
        var settings = AccountSettings()
        settings.signUp = .open
        settings.hashing = PasswordHashing(rounds: 1 << 10)
        let accounts = Accounts(store: store, settings: settings)
        _ = try await accounts.signUp(email: email, password: password, invitation: nil, client: nil)
        _ = try await accounts.verifyWithoutCode(email: email)
    }

    static func text(_ reply: Reply) -> String { String(decoding: reply.data, as: UTF8.self) }

    /// `users/caller` as CloudKit JS sends it: the API token, the user's token if any, the
    /// app's `Origin`.
    static func caller(_ server: TestServer, api: String, token: String? = nil, origin: String = app) async throws -> Reply {
        let user = token.map { "&ckWebAuthToken=\(OIDCClient.formEncoded($0))" } ?? ""
        return try await server.send(.get, "/database/1/\(container)/development/public/users/caller?\(CloudKitJSTests.ckjs)\(user)&ckAPIToken=\(api)",
                                     headers: [.origin: origin])
    }

    @Test func aWebAppIsSentToThePageSignsUpAndInThereAndGetsItsTokenByMessage() async throws {
        try await withMailServer { mail in
            try await withServer(configure: AccountTests.configure(mail)) { server in
                let api = try await CloudKitJSTests.apiToken(server, origins: [Self.app, "https://other.example.com"])
                // Signed out: 421 with the page's URL, naming the app's token and origin.
                let signedOut = try await Self.caller(server, api: api)
                #expect(signedOut.status == 421 && signedOut.code == "AUTHENTICATION_REQUIRED", "\(signedOut.json)")
                let redirect = try #require(signedOut.json["redirectURL"]?.stringValue)
                #expect(redirect.hasSuffix("\(Self.page)?token=api-token-1&origin=https%3A%2F%2Fgallery.example.com"), "\(redirect)")
                let query = String(redirect.split(separator: "?", maxSplits: 1)[1])

                // The page: a form, safe headers, a cookie for the browser, no opener policy.
                let (opened, browser) = try await Self.open(server, query)
                #expect(opened.status == 200)
                let policy = try #require(opened.headers[HTTPField.Name("Content-Security-Policy")!])
                #expect(policy.contains("frame-ancestors 'none'") && policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"), "\(policy)")
                #expect(opened.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
                #expect(opened.headers[HTTPField.Name("Cross-Origin-Opener-Policy")!] == nil)
                #expect(opened.headers[.cacheControl] == "no-store")
                #expect(opened.headers[.setCookie]?.contains("HttpOnly; SameSite=Lax") == true, "\(opened.headers)")
                #expect(!Self.text(opened).contains("<script>") && !Self.text(opened).contains("style="))
                #expect(browser.csrf.count > 20)

                // Sign up and verify through the forms.
                let email = "ada-\(server.backend)@example.com".lowercased()
                let signUp = try await Self.submit(server, "signup", [("csrf", browser.csrf), ("token", "api-token-1"), ("origin", Self.app),
                                                                      ("email", email), ("password", "correct horse")], as: browser)
                #expect(signUp.status == 200 && Self.text(signUp).contains("We sent a code to \(email)"), "\(Self.text(signUp))")
                let code = try #require(AccountTests.code(in: try await mail.nextMessage(to: email)))
                let verified = try await Self.submit(server, "verify", [("csrf", browser.csrf), ("token", "api-token-1"), ("origin", Self.app),
                                                                        ("email", email), ("code", code)], as: browser)
                let handed = try #require(Self.handoff(verified), "\(Self.text(verified))")
                #expect(handed.origin == Self.app)
                #expect(verified.headers[.location] == nil && !(verified.headers[.contentType] ?? "").isEmpty)
                let caller = try await Self.caller(server, api: api, token: handed.token)
                #expect(caller.status == 200 && caller.json["userRecordName"]?.stringValue?.hasPrefix("_") == true, "\(caller.json)")

                // A wrong password shows the form again with what went wrong, and no token.
                let wrong = try await Self.submit(server, "password", [("csrf", browser.csrf), ("token", "api-token-1"), ("origin", Self.app),
                                                                       ("email", email), ("password", "wrong horse")], as: browser)
                #expect(wrong.status == 200 && Self.handoff(wrong) == nil && Self.text(wrong).contains("class=\"error\""), "\(Self.text(wrong))")
                let right = try await Self.submit(server, "password", [("csrf", browser.csrf), ("token", "api-token-1"), ("origin", "https://other.example.com"),
                                                                       ("email", email), ("password", "correct horse")], as: browser)
                let second = try #require(Self.handoff(right))
                #expect(second.origin == "https://other.example.com" && second.token != handed.token)

                // Signing out revokes the token: the app is asked to sign in again (421), not refused.
                let out = try await server.send(.post, "/auth/1/\(Self.container)/development/signout?ckWebAuthToken=\(OIDCClient.formEncoded(second.token))")
                #expect(out.status == 200, "\(out.json)")
                let after = try await Self.caller(server, api: api, token: second.token)
                #expect(after.status == 421 && after.code == "AUTHENTICATION_REQUIRED" && after.json["redirectURL"]?.stringValue == redirect, "\(after.json)")
                // The style sheet and the script are the server's own, typed.
                let script = try await server.send(.get, "/signin/assets/signin.js")
                #expect(script.headers[.contentType] == "text/javascript; charset=utf-8" && Self.text(script).contains("postMessage({ ckSession: token, ckWebAuthToken: token }, origin)"))
            }
        }
    }

    @Test func formsWithoutTheBrowsersCSRFFieldChangeNothing() async throws {
        try await withMailServer { mail in
            try await withServer(configure: AccountTests.configure(mail)) { server in
                _ = try await CloudKitJSTests.apiToken(server)
                let (_, browser) = try await Self.open(server, "token=api-token-1")
                let (_, other) = try await Self.open(server, "token=api-token-1")
                #expect(browser.cookie != other.cookie && browser.csrf != other.csrf)
                let email = "csrf-\(server.backend)@example.com".lowercased()
                let fields = [("token", "api-token-1"), ("email", email), ("password", "correct horse")]
                for (given, sendsCookie) in [(nil, true), ("forged", true), (other.csrf, true), (browser.csrf, false)] as [(String?, Bool)] {
                    let sent = try await Self.submit(server, "signup", (given.map { [("csrf", $0)] } ?? []) + fields, as: browser, cookie: sendsCookie)
                    #expect(sent.status == 403 && Self.text(sent).contains("Go back, reload the page"), "\(Self.text(sent))")
                }
                let signIn = try await Self.submit(server, "password", [("csrf", other.csrf)] + fields, as: browser)
                #expect(signIn.status == 403)
                try await Task.sleep(for: .milliseconds(300))
                #expect(mail.messages(to: email).isEmpty)
                #expect(try await server.store.users().isEmpty)
                // The browser's own field works.
                let sent = try await Self.submit(server, "signup", [("csrf", browser.csrf)] + fields, as: browser)
                #expect(sent.status == 200 && Self.text(sent).contains("We sent a code"))
            }
        }
    }

    @Test func aForgottenPasswordIsResetThroughThePageAndTheTokenHandedOver() async throws {
        try await withMailServer { mail in
            try await withServer(configure: AccountTests.configure(mail)) { server in
                _ = try await CloudKitJSTests.apiToken(server)
                let email = "reset-\(server.backend)@example.com".lowercased()
                try await Self.account(email, password: "old horse", in: server.store)
                let (page, browser) = try await Self.open(server, "token=api-token-1&view=reset")
                #expect(Self.text(page).contains("Reset your password") && Self.text(page).contains("/reset\""))
                let asked = try await Self.submit(server, "reset", [("csrf", browser.csrf), ("token", "api-token-1"), ("email", email)], as: browser)
                #expect(asked.status == 200 && Self.text(asked).contains("Choose a new password"), "\(Self.text(asked))")
                let code = try #require(AccountTests.code(in: try await mail.nextMessage(to: email)))
                let wrong = try await Self.submit(server, "reset/complete", [("csrf", browser.csrf), ("token", "api-token-1"), ("email", email),
                                                                             ("code", code == "AAAA-AAAA" ? "BBBB-BBBB" : "AAAA-AAAA"), ("password", "new horse")], as: browser)
                #expect(wrong.status == 200 && Self.handoff(wrong) == nil && Self.text(wrong).contains("class=\"error\""))
                let done = try await Self.submit(server, "reset/complete", [("csrf", browser.csrf), ("token", "api-token-1"), ("email", email),
                                                                            ("code", code), ("password", "new horse")], as: browser)
                #expect(Self.handoff(done) != nil, "\(Self.text(done))")
                let old = try await Self.submit(server, "password", [("csrf", browser.csrf), ("token", "api-token-1"), ("email", email),
                                                                     ("password", "old horse")], as: browser)
                #expect(Self.handoff(old) == nil)
            }
        }
    }

    @Test func refusedFormsAndAnswersAreThrottledByClientAddress() async throws {
        try await withServer(configure: { $0.accounts.throttle.failuresPerAddress = 3 }) { server in
            _ = try await CloudKitJSTests.apiToken(server)
            try await Self.account("lin-\(server.backend)@example.com".lowercased(), password: "correct horse", in: server.store)
            let (_, browser) = try await Self.open(server, "token=api-token-1")
            let fields = [("token", "api-token-1"), ("email", "lin-\(server.backend)@example.com".lowercased()), ("password", "correct horse")]
            for _ in 0..<2 { #expect(try await Self.submit(server, "password", fields, as: browser).status == 403) }
            #expect(try await Self.back(server, ["code": "made-up", "state": "made-up"], as: browser).status == 400)
            // Three failures from this address: even the right form waits now.
            let throttled = try await Self.submit(server, "password", [("csrf", browser.csrf)] + fields, as: browser)
            #expect(throttled.status == 429 && Self.text(throttled).contains("Too many attempts") && Self.handoff(throttled) == nil, "\(Self.text(throttled))")
        }
    }

    @Test func urlRedirectModeSendsTheBrowserToTheRegisteredCallbackOnly() async throws {
        try await withServer { server in
            let api = Credentials.newAPIToken()
            try await server.store.createAPIToken(named: "web", container: Self.container, environment: "development", origins: [Self.app],
                                                  signInCallback: "https://gallery.example.com/signed-in?from=recordsync", tokenHash: Credentials.hash(api))
            let email = "grace-\(server.backend)@example.com".lowercased()
            try await Self.account(email, password: "correct horse", in: server.store)
            let signedOut = try await Self.caller(server, api: api)
            let redirect = try #require(signedOut.json["redirectURL"]?.stringValue)
            let (page, browser) = try await Self.open(server, String(redirect.split(separator: "?")[1]))
            #expect(page.headers[HTTPField.Name("Content-Security-Policy")!]?.contains("form-action 'self' https://gallery.example.com") == true)
            // A callback given in the form is not the registered one: ignored.
            let answer = try await Self.submit(server, "password", [("csrf", browser.csrf), ("token", "web"), ("callback", "https://evil.example.net/"),
                                                                    ("email", email), ("password", "correct horse")], as: browser)
            #expect(answer.status == 303, "\(Self.text(answer))")
            let location = try #require(answer.headers[.location])
            let prefix = "https://gallery.example.com/signed-in?from=recordsync&ckWebAuthToken="
            #expect(location.hasPrefix(prefix), "\(location)")
            let components = try #require(URLComponents(string: location))
            let token = try #require(components.queryItems?.first { $0.name == "ckWebAuthToken" }?.value)
            #expect(components.queryItems?.first { $0.name == "ckSession" }?.value == token)
            #expect(try await Self.caller(server, api: api, token: token).status == 200)
            // A callback that is no https URL (or http to this machine) is refused when the token is made.
            for callback in ["javascript:alert(1)", "http://gallery.example.com/signed-in", "https://gallery.example.com/#done", "/signed-in"] {
                await #expect(throws: RecordSyncError.self, "\(callback)") {
                    try await server.store.createAPIToken(named: "bad", container: Self.container, environment: "development", origins: [],
                                                          signInCallback: callback, tokenHash: Data(count: 32))
                }
            }
        }
    }

    @Test func anOriginTheTokenDoesNotListGetsNoPage() async throws {
        try await withServer { server in
            _ = try await CloudKitJSTests.apiToken(server, name: "two", origins: [Self.app, "https://other.example.com"])
            _ = try await CloudKitJSTests.apiToken(server, name: "any", origins: ["*"])
            for query in ["token=two&origin=https%3A%2F%2Fevil.example.net", "token=two", "token=any&origin=https%3A%2F%2Fevil.example.net", "token=any"] {
                let (page, _) = try await Self.open(server, query)
                #expect(page.status == 403 && !Self.text(page).contains("<form"), "\(query): \(Self.text(page))")
            }
            for query in ["token=gone", ""] {
                let (page, _) = try await Self.open(server, query)
                #expect([400, 404].contains(page.status) && !Self.text(page).contains("<form") && Self.text(page).contains("app"), "\(query): \(Self.text(page))")
            }
            // An origin the request names but the token does not list stays out of redirectURL.
            let api = try await CloudKitJSTests.apiToken(server, name: "one")
            let asked = try await Self.caller(server, api: api, origin: "https://evil.example.net")
            #expect(asked.json["redirectURL"]?.stringValue?.hasSuffix("?token=one") == true, "\(asked.json)")
        }
    }

    // MARK: Identity providers

    /// A server offering `provider` on the page as `testid`, with an API token for the app.
    static func offering(_ provider: TestOIDCProvider, web: WebSignInSettings) -> @Sendable (inout ServerConfiguration) -> Void {
        let settings = IdentityProviderSettings(name: "testid", issuer: provider.issuer, audiences: [provider.clientID], jwksURL: provider.jwksURL, web: web)
        return { $0.identityProviders = [settings] }
    }

    /// Leaves the page for the provider: the authorization URL the server sends the browser to.
    static func leave(_ server: TestServer, _ browser: Browser) async throws -> URLComponents {
        let left = try await submit(server, "provider/testid", [("csrf", browser.csrf), ("token", "api-token-1"), ("origin", app)], as: browser)
        #expect(left.status == 303, "\(text(left))")
        return try #require(URLComponents(string: left.headers[.location] ?? ""))
    }

    /// What the provider answers an authorization URL with (it signs its one person in at once):
    /// the fields of its redirect's query, or of the form it has the browser post.
    static func authorize(_ url: URLComponents) async throws -> [String: String] {
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
        let response: HTTPClientResponse, body: String
        do {
            response = try await client.execute(HTTPClientRequest(url: url.string!), timeout: .seconds(10))
            body = String(buffer: try await response.body.collect(upTo: 1 << 20))
            try await client.shutdown()
        } catch {
            try? await client.shutdown()
            throw error
        }
        if let location = response.headers.first(name: "Location"), let items = URLComponents(string: location)?.queryItems {
            return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
        }
        var fields: [String: String] = [:]
        for part in body.components(separatedBy: "<input type=\"hidden\" name=\"").dropFirst() {
            let name = part.prefix { $0 != "\"" }
            guard let value = part.range(of: "value=\"").map({ part[$0.upperBound...].prefix { $0 != "\"" } }) else { continue }
            fields[String(name)] = String(value)
        }
        #expect(!fields.isEmpty, "the provider answered \(response.status): \(body)")
        return fields
    }

    /// Comes back from the provider with `fields`, in `browser`.
    static func back(_ server: TestServer, _ fields: [String: String], as browser: Browser) async throws -> Reply {
        let query = fields.map { "\($0.key)=\(OIDCClient.formEncoded($0.value))" }.joined(separator: "&")
        return try await server.send(.get, "/signin/callback/testid?\(query)", headers: [.cookie: "recordsync_signin=\(browser.cookie)"])
    }

    /// `url` with its query item `name` set to `value`.
    static func changing(_ url: URLComponents, _ name: String, to value: String) -> URLComponents {
        var url = url
        url.queryItems = url.queryItems?.map { $0.name == name ? URLQueryItem(name: name, value: value) : $0 }
        return url
    }

    @Test func aProviderSignsInByTheCodeFlowAndEveryMismatchIsRefused() async throws {
        let provider = try await TestOIDCProvider.start(clientID: "web.gallery.test", clientSecret: "s3cret")
        defer { Task { await provider.stop() } }
        let web = WebSignInSettings(clientID: "web.gallery.test", authorizationEndpoint: provider.authorizationEndpoint,
                                    tokenEndpoint: provider.tokenEndpoint, clientSecret: "s3cret", buttonTitle: "Sign in with Test ID")
        try await withServer(configure: Self.offering(provider, web: web)) { server in
            let api = try await CloudKitJSTests.apiToken(server)
            let (page, browser) = try await Self.open(server, "token=api-token-1")
            #expect(Self.text(page).contains("Sign in with Test ID"))
            #expect(page.headers[HTTPField.Name("Content-Security-Policy")!]?.contains("form-action 'self' \(provider.issuer)") == true)

            // Leaving: the code flow with PKCE (S256), state and nonce, back to the callback.
            let url = try await Self.leave(server, browser)
            let query = Dictionary((url.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
            #expect(url.string!.hasPrefix(provider.authorizationEndpoint + "?"))
            #expect(query["response_type"] == "code" && query["client_id"] == "web.gallery.test" && query["scope"] == "openid email")
            #expect(query["code_challenge_method"] == "S256" && query["code_challenge"]?.count == 43)
            #expect((query["state"]?.count ?? 0) >= 43 && (query["nonce"]?.count ?? 0) >= 43 && query["state"] != query["nonce"])
            #expect(query["redirect_uri"]?.hasSuffix("/signin/callback/testid") == true, "\(query)")

            // A state the server never sent: refused, nothing made.
            let answer = try await Self.authorize(url)
            var forged = answer
            forged["state"] = "x" + (answer["state"] ?? "")
            let refused = try await Self.back(server, forged, as: browser)
            #expect(refused.status == 401 && Self.handoff(refused) == nil && Self.text(refused).contains("begin it again"), "\(Self.text(refused))")
            // Another browser cannot finish this one's sign-in (and uses it up).
            let (_, stranger) = try await Self.open(server, "token=api-token-1")
            let elsewhere = try await Self.back(server, answer, as: stranger)
            #expect(elsewhere.status == 403 && Self.handoff(elsewhere) == nil, "\(Self.text(elsewhere))")
            #expect(try await server.store.users().isEmpty)

            // The real answer in the browser that began it: signed in, the token handed over.
            let answered = try await Self.authorize(try await Self.leave(server, browser))
            let finished = try await Self.back(server, answered, as: browser)
            let handed = try #require(Self.handoff(finished), "\(Self.text(finished))")
            #expect(handed.origin == Self.app)
            let caller = try await Self.caller(server, api: api, token: handed.token)
            #expect(caller.status == 200, "\(caller.json)")
            #expect(try await server.store.users().count == 1)

            // The same code and state again: refused (the state is taken once).
            let replayed = try await Self.back(server, answered, as: browser)
            #expect(replayed.status == 401 && Self.handoff(replayed) == nil, "\(Self.text(replayed))")

            // A nonce other than the one sent: the ID token is refused.
            let nonceURL = try await Self.leave(server, browser)
            let wrongNonce = try await Self.back(server, try await Self.authorize(Self.changing(nonceURL, "nonce", to: OIDCClient.randomValue())), as: browser)
            #expect(wrongNonce.status == 401 && Self.text(wrongNonce).contains("nonce"), "\(Self.text(wrongNonce))")

            // PKCE: a code issued for another challenge (a code taken from another sign-in) is
            // refused by the provider when the server sends this sign-in's verifier.
            let pkceURL = try await Self.leave(server, browser)
            let wrongChallenge = try await Self.back(server, try await Self.authorize(Self.changing(pkceURL, "code_challenge", to: OIDCClient.challenge(of: OIDCClient.randomValue()))), as: browser)
            #expect(wrongChallenge.status == 401 && Self.text(wrongChallenge).contains("refused the sign-in"), "\(Self.text(wrongChallenge))")
            let first = try await Self.authorize(try await Self.leave(server, browser))
            let second = try await Self.authorize(try await Self.leave(server, browser))
            let injected = try await Self.back(server, ["code": first["code"] ?? "", "state": second["state"] ?? ""], as: browser)
            #expect(injected.status == 401 && Self.handoff(injected) == nil, "\(Self.text(injected))")
            #expect(try await server.store.users().count == 1)

            // The provider's refusal (the person cancelled) is an error page that says what to do.
            let cancelled = try await Self.back(server, ["error": "access_denied", "state": "whatever"], as: browser)
            #expect(cancelled.status == 401 && Self.text(cancelled).contains("cancelled") && Self.text(cancelled).contains("sign-in button"))
        }
        await provider.stop()
    }

    @Test func signInWithApplesWebFlowPostsItsAnswerAndTheServerSignsItsClientSecret() async throws {
        try await withTemporaryDirectory { directory in
            let key = P256.Signing.PrivateKey()
            let privateFile = directory + "/AuthKey_TESTKEY123.p8", publicFile = directory + "/apple-public.pem"
            try key.pemRepresentation.write(toFile: privateFile, atomically: true, encoding: .utf8)
            try key.publicKey.pemRepresentation.write(toFile: publicFile, atomically: true, encoding: .utf8)
            let provider = try await TestOIDCProvider.start(clientID: "com.example.gallery.web", applePublicKey: publicFile)
            let web = WebSignInSettings(clientID: "com.example.gallery.web", authorizationEndpoint: provider.authorizationEndpoint,
                                        tokenEndpoint: provider.tokenEndpoint, appleTeamID: "TEAM123456", appleKeyID: "TESTKEY123",
                                        applePrivateKeyFile: privateFile, scopes: ["name", "email"], responseMode: "form_post")
            do {
                try await withServer(configure: Self.offering(provider, web: web)) { server in
                    _ = try await CloudKitJSTests.apiToken(server)
                    let (_, browser) = try await Self.open(server, "token=api-token-1")
                    let url = try await Self.leave(server, browser)
                    #expect(url.queryItems?.contains(URLQueryItem(name: "response_mode", value: "form_post")) == true)
                    #expect(url.queryItems?.contains(URLQueryItem(name: "scope", value: "openid name email")) == true)
                    var fields = try await Self.authorize(url)
                    // Apple posts the person's name at their first sign-in.
                    fields["user"] = #"{"name":{"firstName":"Ada","lastName":"Lovelace"},"email":"ada@privaterelay.appleid.com"}"#
                    // The provider's form, posted from its site: on to a GET of the server's own.
                    let body = fields.map { "\($0.key)=\(OIDCClient.formEncoded($0.value))" }.joined(separator: "&")
                    let posted = try await server.send(.post, "/signin/callback/testid", headers: [.contentType: "application/x-www-form-urlencoded"], body: body)
                    #expect(posted.status == 303)
                    let location = try #require(posted.headers[.location])
                    #expect(location.hasPrefix("/signin/callback/testid?"))
                    let finished = try await server.send(.get, location, headers: [.cookie: "recordsync_signin=\(browser.cookie)"])
                    #expect(Self.handoff(finished) != nil, "\(Self.text(finished))")
                    let made = try #require(try await server.store.users().first?.user)
                    let profile = try await server.store.profile(of: made)
                    #expect(profile.givenName == "Ada" && profile.familyName == "Lovelace", "\(profile)")
                    // The client secret: ES256, naming the key, from the team, for the Services ID.
                    let secret = try #require(try OIDCClient(provider: IdentityRoutes.providers([IdentityProviderSettings(name: "a", issuer: "https://appleid.apple.com", audiences: ["com.example.gallery.web"], jwksFile: "/dev/null", web: web)])[0], web: web).clientSecret())
                    let parts = secret.split(separator: ".")
                    let header = try JSONDecoder().decode([String: String].self, from: IdentityProvider.base64URLDecoded(parts[0]) ?? Data())
                    let claims = try JSONDecoder().decode([String: JSONValue].self, from: IdentityProvider.base64URLDecoded(parts[1]) ?? Data())
                    #expect(header == ["alg": "ES256", "kid": "TESTKEY123"])
                    #expect(claims["iss"] == .string("TEAM123456") && claims["sub"] == .string("com.example.gallery.web") && claims["aud"] == .string("https://appleid.apple.com"))
                    let signature = try P256.Signing.ECDSASignature(rawRepresentation: IdentityProvider.base64URLDecoded(parts[2]) ?? Data())
                    #expect(key.publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)))
                }
            } catch {
                await provider.stop()
                throw error
            }
            await provider.stop()
        }
    }
}
