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

    /// Base64URL is Foundation's base64 with `-` and `_` for `+` and `/`, unpadded, and reads
    /// back what it wrote; what is not unpadded base64url does not decode.
    @Test func base64URLMatchesFoundationsBase64() throws {
        var generator = SystemRandomNumberGenerator()
        for count in 0..<70 {
            let data = Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let expected = data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(data) == expected)
            #expect(Base64URL.decode(expected) == data)
        }
        #expect(Base64URL.encode(Data([0xFB, 0xFF, 0xBF])) == "-_-_")
        for bad in ["A", "AAAAA", "AB==", "AB+/", "A B", "é", "AA\u{0}A"] {
            #expect(Base64URL.decode(bad) == nil, "\(bad)")
        }
    }

    @Test func continuationMarkersRoundTripAndRejectGarbage() throws {
        let marker = ContinuationMarker(query: "q", values: [.int(1), .null, .string("x")], zone: 3, name: "n")
        #expect(try ContinuationMarker(string: marker.string) == marker)
        #expect(throws: RecordSyncError.self) { try ContinuationMarker(string: "not a marker") }
    }
}
