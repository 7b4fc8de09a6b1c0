import Foundation
import RecordModel

/// A key that signs asset URLs (upload and download), shared by every server over the storage.
public struct AssetKey: Sendable, Hashable {
    /// The key's name, carried by each URL it signs.
    public var id: String
    /// The HMAC-SHA256 secret.
    public var secret: Data
    /// Milliseconds since 1970: the newest key signs.
    public var createdAt: Int64

    public init(id: String, secret: Data, createdAt: Int64) {
        self.id = id
        self.secret = secret
        self.createdAt = createdAt
    }
}

/// An upload's receipt as stored: what was uploaded, by whom, for which record type and field,
/// and the record field it was bound to, once it is.
public struct AssetReceipt: Sendable, Hashable {
    public var receipt: String
    /// SHA-256 of the bytes, in hex.
    public var checksum: String
    public var size: Int64
    /// The uploading user's key.
    public var userKey: Int64
    public var container: String
    public var environment: String
    public var kind: String
    public var zoneName: String
    public var recordType: String
    public var field: String
    public var createdAt: Int64
    /// The record field holding the asset (zone key, record name, field), once bound.
    public var bound: AssetBinding?

    public init(receipt: String, checksum: String, size: Int64, userKey: Int64, container: String, environment: String, kind: String,
                zoneName: String, recordType: String, field: String, createdAt: Int64, bound: AssetBinding? = nil) {
        self.receipt = receipt
        self.checksum = checksum
        self.size = size
        self.userKey = userKey
        self.container = container
        self.environment = environment
        self.kind = kind
        self.zoneName = zoneName
        self.recordType = recordType
        self.field = field
        self.createdAt = createdAt
        self.bound = bound
    }
}

/// A record field an asset is bound to.
public struct AssetBinding: Sendable, Hashable {
    public var zone: Int64
    public var record: String
    public var field: String

    public init(zone: Int64, record: String, field: String) {
        self.zone = zone
        self.record = record
        self.field = field
    }
}

/// Where an engine keeps asset bytes, content-addressed by SHA-256 (hex). Every blob has a row
/// (`asset_blobs`: size, and since when no record holds it); the rules decide when a blob goes
/// (the rules' `RecordStore.collectAssets(gracePeriod:)`).
public protocol AssetByteStore: Sendable {
    /// Makes the file at `file` the bytes of `checksum` (its SHA-256 in hex, `size` bytes),
    /// stores the blob's row, unheld since `now` unless a row exists, and `receipt`; one
    /// transaction with the bytes, so a collection never removes bytes a row still names.
    /// Consumes the file.
    func store(file: URL, checksum: String, size: Int64, now: Int64, receipt: AssetReceipt) async throws
    /// Whether the bytes of blob `checksum` are kept.
    func contains(_ checksum: String) async throws -> Bool
    /// Calls `each` with the bytes of `range` of blob `checksum`, in order, in pieces.
    ///
    /// - Throws: `NOT_FOUND` when the blob has no bytes.
    func read(_ checksum: String, range: Range<Int64>, _ each: (Data) async throws -> Void) async throws
    /// After ``StorageTransaction/collectAssetBlobs(orphanedBefore:)`` committed: removes what
    /// the engine keeps outside its transactions of blobs whose rows are still gone.
    func removeCollected(_ checksums: [String]) async throws
}

/// A subscription as stored: its owner and database, and its wire form.
public struct StoredSubscription: Sendable, Hashable {
    public var userKey: Int64
    public var container: String
    public var environment: String
    public var kind: String
    public var id: String
    /// The subscription's JSON (``Subscription``).
    public var body: String
    public var createdAt: Int64

    public init(userKey: Int64, container: String, environment: String, kind: String, id: String, body: String, createdAt: Int64) {
        self.userKey = userKey
        self.container = container
        self.environment = environment
        self.kind = kind
        self.id = id
        self.body = body
        self.createdAt = createdAt
    }
}

/// A webcourier token: whose notifications it delivers, and from which notification on.
public struct StoredPushToken: Sendable, Hashable {
    public var token: String
    public var userKey: Int64
    public var container: String
    public var environment: String
    /// Notifications up to this number predate the token.
    public var floor: Int64

    public init(token: String, userKey: Int64, container: String, environment: String, floor: Int64) {
        self.token = token
        self.userKey = userKey
        self.container = container
        self.environment = environment
        self.floor = floor
    }
}
