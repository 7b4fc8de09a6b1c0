import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RecordClient
import TestSupport
import Testing

/// How the client speaks HTTP: through the `URLSession` an app gives `Container`, or else (on
/// Linux) through AsyncHTTPClient. Both carry compressed requests and answers, the server's
/// errors, and an unreachable server's `NETWORK_FAILURE`.
@Suite struct TransportTests {
    @Test func requestsGoThroughAGivenSessionAndOtherwiseThroughAsyncHTTPClient() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let plain = Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token))
            let session = URLSession(configuration: Container.sessionConfiguration())
            let given = Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken(token), session: session)
            #if canImport(FoundationNetworking)
            #expect(plain.privateCloudDatabase.transport.session == nil)
            #endif
            #expect(given.privateCloudDatabase.transport.session === session)

            for (index, container) in [plain, given].enumerated() {
                let database = container.privateCloudDatabase
                let zone = ZoneID(zoneName: "Gallery\(index)")
                try await database.save(RecordZone(zoneID: zone))
                // More than 16 KiB each way: the request and the answer travel compressed.
                let biography = String(repeating: "painter of light ", count: 35)
                let artists = (0..<100).map { number in
                    var artist = Gallery.artist("a\(number)", in: zone)
                    artist["biography"] = .string(biography)
                    return artist
                }
                let (saves, _) = try await database.modifyRecords(saving: artists, deleting: [])
                #expect(saves.values.allSatisfy { (try? $0.get()) != nil })
                let page = try await database.recordZoneChanges(inZoneWith: zone, since: nil)
                #expect(page.modifications.count == 100)
                #expect(page.modifications.allSatisfy { $0["biography"] == .string(biography) })
                // The server's own errors come through as they are.
                await #expect { try await database.record(for: Record.ID(recordName: "missing", zoneID: zone)) } throws: {
                    ($0 as? RecordSyncError)?.code == .notFound
                }
                let stranger = Container(serverURL: server.url, identifier: "iCloud.test", credentials: .bearerToken("not-a-token"),
                                         session: index == 1 ? session : nil)
                await #expect { try await stranger.userRecordID() } throws: { ($0 as? RecordSyncError)?.code == .authenticationFailed }
            }
        }
    }

    /// An error answer's `Retry-After` header is read when its body gives none, and an answer
    /// that is not the protocol is a `NETWORK_FAILURE`, through either path.
    @Test func errorAnswersAreReadTheSameWayThroughEitherPath() async throws {
        let busy = #"{"serverErrorCode": "TRY_AGAIN_LATER", "reason": "busy", "uuid": "u"}"#
        try await withCannedAnswer(status: 503, retryAfter: "7", body: busy) { url in
            for session in [nil, URLSession(configuration: Container.sessionConfiguration())] {
                let container = Container(serverURL: url, identifier: "iCloud.test", credentials: .bearerToken("x"), session: session)
                await #expect { try await container.userRecordID() } throws: { error in
                    guard let error = error as? RecordSyncError else { return false }
                    return error.code == .tryAgainLater && error.retryAfter == 7 && error.reason == "busy"
                }
            }
        }
        try await withCannedAnswer(status: 502, body: "<html>bad gateway</html>") { url in
            for session in [nil, URLSession(configuration: Container.sessionConfiguration())] {
                let container = Container(serverURL: url, identifier: "iCloud.test", credentials: .bearerToken("x"), session: session)
                await #expect { try await container.userRecordID() } throws: { ($0 as? RecordSyncError)?.code == .networkFailure }
            }
        }
    }

    /// A server that refuses the connection is a `NETWORK_FAILURE` at once, not after the
    /// connection pool's retries.
    @Test func anUnreachableServerFailsAtOnce() async throws {
        let unreachable = Container(serverURL: URL(string: "http://127.0.0.1:9")!, identifier: "iCloud.test", credentials: .bearerToken("x"))
        let start = ContinuousClock.now
        await #expect { try await unreachable.userRecordID() } throws: { ($0 as? RecordSyncError)?.code == .networkFailure }
        #expect(ContinuousClock.now - start < .seconds(5))
    }
}
