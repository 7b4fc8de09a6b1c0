import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RecordModel
import TestSupport
import Testing

/// A data directory written by an earlier release opens with this one and serves exactly as
/// before: the same records and change tags, and the change tokens, continuation marker and
/// tags its clients hold stay valid.
///
/// `Fixtures/release-c9f8f83/` was made once by `Fixtures/make-release-data.py` with the
/// `recordserver` of commit c9f8f83: `data/` is the data directory that server left, and
/// `transcript.json` the requests a client holding its tokens sends next, with the answers that
/// server gave (on a copy of the data). This test runs the real `recordserver` of this build
/// over a copy of `data/` and expects the same answers: status and body, but for each error's
/// random `uuid` and the timestamps of records the replay itself writes.
@Suite struct OldDataDirectoryTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/release-c9f8f83")

    @Test func aDataDirectoryOfTheLastReleaseServesAsItDid() async throws {
        let transcript = try JSONValue.parse(Data(contentsOf: Self.fixture.appendingPathComponent("transcript.json")))
        guard let container = transcript["container"]?.stringValue, case .object(let tokens)? = transcript["tokens"],
              let steps = transcript["steps"]?.arrayValue else {
            Issue.record("transcript.json is not a transcript")
            return
        }
        try await withTemporaryDirectory { directory in
            let data = (directory as NSString).appendingPathComponent("data")
            try FileManager.default.copyItem(atPath: Self.fixture.appendingPathComponent("data").path, toPath: data)
            let server = try await ServerProcess(data: data)
            defer { Task { _ = await server.stop(signal: SIGKILL) } }
            #expect(steps.count == 24)
            try await Self.replay(steps, container: container, tokens: tokens, port: server.port)
            let stopped = await server.stop(signal: SIGTERM)
            #expect(stopped.status == 0)
            // The tokens issued before tokens had names are named in the order issued.
            for user in tokens.keys {
                let listed = try await ChildProcess.run("recordserver", ["user", "tokens", user, "--data", data]).output
                #expect(listed.hasPrefix("token-1\tissued ") && listed.hasSuffix("\tnever expires\n"), "\(user): \(listed)")
            }
        }
    }

    /// Upgrading builds the search index of the records already stored: the release's records
    /// are found by their words and places.
    @Test func theRecordsOfAnOldDataDirectoryAreFoundByWordsAndPlaces() async throws {
        let transcript = try JSONValue.parse(Data(contentsOf: Self.fixture.appendingPathComponent("transcript.json")))
        let container = transcript["container"]?.stringValue ?? ""
        let token = transcript["tokens"]?["alice"]?.stringValue ?? ""
        try await withTemporaryDirectory { directory in
            let data = (directory as NSString).appendingPathComponent("data")
            try FileManager.default.copyItem(atPath: Self.fixture.appendingPathComponent("data").path, toPath: data)
            let server = try await ServerProcess(data: data)
            defer { Task { _ = await server.stop(signal: SIGKILL) } }
            func names(_ type: String, _ filter: String, sort: String = "[]") async throws -> [String] {
                let body = #"{"zoneID": {"zoneName": "Gallery"}, "query": {"recordType": "\#(type)", "filterBy": [\#(filter)], "sortBy": \#(sort)}}"#
                let answer = try await server.post("records/query", body, token: token, container: container)
                #expect(answer.status == 200, "\(String(decoding: answer.data, as: UTF8.self))")
                return try JSONDecoder().decode(QueryRecordsResponse.self, from: answer.data).records.map(\.recordName)
            }
            #expect(try await names("Artwork", #"{"comparator": "CONTAINS_ALL_TOKENS", "fieldValue": {"value": "impression SUNRISE"}}"#) == ["sunrise"])
            #expect(try await names("Artwork", #"{"comparator": "CONTAINS_ANY_TOKENS", "fieldName": "tags", "fieldValue": {"value": "garden"}}"#) == ["lilies"])
            #expect(try await names("Artist", #"{"comparator": "CONTAINS_ALL_TOKENS", "fieldName": "name", "fieldValue": {"value": "edouard"}}"#) == ["manet"])
            let near = #"{"comparator": "NEAR", "fieldName": "place", "fieldValue": {"value": {"latitude": 49.07, "longitude": 1.531}}, "distance": 100}"#
            #expect(try await names("Artwork", near) == ["lilies"])
            _ = await server.stop(signal: SIGTERM)
        }
    }

    /// Sends each step of the transcript to the server on `port` and expects the answer the
    /// release gave (``comparable(_:volatile:)``).
    static func replay(_ steps: [JSONValue], container: String, tokens: [String: JSONValue], port: Int) async throws {
        for (index, step) in steps.enumerated() {
            guard let user = step["user"]?.stringValue, let token = tokens[user]?.stringValue,
                  let database = step["database"]?.stringValue, let endpoint = step["endpoint"]?.stringValue,
                  let body = step["body"], case .int(let status)? = step["status"], let expected = step["answer"] else {
                Issue.record("step \(index) is malformed")
                continue
            }
            let volatile = step["volatileTimestamps"] == .bool(true)
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/database/1/\(container)/development/\(database)/\(endpoint)")!)
            request.httpMethod = "POST"
            request.httpBody = Data(try body.serializedString().utf8)
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            let (answer, response) = try await URLSession.shared.data(for: request)
            let got = try JSONValue.parse(answer)
            let sent = try body.serializedString(), gotText = try got.serializedString(), wanted = try expected.serializedString()
            // Errors now travel as Apple's codes and statuses (WireForm), RecordSync's own
            // code beside them: the one deliberate change to the answers of that release.
            let expectedStatus = status == 200 ? Int(status) : ServerErrorCode(rawValue: expected["serverErrorCode"]?.stringValue ?? "").httpStatus
            #expect((response as? HTTPURLResponse)?.statusCode == expectedStatus, "step \(index) \(endpoint): \(String(decoding: answer, as: UTF8.self))")
            let same = Self.comparable(got, volatile: volatile) == Self.comparable(expected, volatile: volatile)
            #expect(same,
                    "step \(index) \(endpoint) \(sent):\n got \(gotText)\nwant \(wanted)")
        }
    }

    /// `value` without what differs from run to run: every error's `uuid`, and (`volatile`) the
    /// timestamps of records written during the replay.
    static func comparable(_ value: JSONValue, volatile: Bool) -> JSONValue {
        switch value {
        case .object(let members):
            var kept: [String: JSONValue] = [:]
            for (key, member) in members where key != "uuid" {
                kept[key] = volatile && key == "timestamp" ? .null : comparable(member, volatile: volatile)
            }
            if case .string(let code)? = members["serverErrorCode"], members[WireForm.errorExtensionKey] == nil {
                let wire = WireForm.error(ServerErrorCode(rawValue: code))
                kept["serverErrorCode"] = .string(wire.code.rawValue)
                if let extensionCode = wire.extensionCode { kept[WireForm.errorExtensionKey] = .string(extensionCode.rawValue) }
            }
            // And that code travels again as extensionErrorCode, where CloudKit JS keeps it.
            if let finer = kept[WireForm.errorExtensionKey], kept["extensionErrorCode"] == nil { kept["extensionErrorCode"] = finer }
            // So do field types: a BOOLEAN is INT64 0 or 1 with the type beside it.
            if case .string(let name)? = members["type"], members[WireForm.typeExtensionKey] == nil, let type = FieldType(rawValue: name),
               let value = members["value"], let field = try? FieldValue(json: value, type: type) {
                let wire = WireForm.type(type)
                kept["type"] = .string(wire.type.rawValue)
                kept["value"] = field.json
                if let extensionType = wire.extensionType { kept[WireForm.typeExtensionKey] = .string(extensionType.rawValue) }
            }
            return .object(kept)
        case .array(let elements):
            return .array(elements.map { comparable($0, volatile: volatile) })
        case .string(let text):
            return .string(OldReleaseFixtureTests.reasonAsBefore(text))
        default:
            return value
        }
    }
}
