import Foundation
import HTTPTypes
import RecordModel
import Testing
import TestSupport

/// Real request bodies, as Apple's CloudKit JS, a Swift CKWS client and RecordSync's own client
/// send them (and a few no client should send), get the answers recorded in
/// `Fixtures/wire-corpus/answers.jsonl`: whatever reads and writes the wire, the same bytes in
/// get the same answers out, on every engine.
///
/// `RECORDSYNC_RECORD_WIRE_CORPUS=1` writes the answers file from the first engine's run (and
/// checks the others against it) instead of reading it: done once, by the release whose
/// answers are the reference.
@Suite struct WireCorpusTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/wire-corpus")

    /// One request of the corpus.
    struct Entry {
        var header: String
        var database: String
        var method: HTTPRequest.Method
        var endpoint: String
        /// The body as sent; `nil` for none.
        var body: String?
    }

    /// The corpus, in order (`requests.txt`: a header line `== CLIENT | DATABASE | METHOD
    /// ENDPOINT | WHAT`, then the body's lines).
    static func entries() throws -> [Entry] {
        let text = try String(contentsOf: directory.appendingPathComponent("requests.txt"), encoding: .utf8)
        var entries: [Entry] = []
        var lines: [Substring] = []
        func finish() {
            guard !entries.isEmpty else { return }
            while let last = lines.last, last.isEmpty { lines.removeLast() }
            entries[entries.count - 1].body = lines.isEmpty ? nil : lines.joined(separator: "\n")
            lines = []
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("== ") {
                finish()
                let parts = line.dropFirst(3).split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
                let request = parts[2].split(separator: " ")
                entries.append(Entry(header: String(line.dropFirst(3)), database: parts[1], method: request[0] == "GET" ? .get : .post,
                                     endpoint: String(request[1])))
            } else if !entries.isEmpty {
                lines.append(line)
            }
        }
        finish()
        return entries
    }

    /// `value` with what differs from run to run masked: sync tokens, continuation markers,
    /// error uuids, times (milliseconds in 2020–2033) and the user's record name.
    static func normalised(_ value: JSONValue, user: String) -> JSONValue {
        switch value {
        case .object(let members):
            var out: [String: JSONValue] = [:]
            for (key, member) in members {
                switch key {
                case "syncToken", "continuationMarker", "uuid": out[key] = .string("<\(key)>")
                default: out[key] = normalised(member, user: user)
                }
            }
            return .object(out)
        case .array(let elements): return .array(elements.map { normalised($0, user: user) })
        case .int(let number) where (1_600_000_000_000...2_000_000_000_000).contains(number): return .string("<time>")
        case .string(let text) where text.contains(user): return .string(text.replacingOccurrences(of: user, with: "<user>"))
        default: return value
        }
    }

    /// Notes the change tags and the sync token an answer gives.
    static func note(_ value: JSONValue, tags: inout [String: String], syncToken: inout String) {
        switch value {
        case .object(let members):
            if case .string(let name)? = members["recordName"], case .string(let tag)? = members["recordChangeTag"] { tags[name] = tag }
            if case .string(let token)? = members["syncToken"] { syncToken = token }
            for member in members.values { note(member, tags: &tags, syncToken: &syncToken) }
        case .array(let elements):
            for element in elements { note(element, tags: &tags, syncToken: &syncToken) }
        default: break
        }
    }

    @Test func realRequestBodiesGetTheRecordedAnswers() async throws {
        let entries = try Self.entries()
        #expect(entries.count >= 50)
        let file = Self.directory.appendingPathComponent("answers.jsonl")
        let recording = ProcessInfo.processInfo.environment["RECORDSYNC_RECORD_WIRE_CORPUS"] != nil
        let recorded = Recorded(recording ? nil : try String(contentsOf: file, encoding: .utf8)
            .split(separator: "\n").map { try JSONValue.parse(String($0)) })
        try await withServer { server in
            let alice = try await server.user("alice")
            var tags: [String: String] = [:], syncToken = ""
            var answers: [JSONValue] = []
            for entry in entries {
                var body = entry.body
                if var text = body {
                    for (name, tag) in tags { text = text.replacingOccurrences(of: "${tag:\(name)}", with: tag) }
                    body = text.replacingOccurrences(of: "${syncToken}", with: syncToken)
                }
                let reply = try await server.send(entry.method, "/database/1/iCloud.test.Gallery/development/\(entry.database)/\(entry.endpoint)",
                                                  headers: [.authorization: "Bearer \(alice.token)", .contentType: "application/json"], body: body)
                let json = (try? JSONValue.parse(reply.data)) ?? .string(String(decoding: reply.data, as: UTF8.self))
                Self.note(json, tags: &tags, syncToken: &syncToken)
                answers.append(.object(["request": .string(entry.header), "status": .int(Int64(reply.status)),
                                        "body": Self.normalised(json, user: alice.userRecordName)]))
            }
            guard let expected = recorded.answers else {
                let text = try answers.map { try $0.serializedString() }.joined(separator: "\n") + "\n"
                try text.write(to: file, atomically: true, encoding: .utf8)
                recorded.answers = answers
                return
            }
            #expect(answers.count == expected.count, "\(server.backend)")
            for (answer, want) in zip(answers, expected) where answer != want {
                Issue.record("\(server.backend): \(answer["request"]?.stringValue ?? "")\n  got  \((try? answer.serializedString()) ?? "")\n  want \((try? want.serializedString()) ?? "")")
            }
        }
    }
}

/// The recorded answers, set by the first engine's run when recording.
private final class Recorded: @unchecked Sendable {
    private let lock = NSLock()
    private var value: [JSONValue]?
    init(_ value: [JSONValue]?) { self.value = value }
    var answers: [JSONValue]? {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}
