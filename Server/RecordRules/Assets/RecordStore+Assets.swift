import Crypto
import Foundation
import RecordModel

/// What an upload URL grants: bytes for one record field, for one user, until it expires.
public struct UploadGrant: Sendable, Hashable, Codable {
    var u: Int64
    var c: String
    var e: String
    var k: String
    var z: String
    var t: String
    var f: String
    var r: String
    /// Expiry, milliseconds since 1970.
    var x: Int64

    /// The record name the URL was handed out for.
    public var recordName: String { r }
}

/// What a download URL grants: the bytes of one blob until it expires.
public struct DownloadGrant: Sendable, Hashable, Codable {
    /// SHA-256 in hex.
    public var h: String
    public var s: Int64
    var x: Int64
    /// For a URL answered in the shared database: the participant it was made for, who must
    /// still take part in a share of a zone holding the asset when downloading.
    var p: Int64?

    /// The blob's SHA-256 in hex.
    public var checksum: String { h }
    /// The blob's size in bytes.
    public var size: Int64 { s }
}

extension RecordStore {
    /// `assets/upload`: an upload URL (`{base}/assets/1/upload/TOKEN`) per token, each signed and
    /// valid for ``StoreLimits/assetUploadLifetime``.
    public func assetUploadURLs(_ request: AssetUploadRequest, in scope: DatabaseScope, base: String) async throws -> AssetUploadResponse {
        try limits.checkCount(request.tokens.count, of: "tokens")
        let scope = try await sharedZoneScope(scope, zoneID: request.zoneID)
        let zoneName = try Self.addressable(request.zoneID, in: scope).zoneName
        // A user whose records already hold the byte quota gets no upload URL (a save binding
        // an upload is checked against the quota too).
        if limits.quota.bytes != nil {
            let user = scope.user
            try limits.quota.checkRoom(try await engine.read { try $0.usage(ofUser: user.userRecordName) }, user: user.name)
        }
        let expiry = Self.now() + limits.assetUploadLifetime.milliseconds
        let key = try await assetSigner.signingKey()
        var tokens: [AssetUploadResponse.Token] = []
        for (index, token) in request.tokens.enumerated() {
            if let problem = NameRules.problem(withName: token.recordType, kind: "tokens[\(index)].recordType") { throw RecordSyncError(.badRequest, problem) }
            if let problem = NameRules.problem(withFieldName: token.fieldName) { throw RecordSyncError(.badRequest, "tokens[\(index)]: \(problem)") }
            let recordName = token.recordName ?? UUID().uuidString
            if let problem = NameRules.problem(withName: recordName, kind: "tokens[\(index)].recordName") { throw RecordSyncError(.badRequest, problem) }
            let grant = UploadGrant(u: scope.user.id, c: scope.container, e: scope.environment, k: scope.kind.rawValue, z: zoneName,
                                    t: token.recordType, f: token.fieldName, r: recordName, x: expiry)
            let signed = AssetSigner.sign(try JSONEncoder().encode(grant), with: key)
            tokens.append(.init(recordName: recordName, fieldName: token.fieldName, url: "\(base)/assets/1/upload/\(signed)"))
        }
        return AssetUploadResponse(tokens: tokens)
    }

    /// The grant of an upload URL's token.
    ///
    /// - Throws: `AUTHENTICATION_FAILED` for a token this storage did not sign, or that expired.
    public func uploadGrant(_ token: String) async throws -> UploadGrant {
        guard let payload = try await assetSigner.verify(token), let grant = try? JSONDecoder().decode(UploadGrant.self, from: payload) else {
            throw RecordSyncError(.authenticationFailed, "the upload URL is not valid")
        }
        guard grant.x > Self.now() else { throw RecordSyncError(.authenticationFailed, "the upload URL expired; ask assets/upload for another") }
        return grant
    }

    /// Keeps the uploaded file (`checksum` its SHA-256 in hex) as a blob and issues its receipt.
    public func storeUpload(file: URL, checksum: String, size: Int64, grant: UploadGrant) async throws -> AssetUploadReceipt {
        let now = Self.now()
        let receipt = StoredAsset.receiptPrefix + Self.randomToken()
        try await engine.assetBytes.store(file: file, checksum: checksum, size: size, now: now, receipt: AssetReceipt(
            receipt: receipt, checksum: checksum, size: size, userKey: grant.u, container: grant.c, environment: grant.e, kind: grant.k,
            zoneName: grant.z, recordType: grant.t, field: grant.f, createdAt: now))
        let digest = Data(hex: checksum) ?? Data()
        return AssetUploadReceipt(singleFile: .init(
            fileChecksum: digest.base64EncodedString(), size: size, receipt: receipt,
            wrappingKey: Self.randomToken(), referenceChecksum: Data(SHA256.hash(data: Data("reference".utf8) + digest)).base64EncodedString()))
    }

    /// A function that makes each stored asset's `downloadURL` (`{base}/assets/1/download/TOKEN/${f}`,
    /// valid for ``StoreLimits/assetDownloadLifetime``), for ``WireForm/assetLinks``.
    /// In the shared database (`participant`: the caller's key), each URL is checked again when
    /// used (``downloadGrant(_:)``).
    public func assetLinks(base: String, participant: Int64? = nil) async throws -> AssetLinks {
        let key = try await assetSigner.signingKey()
        let expiry = Self.now() + limits.assetDownloadLifetime.milliseconds
        return AssetLinks { asset in
            guard let checksum = asset.checksumHex,
                  let payload = try? JSONEncoder().encode(DownloadGrant(h: checksum, s: asset.size, x: expiry, p: participant)) else { return nil }
            return "\(base)/assets/1/download/\(AssetSigner.sign(payload, with: key))/${f}"
        }
    }

