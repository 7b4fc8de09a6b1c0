import Foundation

/// The body of `assets/upload`: upload URLs for (record type, field) tokens.
public struct AssetUploadRequest: Sendable, Hashable, Codable {
    public struct Token: Sendable, Hashable, Codable {
        public var recordType: String
        public var fieldName: String
        /// The record the asset is for; a random name when omitted.
        public var recordName: String?
        public init(recordType: String, fieldName: String, recordName: String? = nil) {
            self.recordType = recordType
            self.fieldName = fieldName
            self.recordName = recordName
        }
    }

    public var zoneID: ZoneID?
    public var tokens: [Token]

    public init(zoneID: ZoneID? = nil, tokens: [Token]) {
        self.zoneID = zoneID
        self.tokens = tokens
    }
}

/// The answer to `assets/upload`: one URL per token, in order.
public struct AssetUploadResponse: Sendable, Hashable, Codable {
    public struct Token: Sendable, Hashable, Codable {
        public var recordName: String
        public var fieldName: String
        /// Where to `POST` the bytes (raw, or `multipart/form-data`); no bearer token needed.
        public var url: String
        public init(recordName: String, fieldName: String, url: String) {
            self.recordName = recordName
            self.fieldName = fieldName
            self.url = url
        }
    }

    public var tokens: [Token]
    public init(tokens: [Token]) { self.tokens = tokens }
}

/// What an upload answers: `{"singleFile": {...}}`, the value to save in an `ASSETID` field.
public struct AssetUploadReceipt: Sendable, Hashable, Codable {
    public struct SingleFile: Sendable, Hashable, Codable {
        /// Base64 of the bytes' SHA-256.
        public var fileChecksum: String
        public var size: Int64
        /// Binds the upload to the record field that saves it.
        public var receipt: String
        public var wrappingKey: String?
        public var referenceChecksum: String?
        public init(fileChecksum: String, size: Int64, receipt: String, wrappingKey: String?, referenceChecksum: String?) {
            self.fileChecksum = fileChecksum
            self.size = size
            self.receipt = receipt
            self.wrappingKey = wrappingKey
            self.referenceChecksum = referenceChecksum
        }
    }

    public var singleFile: SingleFile
    public init(singleFile: SingleFile) { self.singleFile = singleFile }

    /// The value of an `ASSETID` field that saves this upload.
    public var fieldValue: JSONValue {
        var members: [String: JSONValue] = ["fileChecksum": .string(singleFile.fileChecksum), "size": .int(singleFile.size), "receipt": .string(singleFile.receipt)]
        if let key = singleFile.wrappingKey { members["wrappingKey"] = .string(key) }
        if let checksum = singleFile.referenceChecksum { members["referenceChecksum"] = .string(checksum) }
        return .object(members)
    }
}

/// The body of `assets/rereference`: assets of stored records to save in other records.
public struct AssetRereferenceRequest: Sendable, Hashable, Codable {
    public struct Entry: Sendable, Hashable, Codable {
        public var recordName: String
        public var fieldName: String
        public init(recordName: String, fieldName: String) {
            self.recordName = recordName
            self.fieldName = fieldName
        }
    }

    public var zoneID: ZoneID?
    public var assets: [Entry]
    public init(zoneID: ZoneID? = nil, assets: [Entry]) {
        self.zoneID = zoneID
        self.assets = assets
    }
}

/// The answer to `assets/rereference`: `{"assets": [asset or error, …]}`, one per entry; a list
/// field answers the list of its assets.
public struct AssetRereferenceResponse: Sendable, Hashable, Codable {
    public var assets: [JSONValue]
    public init(assets: [JSONValue]) { self.assets = assets }
}

/// An `ASSETID` value as RecordSync stores it: `{fileChecksum, size, receipt, wrappingKey?,
/// referenceChecksum?}`. A value whose receipt RecordSync did not issue (one saved before
/// assets were uploadable, or any opaque object) is not one: it is kept and answered as given.
public struct StoredAsset: Sendable, Hashable {
    /// The prefix of every receipt RecordSync issues.
    public static let receiptPrefix = "rsa1_"

    public var fileChecksum: String
    public var size: Int64
    public var receipt: String
    public var wrappingKey: String?
    public var referenceChecksum: String?

    public init(fileChecksum: String, size: Int64, receipt: String, wrappingKey: String? = nil, referenceChecksum: String? = nil) {
        self.fileChecksum = fileChecksum
        self.size = size
        self.receipt = receipt
        self.wrappingKey = wrappingKey
        self.referenceChecksum = referenceChecksum
    }

