import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import RecordModel
import RecordRules
import RecordServer
import TestSupport
import Testing

/// Request bodies sent with `Content-Encoding: gzip` (an extension), and answers compressed for
/// clients that accept gzip, over real HTTP.
@Suite struct CompressionTests {
    /// POSTs `body` as is, with the given `Content-Encoding`.
    static func post(_ server: TestServer, _ alice: Session, _ endpoint: String, body: Data, encoding: String) async throws -> Reply {
        let response = try await server.client.executeRequest(
            uri: "/database/1/\(alice.container)/development/private/\(endpoint)", method: .post,
            headers: [.authorization: "Bearer \(alice.token)", .contentType: "application/json", .contentEncoding: encoding],
            body: ByteBuffer(bytes: body))
        return Reply(status: Int(response.status.code), data: Data(buffer: response.body))
    }

    @Test func aGzipBodyIsReadAsTheJSONItCompresses() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let json = #"{"operations": [{"operationType": "create", "record": {"recordName": "monet", "recordType": "Artist", "fields": {"name": {"value": "Claude Monet"}}}}]}"#
            let reply = try await Self.post(server, alice, "records/modify", body: Gzip.compress(Data(json.utf8)), encoding: "gzip")
            #expect(reply.status == 200, "\(reply.code ?? "-"): \(reply.reason)")
            let records = try await alice.allChanges().records
            #expect(records.map(\.recordName) == ["monet"])
            #expect(records.first?.fields["name"] == .string("Claude Monet"))
        }
    }

    /// An empty body has nothing to decompress, whatever its header says.
    @Test func anEmptyBodyIsEmptyWhateverItsEncoding() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let reply = try await Self.post(server, alice, "changes/database", body: Data(), encoding: "gzip")
            #expect(reply.status == 200, "\(reply.code ?? "-"): \(reply.reason)")
        }
    }

    @Test(arguments: [
        ("not gzip", "gzip", Data(#"{"operations": []}"#.utf8), 400, "BAD_REQUEST", "not valid gzip"),
        ("cut short", "gzip", Gzip.compress(Data(String(repeating: #"{"operations": []}"#, count: 100).utf8)).prefix(20), 400, "BAD_REQUEST", "not valid gzip"),
        // 1 MB of one letter compresses to about a kilobyte; the server stops at its limit.
        ("too large once decompressed", "gzip", Gzip.compress(Data((#"{"operations": [], "pad": ""# + String(repeating: "x", count: 1_000_000) + #""}"#).utf8)),
         400, "LIMIT_EXCEEDED", "once decompressed"),
        ("unsupported encoding", "br", Data(#"{"operations": []}"#.utf8), 400, "BAD_REQUEST", "Content-Encoding 'br' is not supported"),
    ] as [(String, String, Data, Int, String, String)])
    func aBadlyEncodedBodyGetsItsErrorAndChangesNothing(_ description: String, _ encoding: String, _ body: Data, _ status: Int, _ code: String, _ reason: String) async throws {
        try await withServer(configure: { $0.maximumBodyBytes = 64 * 1024 }) { server in
            let alice = try await server.user("alice")
            let reply = try await Self.post(server, alice, "records/modify", body: body, encoding: encoding)
            #expect(reply.status == status, "\(description): \(reply.code ?? "-"): \(reply.reason)")
            #expect(reply.code == code, "\(description)")
            #expect(reply.reason.contains(reason), "\(description): reason was: \(reply.reason)")
            #expect(try await alice.allChanges().records.isEmpty)
        }
    }

    /// An answer of 16 KiB or more is gzip-compressed for a request that accepts gzip, and only
    /// then; a small one never is.
    @Test func aLargeAnswerIsCompressedForAClientThatAcceptsGzip() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.save((0..<300).map { Record.artist("artist\($0)", "An artist with a name long enough: \($0)") })
            func changes(limit: Int, acceptEncoding: String?) async throws -> (encoding: String?, vary: [String], json: JSONValue) {
                var headers: HTTPFields = [.authorization: "Bearer \(alice.token)", .contentType: "application/json"]
                if let acceptEncoding { headers[.acceptEncoding] = acceptEncoding }
                let response = try await server.client.executeRequest(
                    uri: "/database/1/\(alice.container)/development/private/records/changes", method: .post, headers: headers,
                    body: ByteBuffer(string: #"{"resultsLimit": \#(limit)}"#))
                #expect(response.status == .ok)
                let encoding = response.headers[.contentEncoding]
                var body = Data(buffer: response.body)
                if encoding == "gzip" { body = try Gzip.decompress(body, limit: 1 << 24) }
                return (encoding, response.headers[values: .vary], try JSONValue.parse(body))
            }
            let plain = try await changes(limit: 300, acceptEncoding: nil)
            // Every answer varies by Origin too (CORS).
            #expect(plain.encoding == nil && plain.vary == ["Accept-Encoding", "Origin"], "\(plain.vary)")
            #expect(plain.json["records"]?.arrayValue?.count == 300)
            for accepting in ["gzip", "deflate, gzip", "br;q=1.0, gzip;q=0.5", "*"] {
                let compressed = try await changes(limit: 300, acceptEncoding: accepting)
                #expect(compressed.encoding == "gzip", "\(accepting)")
                #expect(compressed.json == plain.json, "\(accepting)")
            }
            for refusing in ["identity", "gzip;q=0", "br", "deflate", "*;q=0.5, gzip;q=0", "gzip;q=0, *"] {
                #expect(try await changes(limit: 300, acceptEncoding: refusing).encoding == nil, "\(refusing)")
            }
            let small = try await changes(limit: 2, acceptEncoding: "gzip")
            #expect(small.encoding == nil && small.vary == ["Origin"], "\(small.vary)")
        }
    }
}
