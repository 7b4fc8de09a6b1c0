import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import RecordRules

/// The web console's HTML: the sign-in form (which works without JavaScript) and the page its
/// script fills in, with the style sheet. Nothing inline: the pages' `Content-Security-Policy`
/// (``SignInHTML/headers(formTargets:connect:)``) allows scripts and styles from this server
/// only. Every value a page shows is either escaped here or set as text by the script.
enum ConsoleHTML {
    /// A page: `title`, then `body` (HTML, its text escaped by the caller).
    static func page(title: String, body: String, bodyClass: String) -> String {
        SignInHTML.document(title: title, head: #"<link rel="stylesheet" href="/console/assets/console.css?v=\#(styleSheetVersion)">"#, bodyClass: bodyClass, body: body)
    }

    /// A page's answer; `bodyClass` `console` for the console's page, `signin` for a card.
    static func response(_ status: HTTPResponse.Status = .ok, title: String, body: String, bodyClass: String = "signin",
                         extraHeaders: HTTPFields = [:]) -> Response {
        var headers = SignInHTML.headers(connect: true)
        headers.append(contentsOf: extraHeaders)
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: page(title: title, body: body, bodyClass: bodyClass))))
    }

    /// An error page: what went wrong and what to do, in `status`.
    static func error(_ status: HTTPResponse.Status, title: String, _ what: String, todo: String) -> Response {
        response(status, title: title, body: """
            <main class="card">
            <h1>\(SignInHTML.escaped(title))</h1>
            <p class="error" role="alert">\(SignInHTML.escaped(what))</p>
            <p>\(SignInHTML.escaped(todo))</p>
            </main>
            """)
    }

    /// The sign-in form, with its CSRF field and what went wrong last (`problem`).
    static func signIn(csrf: String, problem: String?, name: String = "") -> String {
        """
        <main class="card">
        <h1>RecordSync console</h1>
        <p class="muted">Sign in as a named operator.</p>
        \(problem.map { #"<p class="error" role="alert">\#(SignInHTML.escaped($0))</p>"# } ?? "")
        <form method="post" action="/console/signin">
        \(SignInHTML.hidden("csrf", csrf))
        <label for="name">Operator</label>
        <input id="name" name="name" type="text" value="\(SignInHTML.escaped(name))" autocomplete="username" autocapitalize="none" spellcheck="false" required\(name.isEmpty ? " autofocus" : "")>
        <label for="secret">Secret</label>
        <input id="secret" name="secret" type="password" autocomplete="current-password" required\(name.isEmpty ? "" : " autofocus")>
        <button type="submit">Sign in</button>
        </form>
        <p class="muted small">An operator and its secret come from <code>recordserver operator add NAME --scope …</code>; what the operator may do here is what its scopes allow.</p>
        </main>
        """
    }

    /// The console's page for `operator`: the bar, the views' links, and the view its script
    /// fills in (holding the session's CSRF token, the operator and its scopes for the script).
    static func shell(operator signedIn: Operator, csrf: String) -> String {
        let scopes = signedIn.scopes.map(\.rawValue).sorted().joined(separator: ", ")
        return """
        <header class="bar">
        <a class="brand" href="#/data">RecordSync <span>console</span></a>
        <span class="who" title="scopes: \(SignInHTML.escaped(scopes))">\(SignInHTML.escaped(signedIn.name)) <span class="muted">· \(SignInHTML.escaped(scopes))</span></span>
        <form method="post" action="/console/signout">\(SignInHTML.hidden("csrf", csrf))<button type="submit" class="quiet">Sign out</button></form>
        </header>
        <div class="frame">
        <nav aria-label="Views">
        <a href="#/data">Data</a>
        <a href="#/users">Users</a>
        <a href="#/access">Access</a>
        <a href="#/requests">Request log</a>
        <a href="#/health">Health</a>
        <a href="#/audit">Audit log</a>
        </nav>
        <main id="view" tabindex="-1" data-csrf="\(SignInHTML.escaped(csrf))" data-operator="\(SignInHTML.escaped(signedIn.name))" data-scopes="\(SignInHTML.escaped(scopes))">
        <noscript><p class="error">The console needs JavaScript (its script comes from this server only).</p></noscript>
        </main>
        </div>
        <script src="/console/assets/console.js?v=\(scriptVersion)"></script>
        """
    }

    /// The first 12 hex digits of the SHA-256 of `text`: an asset's version in its URL, so that
    /// browsers keep it until a release changes it.
    static func version(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).prefix(6).map { String(format: "%02x", $0) }.joined()
    }

    /// The script and style sheet as served: each line's indentation and the script's
    /// whole-line comments left out (the script holds no multi-line string literals).
    static let servedScript = compact(ConsoleScript.script, comments: true)
    static let servedStyleSheet = compact(styleSheet, comments: false)

    static func compact(_ text: String, comments: Bool) -> String {
        text.split(separator: "\n").map { $0.drop(while: { $0 == " " }) }.filter { !$0.isEmpty && !(comments && $0.hasPrefix("//")) }.joined(separator: "\n")
    }

    static let scriptVersion = version(servedScript)
    static let styleSheetVersion = version(servedStyleSheet)

    /// `GET /console/assets/console.css` and `console.js`.
    static func registerAssets(on router: Router<RequestContextWithAddress>) {
        for (name, type, text) in [("console.css", "text/css; charset=utf-8", servedStyleSheet), ("console.js", "text/javascript; charset=utf-8", servedScript)] {
            router.get("/console/assets/\(name)") { _, _ in
                Response(status: .ok, headers: [.contentType: type, .cacheControl: "public, max-age=86400",
                                                .init("X-Content-Type-Options")!: "nosniff"],
                         body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
            }
        }
    }

    static let styleSheet = """
        :root { color-scheme: light dark; --accent: #0a66d8; --line: #d5d9de; --muted: #5b6168; --bad: #b3261e; --bg: #f4f5f7; --card: #fff;
                --text: #16191d; --head: #eef0f3; --focus: #8ab4f8; }
        @media (prefers-color-scheme: dark) {
          :root { --accent: #8ab4f8; --line: #353a40; --muted: #9aa0a6; --bad: #f2b8b5; --bg: #111315; --card: #1b1e21; --text: #e8eaed; --head: #23272b; }
        }
        * { box-sizing: border-box; }
        html, body { margin: 0; }
        body { font: 15px/1.45 -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; background: var(--bg); color: var(--text); }
        a { color: var(--accent); }
        img.preview { display: block; max-width: min(240px, 100%); max-height: 240px; margin-top: .4em; border: 1px solid var(--line); }
        code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .92em; }
        :focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
        .muted { color: var(--muted); }
        .small { font-size: .88rem; }
        body.signin { min-height: 100vh; display: flex; align-items: flex-start; justify-content: center; }
        main.card { width: 100%; max-width: 420px; margin: 48px 16px; padding: 28px 24px; background: var(--card); border: 1px solid var(--line); border-radius: 12px; }
        main.card h1 { margin: 0 0 4px; font-size: 1.5rem; }
        label { display: block; font-weight: 600; margin: 14px 0 4px; }
        input, select, textarea { font: inherit; color: inherit; background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 9px 11px; }
        main.card input { width: 100%; }
        button { font: inherit; font-weight: 600; border-radius: 8px; border: 1px solid var(--accent); background: var(--accent); color: #fff; padding: 9px 14px; cursor: pointer; }
        main.card button { width: 100%; margin-top: 18px; }
        button.quiet { background: transparent; color: inherit; border-color: var(--line); padding: 6px 12px; font-weight: 500; }
        .error { color: var(--bad); background: color-mix(in srgb, var(--bad) 10%, transparent); border: 1px solid color-mix(in srgb, var(--bad) 35%, transparent);
                 border-radius: 8px; padding: 10px 12px; }
        .bar { display: flex; align-items: center; gap: 16px; padding: 10px 20px; background: var(--card); border-bottom: 1px solid var(--line); }
        .bar form { margin: 0; }
        .brand { font-weight: 700; font-size: 1.05rem; text-decoration: none; color: inherit; }
        .brand span { font-weight: 400; color: var(--muted); }
        .who { margin-left: auto; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
        .frame { display: flex; min-height: calc(100vh - 53px); }
        nav { width: 190px; flex: none; padding: 16px 10px; border-right: 1px solid var(--line); background: var(--card); }
        nav a { display: block; padding: 8px 12px; border-radius: 8px; color: inherit; text-decoration: none; }
        nav a:hover { background: var(--head); }
        nav a[aria-current="page"] { background: color-mix(in srgb, var(--accent) 14%, transparent); color: var(--accent); font-weight: 600; }
        #view { flex: 1; min-width: 0; padding: 20px 28px 40px; }
        #view:focus { outline: none; }
        #view h1 { font-size: 1.45rem; margin: 0 0 4px; }
        #view h2 { font-size: 1.1rem; margin: 24px 0 8px; }
        .crumbs { margin: 0 0 14px; color: var(--muted); }
        .crumbs a { color: inherit; }
        .scroll { overflow-x: auto; border: 1px solid var(--line); border-radius: 10px; background-color: var(--card);
                  background-image: linear-gradient(to right, var(--card) 30%, transparent), linear-gradient(to left, var(--card) 30%, transparent),
                                    radial-gradient(farthest-side at 0 50%, rgb(0 0 0 / 18%), transparent), radial-gradient(farthest-side at 100% 50%, rgb(0 0 0 / 18%), transparent);
                  background-position: left, right, left, right; background-repeat: no-repeat; background-size: 40px 100%, 40px 100%, 14px 100%, 14px 100%;
                  background-attachment: local, local, scroll, scroll; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; padding: 8px 12px; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { background: var(--head); font-weight: 600; white-space: nowrap; position: sticky; top: 0; }
        tr:last-child td { border-bottom: 0; }
        td.num { text-align: right; font-variant-numeric: tabular-nums; }
        .empty { padding: 18px; color: var(--muted); }
        form.row { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 10px; margin: 0 0 14px; }
        form.row label { margin: 0; }
        form.row input[type=search] { flex: 1 1 260px; min-width: 0; }
        form.row input[type=search][size] { flex: 0 1 auto; width: auto; }
        th button.sort { all: unset; cursor: pointer; font-weight: 600; }
        th button.sort:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
        td { white-space: nowrap; }
        td .value, td .wrap { white-space: pre-wrap; overflow-wrap: anywhere; }
        td:has(.value), td:has(.wrap) { white-space: normal; min-width: 16ch; }
        .pages { display: flex; gap: 16px; margin: 12px 0 0; }
        .notice { background: color-mix(in srgb, var(--accent) 10%, transparent); border: 1px solid color-mix(in srgb, var(--accent) 30%, transparent);
                  border-radius: 8px; padding: 10px 12px; }
        .buttons { display: flex; flex-wrap: wrap; gap: 10px; margin: 14px 0 0; }
        button.danger { background: var(--bad); border-color: var(--bad); color: #fff; }
        .mode { display: flex; align-items: center; gap: 8px; margin: 0 0 14px; }
        .tag.editing { background: color-mix(in srgb, #e8a200 25%, transparent); }
        td textarea, td input { width: 100%; min-width: 12ch; }
        .scroll + form.row, .scroll + form.stack { margin-top: .8em; }
        form.stack { display: grid; gap: .5em; max-width: 70ch; margin: .6em 0; }
        label.check { display: inline-flex; align-items: center; gap: .3em; }
        #edit td, #create td { vertical-align: middle; }
        #edit-problem:not(:empty), #create .error { margin-top: 12px; }
        #create > input { width: 100%; max-width: 420px; margin: 0 0 14px; }
        dialog { border: 1px solid var(--line); border-radius: 12px; padding: 20px 22px; max-width: min(560px, calc(100vw - 32px));
                 background: var(--card); color: var(--text); }
        dialog::backdrop { background: rgb(0 0 0 / 35%); }
        dialog h2 { margin: 0 0 10px; font-size: 1.15rem; }
        dialog ul { padding-left: 20px; max-height: 40vh; overflow: auto; }
        dialog .buttons { justify-content: flex-end; }
        .status.bad { color: var(--bad); font-weight: 600; }
        tr.fresh { animation: fresh 2s ease-out; }
        @keyframes fresh { from { background: color-mix(in srgb, var(--accent) 22%, transparent); } to { background: transparent; } }
        #view h3 { font-size: 1rem; margin: 18px 0 6px; }
        pre.schema-file { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 12px 14px; overflow: auto; max-height: 420px;
                          font: .88rem/1.5 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
        .effect.adds { color: #1e7d32; }
        .effect.tightens { color: #a15c00; font-weight: 600; }
        .effect.refused { color: var(--bad); font-weight: 600; }
        code.secret { display: inline-block; margin: 6px 0; padding: 6px 10px; border-radius: 6px; background: var(--card); border: 1px solid var(--line);
                      user-select: all; overflow-wrap: anywhere; }
        .meter-line { display: inline-flex; align-items: center; gap: 8px; flex-wrap: wrap; }
        meter { width: 160px; height: 12px; }
        .charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 420px), 1fr)); gap: 14px; }
        figure.chart { margin: 0; padding: 12px 14px 8px; background: var(--card); border: 1px solid var(--line); border-radius: 10px; }
        figure.chart figcaption { font-weight: 600; margin: 0 0 6px; overflow-wrap: anywhere; }
        figure.chart svg { width: 100%; height: auto; display: block; }
        svg .grid { stroke: var(--line); stroke-width: 1; }
        svg .axis { fill: var(--muted); font-size: 11px; }
        svg .line { fill: none; stroke-width: 2; stroke-linejoin: round; }
        svg .dot { stroke-width: 0; }
        svg .dot.s0 { fill: #0a66d8; } svg .dot.s1 { fill: #d0452f; } svg .dot.s2 { fill: #1e7d32; }
        svg .dot.s3 { fill: #a15c00; } svg .dot.s4 { fill: #7b3fb5; } svg .dot.s5 { fill: #0f8b8d; }
        .s0 { stroke: #0a66d8; background: #0a66d8; } .s1 { stroke: #d0452f; background: #d0452f; } .s2 { stroke: #1e7d32; background: #1e7d32; }
        .s3 { stroke: #a15c00; background: #a15c00; } .s4 { stroke: #7b3fb5; background: #7b3fb5; } .s5 { stroke: #0f8b8d; background: #0f8b8d; }
        ul.legend { display: flex; flex-wrap: wrap; gap: 4px 14px; list-style: none; padding: 0; margin: 4px 0 0; font-size: .85rem; color: var(--muted); }
        .swatch { display: inline-block; width: 12px; height: 3px; margin-right: 6px; vertical-align: middle; border-radius: 2px; }
        .tag { display: inline-block; padding: 1px 8px; border-radius: 99px; background: var(--head); font-size: .85rem; }
        @media (max-width: 700px) {
          .bar { padding: 10px 14px; gap: 10px; }
          .who .muted { display: none; }
          .frame { display: block; }
          nav { width: auto; display: flex; flex-wrap: wrap; gap: 4px; padding: 8px; border-right: 0; border-bottom: 1px solid var(--line); }
          nav a { white-space: nowrap; padding: 6px 10px; }
          #view { padding: 16px 14px 32px; }
        }

        """
}
