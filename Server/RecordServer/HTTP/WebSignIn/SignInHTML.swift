import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The web sign-in page's HTML, style sheet and script (docs/protocol.md, "The web sign-in
/// page"): plain forms that work without JavaScript; the one script hands the token to the
/// app's window in Post Message mode. Nothing inline, so the page's `Content-Security-Policy`
/// allows scripts and styles from this server only.
enum SignInHTML {
    /// A page: `title`, then `body` (HTML, its text escaped by the caller) in the page's card.
    static func page(title: String, body: String) -> String {
        document(title: title, head: """
            <link rel="stylesheet" href="/signin/assets/signin.css">
            <script src="/signin/assets/signin.js" defer></script>
            """, body: """
            <main class="card">
            \(body)
            </main>
            """)
    }

    /// An HTML document of the server's pages (the sign-in page's, the console's): `title`
    /// (escaped here), `head` (its style sheet and script) and `body` (HTML, its text escaped by
    /// the caller), the body of class `bodyClass`.
    static func document(title: String, head: String, bodyClass: String? = nil, body: String) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>\(escaped(title))</title>
        \(head)
        </head>
        <body\(bodyClass.map { " class=\"\(escaped($0))\"" } ?? "")>
        \(body)
        </body>
        </html>

        """
    }

    /// The headers of every page of the server's (the sign-in page's, the console's): no
    /// framing (`frame-ancestors 'none'`), no plug-ins (`object-src 'none'`), scripts, styles
    /// and images from this server only (no inline script), requests of scripts to this server
    /// only when `connect` (else none), forms sent to this server or to `formTargets` (a
    /// form's redirect counts: a provider's sign-in page, the app's callback), nothing kept.
    static func headers(formTargets: [String] = [], connect: Bool = false) -> HTTPFields {
        let forms = (["'self'"] + formTargets).joined(separator: " ")
        return [
            .contentType: "text/html; charset=utf-8",
            .cacheControl: "no-store",
            .init("Content-Security-Policy")!: "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                + (connect ? "connect-src 'self'; " : "")
                + "form-action \(forms); frame-ancestors 'none'; object-src 'none'; base-uri 'none'",
            .init("X-Content-Type-Options")!: "nosniff",
            .init("X-Frame-Options")!: "DENY",
            .init("Referrer-Policy")!: "no-referrer",
        ]
    }

    static func response(_ status: HTTPResponse.Status = .ok, title: String, body: String, formTargets: [String] = [],
                         extraHeaders: HTTPFields = [:]) -> Response {
        var headers = Self.headers(formTargets: formTargets)
        headers.append(contentsOf: extraHeaders)
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: page(title: title, body: body))))
    }

    /// An error page: what went wrong and what to do, in `status`.
    static func error(_ status: HTTPResponse.Status, title: String, _ what: String, todo: String) -> Response {
        response(status, title: title, body: """
            <h1>\(escaped(title))</h1>
            <p class="error" role="alert">\(escaped(what))</p>
            <p>\(escaped(todo))</p>
            """)
    }

    /// A hidden form field.
    static func hidden(_ name: String, _ value: String?) -> String {
        guard let value else { return "" }
        return #"<input type="hidden" name="\#(name)" value="\#(escaped(value))">"#
    }

    /// `text` with HTML's special characters escaped.
    static func escaped(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// `GET /signin/assets/signin.css` and `signin.js`.
    static func registerAssets(on router: Router<RequestContextWithAddress>) {
        for (name, type, text) in [("signin.css", "text/css; charset=utf-8", styleSheet), ("signin.js", "text/javascript; charset=utf-8", script)] {
            router.get("/signin/assets/\(name)") { _, _ in
                Response(status: .ok, headers: [.contentType: type, .cacheControl: "public, max-age=3600",
                                                .init("X-Content-Type-Options")!: "nosniff"],
                         body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
            }
        }
    }

    /// Hands the token to the app's window (Post Message): the message CloudKit JS reads
    /// (`ckSession`, and `ckWebAuthToken` as Apple's documentation names it), to the app's
    /// origin only, then closes the pop-up. Without an opener (the page was not opened by the
    /// app), it says so and posts nothing.
    static let script = """
        "use strict";
        document.addEventListener("DOMContentLoaded", function () {
          var handoff = document.getElementById("handoff");
          if (!handoff) { return; }
          var token = handoff.getAttribute("data-session");
          var origin = handoff.getAttribute("data-origin");
          if (window.opener && token && origin) {
            window.opener.postMessage({ ckSession: token, ckWebAuthToken: token }, origin);
            handoff.textContent = "You are signed in. This window closes now.";
            window.close();
          } else {
            handoff.textContent = "You are signed in, but this window was not opened by the app: close it and use the app's sign-in button.";
          }
        });

        """

    static let styleSheet = """
        :root { color-scheme: light dark; --accent: #0a66d8; --line: #c8ccd2; --muted: #5b6168; --bad: #b3261e; }
        * { box-sizing: border-box; }
        body { margin: 0; min-height: 100vh; display: flex; align-items: flex-start; justify-content: center;
               font: 16px/1.45 -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
               background: #f2f3f5; color: #16191d; }
        main.card { width: 100%; max-width: 420px; margin: 32px 16px; padding: 28px 24px; background: #fff;
                    border: 1px solid var(--line); border-radius: 12px; }
        h1 { font-size: 1.5rem; margin: 0 0 4px; }
        p.app { margin: 0 0 20px; color: var(--muted); word-break: break-all; }
        form { margin: 0 0 12px; }
        label { display: block; font-weight: 600; margin: 12px 0 4px; }
        input[type=email], input[type=password], input[type=text] { width: 100%; padding: 10px 12px; font: inherit;
               border: 1px solid var(--line); border-radius: 8px; background: inherit; color: inherit; }
        input:focus, button:focus { outline: 3px solid #8ab4f8; outline-offset: 1px; }
        button { width: 100%; margin-top: 16px; padding: 11px 12px; font: inherit; font-weight: 600; border-radius: 8px;
                 border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
        button.provider { background: transparent; color: inherit; border-color: var(--line); margin-top: 8px; }
        .divider { display: flex; align-items: center; gap: 12px; color: var(--muted); margin: 20px 0 4px; font-size: .9rem; }
        .divider::before, .divider::after { content: ""; flex: 1; border-top: 1px solid var(--line); }
        .error { color: var(--bad); background: #fdecea; border: 1px solid #f5c2bd; border-radius: 8px; padding: 10px 12px; }
        .notice { background: #e8f0fe; border: 1px solid #c3d6fb; border-radius: 8px; padding: 10px 12px; }
        .links { display: flex; flex-wrap: wrap; justify-content: space-between; gap: 8px; margin-top: 16px; font-size: .95rem; }
        a { color: var(--accent); }
        @media (prefers-color-scheme: dark) {
          body { background: #111315; color: #e8eaed; }
          main.card { background: #1b1e21; border-color: #33373c; }
          .error { background: #3b1512; border-color: #6b2a24; color: #f2b8b5; }
          .notice { background: #172a45; border-color: #2b4a78; }
          a { color: #8ab4f8; }
        }

        """
}
