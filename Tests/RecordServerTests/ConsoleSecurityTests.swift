import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import RecordModel
import RecordRules
@testable import RecordServer
import TestSupport
import Testing

/// The web console's sessions through HTTP (docs/console.md, "Signing in"): an operator's name
/// and secret sign in, nothing else does; the cookie's attributes, every page's headers;
/// requests from another site refused; sessions end (sign-out, expiry, idleness, revocation);
/// sign-ins throttled; what a session does is limited by its operator's scopes and audited.
@Suite struct ConsoleSecurityTests {
    static let container = "iCloud.test.Gallery"

    /// A browser's state against the console: its cookies.
    struct Browser {
        var cookies: [String: String] = [:]
        var header: HTTPFields {
            cookies.isEmpty ? [:] : [.cookie: cookies.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; ")]
        }

        /// Keeps the cookies an answer sets (`Max-Age=0` removes one).
        mutating func take(_ reply: Reply) {
            for value in reply.headers[values: .setCookie] {
                let pair = value.split(separator: ";")[0].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                if value.contains("Max-Age=0") { cookies[pair[0]] = nil } else { cookies[pair[0]] = pair[1] }
            }
        }
    }

    static func console(_ configuration: inout ServerConfiguration) {
        configuration.console = ConsoleSessionLimits()
    }

    /// The value of the hidden field `csrf` in a page.
    static func csrf(in reply: Reply) -> String? {
        let html = String(decoding: reply.data, as: UTF8.self)
        guard let range = html.range(of: #"name="csrf" value=""#) else { return nil }
        return String(html[range.upperBound...].prefix { $0 != "\"" })
    }

    /// The CSRF token of the console's page (its `data-csrf`).
    static func pageToken(in reply: Reply) -> String? {
        let html = String(decoding: reply.data, as: UTF8.self)
        guard let range = html.range(of: #"data-csrf=""#) else { return nil }
        return String(html[range.upperBound...].prefix { $0 != "\"" })
    }

    /// Opens the sign-in form and sends it with `name` and `secret`; the answer.
    static func signIn(_ server: TestServer, _ browser: inout Browser, _ name: String, _ secret: String, headers: HTTPFields = [:]) async throws -> Reply {
        let form = try await server.send(.get, "/console", headers: browser.header + headers)
        browser.take(form)
        let token = try #require(csrf(in: form))
        let reply = try await server.send(.post, "/console/signin", headers: browser.header + headers + [.contentType: "application/x-www-form-urlencoded"],
                                          body: "csrf=\(token)&name=\(name)&secret=\(secret)")
        browser.take(reply)
        return reply
    }

    static func makeOperator(_ server: TestServer, _ name: String, _ scopes: Set<OperatorScope>) async throws -> String {
        let secret = Credentials.newOperatorSecret()
        try await server.store.createOperator(named: name, secretHash: Credentials.hash(secret), scopes: scopes)
        return secret
    }

    @Test func theConsoleIsOffUnlessTurnedOnAndThenACookieAloneOpensNothing() async throws {
        try await withServer { server in
            #expect(try await server.send(.get, "/console").status == 404)
            let secret = try await Self.makeOperator(server, "ops", [.all])
            #expect(try await server.send(.post, "/console/signin", headers: [.contentType: "application/x-www-form-urlencoded"],
                                          body: "name=ops&secret=\(secret)").status == 404)
            // Without the console, a console header and cookie are no credential at all.
            let reply = try await server.send(.get, "/admin/1/users", headers: [.cookie: "recordsync_console=anything", ConsoleSessionsHeader.csrf: "x"])
            #expect(reply.code == "AUTHENTICATION_REQUIRED")
        }
    }

