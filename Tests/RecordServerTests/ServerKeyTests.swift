import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes
import RecordModel
@testable import RecordRules
import RecordServer
import Testing
import TestSupport

/// Server-to-server keys as CloudKit has them: requests signed with a registered P-256 key act
/// as the key's user, in public databases only; a wrong signature, a date off by more than the
/// skew, a replayed signature, an unknown or revoked key are `AUTHENTICATION_FAILED`.
@Suite struct ServerKeyTests {
    static let publicBase = "/database/1/iCloud.test.Gallery/development/public"

    /// The three headers CloudKit's server-to-server requests carry, signing `body` for `path`.
    static func signature(_ key: P256.Signing.PrivateKey, id: String, path: String, body: String, date: Date = Date()) throws -> HTTPFields {
        let stamp = date.formatted(.iso8601)
        let message = "\(stamp):\(Data(SHA256.hash(data: Data(body.utf8))).base64EncodedString()):\(path)"
        let signed = try key.signature(for: Data(message.utf8)).derRepresentation.base64EncodedString()
        return [HTTPField.Name("X-Apple-CloudKit-Request-KeyID")!: id, HTTPField.Name("X-Apple-CloudKit-Request-ISO8601Date")!: stamp,
                HTTPField.Name("X-Apple-CloudKit-Request-SignatureV1")!: signed, .contentType: "application/json"]
    }

    /// `n - s` for a 32-byte `s`, P-256's group order `n`.
    static func negated(_ s: Data) -> Data {
        let bytes = [UInt8](s)
        var result = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in stride(from: 31, through: 0, by: -1) {
            var digit = Int(RecordStore.p256Order[index]) - Int(bytes[index]) - borrow
            borrow = digit < 0 ? 1 : 0
            if digit < 0 { digit += 256 }
            result[index] = UInt8(digit)
        }
        return Data(result)
    }

    static func save(_ name: String, _ text: String) -> String {
        #"{"operations":[{"operationType":"forceReplace","record":{"recordName":"\#(name)","recordType":"Notice","fields":{"text":{"value":"\#(text)"}}}}]}"#
    }

    @Test func signedRequestsActAsTheKeysUserInThePublicDatabaseOnly() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            _ = try await server.user("bot")
            let key = P256.Signing.PrivateKey()
            let id = try await server.store.addServerKey(forUserNamed: "bot", publicKeyPEM: key.publicKey.pemRepresentation)
            #expect(id.count == 64 && id.allSatisfy(\.isHexDigit))
            let bot = try #require(try await server.store.users().first { $0.user.name == "bot" }?.user)
            let path = "\(Self.publicBase)/records/modify"

            // A signed save: the record is the key's user's.
            let body = Self.save("news", "hello")
            let headers = try Self.signature(key, id: id, path: path, body: body)
            let saved = try await server.send(.post, path, headers: headers, body: body)
            #expect(saved.status == 200, "\(saved.json)")
            #expect(saved.json["records"]?[0]?["created"]?["userRecordName"]?.stringValue == bot.userRecordName, "\(saved.json)")

            // The same signature again: refused, whichever request carries it.
            let replayed = try await server.send(.post, path, headers: headers, body: body)
            #expect(replayed.status == 401 && replayed.code == "AUTHENTICATION_FAILED" && replayed.reason.contains("used before"), "\(replayed.json)")
            // Nor with s flipped to n - s, which verifies as well.
            let signatureField = HTTPField.Name("X-Apple-CloudKit-Request-SignatureV1")!
            let sent = try #require(headers[signatureField])
            let der = try #require(Data(base64Encoded: sent))
            let original = try P256.Signing.ECDSASignature(derRepresentation: der)
            let flipped = try P256.Signing.ECDSASignature(rawRepresentation: original.rawRepresentation.prefix(32) + Self.negated(original.rawRepresentation.suffix(32)))
            #expect(flipped.rawRepresentation != original.rawRepresentation)
            let stamp = try #require(headers[HTTPField.Name("X-Apple-CloudKit-Request-ISO8601Date")!])
            let message = Data("\(stamp):\(Data(SHA256.hash(data: Data(body.utf8))).base64EncodedString()):\(path)".utf8)
            #expect(key.publicKey.isValidSignature(flipped, for: message))
            var malleated = headers
            malleated[signatureField] = flipped.derRepresentation.base64EncodedString()
            let again = try await server.send(.post, path, headers: malleated, body: body)
            #expect(again.status == 401 && again.reason.contains("used before"), "\(again.json)")

