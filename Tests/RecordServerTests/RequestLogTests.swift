import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RecordModel
import TestSupport
import Testing

/// One log line per request, as text or JSON, with a request id the answer carries back and
/// no credential in it.
@Suite struct RequestLogTests {
    @Test func eachRequestIsOneJSONLineWithItsIDAndNoSecret() async throws {
        try await withTemporaryDirectory { directory in
            let token = try await ChildProcess.run("recordserver", ["user", "add", "alice", "--data", directory]).output.trimmingCharacters(in: .whitespacesAndNewlines)
            let server = try await ServerProcess(data: directory, arguments: ["--log-format", "json"])
            defer { Task { _ = await server.stop(signal: SIGKILL) } }
            func get(_ path: String, requestID: String? = nil) async throws -> HTTPURLResponse {
                var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)\(path)")!)
                request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
                if let requestID { request.setValue(requestID, forHTTPHeaderField: "X-Request-ID") }
                return try #require(try await URLSession.shared.data(for: request).1 as? HTTPURLResponse)
            }
            let given = try await get("/database/1/iCloud.test.Log/development/private/zones/list", requestID: "lb-7f3a.1")
            #expect(given.statusCode == 200 && given.value(forHTTPHeaderField: "X-Request-ID") == "lb-7f3a.1")
            // A client's id that is not a short token is replaced.
            let replaced = try await get("/database/1/iCloud.test.Log/development/private/zones/list", requestID: String(repeating: "x", count: 65))
            let newID = try #require(replaced.value(forHTTPHeaderField: "X-Request-ID"))
            #expect(newID.count == 16)
            let secret = "pushtoken0123456789abcdef"
            _ = try await get("/webcourier/1/\(secret)?ckAPIToken=\(secret)")  // an unknown push token: refused, and logged
            #expect(try await get("/no/such/route").statusCode == 404)

            _ = await server.stop(signal: SIGTERM)
            let lines = server.logText.split(separator: "\n").map(String.init)
            var requests: [[String: Any]] = []
            for line in lines {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
                #expect(object["time"] is String && object["level"] is String && object["message"] is String, "\(line)")
                if object["message"] as? String == "request" { requests.append(object) }
            }
            #expect(lines.contains { $0.contains("listening on http://127.0.0.1:") })
            #expect(requests.count == 4, "\(lines)")
            #expect(requests.first?["request_id"] as? String == "lb-7f3a.1")
            #expect(requests.first?["status"] as? String == "200" && requests.first?["method"] as? String == "GET")
            #expect(requests.dropFirst().first?["request_id"] as? String == newID)
            #expect(requests.dropFirst(2).first?["path"] as? String == "/webcourier/1/…")
            #expect(requests.last?["status"] as? String == "404")
            #expect(!server.logText.contains(secret) && !server.logText.contains(token))
        }
    }
}