    @Test func anOperatorsNameAndSecretSignInAndEveryPageCarriesItsHeaders() async throws {
        try await withServer(configure: Self.console) { server in
            let secret = try await Self.makeOperator(server, "ops", [.all])
            var browser = Browser()
            let form = try await server.send(.get, "/console")
            Self.expectPageHeaders(form)
            let formCookie = try #require(form.headers[values: .setCookie].first)
            #expect(formCookie.contains("HttpOnly") && formCookie.contains("SameSite=Strict") && !formCookie.contains("Secure"), "\(formCookie)")
            let reply = try await Self.signIn(server, &browser, "ops", secret)
            #expect(reply.status == 303 && reply.headers[.location] == "/console")
            let cookie = try #require(reply.headers[values: .setCookie].first { $0.hasPrefix("recordsync_console=") })
            #expect(cookie.contains("; HttpOnly") && cookie.contains("; SameSite=Strict") && cookie.contains("Path=/;") && !cookie.contains("Secure"), "\(cookie)")
            // No secret in the cookie or the page.
            #expect(!cookie.contains(secret))
            let page = try await server.send(.get, "/console", headers: browser.header)
            #expect(page.status == 200)
            Self.expectPageHeaders(page)
            let html = String(decoding: page.data, as: UTF8.self)
            #expect(html.contains(#"data-operator="ops""#) && !html.contains(secret) && !html.contains("<script>"))
            // The session works the operators' API with its CSRF token, and is audited.
            let token = try #require(Self.pageToken(in: page))
            let users = try await server.send(.get, "/admin/1/users", headers: browser.header + [ConsoleSessionsHeader.csrf: token])
            #expect(users.status == 200, "\(users.reason)")
            let audit = try await server.store.auditLog(limit: 10)
            #expect(audit.map(\.action).contains("console sign-in") && audit.contains { $0.operatorName == "ops" && $0.action == "GET /admin/1/users" })
            // The script and the style sheet: nosniff, their own types; the page's own bytes,
            // its script and style sheet included, under 100 KB.
            var bytes = page.data.count
            for (asset, type) in [("console.js", "text/javascript"), ("console.css", "text/css")] {
                let served = try await server.send(.get, "/console/assets/\(asset)")
                #expect(served.status == 200 && served.headers[.contentType]?.hasPrefix(type) == true && served.headers[.init("X-Content-Type-Options")!] == "nosniff")
                bytes += served.data.count
            }
            #expect(bytes < 100_000, "the console's page is \(bytes) bytes")
        }
    }

    /// The headers of every console page: a CSP without inline script, no framing, no
    /// plug-ins; nothing cached; nosniff.
    static func expectPageHeaders(_ reply: Reply, sourceLocation: SourceLocation = #_sourceLocation) {
        let policy = reply.headers[.init("Content-Security-Policy")!] ?? ""
        #expect(policy.contains("script-src 'self'") && !policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"), "\(policy)", sourceLocation: sourceLocation)
        #expect(policy.contains("frame-ancestors 'none'") && policy.contains("object-src 'none'") && policy.contains("default-src 'none'"), "\(policy)", sourceLocation: sourceLocation)
        #expect(reply.headers[.cacheControl] == "no-store" && reply.headers[.init("X-Content-Type-Options")!] == "nosniff", sourceLocation: sourceLocation)
        #expect(reply.headers[.init("X-Frame-Options")!] == "DENY", sourceLocation: sourceLocation)
    }

    @Test func underTLSBehindATrustedProxyTheCookieIsSecureAndHostOnly() async throws {
        try await withServer(configure: { configuration in
            configuration.console = ConsoleSessionLimits()
            configuration.trustedProxies = try! TrustedProxies(["127.0.0.1"])
        }) { server in
            let secret = try await Self.makeOperator(server, "ops", [.read])
            var browser = Browser()
            let reply = try await Self.signIn(server, &browser, "ops", secret, headers: [.init("X-Forwarded-Proto")!: "https"])
            #expect(reply.status == 303)
            let cookie = try #require(reply.headers[values: .setCookie].first)
            #expect(cookie.hasPrefix("__Host-recordsync_console=") && cookie.contains("; Secure") && cookie.contains("Path=/;") && !cookie.contains("Domain"), "\(cookie)")
        }
        // From a proxy nobody trusts, X-Forwarded-Proto changes nothing.
        try await withServer(configure: Self.console) { server in
            let secret = try await Self.makeOperator(server, "ops", [.read])
            var browser = Browser()
            let reply = try await Self.signIn(server, &browser, "ops", secret, headers: [.init("X-Forwarded-Proto")!: "https"])
            #expect(reply.headers[values: .setCookie].first?.hasPrefix("recordsync_console=") == true)
        }
    }