    /// The asset an `ASSETID` value holds, if RecordSync issued its receipt.
    public init?(_ json: JSONValue) {
        guard case .string(let receipt)? = json["receipt"], receipt.hasPrefix(Self.receiptPrefix),
              case .string(let checksum)? = json["fileChecksum"] else { return nil }
        let size: Int64
        switch json["size"] {
        case .int(let value)?: size = value
        case .double(let value)?: guard let exact = Int64(exactly: value) else { return nil }; size = exact
        case .string(let text)?: guard let value = Int64(text) else { return nil }; size = value
        default: return nil
        }
        var wrappingKey: String?, referenceChecksum: String?
        if case .string(let key)? = json["wrappingKey"] { wrappingKey = key }
        if case .string(let checksum)? = json["referenceChecksum"] { referenceChecksum = checksum }
        self.init(fileChecksum: checksum, size: size, receipt: receipt, wrappingKey: wrappingKey, referenceChecksum: referenceChecksum)
    }

    /// The stored form.
    public var json: JSONValue {
        var members: [String: JSONValue] = ["fileChecksum": .string(fileChecksum), "size": .int(size), "receipt": .string(receipt)]
        if let wrappingKey { members["wrappingKey"] = .string(wrappingKey) }
        if let referenceChecksum { members["referenceChecksum"] = .string(referenceChecksum) }
        return .object(members)
    }

    /// The SHA-256 of the bytes in hex (the name its bytes are kept under), or `nil` when
    /// ``fileChecksum`` is not base64 of 32 bytes.
    public var checksumHex: String? {
        guard let bytes = Data(base64Encoded: fileChecksum), bytes.count == 32 else { return nil }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// The form an answer carries: the download link in place of the receipt
    /// (``WireForm/assetLinks``), or the stored form when no link is being made.
    func wireJSON(_ links: @Sendable (StoredAsset) -> String?) -> JSONValue {
        guard let url = links(self) else { return json }
        var members: [String: JSONValue] = ["fileChecksum": .string(fileChecksum), "size": .int(size), "downloadURL": .string(url)]
        if let wrappingKey { members["wrappingKey"] = .string(wrappingKey) }
        if let referenceChecksum { members["referenceChecksum"] = .string(referenceChecksum) }
        return .object(members)
    }
}

/// A file held in an `ASSETID` field (CloudKit's `CKAsset`).
///
/// A new asset is made from a local file (``init(fileURL:)``); saving its record through the
/// client library uploads the file first and saves the receipt. A fetched asset knows the
/// server's `fileChecksum`, `size` and `downloadURL`; the client library downloads its bytes
/// on demand (``fileURL`` then names the local copy).
public struct Asset: Sendable, Hashable {
    /// The field value key that marks an asset not uploaded yet: its local file.
    public static let localFileKey = "recordSyncLocalFile"

    /// The local file: the one to upload, or the downloaded copy.
    public var fileURL: URL?
    /// The value the server stores or answered, `nil` for an asset not uploaded yet.
    public var stored: JSONValue?

    /// An asset whose bytes are the file at `fileURL`, to be uploaded when its record is saved.
    public init(fileURL: URL) {
        self.fileURL = fileURL
    }

    /// The asset an `ASSETID` value holds.
    public init(_ value: JSONValue) {
        if case .string(let path)? = value[Self.localFileKey], let url = URL(string: path) {
            fileURL = url
        } else {
            stored = value
        }
    }

    /// Base64 of the bytes' SHA-256, once uploaded.
    public var fileChecksum: String? { stored?["fileChecksum"].flatMap { if case .string(let text) = $0 { text } else { nil } } }
    /// The size in bytes, once uploaded.
    public var size: Int64? {
        switch stored?["size"] {
        case .int(let value)?: value
        case .double(let value)?: Int64(exactly: value)
        case .string(let text)?: Int64(text)
        default: nil
        }
    }
    /// Where the server serves the bytes (with CloudKit's `${f}` file-name placeholder), in a
    /// fetched record.
    public var downloadURL: String? { stored?["downloadURL"].flatMap { if case .string(let text) = $0 { text } else { nil } } }
    /// Whether the asset waits to be uploaded.
    public var isLocal: Bool { stored == nil }

    /// The field value.
    public var fieldValue: FieldValue {
        if let stored { return .asset(stored) }
        return .asset(.object([Self.localFileKey: .string(fileURL?.absoluteString ?? "")]))
    }
}

extension FieldValue {
    /// The asset the value holds, if it is an `ASSETID`.
    public var asset: Asset? {
        if case .asset(let json) = self { return Asset(json) }
        return nil
    }
}

extension Asset: Codable {
    /// Outside a record, an asset is its field value's JSON.
    public init(from decoder: any Decoder) throws {
        self.init(try JSONValue(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        guard case .asset(let json) = fieldValue else { return }
        try json.encode(to: encoder)
    }
}
