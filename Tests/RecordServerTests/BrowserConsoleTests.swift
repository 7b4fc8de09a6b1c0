import Crypto
import Foundation
import RecordModel
import RecordRules
@testable import RecordServer
import Testing
import TestSupport

/// The web console in a real browser (headless Chromium through WebDriver), on each engine:
/// signing in (and refused with a user's token or a forged cookie), the views drawn from the
/// server's APIs, signing out. Screenshots of each view at 1280×800 and 390×844 go to
/// `RECORDSYNC_CONSOLE_SCREENSHOTS` (docs/console/ holds the current ones), else to a
/// temporary directory.
@Suite(.serialized, .enabled(if: WebDriver.isAvailable, Comment(rawValue: WebDriver.missing))) struct BrowserConsoleTests {
    static let container = "iCloud.test.Gallery"
    static let sizes = [(width: 1280, height: 800), (width: 390, height: 844)]

    /// Where screenshots go.
    static let screenshots: URL = {
        let directory = ProcessInfo.processInfo.environment["RECORDSYNC_CONSOLE_SCREENSHOTS"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("recordsync-console-screenshots")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }()

    /// Saves the browser's viewport as `name-WIDTHxHEIGHT.png` (from the SQLite run only: both
    /// engines draw the same pages).
    static func screenshot(_ browser: WebDriver, _ server: TestServer, _ name: String, width: Int, height: Int) async throws {
        guard server.backend.description == "SQLite" else { return }
        try await browser.screenshot().write(to: screenshots.appendingPathComponent("\(name)-\(width)x\(height).png"))
    }

    /// Saves the viewport at both sizes (laid out at 390×844, then at 1280×800 again).
    static func screenshots(_ browser: WebDriver, _ server: TestServer, _ name: String) async throws {
        guard server.backend.description == "SQLite" else { return }
        for size in sizes.reversed() {
            try await browser.emulateViewport(width: size.width, height: size.height)
            _ = try await browser.run("return new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(innerWidth))))")
            try await screenshot(browser, server, name, width: size.width, height: size.height)
        }
    }

    /// Signs in through the form as `name` with `secret`.
    static func signIn(_ browser: WebDriver, _ base: String, _ name: String, _ secret: String) async throws {
        try await browser.go(to: "\(base)/console")
        try await browser.type(name, into: "#name")
        try await browser.type(secret, into: "#secret")
        try await browser.click("main.card button[type=submit]")
    }

    /// Waits for the view's title to be `title`.
    static func waitForView(_ browser: WebDriver, _ title: String) async throws {
        _ = try await browser.waitFor("the view \(title)") { try await browser.text("#view h1") == title ? true : nil }
    }

    /// A console that `ops` (holding `scopes`) signs in to, alice's artists and artworks in
    /// her private database: `body` gets the server, its URL, the operator's secret and alice.
    static func withConsole(scopes: Set<OperatorScope>, _ body: @escaping @Sendable (TestServer, String, String, Session) async throws -> Void) async throws {
        try await withServer(configure: { $0.console = ConsoleSessionLimits() }) { server in
            let secret = Credentials.newOperatorSecret()
            try await server.store.createOperator(named: "ops", secretHash: Credentials.hash(secret), scopes: scopes)
            let alice = try await server.user("alice")
            try await Self.seed(alice)
            try await body(server, "http://127.0.0.1:\(try #require(server.client.port))", secret, alice)
        }
    }

    /// The window sizes to drive on `server`'s engine: both on SQLite, the desktop's alone on the
    /// others (the pages do not depend on the engine; the phone's layout is checked once).
    static func sizes(on server: TestServer) -> [(width: Int, height: Int)] {
        server.backend.description == "SQLite" ? sizes : [sizes[0]]
    }

    @Test func anOperatorSignsInBrowsesTheViewsAndSignsOut() async throws {
        try await Self.withConsole(scopes: [.all]) { server, base, secret, alice in
            for size in Self.sizes(on: server) {
                try await withBrowser(width: size.width, height: size.height) { browser in
                    try await browser.go(to: "\(base)/console")
                    _ = try await browser.element("#name")
                    try await Self.screenshot(browser, server, "sign-in", width: size.width, height: size.height)
                    try await Self.signIn(browser, base, "ops", secret)
                    try await Self.waitForView(browser, "Data")
                    let data = try await browser.text("#view table")
                    #expect(data.contains(Self.container) && data.contains("development"), "\(data)")
                    #expect(try await browser.text("header.bar").contains("ops"))
                    try await Self.screenshot(browser, server, "data", width: size.width, height: size.height)
                    try await browser.click("#view table td:nth-child(3) a")
                    try await Self.waitForView(browser, "Schema of \(Self.container)")
                    let schema = try await browser.text("#view")
                    #expect(schema.contains("Artwork") && schema.contains("year") && schema.contains("INT64") && schema.contains("REFERENCE"), "\(schema)")
                    try await Self.screenshot(browser, server, "schema", width: size.width, height: size.height)
                    try await Self.browseRecords(browser, server, width: size.width, height: size.height)
                    try await browser.click("nav a[href='#/users']")
                    try await Self.waitForView(browser, "Users")
                    #expect(try await browser.text("#view table").contains(alice.userRecordName))
                    #expect(try await browser.run("return document.querySelector(\"nav a[aria-current='page']\").textContent") == .string("Users"))
                    try await Self.screenshot(browser, server, "users", width: size.width, height: size.height)
                    try await browser.click("nav a[href='#/audit']")
                    try await Self.waitForView(browser, "Audit log")
                    #expect(try await browser.text("#view table").contains("console sign-in"))
                    try await Self.screenshot(browser, server, "audit", width: size.width, height: size.height)
                    // The browser's back button goes back a view.
                    try await browser.command("POST", "/back")
                    try await Self.waitForView(browser, "Users")
                    // Signing out ends the session: the page is the form again, and the API refuses.
                    try await browser.click("header.bar button")
                    _ = try await browser.element("#secret")
                    let after = try await browser.run("""
                        return fetch("/admin/1/users", { headers: { "X-RecordSync-CSRF": "anything" } }).then((r) => r.json()).then((j) => j.serverErrorCode);
                        """)
                    #expect(after == .string("AUTHENTICATION_FAILED"))
                }
            }
        }
    }

    /// Alice's artists and artworks; one artwork's title is a script.
    static func seed(_ alice: Session) async throws {
        let monet = Reference(recordName: "monet", action: .deleteSelf)
        try await alice.save([
            Record(recordName: "monet", recordType: "Artist", fields: ["name": .string("Claude Monet")]),
            Record(recordName: "renoir", recordType: "Artist", fields: ["name": .string("Pierre-Auguste Renoir")]),
        ])
        // One save each, a few milliseconds apart: the newest first is dance, study, lilies.
        for record in [
            Record(recordName: "lilies", recordType: "Artwork", fields: ["title": .string("Water Lilies"), "artist": .reference(monet), "year": .int64(1906)]),
            Record(recordName: "study", recordType: "Artwork", fields: ["title": .string("<script>window.pwned = 1</script><b>bold</b>"), "artist": .reference(monet), "year": .int64(1880)]),
            Record(recordName: "dance", recordType: "Artwork", fields: ["title": .string("Dance at Bougival"), "artist": .reference(Reference(recordName: "renoir", action: .none)),
                                                                      "year": .int64(1883)]),
        ] {
            try await Task.sleep(for: .milliseconds(5))
            try await alice.save([record])
        }
    }

    /// From the data view to alice's private database, her artworks (newest first), a key-path
    /// filter, a record, its reference, and back through the backlink.
    static func browseRecords(_ browser: WebDriver, _ server: TestServer, width: Int, height: Int) async throws {
        try await browser.click("nav a[href='#/data']")
        try await waitForView(browser, "Data")
        try await browser.click("#view table td:first-child a")
        try await waitForView(browser, "Databases")
        try await screenshot(browser, server, "databases", width: width, height: height)
        try await browser.click("#view form button[type=submit]")
        try await waitForView(browser, "Zones")
        try await browser.click("#view table a")
        try await waitForView(browser, "Artist")
        try await browser.run("const s = document.getElementById('type'); s.value = 'Artwork'; s.dispatchEvent(new Event('change'));")
        try await waitForView(browser, "Artwork")
        // Newest first: the last saved on top; the script's title is text.
        let names = { () async throws -> [String] in
            guard case .array(let names) = try await browser.run("return Array.from(document.querySelectorAll('#view tbody td:first-child')).map((cell) => cell.textContent)") else { return [] }
            return names.compactMap { if case .string(let name) = $0 { name } else { nil } }
        }
        #expect(try await names() == ["dance", "study", "lilies"])
        #expect(try await browser.text("#view tbody").contains("<script>window.pwned = 1</script><b>bold</b>"))
        #expect(try await browser.run("return window.pwned === undefined && document.querySelectorAll('#view b, #view script').length === 0") == .bool(true))
        try await screenshot(browser, server, "records", width: width, height: height)
        // A key path through the reference, with OR and NOT.
        try await browser.type("artist.name == 'Claude Monet' AND NOT (year < 1900 OR title BEGINSWITH 'X')", into: "#where")
        try await browser.click("#view form.row button[type=submit]")
        _ = try await browser.waitFor("the filtered table") { try await names() == ["lilies"] ? true : nil }
        // A filter that does not parse says why.
        try await browser.run("document.getElementById('where').value = 'year >> 3'; document.querySelector('#view form.row button[type=submit]').click();")
        let refusal = try await browser.waitFor("the filter's error") { try? await browser.text("#view .error") }
        #expect(refusal.contains("BAD_REQUEST") && refusal.contains("recordSyncPredicate"), "\(refusal)")
        try await browser.command("POST", "/back")
        _ = try await browser.waitFor("the filtered table again") { try await names() == ["lilies"] ? true : nil }
        // The record, its reference, and back through the backlink.
        try await browser.click("#view tbody td:first-child a")
        try await waitForView(browser, "lilies")
        let page = try await browser.text("#view")
        #expect(page.contains("Water Lilies") && page.contains("1906") && page.contains("Change tag") && page.contains("Referred to by"), "\(page)")
        try await screenshot(browser, server, "record", width: width, height: height)
        try await browser.click("#view a[href*='name=monet']")
        try await waitForView(browser, "monet")
        guard case .array(let referrers) = try await browser.run("return Array.from(document.querySelectorAll('#view .scroll:last-of-type tbody td:first-child')).map((cell) => cell.textContent)") else {
            Issue.record("no backlinks table")
            return
        }
        #expect(referrers == [.string("lilies"), .string("study")])
        try await browser.click("#view .scroll:last-of-type a[href*='name=study']")
        try await waitForView(browser, "study")
        #expect(try await browser.text("#view").contains("<script>window.pwned = 1</script>"))
        #expect(try await browser.run("return window.pwned === undefined") == .bool(true))
    }

    /// The id of the editor's input for `field`.
    static func input(_ browser: WebDriver, for field: String) async throws -> String {
        let id = try await browser.waitFor("the input of \(field)") { () async throws -> String? in
            let found = try await browser.run("const label = Array.from(document.querySelectorAll('#view label')).find((l) => l.textContent === arguments[0]); return label ? label.htmlFor : null",
                                               [.string(field)])
            if case .string(let id) = found { return id }
            return nil
        }
        return "#" + id
    }

    /// Replaces what an input holds.
    static func fill(_ browser: WebDriver, _ selector: String, _ text: String) async throws {
        try await browser.run("document.querySelector(arguments[0]).value = ''", [.string(selector)])
        try await browser.type(text, into: selector)
    }

    @Test func anOperatorEditsAsAUserMeetsAConflictAndDeletesWithItsCascadeShown() async throws {
        try await Self.withConsole(scopes: [.all]) { server, base, secret, alice in
            let place = "c=\(Self.container)&e=development&db=private&as=alice"
            func title(_ name: String) async throws -> String? {
                let found = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: name)])).decode(RecordsResponse.self).records.first?.record
                if case .string(let title)? = found?.fields["title"] { return title }
                return nil
            }
            try await withBrowser { browser in
                try await Self.signIn(browser, base, "ops", secret)
                try await Self.waitForView(browser, "Data")
                try await browser.go(to: "\(base)/console#/record?\(place)&name=lilies")
                try await Self.waitForView(browser, "lilies")
                // Read-only until the operator switches to editing.
                #expect(try await browser.run("return document.querySelector('#edit') === null") == .bool(true))
                try await browser.click("#mode")
                let field = try await Self.input(browser, for: "title")
                try await Self.fill(browser, field, "Water Lilies (1906)")
                try await browser.click("#save")
                _ = try await browser.element("dialog[open] #confirm")
                #expect(try await browser.text("dialog[open]").contains("Water Lilies (1906)"))
                try await Self.screenshot(browser, server, "confirm-save", width: 1280, height: 800)
                try await browser.click("dialog[open] #confirm")
                _ = try await browser.waitFor("the saved notice") { try? await browser.text("#view .notice") }
                #expect(try await title("lilies") == "Water Lilies (1906)")
                // The edit is alice's; the audit log names the operator.
                let saved = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "lilies")])).decode(RecordsResponse.self).records.first?.record
                #expect(saved?.modified?.userRecordName == alice.userRecordName)
                #expect(try await server.store.auditLog(limit: 50).contains { $0.operatorName == "ops" && $0.target == "as alice" && $0.action.hasSuffix("/private/records/modify") })
                // Another client saves lilies while the operator edits: a conflict, shown as one.
                try await Self.fill(browser, try await Self.input(browser, for: "title"), "Mine")
                let tag = try #require(saved?.recordChangeTag)
                _ = try await alice.modify([RecordOperation(.update, RecordPayload(recordName: "lilies", recordType: "Artwork", recordChangeTag: tag,
                                                                                   fields: ["title": RawFieldValue(FieldValue.string("Theirs"))]))])
                try await browser.click("#save")
                try await browser.click("dialog[open] #confirm")
                let conflict = try await browser.waitFor("the conflict") { try? await browser.text("#edit-problem .error") }
                #expect(conflict.contains("CONFLICT") && conflict.contains("not saved"), "\(conflict)")
                try await Self.screenshot(browser, server, "conflict", width: 1280, height: 800)
                #expect(try await title("lilies") == "Theirs")
                try await browser.click("#reload")
                _ = try await browser.waitFor("their version") { () async throws -> Bool? in
                    let id = try await Self.input(browser, for: "title")
                    return try await browser.run("return document.querySelector(arguments[0]).value", [.string(id)]) == .string("Theirs") ? true : nil
                }
                // Deleting monet says first what its cascade takes along.
                try await browser.go(to: "\(base)/console#/record?\(place)&name=monet")
                try await Self.waitForView(browser, "monet")
                try await browser.click("#delete")
                let dialog = try await browser.waitFor("the delete's confirmation") { try? await browser.text("dialog[open]") }
                #expect(dialog.contains("2 more") && dialog.contains("lilies") && dialog.contains("study") && dialog.contains("Delete 3 records"), "\(dialog)")
                try await Self.screenshot(browser, server, "confirm-delete", width: 1280, height: 800)
                // Nothing is gone before the confirmation.
                #expect(try await title("study") != nil)
                try await browser.click("dialog[open] #confirm")
                try await Self.waitForView(browser, "Artist")
                let lilies = try await title("lilies"), study = try await title("study"), dance = try await title("dance")
                #expect(lilies == nil && study == nil && dance == "Dance at Bougival")
                // A new artwork, its fields from the schema.
                try await browser.go(to: "\(base)/console#/records?\(place)&zone=_defaultZone&type=Artwork")
                try await Self.waitForView(browser, "Artwork")
                try await browser.click("#new")
                try await Self.waitForView(browser, "New Artwork")
                try await browser.type("olympia", into: "#new-name")
                try await Self.fill(browser, try await Self.input(browser, for: "title"), "Olympia")
                try await Self.fill(browser, try await Self.input(browser, for: "year"), "1863")
                try await browser.click("#save")
                try await browser.click("dialog[open] #confirm")
                try await Self.waitForView(browser, "olympia")
                #expect(try await title("olympia") == "Olympia")
            }
        }
    }

    @Test func theLiveFeedShowsAnotherClientsChangeAndTheRequestLogAUsersFailedSave() async throws {
        try await Self.withConsole(scopes: [.read]) { server, base, secret, alice in
            for size in Self.sizes(on: server) {
                try await withBrowser(width: size.width, height: size.height) { browser in
                    try await Self.signIn(browser, base, "ops", secret)
                    try await Self.waitForView(browser, "Data")
                    try await browser.go(to: "\(base)/console#/live?c=\(Self.container)&e=development&db=private&as=alice&zone=_defaultZone")
                    _ = try await browser.waitFor("the stream") { try await browser.text("#live-status").hasPrefix("Listening") ? true : nil }
                    // Another client's save shows within two seconds.
                    let name = "fresh-\(size.width)"
                    let saved = ContinuousClock.now
                    try await alice.save([Record(recordName: name, recordType: "Artwork", fields: ["title": .string("Impression, Sunrise")])])
                    _ = try await browser.waitFor("the change", timeout: .seconds(5)) { try await browser.text("#live-rows").contains(name) ? true : nil }
                    let shown = ContinuousClock.now - saved
                    #expect(shown < .seconds(2), "the change showed after \(shown)")
                    try await Self.screenshot(browser, server, "live", width: size.width, height: size.height)
                    // Alice's save with a stale tag fails; the request log finds it.
                    let stale = try await alice.post("records/modify", ModifyRecordsRequest(operations: [RecordOperation(.update, RecordPayload(
                        recordName: name, recordType: "Artwork", recordChangeTag: "stale", fields: ["title": RawFieldValue(FieldValue.string("x"))]))]))
                    #expect(stale.status == 200)
                    try await browser.click("nav a[href='#/requests']")
                    try await Self.waitForView(browser, "Request log")
                    try await browser.type("alice", into: "#log-user")
                    try await browser.type("CONFLICT", into: "#log-code")
                    try await browser.click("#view form.row button[type=submit]")
                    let found = try await browser.waitFor("alice's failed save") { () async throws -> String? in
                        let text = try await browser.text("#view table")
                        return text.contains("CONFLICT") ? text : nil
                    }
                    #expect(found.contains("records/modify") && found.contains("alice") && found.contains("200"), "\(found)")
                    #expect(try await browser.run("return document.querySelectorAll('#view tbody tr').length") == .int(Int64(Self.sizes.firstIndex { $0.width == size.width }! + 1)))
                    try await Self.screenshot(browser, server, "requests", width: size.width, height: size.height)
                    // The health view: this node, and the last hour's charts drawn from the figures.
                    try await browser.click("nav a[href='#/health']")
                    try await Self.waitForView(browser, "Health")
                    #expect(try await browser.text("#view .notice").contains("ready"))
                    let lines = try await browser.waitFor("the charts") { () async throws -> Int64? in
                        guard case .int(let count) = try await browser.run("return document.querySelectorAll('#view figure.chart svg path.line, #view figure.chart svg circle.dot').length"), count >= 5 else { return nil }
                        return count
                    }
                    #expect(lines >= 5)
                    let page = try await browser.text("#view")
                    #expect(page.contains("Requests per second") && page.contains("records/modify"), "\(page)")
                    try await Self.screenshot(browser, server, "health", width: size.width, height: size.height)
                }
            }
        }
    }

    @Test func anAdditiveSchemaChangeDeploysAndADestructiveOneIsRefused() async throws {
        try await Self.withConsole(scopes: [.all]) { server, base, secret, alice in
            let production = "\(base)/console#/schema?c=\(Self.container)&e=production"
            let typesInProduction = { () async throws -> [String: [String: FieldType]] in
                try await server.store.schema(ofContainer: Self.container, environment: "production")
            }
            try await withBrowser { browser in
                try await Self.signIn(browser, base, "ops", secret)
                try await Self.waitForView(browser, "Data")
                // Development's types from alice's saves: all additions.
                try await browser.go(to: production)
                try await Self.waitForView(browser, "Schema of \(Self.container)")
                let plan = try await browser.waitFor("the deploy's plan") { try? await browser.text("#lifecycle table") }
                #expect(plan.contains("Artwork") && plan.contains("adds") && !plan.contains("refused"), "\(plan)")
                try await Self.screenshot(browser, server, "schema-deploy", width: 1280, height: 800)
                try await browser.click("#deploy")
                #expect(try await browser.waitFor("the confirmation") { try? await browser.text("dialog[open]") }.contains("Artwork"))
                try await browser.click("dialog[open] #confirm")
                _ = try await browser.waitFor("the deploy") { try? await browser.text("#lifecycle .notice") }
                #expect(try await typesInProduction()["Artwork"]?["year"] == FieldType(.int64))
                #expect(try await browser.text("#view").contains("Production's schema is development's"))
                // Development drops Artwork.year (an import, through the API): deploying that is refused.
                let file = try await server.send(.get, "/admin/1/\(Self.container)/development/schema?format=ckdb", headers: [.authorization: "Bearer \(secret)"])
                let dropped = String(decoding: file.data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
                    .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("year ") }.joined(separator: "\n")
                let imported = try await server.send(.post, "/admin/1/\(Self.container)/development/schema/import?deleteRecords=true",
                                                     headers: [.authorization: "Bearer \(secret)"], body: dropped)
                #expect(imported.status == 200, "\(imported.reason)")
                try await browser.go(to: "\(base)/console#/data")
                try await Self.waitForView(browser, "Data")
                try await browser.go(to: production)
                let refusedPlan = try await browser.waitFor("the refused plan") { try? await browser.text("#lifecycle table") }
                #expect(refusedPlan.contains("year") && refusedPlan.contains("refused"), "\(refusedPlan)")
                try await browser.click("#deploy")
                try await browser.click("dialog[open] #confirm")
                let refusal = try await browser.waitFor("the refusal") { try? await browser.text("#deploy-result .error") }
                #expect(refusal.contains("BAD_REQUEST") && refusal.contains("year"), "\(refusal)")
                try await Self.screenshot(browser, server, "deploy-refused", width: 1280, height: 800)
                #expect(try await typesInProduction()["Artwork"]?["year"] == FieldType(.int64))
                // The history names the operator.
                #expect(try await browser.waitFor("the history") { try? await browser.text("#history table") }.contains("ops"))
                _ = alice
            }
        }
    }

    @Test func anOperatorCreatesAUserIssuesAndRevokesATokenAndDeletesTheUser() async throws {
        try await Self.withConsole(scopes: [.users]) { server, base, secret, alice in
            /// `users/caller` with `token`: its HTTP status.
            let caller = { (token: String) async throws -> Int in
                try await server.send(.get, "/database/1/\(Self.container)/development/private/users/caller", headers: [.authorization: "Bearer \(token)"]).status
            }
            try await withBrowser { browser in
                try await Self.signIn(browser, base, "ops", secret)
                try await Self.waitForView(browser, "Data")
                try await browser.click("nav a[href='#/users']")
                try await Self.waitForView(browser, "Users")
                try await browser.type("carol", into: "#new-user")
                try await browser.click("#create-user")
                let first = try await browser.waitFor("carol's token") { try? await browser.text("#issued-token") }
                #expect(first.hasPrefix("rs_"))
                #expect(try await caller(first) == 200)
                try await browser.click("#view a[href*='name=carol']")
                try await Self.waitForView(browser, "carol")
                try await browser.type("laptop", into: "#token-name")
                try await browser.click("#issue-token")
                let laptop = try await browser.waitFor("the laptop's token") { () async throws -> String? in
                    let text = try? await browser.text("#issued-token")
                    return text == first ? nil : text
                }
                #expect(try await caller(laptop) == 200)
                try await Self.screenshots(browser, server, "user")
                // The token shown once is nowhere in the page once it is left.
                try await browser.click("nav a[href='#/users']")
                try await Self.waitForView(browser, "Users")
                try await browser.go(to: "\(base)/console#/user?name=carol")
                try await Self.waitForView(browser, "carol")
                _ = try await browser.element("#view button[data-token='laptop']")
                #expect(try await browser.run("return document.body.innerHTML.includes(arguments[0])", [.string(laptop)]) == .bool(false))
                // Revoked, the token stops working; the other still works.
                try await browser.click("#view button[data-token='laptop']")
                try await browser.click("dialog[open] #confirm")
                _ = try await browser.waitFor("the revocation") { try? await browser.text("#view .notice") }
                _ = try await browser.waitFor("the token refused", timeout: .seconds(5)) { try await caller(laptop) == 401 ? true : nil }
                #expect(try await caller(first) == 200)
                // Deleting alice says what goes first.
                try await browser.go(to: "\(base)/console#/user?name=alice")
                try await Self.waitForView(browser, "alice")
                #expect(try await browser.text("#view").contains("Records"))
                try await browser.click("#delete-user")
                let dialog = try await browser.waitFor("what goes") { try? await browser.text("dialog[open]") }
                #expect(dialog.contains("1 private database") && dialog.contains("token"), "\(dialog)")
                #expect(try await server.store.user(named: "alice") != nil)
                try await browser.click("dialog[open] #confirm")
                try await Self.waitForView(browser, "Users")
                #expect(try await server.store.user(named: "alice") == nil)
                #expect(try await caller(alice.token) == 401)
            }
        }
    }

    @Test func anOperatorManagesAPITokensOperatorsKeysAndLinksAndSeesSharesAndSubscriptions() async throws {
        try await Self.withConsole(scopes: [.all]) { server, base, secret, alice in
            let bob = try await server.user("bob")
            // Alice shares a zone with bob and subscribes to new artworks.
            _ = try await alice.post("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Trip"}}}]}"#)
            let shared = try await alice.post("records/modify", #"{"zoneID":{"zoneName":"Trip"},"operations":[{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{"cloudkit.title":{"value":"Our trip"}},"publicPermission":"NONE","participants":[{"userIdentity":{"lookupInfo":{"userRecordName":"\#(bob.userRecordName)"}},"permission":"READ_WRITE"}]}}]}"#)
            #expect(shared.json["records"]?[0]?["serverErrorCode"] == nil, "\(shared.json)")
            let subscribed = try await alice.post("subscriptions/modify", #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"new-art","subscriptionType":"query","query":{"recordType":"Artwork"},"firesOn":["create"]}}]}"#)
            #expect(subscribed.status == 200, "\(subscribed.json)")
            /// A signed-out visitor's request with an API token: its status.
            func visit(_ token: String) async throws -> Int {
                try await server.send(.post, "/database/1/\(Self.container)/development/public/zones/list?ckAPIToken=\(token)", body: "{}").status
            }
            try await withBrowser { browser in
                try await Self.signIn(browser, base, "ops", secret)
                try await Self.waitForView(browser, "Data")
                // Shares and subscriptions, as alice reads them.
                try await browser.go(to: "\(base)/console#/zones?c=\(Self.container)&e=development&db=private&as=alice")
                try await Self.waitForView(browser, "Zones")
                let zones = try await browser.text("#view")
                #expect(zones.contains("new-art") && zones.contains("query") && zones.contains("Artwork"), "\(zones)")
                try await browser.click("#view a[href*='type=cloudkit.share']")
                try await Self.waitForView(browser, "cloudkit.share")
                try await browser.click("#view tbody td:first-child a")
                try await Self.waitForView(browser, "cloudkit.zoneshare")
                let share = try await browser.text("#view")
                #expect(share.contains("Participants") && share.contains(bob.userRecordName) && share.contains("READ_WRITE") && share.contains("INVITED"), "\(share)")
                try await Self.screenshots(browser, server, "share")

                // An API token issued (shown once; a visitor gets in with it) and revoked.
                try await browser.click("nav a[href='#/access']")
                try await Self.waitForView(browser, "Access")
                #expect(try await browser.text("#view").contains("Sign-up is closed"))
                try await browser.type(Self.container, into: "#token-container")
                try await browser.type("http://localhost:8080", into: "#token-origins")
                try await browser.type("web", into: "#token-label")
                try await browser.click("#create-api-token")
                let token = try await browser.waitFor("the API token") { try? await browser.text("#issued-api-token") }
                #expect(try await visit(token) == 200)
                #expect(try await browser.text("#view table").contains("http://localhost:8080"))
                try await Self.screenshots(browser, server, "access")
                try await browser.click("#view button[data-api-token=web]")
                try await browser.click("dialog[open] #confirm")
                _ = try await browser.waitFor("the revocation") { try await browser.text("#view .notice").contains("Revoked web") ? true : nil }
                _ = try await browser.waitFor("the API token refused", timeout: .seconds(5)) { try await visit(token) == 401 ? true : nil }
                // An operator added (its secret signs in to the API) and revoked; the console's own is not revocable here.
                try await browser.type("auditor", into: "#operator-name")
                try await browser.click("input[name=scope][value=read]")
                try await browser.click("#create-operator")
                let auditor = try await browser.waitFor("the operator's secret") { try? await browser.text("#issued-secret") }
                func operatorCall(_ secret: String) async throws -> Int {
                    try await server.send(.get, "/admin/1/operator", headers: [.authorization: "Bearer \(secret)"]).status
                }
                #expect(try await operatorCall(auditor) == 200)
                let operators = try await browser.text("#view")
                #expect(operators.contains("auditor") && operators.contains("you"), "\(operators)")
                try await browser.click("#view button[data-operator=auditor]")
                try await browser.click("dialog[open] #confirm")
                _ = try await browser.waitFor("the operator revoked") { try await browser.text("#view .notice").contains("Revoked auditor") ? true : nil }
                #expect(try await operatorCall(auditor) == 401)

                // Bob's page: a server key added and revoked; alice's sign-ins linked into bob.
                try await browser.go(to: "\(base)/console#/user?name=bob")
                _ = try await browser.waitFor("bob's page") { try await browser.text("#view h1") == "bob" ? true : nil }
                let key = P256.Signing.PrivateKey().publicKey.pemRepresentation
                try await browser.run("document.getElementById('key-pem').value = arguments[0]", [.string(key)])
                try await browser.type("laptop", into: "#key-name")
                try await browser.click("#add-key")
                _ = try await browser.waitFor("the key added") { try await browser.text("#view .notice").contains("Added the key") ? true : nil }
                #expect(try await server.store.serverKeys(ofUserNamed: "bob").map(\.name) == ["laptop"])
                try await browser.click("#view button[data-key=laptop]")
                try await browser.click("dialog[open] #confirm")
                _ = try await browser.waitFor("the key revoked") { try await browser.text("#view .notice").contains("Revoked the key laptop") ? true : nil }
                #expect(try await server.store.serverKeys(ofUserNamed: "bob").isEmpty)
                try await browser.type("alice", into: "#link-source")
                try await browser.click("#link-user")
                #expect(try await browser.text("dialog[open]").contains("Link alice into bob"))
                try await browser.click("dialog[open] #confirm")
                _ = try await browser.waitFor("the link") { try await browser.text("#view .notice").contains("of alice into bob") ? true : nil }
                #expect(try await server.send(.post, "/database/1/\(Self.container)/development/private/zones/list", headers: [.authorization: "Bearer \(alice.token)"], body: "{}").status == 401)
            }
        }
    }

    /// Every control of the current page a person could use: visible and enabled (links,
    /// buttons, fields, and whatever else is put in the tab order).
    static let controls = """
        Array.from(document.querySelectorAll('a[href], button, input, select, textarea, summary, [tabindex]'))
          .filter((e) => !e.disabled && e.getClientRects().length > 0 && (e.matches('a[href], button, input, select, textarea, summary') || e.tabIndex >= 0))
        """

    /// Tabs from the top of the page through every control of the current view: each one must
    /// take the focus (a control only a mouse reaches fails).
    static func tabReachesEveryControl(_ browser: WebDriver, in view: String) async throws {
        guard case .int(let count) = try await browser.run("""
            if (!window.reachedByTab) {
              window.reachedByTab = true;
              document.addEventListener("focusin", (event) => event.target.setAttribute("data-reached", ""));
            }
            const controls = \(controls);
            controls.forEach((e) => e.removeAttribute("data-reached"));
            document.querySelector("a.brand").focus();
            return controls.length;
            """) else { Issue.record("no controls counted in \(view)"); return }
        try await browser.press(String(repeating: WebDriver.tab, count: Int(count) + 1))
        let missed = try await browser.run("return \(controls).filter((e) => !e.hasAttribute('data-reached')).map((e) => e.outerHTML.slice(0, 100))")
        #expect(missed == .array([]), "\(view): \(count) controls, the Tab key never reached \(missed)")
        #expect(count > 5, "\(view): \(count) controls")
    }

    /// Tabs from the top of the page to the first control `selector` finds and presses Enter.
    static func keyboard(_ browser: WebDriver, activate selector: String) async throws {
        try await browser.run("document.querySelector('a.brand').focus()")
        for _ in 0..<300 {
            try await browser.press(WebDriver.tab)
            if try await browser.run("return document.activeElement.matches(arguments[0])", [.string(selector)]) == .bool(true) {
                try await browser.press(WebDriver.enter)
                return
            }
        }
        Issue.record("the Tab key never reached \(selector)")
    }

    @Test func everyActionIsReachableByKeyboard() async throws {
        try await Self.withConsole(scopes: [.all]) { server, base, secret, alice in
            try await withBrowser { browser in
                // Signing in: the name's field has the focus; Tab to the secret, Enter sends.
                try await browser.go(to: "\(base)/console")
                _ = try await browser.element("#name")
                try await browser.press("ops" + WebDriver.tab + secret + WebDriver.enter)
                try await Self.waitForView(browser, "Data")
                try await Self.tabReachesEveryControl(browser, in: "Data")
                // Down to a record and an edit, with Tab and Enter alone.
                try await Self.keyboard(browser, activate: "#view table td:first-child a")
                try await Self.waitForView(browser, "Databases")
                try await Self.tabReachesEveryControl(browser, in: "Databases")
                try await Self.keyboard(browser, activate: "#view form button[type=submit]")
                try await Self.waitForView(browser, "Zones")
                try await Self.keyboard(browser, activate: "#view table a")
                try await Self.waitForView(browser, "Artist")
                try await Self.tabReachesEveryControl(browser, in: "Records")
                try await Self.keyboard(browser, activate: "#view tbody td:first-child a")
                try await Self.waitForView(browser, "monet")
                try await Self.keyboard(browser, activate: "#mode")
                _ = try await browser.element("#save")
                try await Self.tabReachesEveryControl(browser, in: "Record, editing")
                let field = try await Self.input(browser, for: "name")
                try await Self.keyboard(browser, activate: field)
                try await browser.run("document.querySelector(arguments[0]).select()", [.string(field)])
                try await browser.press("Claude Oscar Monet")
                try await Self.keyboard(browser, activate: "#save")
                _ = try await browser.element("dialog[open] #confirm")
                // The confirmation holds the focus; Enter on its button saves.
                #expect(try await browser.run("return document.activeElement.closest('dialog[open]') !== null") == .bool(true))
                try await browser.run("document.querySelector('dialog[open] #confirm').focus()")
                try await browser.press(WebDriver.enter)
                _ = try await browser.waitFor("the saved notice") { try? await browser.text("#view .notice") }
                let saved = try await alice.post("records/lookup", LookupRecordsRequest(records: [.init(recordName: "monet")])).decode(RecordsResponse.self).records.first?.record
                #expect(saved?.fields["name"] == .string("Claude Oscar Monet"))
                // The other views, each through its link in the navigation.
                for (link, title) in [("users", "Users"), ("access", "Access"), ("requests", "Request log"), ("health", "Health"), ("audit", "Audit log")] {
                    try await Self.keyboard(browser, activate: "nav a[href='#/\(link)']")
                    try await Self.waitForView(browser, title)
                    try await Self.tabReachesEveryControl(browser, in: title)
                }
                try await Self.keyboard(browser, activate: "nav a[href='#/users']")
                try await Self.waitForView(browser, "Users")
                try await Self.keyboard(browser, activate: "#view table td:first-child a")
                _ = try await browser.waitFor("a user's page") { try await browser.text("#view h1") == "alice" ? true : nil }
                try await Self.tabReachesEveryControl(browser, in: "User")
                // Signing out is a button like any other.
                try await Self.keyboard(browser, activate: "header.bar button")
                _ = try await browser.element("#secret")
            }
        }
    }

    @Test func aUsersTokenAndAForgedCookieOpenNothing() async throws {
        try await withServer(configure: { $0.console = ConsoleSessionLimits() }) { server in
            let alice = try await server.user("alice")
            let base = "http://127.0.0.1:\(try #require(server.client.port))"
            try await withBrowser { browser in
                try await Self.signIn(browser, base, "alice", alice.token)
                let refusal = try await browser.text("main.card .error")
                #expect(refusal.contains("never a user's token"), "\(refusal)")
                try await Self.screenshot(browser, server, "sign-in-refused", width: 1280, height: 800)
                // A cookie of the console's name that no sign-in made.
                try await browser.command("POST", "/cookie", .object(["cookie": .object([
                    "name": .string("recordsync_console"), "value": .string(Credentials.newToken()), "path": .string("/"),
                ])]))
                try await browser.go(to: "\(base)/console")
                _ = try await browser.element("#secret")
                #expect(try await browser.run("return document.querySelector('#view') === null") == .bool(true))
            }
        }
    }
}