    @Test func nothingButAnOperatorsSecretSignsIn() async throws {
        try await withServer(configure: Self.console) { server in
            let secret = try await Self.makeOperator(server, "ops", [.all])
            let alice = try await server.user("alice")
            // Wrong secret, another operator's name, a user's token: refused, no session.
            for (name, given) in [("ops", Credentials.newOperatorSecret()), ("other", secret), ("alice", alice.token), ("ops", alice.token)] {
                var browser = Browser()
                let reply = try await Self.signIn(server, &browser, name, given)
                #expect(reply.status == 401, "\(name)")
                #expect(browser.cookies["recordsync_console"] == nil)
                let text = String(decoding: reply.data, as: UTF8.self)
                #expect(text.contains(#"role="alert""#))
                if given == alice.token { #expect(text.contains("never a user&#39;s token")) }
            }
            // A form without its CSRF field, or from a browser without the form's cookie.
            var browser = Browser()
            _ = try await Self.signIn(server, &browser, "nobody", "x")
            let noField = try await server.send(.post, "/console/signin", headers: browser.header + [.contentType: "application/x-www-form-urlencoded"],
                                                body: "name=ops&secret=\(secret)")
            #expect(noField.status == 403 && noField.headers[values: .setCookie].allSatisfy { !$0.hasPrefix("recordsync_console=") })
            let crossSite = try await server.send(.post, "/console/signin", headers: [.contentType: "application/x-www-form-urlencoded"],
                                                  body: "csrf=\(try #require(Self.csrf(in: try await server.send(.get, "/console", headers: browser.header))))&name=ops&secret=\(secret)")
            #expect(crossSite.status == 403)
            // A forged session cookie gets the sign-in form, and nothing through the API.
            let forged = Browser(cookies: ["recordsync_console": Credentials.newToken()])
            let page = try await server.send(.get, "/console", headers: forged.header)
            #expect(String(decoding: page.data, as: UTF8.self).contains(#"action="/console/signin""#))
            let api = try await server.send(.get, "/admin/1/users", headers: forged.header + [ConsoleSessionsHeader.csrf: ConsoleSessionsHeader.token(forged.cookies["recordsync_console"]!)])
            #expect(api.code == "AUTHENTICATION_FAILED")
            // None of them left anything in the audit log.
            #expect(try await server.store.auditLog(limit: 10).isEmpty)
        }
    }

    @Test func signInsAreThrottledByClientAddress() async throws {
        try await withServer(configure: { configuration in
            configuration.console = ConsoleSessionLimits()
            configuration.accounts.throttle.failuresPerAddress = 3
        }) { server in
            let secret = try await Self.makeOperator(server, "ops", [.all])
            for _ in 0..<3 {
                var browser = Browser()
                #expect(try await Self.signIn(server, &browser, "ops", Credentials.newOperatorSecret()).status == 401)
            }
            // Even the right secret waits now.
            var browser = Browser()
            let reply = try await Self.signIn(server, &browser, "ops", secret)
            #expect(reply.status == 429 && String(decoding: reply.data, as: UTF8.self).contains("try again"))
            #expect(browser.cookies["recordsync_console"] == nil)
        }
    }

    @Test func requestsFromAnotherSiteAreRefused() async throws {
        try await withServer(configure: Self.console) { server in
            let secret = try await Self.makeOperator(server, "ops", [.all])
            _ = try await server.user("alice")
            var browser = Browser()
            _ = try await Self.signIn(server, &browser, "ops", secret)
            let token = try #require(Self.pageToken(in: try await server.send(.get, "/console", headers: browser.header)))
            // The cookie without the header (what another site's form or image sends): no credential.
            let plain = try await server.send(.post, "/admin/1/users/delete", headers: browser.header + [.contentType: "application/json"], body: #"{"name":"alice"}"#)
            #expect(plain.code == "AUTHENTICATION_REQUIRED")
            let wrong = try await server.send(.post, "/admin/1/users/delete", headers: browser.header + [ConsoleSessionsHeader.csrf: "not-the-token"], body: #"{"name":"alice"}"#)
            #expect(wrong.code == "AUTHENTICATION_FAILED")
            #expect(try await server.store.user(named: "alice") != nil)
            // The database API likewise: acting as alice needs the header.
            let asAlice = try await server.send(.post, "/database/1/\(Self.container)/development/private/zones/list",
                                                headers: browser.header + [.init("X-RecordSync-Act-As")!: "alice"], body: "{}")
            #expect(asAlice.code == "AUTHENTICATION_REQUIRED")
            // Signing out needs the page's token too.
            let signOut = try await server.send(.post, "/console/signout", headers: browser.header + [.contentType: "application/x-www-form-urlencoded"], body: "")
            #expect(signOut.status == 403)
            #expect(try await server.send(.get, "/admin/1/users", headers: browser.header + [ConsoleSessionsHeader.csrf: token]).status == 200)
            // With the header, the same session acts as alice, audited under the operator's name.
            let listed = try await server.send(.post, "/database/1/\(Self.container)/development/private/zones/list",
                                               headers: browser.header + [ConsoleSessionsHeader.csrf: token, .init("X-RecordSync-Act-As")!: "alice"], body: "{}")
            #expect(listed.status == 200, "\(listed.reason)")
            #expect(try await server.store.auditLog(limit: 5).contains { $0.operatorName == "ops" && $0.target == "as alice" })
        }
    }

    @Test func sessionsEndBySigningOutExpiryIdlenessAndRevocation() async throws {
        try await withServer(configure: Self.console) { server in
            let secret = try await Self.makeOperator(server, "ops", [.all])
            var browser = Browser()
            _ = try await Self.signIn(server, &browser, "ops", secret)
            let token = try #require(Self.pageToken(in: try await server.send(.get, "/console", headers: browser.header)))
            let old = browser
            let out = try await server.send(.post, "/console/signout", headers: browser.header + [.contentType: "application/x-www-form-urlencoded"], body: "csrf=\(token)")
            browser.take(out)
            #expect(out.status == 303 && browser.cookies["recordsync_console"] == nil)
            // The old cookie, replayed, is refused.
            #expect(try await server.send(.get, "/admin/1/users", headers: old.header + [ConsoleSessionsHeader.csrf: token]).code == "AUTHENTICATION_FAILED")
            #expect(try await server.store.auditLog(limit: 10).contains { $0.action == "console sign-out" && $0.operatorName == "ops" })
            // Revoking the operator ends its sessions.
            var again = Browser()
            _ = try await Self.signIn(server, &again, "ops", secret)
            let second = try #require(Self.pageToken(in: try await server.send(.get, "/console", headers: again.header)))
            try await server.store.revokeOperator(named: "ops")
            #expect(try await server.send(.get, "/admin/1/users", headers: again.header + [ConsoleSessionsHeader.csrf: second]).code == "AUTHENTICATION_FAILED")
        }
        // Short limits, but not so short that a busy machine's sign-in outlives them.
        for limits in [ConsoleSessionLimits(lifetime: .seconds(3), idle: .seconds(60)), ConsoleSessionLimits(lifetime: .seconds(60), idle: .seconds(3))] {
            try await withServer(configure: { $0.console = limits }) { server in
                let secret = try await Self.makeOperator(server, "ops", [.all])
                var browser = Browser()
                _ = try await Self.signIn(server, &browser, "ops", secret)
                let token = try #require(Self.pageToken(in: try await server.send(.get, "/console", headers: browser.header)))
                #expect(try await server.send(.get, "/admin/1/users", headers: browser.header + [ConsoleSessionsHeader.csrf: token]).status == 200)
                try await Task.sleep(for: .milliseconds(3500))
                let late = try await server.send(.get, "/admin/1/users", headers: browser.header + [ConsoleSessionsHeader.csrf: token])
                #expect(late.code == "AUTHENTICATION_FAILED" && late.reason.contains("sign in again"), "\(late.reason)")
            }
        }
    }

    @Test func aSessionMayDoWhatItsOperatorsScopesAllow() async throws {
        try await withServer(configure: Self.console) { server in
            let secret = try await Self.makeOperator(server, "designer", [.schema])
            _ = try await server.user("alice")
            var browser = Browser()
            _ = try await Self.signIn(server, &browser, "designer", secret)
            let token = try #require(Self.pageToken(in: try await server.send(.get, "/console", headers: browser.header)))
            let users = try await server.send(.get, "/admin/1/users", headers: browser.header + [ConsoleSessionsHeader.csrf: token])
            #expect(users.code == "ACCESS_DENIED" && users.reason.contains("users"), "\(users.reason)")
            let asAlice = try await server.send(.post, "/database/1/\(Self.container)/development/private/zones/list",
                                                headers: browser.header + [ConsoleSessionsHeader.csrf: token, .init("X-RecordSync-Act-As")!: "alice"], body: "{}")
            #expect(asAlice.code == "ACCESS_DENIED")
            #expect(try await server.send(.get, "/admin/1/containers", headers: browser.header + [ConsoleSessionsHeader.csrf: token]).status == 200)
        }
    }

    /// The operators' API refuses bad input with the error the documentation names, a reason
    /// naming the bad part, and nothing changed.
    @Test func theAdminRoutesRefuseBadInputAndChangeNothing() async throws {
        try await withServer(configure: Self.console) { server in
            let secret = try await Self.makeOperator(server, "ops", [.all])
            let alice = try await server.user("alice")
            _ = try await server.user("bob")
            /// Posts `body` to `/admin/1/route` as ops.
            func post(_ route: String, _ body: String) async throws -> Reply {
                try await server.send(.post, "/admin/1/\(route)", headers: [.authorization: "Bearer \(secret)", .contentType: "application/json"], body: body)
            }
            let pem = P256.Signing.PrivateKey().publicKey.pemRepresentation.replacingOccurrences(of: "\n", with: "\\n")
            let refusals: [(route: String, body: String, code: String, naming: String)] = [
                ("apitokens/create", #"{"container":"#, "BAD_REQUEST", "JSON"),
                ("apitokens/create", #"{"container":7,"environment":"development"}"#, "BAD_REQUEST", "container"),
                ("apitokens/create", #"{"container":"\#(Self.container)","environment":"staging"}"#, "BAD_REQUEST", "staging"),
                ("apitokens/create", #"{"container":"\#(Self.container)","environment":"development","origins":["not an origin"]}"#, "BAD_REQUEST", "not an origin"),
                ("apitokens/create", #"{"container":"\#(Self.container)","environment":"development","signInCallback":"javascript:alert(1)"}"#, "BAD_REQUEST", "javascript:"),
                ("apitokens/revoke", #"{"name":"nothing","container":"\#(Self.container)","environment":"development"}"#, "NOT_FOUND", "nothing"),
                ("operators/create", #"{"name":"auditor","scopes":["root"]}"#, "BAD_REQUEST", "root"),
                ("operators/create", #"{"name":"auditor","scopes":[]}"#, "BAD_REQUEST", "scope"),
                ("operators/create", #"{"name":"ops","scopes":["read"]}"#, "EXISTS", "ops"),
                ("operators/revoke", #"{"name":"ops"}"#, "BAD_REQUEST", "itself"),
                ("operators/revoke", #"{"name":"nobody"}"#, "NOT_FOUND", "nobody"),
                ("users/keys/add", #"{"name":"alice","publicKeyPEM":"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"}"#, "BAD_REQUEST", "key"),
                ("users/keys/add", #"{"name":"alice"}"#, "BAD_REQUEST", "publicKeyPEM"),
                ("users/keys/add", #"{"name":"nobody","publicKeyPEM":"\#(pem)"}"#, "NOT_FOUND", "nobody"),
                ("users/keys/revoke", #"{"name":"alice","keyName":"laptop"}"#, "NOT_FOUND", "laptop"),
                ("users/link", #"{"name":"alice","source":"nobody"}"#, "NOT_FOUND", "nobody"),
                ("users/link", #"{"name":"alice","source":"alice"}"#, "BAD_REQUEST", "themselves"),
                ("users/link", #"{"name":"alice"}"#, "BAD_REQUEST", "source"),
            ]
            for refusal in refusals {
                let reply = try await post(refusal.route, refusal.body)
                #expect(reply.status >= 400 && reply.code == refusal.code && reply.reason.contains(refusal.naming),
                        "\(refusal.route) \(refusal.body): \(reply.status) \(reply.code ?? "-") \(reply.reason)")
            }
            // Nothing changed: no API token, the one operator, no key, alice and bob as they were.
            #expect(try await server.store.serverKeys(ofUserNamed: "alice").isEmpty)
            let access = try await server.send(.get, "/admin/1/access", headers: [.authorization: "Bearer \(secret)"])
            #expect(String(decoding: access.data, as: UTF8.self).contains(#""apiTokens":[]"#), "\(String(decoding: access.data, as: UTF8.self))")
            #expect(try await server.store.operators().map(\.operator.name) == ["ops"])
            #expect(try await server.store.user(named: "bob") != nil)
            #expect(try await alice.post("zones/list", "{}").status == 200)
        }
    }
}

/// The console's request header and its value for a session cookie, as the console's page
/// gives them to its script.
enum ConsoleSessionsHeader {
    static let csrf = ConsoleSessions.csrfHeader

    static func token(_ cookie: String) -> String {
        ConsoleSessions.csrfToken(cookie)
    }
}

/// The console's request log through HTTP (docs/console.md, "The request log"), on both engines.
@Suite struct ConsoleRequestLogTests {
    static let container = "iCloud.test.Gallery"

    static func requests(_ server: TestServer, _ secret: String, _ query: String = "") async throws -> [StoredRequest] {
        let reply = try await server.send(.get, "/admin/1/requests\(query)", headers: [.authorization: "Bearer \(secret)"])
        #expect(reply.status == 200, "\(reply.reason)")
        struct Answer: Decodable { var node: String; var requests: [StoredRequest] }
        return try JSONDecoder().decode(Answer.self, from: reply.data).requests
    }

    @Test func everyRequestIsLoggedWithItsUserItsErrorAndItsTimeAndFoundByThem() async throws {
        try await withServer(configure: ConsoleSecurityTests.console) { server in
            let secret = try await ConsoleSecurityTests.makeOperator(server, "ops", [.read])
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let saved = try await alice.save([Record(recordName: "note", recordType: "Note", fields: ["text": .string("v1")])])
            // A save with a stale tag: answered 200, its record's error CONFLICT.
            let stale = try await alice.post("records/modify", ModifyRecordsRequest(operations: [RecordOperation(.update, RecordPayload(
                recordName: "note", recordType: "Note", recordChangeTag: "stale", fields: ["text": RawFieldValue(FieldValue.string("v2"))]))]))
            #expect(stale.status == 200)
            _ = try #require(saved.first)
            // A request refused as a whole, with a token in its query: the path is logged without it.
            let refused = try await server.send(.post, "/database/1/\(Self.container)/development/private/records/query?ckWebAuthToken=\(bob.token)", body: "{")
            #expect(refused.status == 400)
            let all = try await Self.requests(server, secret)
            let conflict = try #require(all.first { $0.userName == "alice" && $0.errorCode == "CONFLICT" })
            #expect(conflict.status == 200 && conflict.path == "/database/1/\(Self.container)/development/private/records/modify" && conflict.method == "POST")
            #expect(conflict.userRecordName == alice.userRecordName && conflict.micros > 0 && !conflict.requestID.isEmpty && !conflict.node.isEmpty)
            #expect(conflict.endpoint.contains("records/modify"))
            let bad = try #require(all.first { $0.status == 400 })
            #expect(bad.userName == "bob" && bad.errorCode == "BAD_REQUEST")
            #expect(all.allSatisfy { !$0.path.contains(bob.token) && !$0.path.contains(alice.token) && !$0.path.contains("?") })
            // Filters: by user (name or record name), path, status class, error code; newest first.
            let alices = try await Self.requests(server, secret, "?user=alice")
            #expect(!alices.isEmpty && alices.allSatisfy { $0.userName == "alice" } && alices.map(\.id) == alices.map(\.id).sorted(by: >))
            #expect(try await Self.requests(server, secret, "?user=\(alice.userRecordName)").map(\.id) == alices.map(\.id))
            #expect(try await Self.requests(server, secret, "?code=CONFLICT").map(\.id) == [conflict.id])
            #expect(try await Self.requests(server, secret, "?status=4").allSatisfy { (400..<500).contains($0.status) })
            #expect(try await Self.requests(server, secret, "?status=400&user=bob").map(\.id) == [bad.id])
            #expect(try await Self.requests(server, secret, "?path=records/modify&user=alice").count == 2)
            // The operator's own requests name it.
            #expect(try await Self.requests(server, secret, "?path=/admin/1/requests").allSatisfy { $0.operatorName == "ops" && $0.userName.isEmpty })
            // A user deleted takes their requests along.
            _ = try await server.store.deleteUser(named: "alice")
            #expect(try await Self.requests(server, secret, "?user=alice").isEmpty)
            // Pruning keeps the newest within the maximum.
            try await server.store.pruneRequestLog(retention: .seconds(3600), maximum: 2)
            #expect(try await server.store.requestLog(matching: RequestLogFilter(limit: 100)).count <= 3)
        }
    }

    @Test func withoutTheConsoleNoRequestIsKept() async throws {
        try await withServer { server in
            let secret = try await ConsoleSecurityTests.makeOperator(server, "ops", [.read])
            let alice = try await server.user("alice")
            try await alice.save([Record(recordName: "note", recordType: "Note", fields: ["text": .string("v1")])])
            let reply = try await server.send(.get, "/admin/1/requests", headers: [.authorization: "Bearer \(secret)"])
            #expect(reply.code == "BAD_REQUEST" && reply.reason.contains("--console"))
            #expect(try await server.store.requestLog(matching: RequestLogFilter()).isEmpty)
        }
    }
}

/// The console's charts' figures through HTTP (docs/console.md, "Health"), on both engines.
@Suite struct ConsoleMetricsTests {
    @Test func theLastHoursFiguresSumEveryNodeAndKeepEachRoutesLatency() async throws {
        try await withServer(configure: ConsoleSecurityTests.console) { server in
            let secret = try await ConsoleSecurityTests.makeOperator(server, "ops", [.read])
            let alice = try await server.user("alice")
            try await alice.save([Record(recordName: "note", recordType: "Note", fields: ["text": .string("v1")])])
            _ = try await alice.post("records/modify", ModifyRecordsRequest(operations: [RecordOperation(.update, RecordPayload(
                recordName: "note", recordType: "Note", recordChangeTag: "stale", fields: ["text": RawFieldValue(FieldValue.string("v2"))]))]))
            // This node's name for the route, as its figures say.
            let first = try await server.send(.get, "/admin/1/metrics?minutes=5", headers: [.authorization: "Bearer \(secret)"])
            let route = try #require(try JSONDecoder().decode(MetricsSeries.self, from: first.data).endpoints.first { $0.endpoint.hasSuffix("records/modify") }?.endpoint)
            #expect(route.hasPrefix("POST /database/1/"), "\(route)")
            // Another node's finished minute, written as its journal writes it.
            let minute = Int64(Date().timeIntervalSince1970 / 60) - 1
            var latency = [Int64](repeating: 0, count: LatencyBuckets.bounds.count + 1)
            latency[2] = 98
            latency[10] = 2
            try await server.store.recordMetrics([StoredMetricMinute(node: "other/1", minute: minute, endpoint: route,
                                                                     requests: 100, errors: ["CONFLICT": 3], latency: latency)],
                                                 node: "other/1", startedAt: 1, sample: true)
            let reply = try await server.send(.get, "/admin/1/metrics?minutes=60", headers: [.authorization: "Bearer \(secret)"])
            #expect(reply.status == 200, "\(reply.reason)")
            let metrics = try JSONDecoder().decode(MetricsSeries.self, from: reply.data)
            #expect(metrics.minutes.count == 60)
            let last = try #require(metrics.minutes.last), before = metrics.minutes[58]
            #expect(last.requests >= 2 && last.errors["CONFLICT"] == 1, "\(last)")
            #expect(before.requests >= 100 && before.errors["CONFLICT"] == 3, "\(before)")
            let modify = try #require(metrics.endpoints.first { $0.endpoint == route })
            #expect(modify.requests >= 102 && modify.p50.count == 60)
            // 98 of the other node's 100 in the 1 ms bucket, 2 in the 256 ms one.
            #expect(modify.p50[58] == LatencyBuckets.bounds[2] && modify.p99[58] == LatencyBuckets.bounds[10], "\(modify.p50[58] ?? -1) \(modify.p99[58] ?? -1)")
            #expect(modify.p50[59] != nil && modify.p50[0] == nil)
            #expect(metrics.nodes.contains { $0.name == "other/1" })
            #expect(metrics.storage.last?.records == 1)
            // Pruned past the retention.
            try await server.store.pruneMetrics(retention: .seconds(0))
            let pruned = try await server.store.metrics(lastMinutes: 60)
            #expect(pruned.minutes.allSatisfy { $0.requests == 0 } && pruned.storage.allSatisfy { $0.minute == pruned.minutes.last?.minute })
        }
    }

    @Test func latencyQuantilesAreTheBoundsOfTheirBuckets() {
        #expect(LatencyBuckets.bucket(1) == 0 && LatencyBuckets.bucket(250) == 0 && LatencyBuckets.bucket(251) == 1 && LatencyBuckets.bucket(10_000_000) == LatencyBuckets.bounds.count)
        #expect(LatencyBuckets.quantile(0.5, of: [0, 0, 0]) == nil)
        #expect(LatencyBuckets.quantile(0.5, of: [1, 1, 2]) == 500 && LatencyBuckets.quantile(0.99, of: [1, 1, 2]) == 1000)
    }
}
