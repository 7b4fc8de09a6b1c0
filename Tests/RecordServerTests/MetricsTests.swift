import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import RecordModel
import RecordServer
import Testing

/// `GET /metrics`: Prometheus's text format, requests and latency per endpoint and status with
/// labels of bounded cardinality, change-feed pages, push fan-out and the store's connections;
/// a metrics token when configured.
@Suite(.serialized) struct MetricsTests {
    /// The value of the sample whose line starts with `name{` and holds every one of `labels`.
    static func sample(_ text: String, _ name: String, _ labels: [String] = []) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + "{") || line.hasPrefix(name + " ") {
            if labels.allSatisfy({ line.contains($0) }), let value = line.split(separator: " ").last.flatMap({ Double($0) }) { return value }
        }
        return nil
    }

    @Test func metricsCountRequestsFeedsPushAndConnectionsBehindTheirToken() async throws {
        try await withServer(configure: { $0.metricsToken = "secret-metrics" }) { server in
            let alice = try await server.user("alice")
            // A push listener, so that a save fans out to it.
            let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
            defer { _ = http.shutdown(queue: .global()) { _ in } }
            var listen = HTTPClientRequest(url: "http://127.0.0.1:\(server.client.port!)/database/1/\(alice.container)/development/private/notifications")
            listen.headers.add(name: "Authorization", value: "Bearer \(alice.token)")
            let stream = try await http.execute(listen, timeout: .seconds(30))
            #expect(stream.status == .ok)
            for _ in 0..<100 where await server.store.notifier.listenerCount == 0 { try await Task.sleep(for: .milliseconds(10)) }

            for _ in 0..<2 { #expect(try await alice.post("users/current", "").status == 200) }
            _ = try await alice.save([.artist("monet")])
            _ = try await alice.allChanges()
            #expect(try await alice.post("changes/database", "{}").status == 200)
            #expect(try await server.send(.post, "/database/1/\(alice.container)/development/private/users/current").status == 421)

            #expect(try await server.send(.get, "/metrics").status == 401)
            #expect(try await server.send(.get, "/metrics", headers: [.authorization: "Bearer wrong-metrics"]).status == 401)
            let reply = try await server.send(.get, "/metrics", headers: [.authorization: "Bearer secret-metrics"])
            #expect(reply.status == 200)
            let text = String(decoding: reply.data, as: UTF8.self)
            let route = "endpoint=\"/database/1/{container}/{environment}/{database}/users/current\""
            #expect(Self.sample(text, "recordsync_requests_total", [route, "method=\"POST\"", "status=\"200\""]) == 2, "\(text)")
            #expect(Self.sample(text, "recordsync_requests_total", [route, "status=\"421\""]) == 1)
            #expect(Self.sample(text, "recordsync_request_duration_seconds_count", [route]) == 3)
            #expect(text.contains("recordsync_request_duration_seconds_bucket{"))
            #expect(Self.sample(text, "recordsync_change_pages_total", ["feed=\"zone\""]) == 1)
            #expect(Self.sample(text, "recordsync_change_pages_total", ["feed=\"database\""]) == 1)
            #expect((Self.sample(text, "recordsync_push_published_total") ?? 0) >= 1)
            #expect((Self.sample(text, "recordsync_push_events_total") ?? 0) >= 1)
            #expect(Self.sample(text, "recordsync_push_listeners") == 1)
            #expect((Self.sample(text, "recordsync_store_connections", ["state=\"capacity\""]) ?? 0) > 0)
            #expect(Self.sample(text, "recordsync_store_connections", ["state=\"in_use\""]) != nil)
            // Labels never carry a container's, a user's or a record's name.
            #expect(!text.contains(alice.container) && !text.contains("monet") && !text.contains(alice.userRecordName))
        }
    }

    @Test func withoutATokenMetricsAreOpen() async throws {
        try await withServer { server in
            _ = try await server.send(.get, "/healthz")
            let reply = try await server.send(.get, "/metrics")
            #expect(reply.status == 200)
            #expect(Self.sample(String(decoding: reply.data, as: UTF8.self), "recordsync_requests_total", ["endpoint=\"/healthz\""]) == 1)
        }
    }
}
