import Foundation
import Hummingbird
import NIOCore
import RecordModel
@testable import RecordRules
@testable import RecordServer
import Testing
import TestSupport

/// The web sign-in flow in a real browser (headless Chromium through WebDriver): a small web
/// app of the test's own follows CloudKit JS's contract (the `users/caller` answer's
/// `redirectURL` opened in a 640×525 pop-up from a button, the first object message taken,
/// its `ckSession` sent as `ckWebAuthToken`), in Post Message and URL Redirect modes, with an
/// account and with an OpenID Connect provider of the tests' own (answering by redirect and by
/// `form_post`); a site the app's token does not list, and one naming another callback, get
/// nothing. The server, the app and the other site are three sites (`rs.test`, `localhost`,
/// `evil.test`), as in the wild.
@Suite(.serialized, .enabled(if: WebDriver.isAvailable, Comment(rawValue: WebDriver.missing))) struct BrowserSignInTests {
    static let container = "iCloud.test.Gallery"

    /// The test's web app. `app.html?server=S&api=A` signs in as CloudKit JS does, then saves a
    /// note in the private database and lists the notes; its sign-out drops the token and
    /// revokes it (as an app's `authTokenStore` does when CloudKit JS clears it).
    /// `callback.html` is its URL Redirect callback: it hands the token to the window that
    /// opened the pop-up. `evil.html?target=URL` is another site opening `target` in a pop-up
    /// and keeping every message it receives.
    static let pages: [String: String] = [
        "/app.html": """
            <!doctype html><html><head><meta charset="utf-8"><title>Gallery</title></head><body>
            <div id="apple-sign-in-button"><button id="sign-in" hidden>Sign in</button></div>
            <div id="apple-sign-out-button"><button id="sign-out" hidden>Sign out</button></div>
            <p id="status">starting</p><p id="records"></p><p id="messages"></p>
            <script>
            const query = new URLSearchParams(location.search);
            const server = query.get("server"), api = query.get("api"), container = "\(container)";
            let session = null;
            function status(text) { document.getElementById("status").textContent = text; }
            async function request(database, action, body) {
              let url = `${server}/database/1/${container}/development/${database}/${action}?ckjsBuildVersion=2420ProjectDev22&ckjsVersion=2.6.4&clientId=test`;
              if (session !== null) { url += "&ckWebAuthToken=" + encodeURIComponent(session); }
              url += "&ckAPIToken=" + api;
              const response = await fetch(url, { method: body ? "POST" : "GET", headers: { "content-type": "text/plain" },
                                                  body: body ? JSON.stringify(body) : undefined, credentials: "same-origin" });
              const json = await response.json();
              if (!response.ok) { throw json; }
              return json;
            }
            async function setUpAuth() {
              document.getElementById("sign-in").hidden = true;
              document.getElementById("sign-out").hidden = true;
              try {
                await signedIn(await request("public", "users/caller"));
              } catch (error) {
                if (error.serverErrorCode === "AUTHENTICATION_REQUIRED") { showSignIn(error.redirectURL); }
                else { status("error: " + JSON.stringify(error)); }
              }
            }
            function showSignIn(redirectURL) {
              status("signed out");
              const button = document.getElementById("sign-in");
              button.hidden = false;
              button.onclick = () => {
                const listener = (event) => {
                  if (event.data !== null && typeof event.data === "object") {
                    window.removeEventListener("message", listener);
                    document.getElementById("messages").textContent = JSON.stringify({ origin: event.origin, keys: Object.keys(event.data).sort() });
                    if (event.data.ckSession) { session = event.data.ckSession; setUpAuth(); }
                    else { status("sign-in failed: " + event.data.errorMessage); }
                  }
                };
                window.addEventListener("message", listener, false);
                window.open(redirectURL, "", "width=640, height=525");
              };
            }
            async function signedIn(me) {
              await request("private", "records/modify", { operations: [{ operationType: "forceReplace",
                record: { recordName: "note-from-web", recordType: "Note", fields: { text: { value: "hello" } } } }] });
              const found = await request("private", "records/query", { query: { recordType: "Note" } });
              document.getElementById("records").textContent = found.records.map((record) => record.recordName).join(",");
              status("signed in as " + me.userRecordName);
              const button = document.getElementById("sign-out");
              button.hidden = false;
              button.onclick = async () => {
                const old = session;
                session = null;
                await fetch(`${server}/auth/1/${container}/development/signout?ckWebAuthToken=${encodeURIComponent(old)}`, { method: "POST", mode: "no-cors" });
                window.revokedToken = old;
                setUpAuth();
              };
            }
            setUpAuth();
            </script></body></html>
            """,
        "/callback.html": """
            <!doctype html><html><head><meta charset="utf-8"><title>Signed in</title></head><body><p id="done">callback</p>
            <script>
            const token = new URLSearchParams(location.search).get("ckWebAuthToken");
            if (window.opener && token) { window.opener.postMessage({ ckSession: token }, location.origin); window.close(); }
            </script></body></html>
            """,
        "/evil.html": """
            <!doctype html><html><head><meta charset="utf-8"><title>Another site</title></head><body>
            <button id="open">Open</button><p id="messages"></p>
            <script>
            const received = [];
            window.addEventListener("message", (event) => { received.push(event.data); document.getElementById("messages").textContent = JSON.stringify(received); });
            document.getElementById("open").onclick = () => window.open(new URLSearchParams(location.search).get("target"), "", "width=640, height=525");
            </script></body></html>
            """,
    ]

    /// A site serving ``pages`` and keeping the paths it was asked for.
    final class Site: @unchecked Sendable {
        private let lock = NSLock()
        private var asked: [String] = []
        var paths: [String] { lock.withLock { asked } }

        func router() -> Router<BasicRequestContext> {
            let router = Router()
            router.get("/**") { request, _ -> Response in
                self.lock.withLock { self.asked.append(request.uri.path) }
                guard let page = BrowserSignInTests.pages[request.uri.path] else { return Response(status: .notFound) }
                return Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: ResponseBody(byteBuffer: ByteBuffer(string: page)))
            }
            return router
        }
    }

    /// Signs in in the pop-up that `open` (a click in the current window) opens: with the
    /// account's form, or (`provider`) the provider's button; then back to the first window.
    static func signIn(_ browser: WebDriver, opening open: String, email: String? = nil, password: String? = nil, provider: String? = nil) async throws {
        let main = try await browser.window()
        let before = try await browser.windows()
        try await browser.click(open)
        let popup = try await browser.newWindow(besides: before)
        try await browser.switchTo(window: popup)
        if let provider {
            try await browser.click("form[action$='/provider/\(provider)'] button")
        } else {
            try await browser.type(email ?? "", into: "#email")
            try await browser.type(password ?? "", into: "#password")
            try await browser.click("form[action$='/password'] button[type=submit]")
        }
        try await browser.switchTo(window: main)
    }

    /// `http://HOST:PORT` of a loopback server's URL, under the name `host` (the browser
    /// resolves `*.test` to 127.0.0.1).
    static func origin(of url: URL, as host: String = "127.0.0.1") -> String {
        "http://\(host):\(url.port ?? 80)"
    }

    /// The app's status line once it is not `starting`.
    static func status(_ browser: WebDriver, becoming prefix: String) async throws -> String {
        do {
            return try await browser.waitFor("the app's status to read \(prefix)…", timeout: .seconds(20)) {
                let text = try await browser.text("#status")
                return text.hasPrefix(prefix) ? text : nil
            }
        } catch {
            let source = try? await browser.command("GET", "/source")
            throw WebDriverError("\(error) at \((try? await browser.url()) ?? "?"): \(String(describing: source).prefix(3000))")
        }
    }

    @Test func aWebAppSignsInByMessageOrRedirectWithAnAccountOrAProviderAndOtherSitesGetNothing() async throws {
        let provider = try await TestOIDCProvider.start(clientID: "web.gallery.test", clientSecret: "s3cret", subject: "browser-person", email: "browser@example.com")
        do {
            try await withTemporaryDirectory { directory in
                let settings = ["testid", "posted"].map { name in
                    IdentityProviderSettings(
                        name: name, issuer: provider.issuer, audiences: ["web.gallery.test"], jwksURL: provider.jwksURL,
                        web: WebSignInSettings(clientID: "web.gallery.test", authorizationEndpoint: provider.authorizationEndpoint,
                                               tokenEndpoint: provider.tokenEndpoint, clientSecret: "s3cret",
                                               responseMode: name == "posted" ? "form_post" : nil, buttonTitle: "Sign in with \(name)"))
                }
                try await withLiveServer(directory: directory, configure: { configuration in
                    configuration.identityProviders = settings
                    configuration.accounts.hashing = PasswordHashing(rounds: 1 << 10)
                }) { server in
                    let app = Site(), evil = Site()
                    try await withLoopbackServer(app.router()) { appURL in
                        try await withLoopbackServer(evil.router()) { evilURL in
                            try await Self.run(server: server, provider: provider, app: app, appURL: appURL, evil: evil, evilURL: evilURL)
                        }
                    }
                }
            }
        } catch {
            await provider.stop()
            throw error
        }
        await provider.stop()
    }

    static func run(server: LiveServer, provider: TestOIDCProvider, app: Site, appURL: URL, evil: Site, evilURL: URL) async throws {
        let serverURL = origin(of: server.url, as: "rs.test"), appOrigin = origin(of: appURL, as: "localhost"), evilOrigin = origin(of: evilURL, as: "evil.test")
        let message = Credentials.newAPIToken(), redirect = Credentials.newAPIToken()
        try await server.store.createAPIToken(named: "message", container: container, environment: "development", origins: [appOrigin], tokenHash: Credentials.hash(message))
        try await server.store.createAPIToken(named: "redirect", container: container, environment: "development", origins: [appOrigin],
                                              signInCallback: "\(appOrigin)/callback.html", tokenHash: Credentials.hash(redirect))
        try await WebSignInTests.account("ada@example.com", password: "correct horse", in: server.store)
        let page = "\(serverURL)/signin/1/\(container)/development"

        try await withBrowser { browser in
            // Post Message with an account: the pop-up posts the token to the app's origin
            // and closes; the app reads and writes its user's private database.
            try await browser.go(to: "\(appOrigin)/app.html?server=\(serverURL)&api=\(message)")
            _ = try await status(browser, becoming: "signed out")
            try await signIn(browser, opening: "#sign-in", email: "ada@example.com", password: "correct horse")
            let ada = try await status(browser, becoming: "signed in as _")
            #expect(try await browser.text("#records") == "note-from-web")
            #expect(try await browser.text("#messages") == #"{"origin":"\#(serverURL)","keys":["ckSession","ckWebAuthToken"]}"#)
            _ = try await browser.waitFor("the pop-up to close") { try await browser.windows().count == 1 ? true : nil }

            // Signing out revokes the token: asked again, the server wants a sign-in.
            try await browser.click("#sign-out")
            _ = try await status(browser, becoming: "signed out")
            let revoked = try await browser.waitFor("the revoked token") { () -> String? in
                if case .string(let token) = try await browser.run("return window.revokedToken || null") { return token }
                return nil
            }
            try await browser.waitFor("the revocation to reach the store", { try await server.store.checkToken(hash: Credentials.hash(revoked)) == .unknown ? true : nil })

            // Post Message through the provider: another person, another user.
            try await signIn(browser, opening: "#sign-in", provider: "testid")
            let person = try await status(browser, becoming: "signed in as _")
            #expect(person != ada)
            #expect(try await browser.text("#records") == "note-from-web")

            // The provider answering by form_post (as Sign in with Apple does): its page posts
            // from its own site, and the server's cookie comes back with the GET it turns into.
            try await browser.click("#sign-out")
            _ = try await status(browser, becoming: "signed out")
            try await signIn(browser, opening: "#sign-in", provider: "posted")
            #expect(try await status(browser, becoming: "signed in as _") == person)

            // URL Redirect: the pop-up goes to the app's registered callback with the token.
            try await browser.go(to: "\(appOrigin)/app.html?server=\(serverURL)&api=\(redirect)")
            _ = try await status(browser, becoming: "signed out")
            try await signIn(browser, opening: "#sign-in", email: "ada@example.com", password: "correct horse")
            #expect(try await status(browser, becoming: "signed in as _") == ada)
            #expect(try await browser.text("#messages") == #"{"origin":"\#(appOrigin)","keys":["ckSession"]}"#)
            #expect(app.paths.filter { $0 == "/callback.html" }.count == 1)
            // URL Redirect through the provider.
            try await browser.click("#sign-out")
            _ = try await status(browser, becoming: "signed out")
            try await signIn(browser, opening: "#sign-in", provider: "testid")
            #expect(try await status(browser, becoming: "signed in as _") == person)
            #expect(app.paths.filter { $0 == "/callback.html" }.count == 2)

            // Another site opening the page as the app's (its origin named, or the app's):
            // refused, or the message goes to the app's origin, which is not the opener's.
            try await browser.go(to: "\(evilOrigin)/evil.html?target=\(OIDCClient.formEncoded("\(page)?token=message&origin=\(OIDCClient.formEncoded(evilOrigin))"))")
            let main = try await browser.window()
            var known = try await browser.windows()
            try await browser.click("#open")
            let refusedPopup = try await browser.newWindow(besides: known)
            try await browser.switchTo(window: refusedPopup)
            #expect(try await browser.text("h1") == "This app cannot sign you in here")
            #expect(try await browser.run("return document.forms.length") == .int(0))
            try await browser.command("DELETE", "/window")
            try await browser.switchTo(window: main)
            try await browser.go(to: "\(evilOrigin)/evil.html?target=\(OIDCClient.formEncoded("\(page)?token=message&origin=\(OIDCClient.formEncoded(appOrigin))"))")
            try await signIn(browser, opening: "#open", email: "ada@example.com", password: "correct horse")
            _ = try await browser.waitFor("the pop-up to close") { try await browser.windows().count == 1 ? true : nil }
            try await Task.sleep(for: .seconds(1))
            #expect(try await browser.text("#messages") == "")

            // Another site naming its own callback: the pop-up goes to the app's registered one.
            try await browser.go(to: "\(evilOrigin)/evil.html?target=\(OIDCClient.formEncoded("\(page)?token=redirect&callback=\(OIDCClient.formEncoded("\(evilOrigin)/cb"))"))")
            known = try await browser.windows()
            try await signIn(browser, opening: "#open", email: "ada@example.com", password: "correct horse")
            try await Task.sleep(for: .seconds(1))
            #expect(try await browser.text("#messages") == "")
            #expect(!evil.paths.contains("/cb"))
            #expect(app.paths.filter { $0 == "/callback.html" }.count == 3)
        }
    }

    @Test func theAccountFormWorksWithoutJavaScript() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(directory: directory, configure: { $0.accounts.hashing = PasswordHashing(rounds: 1 << 10) }) { server in
                let app = Site()
                try await withLoopbackServer(app.router()) { appURL in
                    let appOrigin = Self.origin(of: appURL)
                    try await server.store.createAPIToken(named: "redirect", container: Self.container, environment: "development", origins: [appOrigin],
                                                          signInCallback: "\(appOrigin)/callback.html", tokenHash: Data(count: 32))
                    try await WebSignInTests.account("ada@example.com", password: "correct horse", in: server.store)
                    try await withBrowser(javascript: false) { browser in
                        try await browser.go(to: "\(Self.origin(of: server.url))/signin/1/\(Self.container)/development?token=redirect")
                        try await browser.type("ada@example.com", into: "#email")
                        try await browser.type("wrong horse", into: "#password")
                        try await browser.click("form[action$='/password'] button[type=submit]")
                        let error = try await browser.text(".error")
                        #expect(error == "The email address or the password is wrong.", "\(error)")
                        try await browser.type("correct horse", into: "#password")
                        try await browser.click("form[action$='/password'] button[type=submit]")
                        let landed = try await browser.waitFor("the callback") { () -> String? in
                            let url = try await browser.url()
                            return url.hasPrefix("\(appOrigin)/callback.html?ckWebAuthToken=") ? url : nil
                        }
                        let token = try #require(URLComponents(string: landed)?.queryItems?.first { $0.name == "ckWebAuthToken" }?.value)
                        guard case .valid = try await server.store.checkToken(hash: Credentials.hash(token)) else {
                            Issue.record("the token the callback got does not sign in")
                            return
                        }
                    }
                }
            }
        }
    }

    /// The page at a phone's size and a desktop's: nothing wider than the window, every field
    /// on screen. With `RECORDSYNC_SCREENSHOTS=DIRECTORY`, writes `signin-WxH.png` there
    /// (docs/images holds them).
    @Test func thePageFitsAPhoneAndADesktop() async throws {
        let directory = ProcessInfo.processInfo.environment["RECORDSYNC_SCREENSHOTS"]
        try await withTemporaryDirectory { data in
            let settings = IdentityProviderSettings(name: "apple", issuer: "https://appleid.apple.com", audiences: ["com.example.gallery.web"], jwksFile: "/dev/null",
                                                    web: WebSignInSettings(clientID: "com.example.gallery.web", authorizationEndpoint: "https://appleid.apple.com/auth/authorize",
                                                                           tokenEndpoint: "https://appleid.apple.com/auth/token", clientSecret: "unused",
                                                                           buttonTitle: "Sign in with Apple"))
            try await withMailServer { mail in
                try await withLiveServer(directory: data, configure: { configuration in
                    AccountTests.configure(mail)(&configuration)
                    configuration.identityProviders = [settings]
                }) { server in
                    try await server.store.createAPIToken(named: "web", container: "iCloud.com.example.Gallery", environment: "production",
                                                          origins: ["https://gallery.example.com"], tokenHash: Data(count: 32))
                    for (width, height) in [(390, 844), (1280, 800)] {
                        try await withBrowser(width: width, height: height) { browser in
                            try await browser.go(to: "\(Self.origin(of: server.url))/signin/1/iCloud.com.example.Gallery/production?token=web")
                            _ = try await browser.element("#email")
                            let fits = try await browser.run("""
                                const fields = [...document.querySelectorAll("input:not([type=hidden]), button")];
                                return document.documentElement.scrollWidth <= window.innerWidth
                                    && fields.every((field) => { const box = field.getBoundingClientRect(); return box.left >= 0 && box.right <= window.innerWidth && box.width > 100; });
                                """)
                            #expect(fits == .bool(true), "the page does not fit \(width)×\(height)")
                            if let directory {
                                try await browser.screenshot().write(to: URL(fileURLWithPath: directory).appendingPathComponent("signin-\(width)x\(height).png"))
                            }
                        }
                    }
                }
            }
        }
    }
}
