import RecordModel

/// The most one user's records may hold (``Usage``), the same for every user; `nil`: no limit.
///
/// A record counts against the user who created it, whoever's database holds it (a private
/// database holds only its owner's; a public record is its creator's, and a cascade that
/// removes it frees its creator's room). Usage is kept by the storage engine with every write,
/// so every server over one store sees one figure: quotas are cluster-wide.
public struct Quota: Sendable, Equatable {
    public var records: Int64?
    public var bytes: Int64?

    public init(records: Int64? = nil, bytes: Int64? = nil) {
        self.records = records
        self.bytes = bytes
    }

    /// Whether any limit is set.
    public var limits: Bool { records != nil || bytes != nil }

    /// `QUOTA_EXCEEDED` when a request took the user from `before` to `after` and left them past
    /// a limit it grew towards. A request that shrinks what is past the limit (a delete, a
    /// smaller update) is allowed, so a user over a lowered quota can always make room.
    func check(from before: Usage, to after: Usage, user: String) throws {
        if let records, after.records > records, after.records > before.records {
            throw RecordSyncError(.quotaExceeded, "the request would leave user \(NameRules.quoted(user)) with \(after.records) records; the quota is \(records) records per user (delete records to make room)")
        }
        if let bytes, after.bytes > bytes, after.bytes > before.bytes {
            throw RecordSyncError(.quotaExceeded, "the request would leave user \(NameRules.quoted(user)) with \(after.bytes) bytes of records and assets; the quota is \(bytes) bytes per user (delete records or assets to make room)")
        }
    }

    /// `QUOTA_EXCEEDED` for a new upload when the user's records already hold the byte quota.
    func checkRoom(_ usage: Usage, user: String) throws {
        if let bytes, usage.bytes >= bytes {
            throw RecordSyncError(.quotaExceeded, "user \(NameRules.quoted(user)) holds \(usage.bytes) bytes of records and assets; the quota is \(bytes) bytes per user (delete records or assets to make room)")
        }
    }

    /// The bytes of the uploaded assets that a record's fields hold: each asset once per field
    /// (as the engine's `asset_refs` keep them), by the size of its upload. Values without a
    /// receipt (assets saved before uploads existed) hold no bytes here.
    public static func assetBytes(of fields: [String: FieldValue]) -> Int64 {
        var total: Int64 = 0
        for (_, value) in fields where value.type.scalar == .asset {
            var seen: Set<String> = []
            for asset in ModifyBatch.storedAssets(in: value) {
                if let checksum = asset.checksumHex, seen.insert(checksum).inserted { total += asset.size }
            }
        }
        return total
    }
}
