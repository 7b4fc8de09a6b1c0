import Foundation
import RecordModel

extension Database {
    /// `records` with every asset that waits to be uploaded (``Asset/init(fileURL:)``) uploaded
    /// and replaced by its receipt: one `assets/upload` per zone, then each file, streamed.
    /// Runs before any record of a batch is sent, so the batching that keeps targets before
    /// sources sees records whose assets are already on the server.
    func uploadingAssets(_ records: [Record]) async throws -> [Record] {
        var pending: [(record: Int, field: String, element: Int?, file: URL)] = []
        for (index, record) in records.enumerated() {
            for (field, value) in record.fields {
                switch value {
                case .asset(let json):
                    if let file = Asset(json).localFile { pending.append((index, field, nil, file)) }
                case .list(.asset, let elements):
                    for (position, element) in elements.enumerated() {
                        if case .asset(let json) = element, let file = Asset(json).localFile { pending.append((index, field, position, file)) }
                    }
                default: continue
                }
            }
        }
        guard !pending.isEmpty else { return records }
        var records = records
        let receipts = try await upload(pending.map { entry in
            (records[entry.record].recordID.zoneID, records[entry.record].recordType, records[entry.record].recordName, entry.field, entry.file)
        })
        for (entry, receipt) in zip(pending, receipts) {
            if let position = entry.element, case .list(.asset, var elements)? = records[entry.record].fields[entry.field] {
                elements[position] = .asset(receipt.fieldValue)
                records[entry.record].fields[entry.field] = .list(.asset, elements)
            } else {
                records[entry.record].fields[entry.field] = .asset(receipt.fieldValue)
            }
        }
        return records
    }

    /// ``uploadingAssets(_:)`` for operations (as `recordctl` sends them), all in `zone`.
    func uploadingAssets(_ operations: [RecordOperation], zone: ZoneID) async throws -> [RecordOperation] {
        var pending: [(operation: Int, field: String, element: Int?, file: URL)] = []
        func local(_ json: JSONValue) -> URL? {
            guard case .string(let path)? = json[Asset.localFileKey] else { return nil }
            return URL(string: path)
        }
        for (index, operation) in operations.enumerated() {
            for (field, raw) in operation.record.fields ?? [:] {
                if let file = local(raw.value) { pending.append((index, field, nil, file)) }
                if case .array(let elements) = raw.value {
                    for (position, element) in elements.enumerated() { if let file = local(element) { pending.append((index, field, position, file)) } }
                }
            }
        }
        guard !pending.isEmpty else { return operations }
        var operations = operations
        let receipts = try await upload(pending.map { entry in
            let record = operations[entry.operation].record
            return (zone, record.recordType ?? "", record.recordName ?? "", entry.field, entry.file)
        })
        for (entry, receipt) in zip(pending, receipts) {
            guard var raw = operations[entry.operation].record.fields?[entry.field] else { continue }
            if let position = entry.element, case .array(var elements) = raw.value {
                elements[position] = receipt.fieldValue
                raw = RawFieldValue(value: .array(elements), type: FieldType(.asset, isList: true))
            } else {
                raw = RawFieldValue(value: receipt.fieldValue, type: FieldType(.asset))
            }
            operations[entry.operation].record.fields?[entry.field] = raw
        }
        return operations
    }

    /// Uploads files for record fields: one `assets/upload` per zone (and per
    /// ``maximumOperationsPerRequest`` files), then the files, a few at a time, each streamed.
    /// Answers a receipt per file, in order.
    private func upload(_ files: [(zone: ZoneID, recordType: String, recordName: String, field: String, file: URL)]) async throws -> [AssetUploadReceipt] {
        var receipts: [AssetUploadReceipt?] = Array(repeating: nil, count: files.count)
        let byZone = Dictionary(grouping: files.indices) { files[$0].zone }
        let transport = self.transport
        for (zone, indices) in byZone {
            for start in stride(from: 0, to: indices.count, by: maximumOperationsPerRequest) {
                let chunk = Array(indices[start..<min(start + maximumOperationsPerRequest, indices.count)])
                let request = AssetUploadRequest(zoneID: zone, tokens: chunk.map { .init(recordType: files[$0].recordType, fieldName: files[$0].field, recordName: files[$0].recordName) })
                let urls = try await transport.post("assets/upload", request, as: AssetUploadResponse.self).tokens
                guard urls.count == chunk.count else { throw RecordSyncError(.networkFailure, "assets/upload answered \(urls.count) URLs for \(chunk.count) assets") }
                // A few files at a time: one upload leaves the disk, the network or a core idle
                // while it waits on another.
                let uploads = zip(chunk, urls).map { (index: $0.0, file: files[$0.0].file, url: $0.1.url) }
                try await withThrowingTaskGroup(of: (Int, AssetUploadReceipt).self) { group in
                    var next = 0
                    func start() {
                        guard next < uploads.count else { return }
                        let upload = uploads[next]
                        next += 1
                        group.addTask {
                            (upload.index, try JSONValueDecoder().decode(AssetUploadReceipt.self, from: try await transport.upload(file: upload.file, to: upload.url)))
                        }
                    }
                    for _ in 0..<Self.parallelUploads { start() }
                    while let (index, receipt) = try await group.next() {
                        receipts[index] = receipt
                        start()
                    }
                }
            }
        }
        return try receipts.map { receipt in
            guard let receipt else { throw RecordSyncError(.networkFailure, "an asset upload gave no receipt") }
            return receipt
        }
    }

