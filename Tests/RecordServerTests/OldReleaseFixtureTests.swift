import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOFoundationCompat
import RecordModel
import TestSupport
import Testing

/// The stores written by the release before storage was written once open with this one and
/// serve exactly as before, on both engines: the same records, tags and change tokens, the
/// same assets' bytes, subscriptions and queued notifications, named and expired tokens,
/// server-to-server keys, API tokens, profiles, word and place indexes, and quota usage.
///
/// `Fixtures/release-54bfe40/` was made once by `Fixtures/make-release-data-54bfe40.py` with the
/// `recordserver` of commit 54bfe40: `data/` is the SQLite data directory that server left,
/// `postgres.sql` a `pg_dump` of the PostgreSQL database it left after the same setup, and
/// `transcript.json` / `transcript-postgres.json` what a client holding their credentials sends
/// next, with the answers that server gave over a copy of each. The tests run the real
/// `recordserver` of this build over a copy (the dump restored into a fresh database) with the
/// flags the transcript's server had, and expect the same statuses and answers, but for what
/// differs from run to run: each error's `uuid`, the server's address in URLs, signed asset
/// links, and the timestamps of records the replay itself writes (the steps' `volatile` keys).
///
/// Unlike ``OldDataDirectoryTests/comparable(_:volatile:)`` nothing of the wire is mapped:
/// 54bfe40 already spoke today's wire form. A later release that changes the wire on purpose
/// maps the old answers here (``today(_:query:apiTokens:)``, ``today(output:of:)``), as that
/// function does for c9f8f83.
@Suite(.serialized) struct OldReleaseFixtureTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/release-54bfe40")

    /// `psql`, which restores the dump: on the PATH, or the newest under /usr/lib/postgresql.
    static let psql: String? = {
        let files = FileManager.default
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let candidate = "\(directory)/psql"
            if files.isExecutableFile(atPath: candidate) { return candidate }
        }
        let versions = (try? files.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.sorted(by: { $0.compare($1, options: .numeric) == .orderedDescending }) {
            let candidate = "/usr/lib/postgresql/\(version)/bin/psql"
            if files.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }()

    @Test func theSQLiteDataDirectoryOfRelease54bfe40ServesAsItDid() async throws {
        let transcript = try JSONValue.parse(Data(contentsOf: Self.fixture.appendingPathComponent("transcript.json")))
        try await withTemporaryDirectory { directory in
            let data = (directory as NSString).appendingPathComponent("data")
            try FileManager.default.copyItem(atPath: Self.fixture.appendingPathComponent("data").path, toPath: data)
            try await Self.replay(transcript, storage: ["--data", data], serverData: data, serverArguments: [])
        }
    }

    @Test(.enabled(if: TestPostgres.url != nil && OldReleaseFixtureTests.psql != nil, "needs RECORDSYNC_TEST_POSTGRES and psql"))
    func thePostgreSQLDatabaseOfRelease54bfe40ServesAsItDid() async throws {
        let transcript = try JSONValue.parse(Data(contentsOf: Self.fixture.appendingPathComponent("transcript-postgres.json")))
        try await Self.withRestoredDatabase(Self.fixture.appendingPathComponent("postgres.sql")) { url in
            // The node's own data directory only holds uploads while they arrive.
            try await withTemporaryDirectory { directory in
                try await Self.replay(transcript, storage: ["--database", url], serverData: directory, serverArguments: ["--database", url])
            }
        }
    }

    /// The c9f8f83 data directory moved into PostgreSQL by this release's `data copy` answers
    /// its transcript as the directory itself does (``OldDataDirectoryTests``).
    @Test(.enabled(if: TestPostgres.url != nil, "needs RECORDSYNC_TEST_POSTGRES"))
    func theC9f8f83DataDirectoryCopiedIntoPostgreSQLServesAsItDid() async throws {
        let transcript = try JSONValue.parse(Data(contentsOf: OldDataDirectoryTests.fixture.appendingPathComponent("transcript.json")))
        guard let container = transcript["container"]?.stringValue, case .object(let tokens)? = transcript["tokens"],
              let steps = transcript["steps"]?.arrayValue else {
            Issue.record("transcript.json is not a transcript")
            return
        }
        try await withTemporaryDirectory { directory in
            let data = (directory as NSString).appendingPathComponent("data")
            try FileManager.default.copyItem(atPath: OldDataDirectoryTests.fixture.appendingPathComponent("data").path, toPath: data)
            let target = try await TestPostgres.databaseURL(for: directory)
            let copy = try await ChildProcess.run("recordserver", ["data", "copy", "--from", data, "--to", target], mergeErrors: true)
            #expect(copy.status == 0, "\(copy.output)")
            let node = (directory as NSString).appendingPathComponent("node")
            try FileManager.default.createDirectory(atPath: node, withIntermediateDirectories: true)
            let server = try await ServerProcess(data: node, arguments: ["--database", target])
            defer { Self.kill(server) }
            #expect(steps.count == 24)
            try await OldDataDirectoryTests.replay(steps, container: container, tokens: tokens, port: server.port)
            let stopped = await server.stop(signal: SIGTERM)
            #expect(stopped.status == 0)
            for user in tokens.keys {
                let listed = try await ChildProcess.run("recordserver", ["user", "tokens", user, "--database", target]).output
                #expect(listed.hasPrefix("token-1\tissued ") && listed.hasSuffix("\tnever expires\n"), "\(user): \(listed)")
            }
        }
    }

    // MARK: Replaying

    /// Replays a release-54bfe40 transcript: its `cliBefore` commands over `storage`, then its
    /// steps against `recordserver --data serverData serverArguments` (and the transcript's
    /// flags), then its `cliAfter` commands once that server has stopped.
    static func replay(_ transcript: JSONValue, storage: [String], serverData: String, serverArguments: [String]) async throws {
        guard case .object(let tokens)? = transcript["tokens"], case .object(let keys)? = transcript["keys"],
              let flags = transcript["serverArguments"]?.arrayValue?.compactMap(\.stringValue),
              let before = transcript["cliBefore"]?.arrayValue, let steps = transcript["steps"]?.arrayValue,
              let after = transcript["cliAfter"]?.arrayValue else {
            Issue.record("not a release-54bfe40 transcript")
            return
        }
        #expect(steps.count == 70)
        #expect(before.count == 10 && after.count == 3)
        for command in before { try await Self.run(command, storage: storage) }

        let server = try await ServerProcess(data: serverData, arguments: serverArguments + flags)
        defer { Self.kill(server) }
        // The replay's own answers: a download follows the link the new server gave.
        var answers: [JSONValue?] = []
        for (index, step) in steps.enumerated() {
            if step["kind"]?.stringValue == "download" {
                try await download(step, index: index, answers: answers)
                answers.append(nil)
                continue
            }
            guard let method = step["method"]?.stringValue, let path = step["path"]?.stringValue,
                  case .int(let status)? = step["status"], let expected = step["answer"] else {
                Issue.record("step \(index) is malformed")
                answers.append(nil)
                continue
            }
            var headers: [(String, String)] = []
            var body: Data?
            if let sent = step["body"], sent != .null {
                body = Data(try sent.serializedString().utf8)
                headers.append(("Content-Type", "application/json"))
            }
            if let user = step["user"]?.stringValue {
                guard let token = tokens[user]?.stringValue else {
                    Issue.record("step \(index): no token \(user)")
                    answers.append(nil)
                    continue
                }
                headers.append(("Authorization", "Bearer \(token)"))
            }
            if let name = step["signedBy"]?.stringValue {
                guard let key = keys[name] else {
                    Issue.record("step \(index): no key \(name)")
                    answers.append(nil)
                    continue
                }
                // Signed now: the server checks the date against its clock.
                headers += try signature(key, path: path, body: body ?? Data())
            }
            let query = step["query"]?.stringValue.map { "?\($0)" } ?? ""
            let (gotStatus, data) = try await send(port: server.port, method: method, path: path + query, body: body, headers: headers)
            let got = (try? JSONValue.parse(data)) ?? .string(String(decoding: data, as: UTF8.self))
            answers.append(got)
            let volatile = Set(step["volatile"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            let sent = try step["body"]?.serializedString() ?? ""
            let what = "step \(index) \(method) \(path)\(query) \(sent)"
            #expect(gotStatus == Int(status), "\(what): \(String(decoding: data, as: UTF8.self))")
            let gotComparable = comparable(got, volatile: volatile)
            let wantedComparable = comparable(today(expected, query: step["query"]?.stringValue, apiTokens: transcript["apiTokens"]), volatile: volatile)
            let gotText = try gotComparable.serializedString(), wantedText = try wantedComparable.serializedString()
            #expect(gotComparable == wantedComparable, "\(what):\n got \(gotText)\nwant \(wantedText)")
        }
        let stopped = await server.stop(signal: SIGTERM)
        #expect(stopped.status == 0, "\(server.logText.suffix(2000))")
        for command in after { try await Self.run(command, storage: storage) }
    }

    /// A `download` step: GETs the `downloadURL` at `at` in the replay's answer to step `from`.
    static func download(_ step: JSONValue, index: Int, answers: [JSONValue?]) async throws {
        guard case .int(let from)? = step["from"], Int(from) < answers.count, let at = step["at"]?.arrayValue,
              case .int(let status)? = step["status"], case .int(let size)? = step["size"], let sha256 = step["sha256"]?.stringValue else {
            Issue.record("download step \(index) is malformed")
            return
        }
        var value = answers[Int(from)]
        for key in at {
            switch key {
            case .string(let member): value = value?[member]
            case .int(let position): value = value?[Int(position)]
            default: value = nil
            }
        }
        guard let link = value?.stringValue else {
            Issue.record("step \(index): no downloadURL in the answer to step \(from) at \(at)")
            return
        }
        let got = try await AssetTests.get(link.replacingOccurrences(of: "${f}", with: "file.bin"), range: step["range"]?.stringValue)
        let digest = SHA256.hash(data: got.data).map { String(format: "%02x", $0) }.joined()
        #expect(got.status == Int(status) && got.data.count == Int(size) && digest == sha256, "download step \(index): \(got.status), \(got.data.count) bytes")
        #expect(got.contentRange == step["contentRange"]?.stringValue, "download step \(index)")
    }

    /// A `recordserver` command of `cliBefore`/`cliAfter`, with the storage flag appended: the
    /// same status and standard output.
    static func run(_ command: JSONValue, storage: [String]) async throws {
        guard let arguments = command["arguments"]?.arrayValue?.compactMap(\.stringValue), case .int(let status)? = command["status"],
              let output = command["output"]?.stringValue else {
            Issue.record("malformed command \(command)")
            return
        }
        let result = try await ChildProcess.run("recordserver", arguments + storage)
        #expect(result.status == Int32(status), "recordserver \(arguments.joined(separator: " "))")
        let wanted = today(output: output, of: arguments)
        #expect(result.output == wanted, "recordserver \(arguments.joined(separator: " ")):\n got \(result.output)\nwant \(wanted)")
    }

    /// An answer of 54bfe40 as this release gives it on purpose: `redirectURL` names the API
    /// token the request carried (the web sign-in page needs it).
    static func today(_ answer: JSONValue, query: String?, apiTokens: JSONValue?) -> JSONValue {
        guard case .object(var members) = answer, case .string(let redirect)? = members["redirectURL"], case .object(let tokens)? = apiTokens,
              let given = query?.split(separator: "&").first(where: { $0.hasPrefix("ckAPIToken=") })?.dropFirst("ckAPIToken=".count),
              let name = tokens.first(where: { $0.value.stringValue == String(given) })?.key else { return answer }
        members["redirectURL"] = .string("\(redirect)?token=\(name)")
        return .object(members)
    }

    /// A command's output of 54bfe40 as this release prints it on purpose: `api-token list`
    /// says how each token's sign-in hands the token over (`post-message` for every token of
    /// that release) before when it was issued.
    static func today(output: String, of arguments: [String]) -> String {
        guard arguments.starts(with: ["api-token", "list"]) else { return output }
        return output.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            var columns = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            if columns.count == 5 { columns.insert("post-message", at: 4) }
            return columns.joined(separator: "\t")
        }.joined(separator: "\n")
    }

    /// The three headers of a server-to-server request signed now with `key` (`privateKey` in
    /// PEM, `keyID`).
    static func signature(_ key: JSONValue, path: String, body: Data) throws -> [(String, String)] {
        let privateKey = try P256.Signing.PrivateKey(pemRepresentation: key["privateKey"]?.stringValue ?? "")
        let stamp = Date().formatted(.iso8601)
        let message = "\(stamp):\(Data(SHA256.hash(data: body)).base64EncodedString()):\(path)"
        let signed = try privateKey.signature(for: Data(message.utf8)).derRepresentation.base64EncodedString()
        return [("X-Apple-CloudKit-Request-KeyID", key["keyID"]?.stringValue ?? ""), ("X-Apple-CloudKit-Request-ISO8601Date", stamp),
                ("X-Apple-CloudKit-Request-SignatureV1", signed)]
    }

    /// Sends a request to the server on `port`: status and body.
    static func send(port: Int, method: String, path: String, body: Data?, headers: [(String, String)]) async throws -> (status: Int, data: Data) {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method == "GET" ? .GET : .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(data: body)) }
        let response = try await AssetTests.http.execute(request, timeout: .seconds(120))
        return (Int(response.status.code), Data(buffer: try await response.body.collect(upTo: 64 << 20)))
    }

    /// `value` without what differs from run to run: every error's `uuid`, the server's address
    /// (`http://127.0.0.1:PORT`, in `redirectURL` and other links), every asset link (signed
    /// for each answer), and the `volatile` keys (`timestamp` of records the replay writes).
    static func comparable(_ value: JSONValue, volatile: Set<String>) -> JSONValue {
        switch value {
        case .object(let members):
            var kept: [String: JSONValue] = [:]
            for (key, member) in members where key != "uuid" {
                kept[key] = volatile.contains(key) ? .null : comparable(member, volatile: volatile)
            }
            return .object(kept)
        case .array(let elements):
            return .array(elements.map { comparable($0, volatile: volatile) })
        case .string(let text):
            if text.contains("/assets/1/download/") { return .string("{download}") }
            if let server = text.range(of: #"^http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression) {
                return .string("{server}" + text[server.upperBound...])
            }
            return .string(reasonAsBefore(text))
        default:
            return value
        }
    }

    /// A refusal's reason as releases before security roles worded it: the one check names the
    /// permission, the type and the caller (docs/protocol.md, "Security roles").
    static func reasonAsBefore(_ text: String) -> String {
        let today = #/^WRITE permission on record type \S+ is not granted to user '[^']*' in the public database \(record '(?<name>.*)', created by another user\)$/#
        guard let match = text.wholeMatch(of: today) else { return text }
        return "record '\(match.output.name)' of the public database belongs to another user"
    }

    static func kill(_ server: ServerProcess) {
        if server.child.process.isRunning { Foundation.kill(server.child.process.processIdentifier, SIGKILL) }
    }

    // MARK: PostgreSQL

    /// The URL of the database `name` on the test server (its URL with the database replaced).
    static func databaseURL(_ name: String) -> String? {
        guard let url = TestPostgres.url else { return nil }
        let parts = url.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var base = String(parts[0])
        let authority = base.range(of: "://")?.upperBound ?? base.startIndex
        if let slash = base[authority...].firstIndex(of: "/") { base = String(base[..<slash]) }
        return base + "/" + name + (parts.count > 1 ? "?" + parts[1] : "")
    }

    /// Runs `body` with the URL of a fresh database the dump at `dump` was restored into
    /// (`psql -v ON_ERROR_STOP=1 -f`); the database is dropped afterwards.
    static func withRestoredDatabase<T>(_ dump: URL, _ body: (String) async throws -> T) async throws -> T {
        let name = "rs_fixture_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        guard let server = TestPostgres.url, let url = databaseURL(name) else { throw RecordSyncError(.internalError, "RECORDSYNC_TEST_POSTGRES is not set") }
        let created = try await psql(["-c", "CREATE DATABASE \"\(name)\"", server])
        guard created.status == 0 else { throw RecordSyncError(.internalError, "psql could not create \(name): \(created.output)") }
        func drop() async {
            _ = try? await psql(["-c", "DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)", server])
        }
        do {
            let restored = try await psql(["-f", dump.path, url])
            guard restored.status == 0 else { throw RecordSyncError(.internalError, "psql could not restore \(dump.lastPathComponent): \(restored.output)") }
            let result = try await body(url)
            await drop()
            return result
        } catch {
            await drop()
            throw error
        }
    }

    /// Runs `psql -X -q -v ON_ERROR_STOP=1 ARGUMENTS`: its status and everything it wrote.
    static func psql(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        guard let psql else { throw RecordSyncError(.internalError, "psql is not installed") }
        // Written to a file, not a pipe, as ChildProcess does.
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("recordsync-psql-\(UUID().uuidString).out")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        let output = try FileHandle(forWritingTo: log)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: psql)
        process.arguments = ["-X", "-q", "-v", "ON_ERROR_STOP=1"] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = output
        do {
            try process.run()
        } catch {
            try? output.close()
            throw error
        }
        try? output.close()
        while process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        return (process.terminationStatus, String(decoding: (try? Data(contentsOf: log)) ?? Data(), as: UTF8.self))
    }
}