    /// The grant of a download URL's token.
    ///
    /// - Throws: `AUTHENTICATION_FAILED` for a token this storage did not sign, that expired, or
    ///   (made for a participant) whose participant no longer takes part in a share of a zone
    ///   holding the asset.
    public func downloadGrant(_ token: String) async throws -> DownloadGrant {
        guard let payload = try await assetSigner.verify(token), let grant = try? JSONDecoder().decode(DownloadGrant.self, from: payload) else {
            throw RecordSyncError(.authenticationFailed, "the download URL is not valid")
        }
        guard grant.x > Self.now() else { throw RecordSyncError(.authenticationFailed, "the download URL expired; fetch the record again for a new one") }
        if let participant = grant.p, try await !engine.read({ try Self.participant(participant, reaches: grant.h, in: $0) }) {
            throw RecordSyncError(.authenticationFailed, "the download URL is no longer valid: the share it came through was left, closed or removed")
        }
        return grant
    }

    /// Whether user `participant` reaches a record holding the asset `checksum` through a share
    /// it accepted: any record of a zone share's zone, a record of a record share's hierarchy
    /// (its root or below it).
    static func participant(_ participant: Int64, reaches checksum: String, in transaction: any StorageTransaction) throws -> Bool {
        for holder in try transaction.sharedHolders(ofAsset: checksum, user: participant, limit: 100) {
            guard let root = holder.root else { return true }
            if try transaction.hierarchy(above: holder.recordName, inZone: holder.zoneKey, limit: ModifyBatch.maximumHierarchyDepth).contains(root) { return true }
        }
        return false
    }

    /// `assets/rereference`: for each entry, the asset (or list of assets) its record's field
    /// holds, with a new receipt each, to save in another record; an error in place of an entry
    /// whose record or asset is missing.
    public func rereferenceAssets(_ request: AssetRereferenceRequest, in scope: DatabaseScope) async throws -> AssetRereferenceResponse {
        try limits.checkCount(request.assets.count, of: "assets")
        let scope = try await sharedZoneScope(scope, zoneID: request.zoneID)
        let now = Self.now()
        return try await engine.write { transaction in
            let database = try Self.database(scope, in: transaction)
            let zone = try Self.zone(request.zoneID, database: database.key, scope: scope, in: transaction)
            let access = try Access.load(scope, zone: zone, containerKey: database.containerKey, in: transaction)
            var answers: [JSONValue] = []
            for entry in request.assets {
                func failure(_ code: ServerErrorCode, _ reason: String) throws -> JSONValue {
                    try JSONValueEncoder().encodeTree(ErrorBody(RecordSyncError(code, reason, recordName: entry.recordName, zoneID: zone.zoneID)))
                }
                // A record the caller may not read is, to it, one that does not exist.
                guard let record = try transaction.record(named: entry.recordName, inZone: zone.key, zoneID: zone.zoneID), access.mayRead(record) else {
                    answers.append(try failure(.notFound, "record \(NameRules.quoted(entry.recordName)) does not exist"))
                    continue
                }
                func copy(_ json: JSONValue) throws -> JSONValue? {
                    guard let asset = StoredAsset(json), let stored = try transaction.assetReceipt(asset.receipt) else { return nil }
                    var fresh = stored
                    fresh.receipt = StoredAsset.receiptPrefix + Self.randomToken()
                    fresh.userKey = scope.user.id
                    fresh.createdAt = now
                    fresh.bound = nil
                    try transaction.insertAssetReceipt(fresh)
                    return StoredAsset(fileChecksum: asset.fileChecksum, size: asset.size, receipt: fresh.receipt,
                                       wrappingKey: asset.wrappingKey, referenceChecksum: asset.referenceChecksum).json
                }
                switch record.fields[entry.fieldName] {
                case .asset(let json)?:
                    if let copied = try copy(json) { answers.append(copied) } else {
                        answers.append(try failure(.badRequest, "field \(NameRules.quoted(entry.fieldName)) holds no uploaded asset"))
                    }
                case .list(.asset, let elements)?:
                    answers.append(.array(try elements.map { element in
                        guard case .asset(let json) = element, let copied = try copy(json) else { return try failure(.badRequest, "an element of field \(NameRules.quoted(entry.fieldName)) holds no uploaded asset") }
                        return copied
                    }))
                default:
                    answers.append(try failure(.badRequest, "field \(NameRules.quoted(entry.fieldName)) of \(NameRules.quoted(entry.recordName)) holds no asset"))
                }
            }
            return .commit(AssetRereferenceResponse(assets: answers))
        }
    }

    /// Removes assets no record holds: first forgets what records no longer stored held and
    /// marks blobs nothing holds, then deletes those marked longer than the grace period ago
    /// (uploads never bound included), rows first, bytes after. Safe to run on several servers
    /// at once. Answers how many blobs went.
    @discardableResult
    public func collectAssets() async throws -> Int {
        let now = Self.now()
        let cutoff = now - limits.assetGracePeriod.milliseconds
        let gone = try await engine.write { transaction in
            try transaction.sweepAssetRefs(now: now)
            return .commit(try transaction.collectAssetBlobs(orphanedBefore: cutoff))
        }
        if !gone.isEmpty { try await engine.assetBytes.removeCollected(gone) }
        return gone.count
    }

    /// 32 random bytes in base64url.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64URLEncoded()
    }
}

extension Duration {
    /// Whole milliseconds.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

extension Data {
    /// Bytes from hex digits, or `nil`.
    init?(hex: String) {
        guard hex.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self.init(bytes)
    }
}
