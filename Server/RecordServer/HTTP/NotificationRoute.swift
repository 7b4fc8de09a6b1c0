import Foundation
import Hummingbird
import RecordModel
import RecordRules
import ServiceLifecycle

/// `GET /database/1/{container}/{environment}/{database}/notifications`: a server-sent-events
/// stream telling the signed-in user which zones of that database changed (an extension; see
/// docs/protocol.md, "Push").
struct NotificationRoute: Sendable {
    let notifier: ChangeNotifier

    /// The response: a comment as soon as the stream is open, then one `zones` event per
    /// change and a comment as keep-alive.
    func respond(to scope: DatabaseScope) async -> Response {
        let (id, events, continuation) = await notifier.listen(to: scope)
        let notifier = self.notifier
        let body = ResponseBody { writer in
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            do {
                try await writer.write(ByteBuffer(string: ": connected\n\n"))
                // Hummingbird stops the HTTP server before other services, and waits for
                // responses in flight: end this one as soon as shutdown begins.
                try await withGracefulShutdownHandler {
                    for await zones in events {
                        if zones.isEmpty {
                            try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                        } else {
                            let data = try encoder.encode(ZoneNotification(zones: zones))
                            try await writer.write(ByteBuffer(string: "event: zones\ndata: \(String(decoding: data, as: UTF8.self))\n\n"))
                        }
                    }
                } onGracefulShutdown: {
                    continuation.finish()
                }
            } catch {
                // The client went away or the server is stopping: end the stream.
            }
            await notifier.stopListening(scope, id: id)
            try? await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"], body: body)
    }
}
