import AsyncHTTPClient
import Foundation
import NIOCore
import RecordModel
#if canImport(Glibc)
import Glibc
#endif

/// A real browser for the tests of pages: headless Chromium (Debian's `chromium`) driven
/// through WebDriver by `chromedriver` (Debian's `chromium-driver`; `.ci/run` installs both),
/// on a loopback port. Chromium runs as root only without its sandbox (`--no-sandbox`).
public final class WebDriver: @unchecked Sendable {
    private let child: ChildProcess
    private let base: String
    private let session: String
    private let client: HTTPClient
    /// The key of an element reference in WebDriver's answers.
    static let elementKey = "element-6066-11e4-a52e-4f735466cecf"

    private init(child: ChildProcess, base: String, session: String, client: HTTPClient) {
        self.child = child
        self.base = base
        self.session = session
        self.client = client
    }

    /// The first of `candidates` that is an executable file.
    static func executable(_ candidates: [String]) -> String? {
        candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// chromedriver's and Chromium's executables, or `nil` when either is missing.
    static var executables: (driver: String, browser: String)? {
        let environment = ProcessInfo.processInfo.environment
        guard let driver = executable([environment["RECORDSYNC_TEST_CHROMEDRIVER"], "/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"].compactMap { $0 }),
              let browser = executable([environment["RECORDSYNC_TEST_CHROMIUM"], "/usr/bin/chromium", "/usr/bin/chromium-browser"].compactMap { $0 }) else {
            return nil
        }
        return (driver, browser)
    }

    /// Whether the machine has Chromium and chromedriver: the browser suites run only then, and
    /// are reported skipped otherwise, saying why (``missing``).
    public static let isAvailable = executables != nil

    /// Why the browser suites are skipped on a machine without a browser.
    public static let missing = "no chromium and chromedriver on this machine: install Debian's chromium and chromium-driver (.ci/run does) to run the browser tests"

    /// Starts chromedriver and a headless Chromium session with a window of `width`×`height`
    /// (`javascript` false: with JavaScript turned off). Every host name ending `.test`
    /// resolves to 127.0.0.1, so that a test's sites can be different sites on one machine
    /// (cookies and `SameSite` tell sites by host, not by port).
    public static func start(width: Int = 1280, height: Int = 800, javascript: Bool = true) async throws -> WebDriver {
        guard let (driver, browser) = executables else {
            throw WebDriverError("no chromium and chromedriver: install Debian's chromium and chromium-driver (.ci/run does)")
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        for _ in 0..<5 {
            let port = try TestMailServer.freePort()
            let child = try ChildProcess(executable: URL(fileURLWithPath: driver), ["--port=\(port)", "--allowed-ips=127.0.0.1"])
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline, child.process.isRunning, !TestMailServer.accepts(port) {
                try await Task.sleep(for: .milliseconds(50))
            }
            guard TestMailServer.accepts(port) else {
                _ = await child.stop(signal: SIGKILL)
                continue
            }
            let base = "http://127.0.0.1:\(port)"
            let arguments: [JSONValue] = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-popup-blocking",
                                          "--no-first-run", "--hide-scrollbars", "--host-resolver-rules=MAP *.test 127.0.0.1", "--window-size=\(width),\(height)", "--force-device-scale-factor=1"]
                .map { .string($0) }
            let capabilities: JSONValue = .object(["capabilities": .object(["alwaysMatch": .object([
                "browserName": .string("chrome"),
                "goog:chromeOptions": .object([
                    "binary": .string(browser), "args": .array(arguments),
                    "prefs": .object(["profile.managed_default_content_settings.javascript": .int(javascript ? 1 : 2)]),
                    // The viewport exactly (a window has a least width, and its frame takes room);
                    // narrower than 600 points, a phone's (touch, mobile layout).
                    "mobileEmulation": .object(["deviceMetrics": .object([
                        "width": .int(Int64(width)), "height": .int(Int64(height)), "pixelRatio": .double(1),
                        "mobile": .bool(width < 600), "touch": .bool(width < 600),
                    ])]),
                ]),
            ])])])
            do {
                let answer = try await send(client, "POST", "\(base)/session", capabilities)
                guard case .string(let session)? = answer["sessionId"] else { throw WebDriverError("no session: \(answer)") }
                return WebDriver(child: child, base: base, session: session, client: client)
            } catch {
                _ = await child.stop(signal: SIGKILL)
                try? await client.shutdown()
                throw error
            }
        }
        try? await client.shutdown()
        throw WebDriverError("chromedriver did not start")
    }

    /// Ends the session, stops chromedriver (and its browser).
    public func quit() async {
        _ = try? await Self.send(client, "DELETE", "\(base)/session/\(session)", nil)
        _ = await child.stop(signal: SIGKILL)
        try? await client.shutdown()
    }

    /// Sends a WebDriver command; its `value`.
    @discardableResult
    public func command(_ method: String, _ path: String, _ body: JSONValue? = nil) async throws -> JSONValue {
        try await Self.send(client, method, "\(base)/session/\(session)\(path)", body ?? (method == "POST" ? .object([:]) : nil))
    }

    private static func send(_ client: HTTPClient, _ method: String, _ url: String, _ body: JSONValue?) async throws -> JSONValue {
        var request = HTTPClientRequest(url: url)
        request.method = .init(rawValue: method)
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(data: try JSONEncoder().encode(body)))
        }
        let response = try await client.execute(request, timeout: .seconds(60))
        let data = Data(buffer: try await response.body.collect(upTo: 64 << 20))
        let answer = (try? JSONDecoder().decode(JSONValue.self, from: data)) ?? .null
        guard response.status.code == 200 else {
            throw WebDriverError("\(method) \(url): HTTP \(response.status.code) \(answer["value"]?["message"] ?? answer)")
        }
        if let value = answer["value"], url.hasSuffix("/session"), method == "POST" { return value }
        return answer["value"] ?? .null
    }

    // MARK: Commands

    /// Loads `url` in the current window.
    public func go(to url: String) async throws {
        try await command("POST", "/url", .object(["url": .string(url)]))
    }

    /// The current window's URL.
    public func url() async throws -> String {
        if case .string(let url) = try await command("GET", "/url") { return url }
        return ""
    }

    /// The element `selector` (CSS) finds, waiting up to `timeout` for it.
    public func element(_ selector: String, timeout: Duration = .seconds(10)) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            do {
                let found = try await command("POST", "/element", .object(["using": .string("css selector"), "value": .string(selector)]))
                if case .string(let id)? = found[Self.elementKey] { return id }
            } catch where ContinuousClock.now < deadline {}
            guard ContinuousClock.now < deadline else { throw WebDriverError("no element \(selector) within \(timeout)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    public func click(_ selector: String) async throws {
        try await command("POST", "/element/\(try await element(selector))/click")
    }

    public func type(_ text: String, into selector: String) async throws {
        try await command("POST", "/element/\(try await element(selector))/value", .object(["text": .string(text)]))
    }

    /// WebDriver's codes of the keys tests press.
    public static let tab = "\u{E004}", enter = "\u{E007}", shift = "\u{E008}"

    /// Presses the keys of `text` one after another in the focused element, as a person typing
    /// would (``tab``, ``enter``: WebDriver's key codes).
    public func press(_ text: String) async throws {
        let actions = text.unicodeScalars.flatMap { key -> [JSONValue] in
            [.object(["type": .string("keyDown"), "value": .string(String(key))]), .object(["type": .string("keyUp"), "value": .string(String(key))])]
        }
        try await command("POST", "/actions", .object(["actions": .array([.object(["type": .string("key"), "id": .string("keyboard"), "actions": .array(actions)])])]))
    }

    /// The visible text of the element `selector` finds.
    public func text(_ selector: String) async throws -> String {
        if case .string(let text) = try await command("GET", "/element/\(try await element(selector))/text") { return text }
        return ""
    }

    /// Runs `script` (a function body) in the page; its return value.
    @discardableResult
    public func run(_ script: String, _ arguments: [JSONValue] = []) async throws -> JSONValue {
        try await command("POST", "/execute/sync", .object(["script": .string(script), "args": .array(arguments)]))
    }

    /// The handles of the open windows, and of the current one.
    public func windows() async throws -> [String] {
        guard case .array(let handles) = try await command("GET", "/window/handles") else { return [] }
        return handles.compactMap { if case .string(let handle) = $0 { handle } else { nil } }
    }

    public func window() async throws -> String {
        if case .string(let handle) = try await command("GET", "/window") { return handle }
        return ""
    }

    public func switchTo(window handle: String) async throws {
        try await command("POST", "/window", .object(["handle": .string(handle)]))
    }

    /// Waits (up to `timeout`) for a window other than `known` to open; its handle.
    public func newWindow(besides known: [String], timeout: Duration = .seconds(10)) async throws -> String {
        try await waitFor("a new window", timeout: timeout) { try await self.windows().first { !known.contains($0) } }
    }

    /// Lays pages out in a viewport of `width`×`height` (Chromium's device emulation: a window
    /// is never narrower than about 500 pixels).
    public func emulateViewport(width: Int, height: Int) async throws {
        try await command("POST", "/goog/cdp/execute", .object(["cmd": .string("Emulation.setDeviceMetricsOverride"), "params": .object([
            "width": .int(Int64(width)), "height": .int(Int64(height)), "deviceScaleFactor": .int(1), "mobile": .bool(false),
        ])]))
    }

    /// A PNG of the current window's viewport.
    public func screenshot() async throws -> Data {
        guard case .string(let base64) = try await command("GET", "/screenshot"), let data = Data(base64Encoded: base64) else {
            throw WebDriverError("no screenshot")
        }
        return data
    }

    /// Polls `probe` until it answers something (up to `timeout`).
    public func waitFor<T>(_ what: String, timeout: Duration = .seconds(10), _ probe: () async throws -> T?) async throws -> T {
        let deadline = ContinuousClock.now + timeout
        var lastError: (any Error)?
        while ContinuousClock.now < deadline {
            do {
                if let found = try await probe() { return found }
            } catch {
                lastError = error
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw WebDriverError("waited \(timeout) for \(what)\(lastError.map { ": \($0)" } ?? "")")
    }
}

public struct WebDriverError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Runs `body` with a browser, quit afterwards.
public func withBrowser<T: Sendable>(width: Int = 1280, height: Int = 800, javascript: Bool = true,
                                     _ body: (WebDriver) async throws -> T) async throws -> T {
    let browser = try await WebDriver.start(width: width, height: height, javascript: javascript)
    do {
        let result = try await body(browser)
        await browser.quit()
        return result
    } catch {
        await browser.quit()
        throw error
    }
}
