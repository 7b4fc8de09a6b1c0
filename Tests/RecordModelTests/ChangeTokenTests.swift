import Foundation
import RecordModel
import Testing

@Suite struct ChangeTokenTests {
    @Test func zoneTokensRoundTrip() throws {
        let token = ZoneChangeToken(zoneUID: UUID(), sequence: 42, tombstoneFloor: 7)
        #expect(try ZoneChangeToken(string: token.string) == token)
        #expect(token.string.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
    }

    @Test(arguments: ["", "garbage", "%%%", String(repeating: "A", count: 10_000), "WgEwPZbvaBhIFqYYHkPiKYYjAAAAAAAAAAAAAAAAAAAAAL4aA81", "🙂"])
    func garbageIsRejectedAsBadRequest(_ string: String) {
        #expect { try ZoneChangeToken(string: string) } throws: { ($0 as? RecordSyncError)?.code == .badRequest }
    }

    @Test func aTamperedTokenFailsItsChecksum() throws {
        let token = ZoneChangeToken(zoneUID: UUID(), sequence: 1, tombstoneFloor: 0).string
        var bytes = Array(token)
        bytes[10] = bytes[10] == "A" ? "B" : "A"
        #expect(throws: RecordSyncError.self) { try ZoneChangeToken(string: String(bytes)) }
    }

    @Test func zoneAndDatabaseTokensAreNotInterchangeable() throws {
        let database = DatabaseChangeToken(databaseUID: UUID(), sequence: 3, deletionFloor: 0)
        #expect(try DatabaseChangeToken(string: database.string) == database)
        #expect(throws: RecordSyncError.self) { try ZoneChangeToken(string: database.string) }
    }

    @Test func continuationMarkersRoundTripAndRejectGarbage() throws {
        let marker = ContinuationMarker(query: "q", values: [.int(1), .null, .string("x")], zone: 3, name: "n")
        #expect(try ContinuationMarker(string: marker.string) == marker)
        #expect(throws: RecordSyncError.self) { try ContinuationMarker(string: "not a marker") }
    }
}