    /// The local file holding a fetched asset's bytes, downloaded into the container's
    /// ``Container/assetDirectory`` the first time (named by the bytes' checksum, so a file is
    /// downloaded once however many records hold it); an asset not uploaded yet is its own
    /// file. Keeps the directory within ``Container/maximumAssetBytes``, least recently used
    /// first; works offline for the assets already there.
    public func fetchAsset(_ asset: Asset) async throws -> URL {
        try await fetchAsset(asset, into: AssetFiles(directory: container.assetDirectory, maximumBytes: container.maximumAssetBytes))
    }

    /// Downloads a fetched asset's bytes into the file `destination` (replaced, written whole
    /// or not at all), streamed.
    public func downloadAsset(_ asset: Asset, to destination: URL) async throws {
        guard let link = asset.downloadURL else {
            throw RecordSyncError(.badRequest, "the asset has no downloadURL (fetch its record again for one)")
        }
        try await transport.download(link.replacingOccurrences(of: "${f}", with: destination.lastPathComponent), to: destination)
    }

    /// ``fetchAsset(_:)`` into `files`.
    func fetchAsset(_ asset: Asset, into files: AssetFiles) async throws -> URL {
        if let file = asset.localFile { return file }
        if let checksum = asset.fileChecksum, let cached = files.cached(checksum) { return cached }
        guard let link = asset.downloadURL else {
            throw RecordSyncError(.badRequest, "the asset has no downloadURL (fetch its record again for one)")
        }
        let name = asset.fileChecksum ?? UUID().uuidString
        let destination = files.location(of: name)
        try files.prepare()
        try await transport.download(link.replacingOccurrences(of: "${f}", with: "asset"), to: destination)
        files.trim(keeping: destination)
        return destination
    }
}

extension Database {
    /// How many asset files upload at once.
    static let parallelUploads = 3
}

extension Asset {
    /// The file of an asset that waits to be uploaded.
    var localFile: URL? { isLocal ? fileURL : nil }
}

/// The downloaded assets of a container: files named by checksum, trimmed to a size.
struct AssetFiles {
    let directory: URL
    let maximumBytes: Int64

    /// The file of a checksum (base64, made safe for a name).
    func location(of checksum: String) -> URL {
        directory.appendingPathComponent(checksum.replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "+", with: "-"))
    }

    func prepare() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    /// The downloaded file of a checksum, touched as used, if there is one.
    func cached(_ checksum: String) -> URL? {
        let file = location(of: checksum)
        guard FileManager.default.fileExists(atPath: file.path) else { return nil }
        try? FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: file.path)
        return file
    }

    /// Removes the least recently used files until the rest fit (never `keeping`).
    func trim(keeping: URL) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        var files: [(url: URL, size: Int64, used: Date)] = names.filter { !$0.contains(".partial-") }.compactMap { name in
            let url = directory.appendingPathComponent(name)
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path) else { return nil }
            return (url, (attributes[.size] as? NSNumber)?.int64Value ?? 0, attributes[.modificationDate] as? Date ?? .distantPast)
        }
        var total = files.reduce(0) { $0 + $1.size }
        files.sort { $0.used < $1.used }
        for file in files where total > maximumBytes && file.url.standardizedFileURL != keeping.standardizedFileURL {
            try? FileManager.default.removeItem(at: file.url)
            total -= file.size
        }
    }
}
