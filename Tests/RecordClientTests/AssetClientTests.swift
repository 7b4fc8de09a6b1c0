import Foundation
import RecordClient
import TestSupport
import Testing

/// `Asset` through the client: saved (uploaded first, lists too), fetched on demand, kept in
/// the container's asset folder within its size, and read from there offline.
@Suite struct AssetClientTests {
    static func file(_ directory: String, _ name: String, size: Int, seed: UInt8) throws -> (URL, Data) {
        let data = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 13) ^ seed })
        let url = URL(fileURLWithPath: "\(directory)/\(name)")
        try data.write(to: url)
        return (url, data)
    }

    @Test func anAssetRoundTripsAndIsReadFromTheFolderOffline() async throws {
        try await withServer { server in
            var container = try await server.container(forNewUser: "alice")
            container.assetDirectory = URL(fileURLWithPath: server.directory + "/assets-cache")
            container.maximumAssetBytes = 250_000
            let database = container.privateCloudDatabase
            let (first, firstBytes) = try Self.file(server.directory, "a.bin", size: 120_000, seed: 1)
            let (second, secondBytes) = try Self.file(server.directory, "b.bin", size: 150_000, seed: 2)
            var record = Record(recordType: "Photo", recordID: Record.ID(recordName: "p"))
            record["image"] = Asset(fileURL: first).fieldValue
            record["pages"] = .list(.asset, [Asset(fileURL: second).fieldValue])
            let saved = try await database.save(record)
            #expect(saved["image"]?.asset?.downloadURL != nil && saved["image"]?.asset?.isLocal == false)

            let fetched = try await database.record(for: record.recordID)
            let image = try #require(fetched["image"]?.asset)
            #expect(image.size == 120_000)
            #expect(try Data(contentsOf: try await database.fetchAsset(image)) == firstBytes)
            guard case .list(.asset, let pages)? = fetched["pages"], let page = pages.first?.asset else { Issue.record("no pages"); return }
            #expect(try Data(contentsOf: try await database.fetchAsset(page)) == secondBytes)
            // Both do not fit in 250,000 bytes: the least recently used went.
            let kept = try FileManager.default.contentsOfDirectory(atPath: container.assetDirectory.path)
            #expect(kept.count == 1, "\(kept)")

            // Offline (a link that leads nowhere), the folder still answers for what it holds.
            var unreachable = page
            unreachable.stored = .object(["fileChecksum": page.stored?["fileChecksum"] ?? .null, "size": .int(150_000),
                                          "downloadURL": .string("http://127.0.0.1:9/nowhere/${f}")])
            #expect(try Data(contentsOf: try await database.fetchAsset(unreachable)) == secondBytes)
            // A typed model holds an Asset like any other value.
            struct Photo: Codable { var image: Asset }
            let decoded = try fetched.decode(Photo.self)
            #expect(decoded.image.fileChecksum == image.fileChecksum)
        }
    }
}

/// `Asset` through the cache and its outbox.
@Suite struct AssetCacheTests {
    @Test func anAssetRoundTripsThroughTheCacheAndIsReadOfflineAfterwards() async throws {
        try await withServer { server in
            let container = try await server.container(forNewUser: "alice")
            let cachePath = server.directory + "/assets-cache.sqlite"
            let (file, bytes) = try AssetClientTests.file(server.directory, "photo.bin", size: 400_000, seed: 9)
            let id = Record.ID(recordName: "photo")
            do {
                let engine = SyncEngine(database: container.privateCloudDatabase, cache: try RecordCache(path: cachePath))
                var record = Record(recordType: "Photo", recordID: id)
                record["image"] = Asset(fileURL: file).fieldValue
                let saved = try await engine.save(record)
                // Before it is sent, the cached record's asset is the cache's own copy.
                let pending = try #require(saved["image"]?.asset)
                #expect(pending.isLocal && pending.fileURL?.path.hasPrefix(cachePath + "-assets/pending/") == true)
                #expect(try Data(contentsOf: try await engine.fetchAsset(pending)) == bytes)
                #expect(try await engine.sendChanges().saved == [id])
                try await engine.fetchChanges()
                let cached = try #require(try await engine.cache.record(for: id)?["image"]?.asset)
                #expect(!cached.isLocal && cached.downloadURL != nil)
                #expect(try Data(contentsOf: try await engine.fetchAsset(cached)) == bytes)
                #expect((try? FileManager.default.contentsOfDirectory(atPath: cachePath + "-assets/pending"))?.isEmpty ?? true)
            }
            // Offline: a server that is not there; the cache answers the record and its asset.
            let offline = Container(serverURL: URL(string: "http://127.0.0.1:9")!, identifier: container.identifier, credentials: .bearerToken("rs_offline"))
            let engine = SyncEngine(database: offline.privateCloudDatabase, cache: try RecordCache(path: cachePath))
            let cached = try #require(try await engine.cache.record(for: id)?["image"]?.asset)
            #expect(try Data(contentsOf: try await engine.fetchAsset(cached)) == bytes)
        }
    }
}

/// The notifications stream's polling task lives as long as its consumer.
@Suite struct RemoteNotificationTests {
    @Test func cancellingTheConsumerEndsAPollInProgress() async throws {
        try await withServer(configure: { $0.webcourierWait = .seconds(30) }) { server in
            let database = try await server.container(forNewUser: "alice").privateCloudDatabase
            let notifications = try await database.remoteNotifications()
            let consumer = Task { () -> Int in
                var count = 0
                for try await _ in notifications { count += 1 }
                return count
            }
            try await Task.sleep(for: .milliseconds(300))  // the poll is waiting on the server
            let start = ContinuousClock.now
            consumer.cancel()
            _ = try? await consumer.value
            #expect(ContinuousClock.now - start < .seconds(5), "the poll outlived its consumer")
        }
    }
}
