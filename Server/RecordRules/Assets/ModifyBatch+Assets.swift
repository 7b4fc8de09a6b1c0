import Foundation
import RecordModel

extension ModifyBatch {
    /// Checks and binds the uploaded assets a save's fields hold, and records which blobs the
    /// record holds; answers the fields with each asset in its stored form, or `nil` when
    /// nothing changed (a record of no assets, before or after, costs one look at its fields).
    ///
    /// An asset with a receipt RecordSync issued must be the caller's upload for this database,
    /// zone, record type and field, not bound to another record field, and its bytes still
    /// kept; a value without a receipt whose `fileChecksum` is the asset the field holds keeps
    /// that asset (a client sends back what it read, which carries no receipt); any other value
    /// is kept as given, as assets saved before uploads existed were.
    func bindAssets(_ fields: [String: FieldValue], of operation: Operation, current: Record?) throws -> [String: FieldValue]? {
        let holdsAssets = { (fields: [String: FieldValue]) in fields.values.contains { $0.type.scalar == .asset } }
        guard holdsAssets(fields) || current.map({ holdsAssets($0.fields) }) == true else { return nil }
        var result = fields
        var changed = false
        var refs: [(field: String, checksum: String)] = []
        for (field, value) in fields where value.type.scalar == .asset {
            let held = Self.storedAssets(in: current?.fields[field])
            let elements: [FieldValue]
            if case .list(_, let list) = value { elements = list } else { elements = [value] }
            var bound: [FieldValue] = []
            for element in elements {
                guard case .asset(let json) = element else { bound.append(element); continue }
                var asset: StoredAsset?
                if let given = StoredAsset(json) {
                    asset = try held.first { $0.receipt == given.receipt } ?? bind(given, field: field, of: operation)
                } else if case .string(let checksum)? = json["fileChecksum"], json["receipt"] == nil {
                    asset = held.first { $0.fileChecksum == checksum }
                }
                guard let asset else { bound.append(element); continue }
                if let checksum = asset.checksumHex { refs.append((field, checksum)) }
                if asset.json != json { changed = true }
                bound.append(.asset(asset.json))
            }
            if changed { result[field] = value.type.isList ? .list(.asset, bound) : bound[0] }
        }
        let before = (current?.fields ?? [:]).flatMap { field, value in
            Self.storedAssets(in: value).compactMap { $0.checksumHex.map { (field, $0) } }
        }
        if Set(refs.map { "\($0.field)\u{0}\($0.checksum)" }) != Set(before.map { "\($0.0)\u{0}\($0.1)" }) {
            try transaction.replaceAssetRefs(inZone: zone.key, record: operation.name, refs: refs)
        }
        return changed ? result : nil
    }

    /// The assets RecordSync stores that a field value holds.
    static func storedAssets(in value: FieldValue?) -> [StoredAsset] {
        switch value {
        case .asset(let json)?: StoredAsset(json).map { [$0] } ?? []
        case .list(.asset, let elements)?: elements.compactMap { if case .asset(let json) = $0 { StoredAsset(json) } else { nil } }
        default: []
        }
    }

    /// Binds an upload's receipt to this record field: the asset as stored.
    private func bind(_ given: StoredAsset, field: String, of operation: Operation) throws -> StoredAsset {
        let name = operation.name
        func refuse(_ reason: String) -> RecordSyncError {
            RecordSyncError(.badRequest, "field \(NameRules.quoted(field)): \(reason)", recordName: name)
        }
        guard let receipt = try transaction.assetReceipt(given.receipt) else {
            throw refuse("the asset's receipt is unknown (never issued, or its upload was removed after \(limits.assetGracePeriod) unbound); upload it again")
        }
        guard receipt.userKey == scope.user.id else { throw refuse("the asset was uploaded by another user") }
        guard receipt.container == scope.container, receipt.environment == scope.environment, receipt.kind == scope.kind.rawValue else {
            throw refuse("the asset was uploaded for another database (\(receipt.container) \(receipt.environment) \(receipt.kind))")
        }
        guard receipt.zoneName == zone.name else { throw refuse("the asset was uploaded for zone \(NameRules.quoted(receipt.zoneName))") }
        guard receipt.recordType == operation.recordType, receipt.field == field else {
            throw refuse("the asset was uploaded for field \(NameRules.quoted(receipt.field)) of \(NameRules.quoted(receipt.recordType))")
        }
        let binding = AssetBinding(zone: zone.key, record: name, field: field)
        if let bound = receipt.bound, bound != binding {
            throw refuse("the asset's receipt is already bound to field \(NameRules.quoted(bound.field)) of record \(NameRules.quoted(bound.record)); use assets/rereference to save it in another record")
        }
        guard given.checksumHex == receipt.checksum, given.size == receipt.size else {
            throw refuse("fileChecksum and size are not those of the upload the receipt names")
        }
        if receipt.bound == nil, receipt.createdAt + limits.assetGracePeriod.milliseconds < now {
            throw refuse("the asset's receipt expired (uploads must be saved within \(limits.assetGracePeriod)); upload it again")
        }
        guard try transaction.adoptAssetBlob(receipt.checksum) else {
            throw refuse("the asset's bytes were removed; upload it again")
        }
        if receipt.bound == nil { try transaction.bindAssetReceipt(receipt.receipt, to: binding) }
        return given
    }
}
