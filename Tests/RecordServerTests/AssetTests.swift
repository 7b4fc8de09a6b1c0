import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import RecordModel
import RecordRules
import RecordServer
import TestSupport
import Testing

/// Assets through real HTTP: `assets/upload`, the upload URL (raw and multipart), saving the
/// receipt, `downloadURL` (whole, by range, expired), receipts refused, collection after the
/// grace period, the size limit, rereference, and on PostgreSQL one node to another.
@Suite(.serialized) struct AssetTests {
    static let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)

    /// Random bytes (a pattern with a random start, so uploads of the same size differ).
    static func bytes(_ count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        var data = Data(count: count)
        let seed = UInt8.random(in: 0...255, using: &generator)
        data.withUnsafeMutableBytes { raw in
            for index in raw.indices { raw[index] = UInt8(truncatingIfNeeded: index &* 31 &+ (index >> 11)) ^ seed }
        }
        return data
    }

    /// `assets/upload` for one field; the upload URL.
    static func uploadURL(_ session: Session, recordType: String = "Artwork", field: String = "image", zone: String? = nil, database: String = "private") async throws -> String {
        port = session.client.port
        let reply = try await session.post("assets/upload", AssetUploadRequest(zoneID: zone.map { ZoneID(zoneName: $0) }, tokens: [.init(recordType: recordType, fieldName: field)]), database: database)
        #expect(reply.status == 200, "\(reply.json)")
        return try reply.decode(AssetUploadResponse.self).tokens[0].url
    }

    /// POSTs bytes to an upload URL, raw or as `multipart/form-data`: status and answer.
    /// The test client's requests say `Host: localhost`, without the port its server listens
    /// on: URLs made from it get the port here.
    nonisolated(unsafe) static var port: Int?
    static func reachable(_ url: String) -> String {
        guard let port, url.hasPrefix("http://localhost/") else { return url }
        return "http://127.0.0.1:\(port)" + url.dropFirst("http://localhost".count)
    }

    static func post(_ data: Data, to url: String, multipart: Bool = false) async throws -> (status: Int, json: JSONValue) {
        var request = HTTPClientRequest(url: reachable(url))
        request.method = .POST
        if multipart {
            let boundary = "----recordsync\(UUID().uuidString)"
            var body = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"files\"; filename=\"file.file\"\r\nContent-Type: application/octet-stream\r\n\r\n".utf8)
            body.append(data)
            body.append(Data("\r\n--\(boundary)--\r\n".utf8))
            request.headers.add(name: "Content-Type", value: "multipart/form-data; boundary=\(boundary)")
            request.body = .bytes(ByteBuffer(data: body))
        } else {
            request.headers.add(name: "Content-Type", value: "application/octet-stream")
            request.body = .bytes(ByteBuffer(data: data))
        }
        let response = try await http.execute(request, timeout: .seconds(120))
        let answer = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), (try? JSONValue.parse(Data(buffer: answer))) ?? .null)
    }

    /// POSTs a JSON body to an endpoint of a node's private database (the container given).
    static func post(_ body: String, to node: URL, _ container: String, _ endpoint: String, token: String) async throws -> JSONValue {
        var request = HTTPClientRequest(url: node.appendingPathComponent("database/1/\(container)/development/private/\(endpoint)").absoluteString)
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await http.execute(request, timeout: .seconds(60))
        return try JSONValue.parse(Data(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    /// GETs a URL: status, body, headers.
    static func get(_ url: String, range: String? = nil) async throws -> (status: Int, data: Data, contentRange: String?) {
        var request = HTTPClientRequest(url: reachable(url))
        if let range { request.headers.add(name: "Range", value: range) }
        let response = try await http.execute(request, timeout: .seconds(120))
        let body = try await response.body.collect(upTo: 64 << 20)
        return (Int(response.status.code), Data(buffer: body), response.headers.first(name: "Content-Range"))
    }

    /// Uploads bytes and answers the field value that saves them.
    static func upload(_ data: Data, _ session: Session, field: String = "image", multipart: Bool = false, database: String = "private") async throws -> JSONValue {
        let url = try await uploadURL(session, field: field, database: database)
        let (status, json) = try await post(data, to: url, multipart: multipart)
        #expect(status == 200, "\(json)")
        let receipt = try JSONValueDecoder().decode(AssetUploadReceipt.self, from: try json.serialized())
        #expect(receipt.singleFile.size == Int64(data.count))
        return receipt.fieldValue
    }

    static func save(_ session: Session, _ name: String, fields: String, database: String = "private") async throws -> JSONValue {
        try await session.post("records/modify", #"{"operations":[{"operationType":"forceReplace","record":{"recordName":"\#(name)","recordType":"Artwork","fields":{\#(fields)}}}]}"#, database: database).json["records"]?[0] ?? .null
    }

    /// The `downloadURL` of a record's field as a lookup answers it, `${f}` replaced.
    static func downloadURL(_ session: Session, _ name: String, field: String = "image", index: Int? = nil) async throws -> String? {
        let record = try await session.post("records/lookup", #"{"records":[{"recordName":"\#(name)"}]}"#).json["records"]?[0]
        var value = record?["fields"]?[field]?["value"]
        if let index { value = value?[index] }
        return value?["downloadURL"]?.stringValue?.replacingOccurrences(of: "${f}", with: "photo%20one.jpg")
    }

    @Test func aLargeAssetGoesUpRawAndMultipartAndComesBackWholeAndByRange() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let big = Self.bytes(20 * 1024 * 1024)
            let raw = try await Self.upload(big, alice)
            let small = Self.bytes(20 * 1024 * 1024 + 17)
            let multipart = try await Self.upload(small, alice, field: "gallery", multipart: true)
            let saved = try await Self.save(alice, "starry", fields: #""image":{"value":\#(try raw.serializedString())},"title":{"value":"Starry"}"#)
            #expect(saved["serverErrorCode"] == nil, "\(saved["reason"]?.stringValue ?? "")")
            // The saved record answers the asset with a link, not the receipt.
            let answered = saved["fields"]?["image"]
            #expect(answered?["type"]?.stringValue == "ASSETID" && answered?["value"]?["receipt"] == nil, "\(String(describing: answered))")
            #expect(answered?["value"]?["downloadURL"]?.stringValue?.hasSuffix("/${f}") == true)
            #expect(answered?["value"]?["fileChecksum"] == raw["fileChecksum"] && answered?["value"]?["size"] == .int(Int64(big.count)))
            let listSaved = try await Self.save(alice, "pair", fields: #""gallery":{"value":[\#(try multipart.serializedString())],"type":"ASSETID_LIST"}"#)
            #expect(listSaved["serverErrorCode"] == nil, "\(listSaved)")

            guard let url = try await Self.downloadURL(alice, "starry") else { Issue.record("no downloadURL"); return }
            let whole = try await Self.get(url)
            #expect(whole.status == 200 && whole.data == big)
            let middle = try await Self.get(url, range: "bytes=1000-1999")
            #expect(middle.status == 206 && middle.data == big[1000..<2000] && middle.contentRange == "bytes 1000-1999/\(big.count)")
            let tail = try await Self.get(url, range: "bytes=-10")
            #expect(tail.status == 206 && tail.data == big.suffix(10))
            let across = try await Self.get(url, range: "bytes=262000-786500")  // crosses stored chunks
            #expect(across.status == 206 && across.data == big[262000...786500])
            #expect(try await Self.get(url, range: "bytes=\(big.count)-").status == 416)
            // Ranges past the end, or past any 64-bit size, are cut at the end; nonsense is ignored.
            let huge = try await Self.get(url, range: "bytes=\(big.count - 5)-9223372036854775807")
            #expect(huge.status == 206 && huge.data == big.suffix(5))
            #expect(try await Self.get(url, range: "bytes=abc").data == big)
            #expect(try await Self.get(url, range: "bytes=9-2").data == big)
            guard let listURL = try await Self.downloadURL(alice, "pair", field: "gallery", index: 0) else { Issue.record("no list downloadURL"); return }
            #expect(try await Self.get(listURL).data == small)

            // The change feed and queries carry links too; the link works without a token.
            let changes = try await alice.post("records/changes", "{}").json["records"]?.arrayValue ?? []
            #expect(changes.contains { $0["fields"]?["image"]?["value"]?["downloadURL"]?.stringValue != nil })
            let query = try await alice.post("records/query", #"{"query":{"recordType":"Artwork","filterBy":[{"systemFieldName":"recordName","comparator":"EQUALS","fieldValue":{"value":"starry"}}]}}"#)
            #expect(query.json["records"]?[0]?["fields"]?["image"]?["value"]?["downloadURL"]?.stringValue != nil)
            // A tampered link is refused.
            #expect(try await Self.get(url.replacingOccurrences(of: "/download/", with: "/download/x")).status == 401)
            // Saving the record back as read (no receipt) keeps the asset.
            let resaved = try await alice.post("records/modify", #"{"operations":[{"operationType":"forceReplace","record":{"recordName":"starry","recordType":"Artwork","fields":{"image":{"value":\#(try (answered?["value"] ?? .null).serializedString())}}}}]}"#)
            #expect(resaved.json["records"]?[0]?["serverErrorCode"] == nil, "\(resaved.json)")
            #expect(try await Self.get(try #require(try await Self.downloadURL(alice, "starry"))).data == big)
        }
    }

    /// GETs a URL: status and the headers a browser decides by.
    static func headers(_ url: String) async throws -> (status: Int, type: String?, disposition: String?, sniff: String?) {
        let response = try await http.execute(HTTPClientRequest(url: reachable(url)), timeout: .seconds(60))
        _ = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), response.headers.first(name: "Content-Type"), response.headers.first(name: "Content-Disposition"),
                response.headers.first(name: "X-Content-Type-Options"))
    }

    @Test func anSVGIsNeverServedInlineAndOnlyRasterImagesArePreviewed() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let svg = Data(#"<svg xmlns="http://www.w3.org/2000/svg" onload="alert(document.cookie)"><script>alert(1)</script></svg>"#.utf8)
            let html = Data("<!doctype html><script>alert(1)</script>".utf8)
            let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Self.bytes(100)
            for (name, data) in [("svg", svg), ("html", html), ("png", png)] {
                let value = try await Self.upload(data, alice)
                _ = try await Self.save(alice, name, fields: #""image":{"value":\#(try value.serializedString())}"#)
            }
            for name in ["svg", "html"] {
                let link = try #require(try await Self.downloadURL(alice, name)).replacingOccurrences(of: "photo%20one.jpg", with: "x.\(name)")
                for url in [link, link + "?inline=1"] {
                    let answer = try await Self.headers(url)
                    #expect(answer.status == 200)
                    #expect(answer.type == "application/octet-stream" && answer.sniff == "nosniff", "\(url): \(answer)")
                    #expect(answer.disposition == "attachment; filename=\"x.\(name)\"", "\(url): \(answer)")
                }
            }
            let link = try #require(try await Self.downloadURL(alice, "png"))
            let attached = try await Self.headers(link)
            #expect(attached.type == "application/octet-stream" && attached.disposition == "attachment; filename=\"photo_20one.jpg\"" && attached.sniff == "nosniff")
            let previewed = try await Self.headers(link + "?inline=1")
            #expect(previewed.type == "image/png" && previewed.disposition == "inline" && previewed.sniff == "nosniff", "\(previewed)")
            #expect(try await Self.get(link + "?inline=1").data == png)
        }
    }

    @Test func aDownloadURLExpires() async throws {
        try await withServer(configure: { $0.limits.assetDownloadLifetime = .seconds(1) }) { server in
            let alice = try await server.user("alice")
            let data = Self.bytes(1000)
            let value = try await Self.upload(data, alice)
            _ = try await Self.save(alice, "a", fields: #""image":{"value":\#(try value.serializedString())}"#)
            let url = try #require(try await Self.downloadURL(alice, "a"))
            #expect(try await Self.get(url).data == data)
            try await Task.sleep(for: .milliseconds(1200))
            let expired = try await Self.get(url)
            #expect(expired.status == 401, "\(String(decoding: expired.data, as: UTF8.self))")
            #expect(try await Self.get(try #require(try await Self.downloadURL(alice, "a"))).data == data)
        }
    }

    @Test func receiptsAreTheUploadersForTheirFieldAndBindOnce() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let value = try await Self.upload(Self.bytes(5000), alice)
            let text = try value.serializedString()
            func code(_ session: Session, _ name: String, _ fields: String, type: String = "Artwork") async throws -> String? {
                let reply = try await session.post("records/modify", #"{"operations":[{"operationType":"forceReplace","record":{"recordName":"\#(name)","recordType":"\#(type)","fields":{\#(fields)}}}]}"#)
                return reply.json["records"]?[0]?["serverErrorCode"]?.stringValue
            }
            #expect(try await code(bob, "b", #""image":{"value":\#(text)}"#) == "BAD_REQUEST")
            #expect(try await code(alice, "w", #""thumbnail":{"value":\#(text)}"#) == "BAD_REQUEST")
            #expect(try await code(alice, "w", #""image":{"value":\#(text)}"#, type: "Poster") == "BAD_REQUEST")
            #expect(try await code(alice, "a", #""image":{"value":\#(text)}"#) == nil)
            #expect(try await code(alice, "a", #""image":{"value":\#(text)},"title":{"value":"again"}"#) == nil)
            #expect(try await code(alice, "c", #""image":{"value":\#(text)}"#) == "BAD_REQUEST")
            // Another zone of the same user is another place.
            try await alice.createZones("Z")
            let other = try await alice.post("records/modify", #"{"zoneID":{"zoneName":"Z"},"operations":[{"operationType":"forceReplace","record":{"recordName":"a","recordType":"Artwork","fields":{"image":{"value":\#(text)}}}}]}"#)
            #expect(other.json["records"]?[0]?["serverErrorCode"]?.stringValue == "BAD_REQUEST")
            // A made-up receipt, and an asset value RecordSync never issued (kept as given).
            #expect(try await code(alice, "d", #""image":{"value":{"fileChecksum":"x","size":1,"receipt":"rsa1_nothing"}}"#) == "BAD_REQUEST")
            // A receipt-shaped value whose size is no 64-bit integer is not an upload: kept as given.
            let odd = try await Self.save(alice, "odd", fields: #""image":{"value":{"fileChecksum":"x","size":1e300,"receipt":"rsa1_x"},"type":"ASSETID"}"#)
            #expect(odd["serverErrorCode"] == nil && odd["fields"]?["image"]?["value"]?["receipt"]?.stringValue == "rsa1_x", "\(odd)")
            let opaque = try await Self.save(alice, "legacy", fields: #""image":{"value":{"fileChecksum":"abc","size":3,"downloadURL":"https://example.com/x"},"type":"ASSETID"}"#)
            #expect(opaque["fields"]?["image"]?["value"] == .object(["fileChecksum": .string("abc"), "size": .int(3), "downloadURL": .string("https://example.com/x")]))

            // rereference: a new receipt for the same bytes, which another record saves.
            let copies = try await alice.post("assets/rereference", #"{"assets":[{"recordName":"a","fieldName":"image"},{"recordName":"nobody","fieldName":"image"}]}"#)
            let copy = try #require(copies.json["assets"]?[0])
            #expect(copies.json["assets"]?[1]?["serverErrorCode"]?.stringValue == "NOT_FOUND")
            #expect(copy["receipt"] != value["receipt"] && copy["fileChecksum"] == value["fileChecksum"])
            #expect(try await code(alice, "c", #""image":{"value":\#(try copy.serializedString())}"#) == nil)
        }
    }

    @Test func assetsNoRecordHoldsGoAfterTheGracePeriodAndHeldOnesStay() async throws {
        try await withServer(configure: { $0.limits.assetGracePeriod = .seconds(1) }) { server in
            let alice = try await server.user("alice")
            let owned = Self.bytes(4000), kept = Self.bytes(4001), replaced = Self.bytes(4002)
            let ownedValue = try await Self.upload(owned, alice), keptValue = try await Self.upload(kept, alice)
            let replacedValue = try await Self.upload(replaced, alice)
            let neverBound = try await Self.upload(Self.bytes(4003), alice)
            _ = try await Self.save(alice, "owner", fields: #""title":{"value":"owner"}"#)
            _ = try await Self.save(alice, "child", fields: #""image":{"value":\#(try ownedValue.serializedString())},"owner":{"value":{"recordName":"owner","action":"DELETE_SELF"}}"#)
            _ = try await Self.save(alice, "keeper", fields: #""image":{"value":\#(try keptValue.serializedString())}"#)
            _ = try await Self.save(alice, "changing", fields: #""image":{"value":\#(try replacedValue.serializedString())}"#)
            let ownedURL = try #require(try await Self.downloadURL(alice, "child"))
            let replacedURL = try #require(try await Self.downloadURL(alice, "changing"))
            let keptURL = try #require(try await Self.downloadURL(alice, "keeper"))
            // The cascade deletes the child; the replace drops the other asset.
            let deleted = try await alice.post("records/modify", #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"owner"}}]}"#)
            #expect(deleted.json["records"]?[0]?["cascadedRecordNames"] == .array([.string("child")]))
            _ = try await Self.save(alice, "changing", fields: #""title":{"value":"no image now"}"#)
            // Marked now, removed only once the grace period has passed since. The upload no
            // record took was orphaned when it arrived: on a slow machine its second may have
            // passed already, so the first collection may remove it.
            let early = try await server.store.collectAssets()
            #expect(early <= 1)
            #expect(try await Self.get(ownedURL).data == owned)
            try await Task.sleep(for: .milliseconds(1300))
            #expect(try await server.store.collectAssets() + early == 3)
            #expect(try await Self.get(ownedURL).status == 404)
            #expect(try await Self.get(replacedURL).status == 404)
            #expect(try await Self.get(keptURL).data == kept)
            let late = try await Self.save(alice, "late", fields: #""image":{"value":\#(try neverBound.serializedString())}"#)
            #expect(late["serverErrorCode"]?.stringValue == "BAD_REQUEST", "\(late)")
            try await Task.sleep(for: .milliseconds(1300))
            #expect(try await server.store.collectAssets() == 0)
            #expect(try await Self.get(keptURL).data == kept)
            if server.backend.description == "SQLite" {
                let files = try FileManager.default.subpathsOfDirectory(atPath: (server.directory as NSString).appendingPathComponent("assets"))
                    .filter { !$0.hasPrefix("incoming") && $0.count > 3 }
                #expect(files.count == 1, "\(files)")
            }
        }
    }

    @Test func anOversizedUploadIsRefusedAndNothingIsKept() async throws {
        try await withServer(configure: { $0.limits.maximumAssetBytes = 1_000_000 }) { server in
            let alice = try await server.user("alice")
            for multipart in [false, true] {
                let url = try await Self.uploadURL(alice)
                let (status, json) = try await Self.post(Self.bytes(1_500_000), to: url, multipart: multipart)
                #expect(status == 400 && json["serverErrorCode"]?.stringValue == "BAD_REQUEST" && json["recordSyncErrorCode"]?.stringValue == "LIMIT_EXCEEDED", "\(json)")
            }
            let incoming = (server.directory as NSString).appendingPathComponent("assets/incoming")
            #expect((try? FileManager.default.contentsOfDirectory(atPath: incoming))?.isEmpty ?? true)
            if server.backend.description == "SQLite" {
                let files = (try? FileManager.default.subpathsOfDirectory(atPath: (server.directory as NSString).appendingPathComponent("assets"))) ?? []
                #expect(files.filter { !$0.hasPrefix("incoming") }.isEmpty, "\(files)")
            }
            // An upload URL that was tampered with, or a garbage token, is refused.
            #expect(try await Self.post(Data([1]), to: try await Self.uploadURL(alice) + "x").status == 401)
        }
    }

    @Test(.enabled(if: TestPostgres.url != nil)) func anAssetUploadedThroughOneNodeDownloadsThroughAnother() async throws {
        try await withTemporaryDirectory { directory in
            let deployment = try await Deployment(directory: directory, nodes: 2)
            defer { deployment.kill() }
            let token = try await deployment.addUser("alice")
            let (first, second) = (deployment.nodes[0].url, deployment.nodes[1].url)
            func post(_ node: URL, _ endpoint: String, _ body: String) async throws -> JSONValue {
                try await Self.post(body, to: node, "iCloud.test.Assets", endpoint, token: token)
            }
            let data = Self.bytes(3_000_000)
            let upload = try await post(first, "assets/upload", #"{"tokens":[{"recordType":"Artwork","fieldName":"image"}]}"#)
            let url = try #require(upload["tokens"]?[0]?["url"]?.stringValue)
            let (status, receipt) = try await Self.post(data, to: url)
            #expect(status == 200, "\(receipt)")
            let value = try (receipt["singleFile"] ?? .null).serializedString()
            let saved = try await post(first, "records/modify", #"{"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"Artwork","fields":{"image":{"value":\#(value)}}}}]}"#)
            #expect(saved["records"]?[0]?["serverErrorCode"] == nil, "\(saved)")
            let looked = try await post(second, "records/lookup", #"{"records":[{"recordName":"a"}]}"#)
            let link = try #require(looked["records"]?[0]?["fields"]?["image"]?["value"]?["downloadURL"]?.stringValue)
            #expect(link.hasPrefix(second.absoluteString))
            #expect(try await Self.get(link.replacingOccurrences(of: "${f}", with: "a.bin")).data == data)
            // The first node's own link, served by the second node's storage reads too.
            let firstLink = try #require(saved["records"]?[0]?["fields"]?["image"]?["value"]?["downloadURL"]?.stringValue)
            let onSecond = firstLink.replacingOccurrences(of: first.absoluteString, with: second.absoluteString).replacingOccurrences(of: "${f}", with: "a.bin")
            #expect(try await Self.get(onSecond).data == data)
            // The bytes are in neither node's data directory.
            for node in deployment.nodes {
                let files = (try? FileManager.default.subpathsOfDirectory(atPath: (node.dataDirectory as NSString).appendingPathComponent("assets"))) ?? []
                #expect(files.filter { !$0.hasPrefix("incoming") }.isEmpty, "\(files)")
            }
        }
    }

    @Test func aRotatedKeyKeepsThePreviousKeysLinksValidAndNoOlder() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let data = Self.bytes(2000)
            let value = try await Self.upload(data, alice)
            _ = try await Self.save(alice, "a", fields: #""image":{"value":\#(try value.serializedString())}"#)
            let first = try #require(try await Self.downloadURL(alice, "a"))
            let firstKey = try await server.store.assetSigner.signingKey().id
            let second = try await AssetSigner.rotate(in: server.store.engine, now: Int64(Date().timeIntervalSince1970 * 1000) + 1)
            #expect(second != firstKey)
            // This server signs with the new key within a minute; a fresh store does at once.
            let fresh = try await AssetSigner(testing: server.store.engine).signingKey().id
            #expect(fresh == second)
            #expect(try await Self.get(first).data == data)
            // A second rotation retires the first key: servers stop accepting its links once they
            // read the keys again (within a minute; a fresh signer at once).
            _ = try await AssetSigner.rotate(in: server.store.engine, now: Int64(Date().timeIntervalSince1970 * 1000) + 2)
            let token = try #require(first.components(separatedBy: "/download/").last?.components(separatedBy: "/").first)
            #expect(try await AssetSigner(testing: server.store.engine).verify(token) == nil)
        }
    }

    @Test func malformedUploadsAreClearErrorsAndKeepNothing() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let badField = try await alice.post("assets/upload", #"{"tokens":[{"recordType":"Artwork","fieldName":"a.b"}]}"#)
            #expect(badField.code == "BAD_REQUEST" && badField.reason.contains("a.b"), "\(badField.json)")
            #expect(try await alice.post("assets/upload", #"{"tokens":[{"recordType":"Artwork"}]}"#).code == "BAD_REQUEST")
            #expect(try await alice.post("assets/rereference", "{}").code == "BAD_REQUEST")
            for (contentType, body) in [("multipart/form-data", "--x\r\n\r\nbytes"),                          // no boundary
                                        ("multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"files\"; filename=\"f\"\r\n\r\ncut short"),
                                        ("multipart/form-data; boundary=x", "no part at all")] {
                var request = HTTPClientRequest(url: Self.reachable(try await Self.uploadURL(alice)))
                request.method = .POST
                request.headers.add(name: "Content-Type", value: contentType)
                request.body = .bytes(ByteBuffer(string: body))
                let response = try await Self.http.execute(request, timeout: .seconds(30))
                let json = try JSONValue.parse(Data(buffer: try await response.body.collect(upTo: 1 << 20)))
                #expect(response.status.code == 400 && json["serverErrorCode"]?.stringValue == "BAD_REQUEST", "\(contentType): \(json)")
            }
            let incoming = (server.directory as NSString).appendingPathComponent("assets/incoming")
            #expect((try? FileManager.default.contentsOfDirectory(atPath: incoming))?.isEmpty ?? true)
            #expect(try await server.store.collectAssets() == 0)
        }
    }
}