            func refused(_ headers: HTTPFields, body: String = Self.save("news", "changed"), path: String = path, saying words: String,
                         sourceLocation: SourceLocation = #_sourceLocation) async throws {
                let reply = try await server.send(.post, path, headers: headers, body: body)
                #expect(reply.status == 401 && reply.code == "AUTHENTICATION_FAILED", "\(reply.json)", sourceLocation: sourceLocation)
                #expect(reply.reason.contains(words), "\(reply.reason)", sourceLocation: sourceLocation)
            }
            let changed = Self.save("news", "changed")
            // Signed for another body, another path, by another key, or at another time.
            try await refused(try Self.signature(key, id: id, path: path, body: Self.save("news", "other")), saying: "does not match")
            try await refused(try Self.signature(key, id: id, path: "\(Self.publicBase)/records/lookup", body: changed), saying: "does not match")
            try await refused(try Self.signature(P256.Signing.PrivateKey(), id: id, path: path, body: changed), saying: "does not match")
            // Past the 5 minutes by 10 s: the date is written in whole seconds and the request
            // takes time, so a date 301 s ahead could arrive less than 300 s ahead.
            try await refused(try Self.signature(key, id: id, path: path, body: changed, date: Date().addingTimeInterval(-310)), saying: "from the server's time")
            try await refused(try Self.signature(key, id: id, path: path, body: changed, date: Date().addingTimeInterval(310)), saying: "from the server's time")
            try await refused(try Self.signature(key, id: String(repeating: "0", count: 64), path: path, body: changed), saying: "no server-to-server key")
            var partial = try Self.signature(key, id: id, path: path, body: changed)
            partial[HTTPField.Name("X-Apple-CloudKit-Request-SignatureV1")!] = nil
            try await refused(partial, saying: "needs")
            var garbled = try Self.signature(key, id: id, path: path, body: changed)
            garbled[HTTPField.Name("X-Apple-CloudKit-Request-SignatureV1")!] = "not base64!"
            try await refused(garbled, saying: "not a base64")
            var undated = try Self.signature(key, id: id, path: path, body: changed)
            undated[HTTPField.Name("X-Apple-CloudKit-Request-ISO8601Date")!] = "yesterday"
            try await refused(undated, saying: "not an ISO 8601 date")
            // Within the skew, the date may be a little off either way.
            let early = try await server.send(.post, path, headers: try Self.signature(key, id: id, path: path, body: changed, date: Date().addingTimeInterval(-200)), body: changed)
            #expect(early.status == 200, "\(early.json)")

            // The private database is out of a key's reach; so is another user's public record.
            let privatePath = "/database/1/iCloud.test.Gallery/development/private/records/modify"
            let denied = try await server.send(.post, privatePath, headers: try Self.signature(key, id: id, path: privatePath, body: changed), body: changed)
            #expect(denied.status == 403 && denied.code == "ACCESS_DENIED", "\(denied.json)")
            _ = try await alice.save([.artist("hers")], database: "public")
            let theirs = #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"hers"}}]}"#
            let notYours = try await server.send(.post, path, headers: try Self.signature(key, id: id, path: path, body: theirs), body: theirs)
            #expect(notYours.json["records"]?[0]?["serverErrorCode"]?.stringValue == "ACCESS_DENIED", "\(notYours.json)")

            // A revoked key signs nothing more.
            try await server.store.revokeServerKey(named: "key-1", ofUserNamed: "bot")
            try await refused(try Self.signature(key, id: id, path: path, body: changed), saying: "no server-to-server key")
            let read = try await alice.post("records/lookup", #"{"records":[{"recordName":"news"}]}"#, database: "public")
            #expect(read.json["records"]?[0]?["fields"]?["text"]?["value"]?.stringValue == "changed", "\(read.json)")
        }
    }

    /// `user key|keys|revoke-key` on both engines; on PostgreSQL a signature accepted by one
    /// server is refused by another.
    @Test func keysAreRegisteredListedAndRevokedFromTheCommandLine() async throws {
        try await withTemporaryDirectory { directory in
            let key = P256.Signing.PrivateKey()
            let pem = "\(directory)/public.pem"
            try key.publicKey.pemRepresentation.write(toFile: pem, atomically: true, encoding: .utf8)
            try "not a key".write(toFile: "\(directory)/bad.pem", atomically: true, encoding: .utf8)
            for place in try await TokenTests.places(directory) {
                #expect(try await ChildProcess.run("recordserver", ["user", "add", "bot"] + place).status == 0)
                let added = try await TokenTests.recordserver(["user", "key", "bot", "--public-key", pem, "--key-name", "backend"] + place)
                let id = added.output.trimmingCharacters(in: .whitespacesAndNewlines)
                #expect(added.status == 0 && id.count == 64, "\(added.output)")
                let again = try await TokenTests.recordserver(["user", "key", "bot", "--public-key", pem] + place)
                #expect(again.status == 1 && again.output.contains("already registered"), "\(again.output)")
                let bad = try await TokenTests.recordserver(["user", "key", "bot", "--public-key", "\(directory)/bad.pem"] + place)
                #expect(bad.status == 1 && bad.output.contains("not a P-256 public key"), "\(bad.output)")
                let listed = TokenTests.rows(try await TokenTests.recordserver(["user", "keys", "bot"] + place).output)
                #expect(listed.count == 1 && listed[0].prefix(2) == ["backend", id], "\(listed)")

                if place.first == "--database" {
                    let deployment = try await Deployment(databaseURL: place[1], nodes: 2)
                    defer { deployment.kill() }
                    let path = "\(Self.publicBase)/records/modify", body = Self.save("shared", "once")
                    let headers = try Self.signature(key, id: id, path: path, body: body)
                    var statuses: [Int] = []
                    for node in deployment.nodes {
                        var request = URLRequest(url: node.url.appendingPathComponent(path))
                        request.httpMethod = "POST"
                        request.httpBody = Data(body.utf8)
                        for field in headers { request.setValue(field.value, forHTTPHeaderField: field.name.rawName) }
                        let (_, response) = try await URLSession.shared.data(for: request)
                        statuses.append((response as? HTTPURLResponse)?.statusCode ?? 0)
                    }
                    #expect(statuses == [200, 401])
                    await deployment.stop()
                }

                #expect(try await TokenTests.recordserver(["user", "revoke-key", "bot", "backend"] + place).status == 0)
                #expect(try await TokenTests.recordserver(["user", "keys", "bot"] + place).output == "")
                #expect(try await TokenTests.recordserver(["user", "revoke-key", "bot", "backend"] + place).status == 1)
                // Deleting the user removes their keys: registering the key again works.
                #expect(try await TokenTests.recordserver(["user", "key", "bot", "--public-key", pem] + place).status == 0)
                #expect(try await TokenTests.recordserver(["user", "delete", "bot", "--yes"] + place).status == 0)
                #expect(try await ChildProcess.run("recordserver", ["user", "add", "bot2"] + place).status == 0)
                #expect(try await TokenTests.recordserver(["user", "key", "bot2", "--public-key", pem] + place).status == 0)
            }
        }
    }
}
