import Foundation

// The wire form of `records/modify` requests and of the answers that carry records
// (`records/modify`, `records/lookup`, `records/query`): each type's one reader beside its one
// writer (see `JSONDirect.swift`).

// MARK: - Requests

extension RecordPayload: Codable, JSONDirectWritable, JSONDirectDecodable {
    public init(from decoder: any Decoder) throws { self = try JSONWire.decode(Self.self, from: decoder) }
    public func encode(to encoder: any Encoder) throws { try JSONWire.encode(self, to: encoder) }

    /// `{"fields"?, "forRecord"?, "parent"?, "participants"?, "publicPermission"?,
    /// "recordChangeTag"?, "recordName"?, "recordType"?}`.
    func write(to writer: inout JSONWriter) throws {
        var first = true
        writer.open()
        if let fields { writer.key("fields", first: &first); try writer.sortedObject(fields) { try $1.write(to: &$0) } }
        if let root = share?.forRecord { writer.key("forRecord", first: &first); try writer.write(.object(["recordName": .string(root)])) }
        if let parent {
            writer.key("parent", first: &first)
            try writer.write(parent.name.map { .object(["recordName": .string($0)]) } ?? .null)
        }
        if let participants = share?.participants { writer.key("participants", first: &first); try writer.write(JSONValueEncoder().encodeTree(participants)) }
        if let permission = share?.publicPermission { writer.key("publicPermission", first: &first); writer.writeString(permission.rawValue) }
        if let recordChangeTag { writer.key("recordChangeTag", first: &first); writer.writeString(recordChangeTag) }
        if let recordName { writer.key("recordName", first: &first); writer.writeString(recordName) }
        if let recordType { writer.key("recordType", first: &first); writer.writeString(recordType) }
        writer.close()
    }

    init(direct parser: inout JSONParser) throws {
        var name: String?, type: String?, tag: String?, fields: [String: RawFieldValue]?, share = ShareEdit(), parent: ParentChange?
        try parser.forEachMember { parser, key in
            switch key {
            case "recordName": name = try parser.directOptionalString()
            case "recordType": type = try parser.directOptionalString()
            case "recordChangeTag": tag = try parser.directOptionalString()
            case "fields": fields = try parser.takeNull() ? nil : try parser.directDictionary(of: RawFieldValue.self)
            case "forRecord":
                share.forRecord = try parser.takeNull() ? nil : try JSONValueDecoder().decode(LookupRecordsRequest.Entry.self, from: parser.anyValue()).recordName
            case "publicPermission": share.publicPermission = try parser.takeNull() ? nil : try JSONValueDecoder().decode(SharePermission.self, from: parser.anyValue())
            case "participants": share.participants = try parser.takeNull() ? nil : try JSONValueDecoder().decode([ShareParticipant].self, from: parser.anyValue())
            case "parent": parent = try RecordNameReference.read(&parser).map(ParentChange.set) ?? .remove
            default: try parser.skipValue()
            }
        }
        self.init(recordName: name, recordType: type, recordChangeTag: tag, fields: fields, share: share.isEmpty ? nil : share, parent: parent)
    }
}

extension RecordOperation: Codable, JSONDirectWritable, JSONDirectDecodable {
    public init(from decoder: any Decoder) throws { self = try JSONWire.decode(Self.self, from: decoder) }
    public func encode(to encoder: any Encoder) throws { try JSONWire.encode(self, to: encoder) }

    /// `{"desiredKeys"?, "operationType", "record"}`.
    func write(to writer: inout JSONWriter) throws {
        var first = true
        writer.open()
        if let desiredKeys { writer.key("desiredKeys", first: &first); writer.array(desiredKeys) { $0.writeString($1) } }
        writer.key("operationType", first: &first); writer.writeString(operationType.rawValue)
        writer.key("record", first: &first); try record.write(to: &writer)
        writer.close()
    }

    init(direct parser: inout JSONParser) throws {
        var type: OperationType?, typeGiven = false, record: RecordPayload?, recordGiven = false, desiredKeys: [String]?
        try parser.forEachMember { parser, key in
            switch key {
            case "operationType":
                typeGiven = true
                type = nil
                guard let name = try parser.directOptionalString() else { return }
                guard let known = OperationType(rawValue: name) else {
                    throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "Cannot initialize OperationType from invalid String value \(name)"))
                }
                type = known
            case "record":
                recordGiven = true
                record = try parser.takeNull() ? nil : try RecordPayload(direct: &parser)
            case "desiredKeys": desiredKeys = try parser.directOptionalStrings()
            default: try parser.skipValue()
            }
        }
        guard let type else { throw typeGiven ? DecodingError.null(String.self, at: "operationType") : DecodingError.missing("operationType") }
        guard let record else { throw recordGiven ? DecodingError.null(RecordPayload.self, at: "record") : DecodingError.missing("record") }
        self.init(type, record, desiredKeys: desiredKeys)
    }
}

extension ModifyRecordsRequest: Codable, JSONDirectWritable, JSONDirectDecodable {
    public init(from decoder: any Decoder) throws { self = try JSONWire.decode(Self.self, from: decoder) }
    public func encode(to encoder: any Encoder) throws { try JSONWire.encode(self, to: encoder) }

    /// `{"atomic"?, "desiredKeys"?, "numbersAsStrings"?, "operations", "recordSyncDryRun"?, "zoneID"?}`.
    func write(to writer: inout JSONWriter) throws {
        var first = true
        writer.open()
        if let atomic { writer.key("atomic", first: &first); writer.writeBool(atomic) }
        if let desiredKeys { writer.key("desiredKeys", first: &first); writer.array(desiredKeys) { $0.writeString($1) } }
        if let numbersAsStrings { writer.key("numbersAsStrings", first: &first); writer.writeBool(numbersAsStrings) }
        writer.key("operations", first: &first)
        try writer.array(operations) { try $1.write(to: &$0) }
        if let recordSyncDryRun { writer.key("recordSyncDryRun", first: &first); writer.writeBool(recordSyncDryRun) }
        if let zoneID { writer.key("zoneID", first: &first); zoneID.write(to: &writer) }
        writer.close()
    }

    init(direct parser: inout JSONParser) throws {
        var operations: [RecordOperation]?, zoneID: ZoneID?, atomic: Bool?, desiredKeys: [String]?, numbersAsStrings: Bool?, dryRun: Bool?
        try parser.forEachMember { parser, key in
            switch key {
            case "operations": operations = try parser.directArray(of: RecordOperation.self)
            case "zoneID": zoneID = try parser.takeNull() ? nil : try ZoneID(direct: &parser)
            case "atomic": atomic = try parser.directOptionalBool()
            case "desiredKeys": desiredKeys = try parser.directOptionalStrings()
            case "numbersAsStrings": numbersAsStrings = try parser.directOptionalBool()
            case "recordSyncDryRun": dryRun = try parser.directOptionalBool()
            default: try parser.skipValue()
            }
        }
        guard let operations else { throw DecodingError.missing("operations") }
        self.init(operations: operations, zoneID: zoneID, atomic: atomic, desiredKeys: desiredKeys)
        self.numbersAsStrings = numbersAsStrings
        self.recordSyncDryRun = dryRun
    }
}

/// An operation with its JSON, encoded once: the client sizes each operation against its
/// request limits and then sends those same bytes.
package struct EncodedOperation: Sendable {
    package let operation: RecordOperation
    /// The operation's JSON; empty when it could not be encoded (see ``failure``).
    package let json: [UInt8]
    /// Why the operation could not be encoded (a non-finite number, say), or `nil`.
    package let failure: String?

    package init(_ operation: RecordOperation) {
        var writer = JSONWriter()
        self.operation = operation
        do {
            try operation.write(to: &writer)
            self.json = writer.bytes
            self.failure = nil
        } catch {
            self.json = []
            self.failure = "\(error)"
        }
    }
}

/// A `records/modify` body whose operations are already encoded; written as the
/// ``ModifyRecordsRequest`` it stands for, byte for byte.
package struct EncodedModifyRecordsRequest: Sendable, Encodable, JSONDirectWritable {
    package var operations: [EncodedOperation]
    package var zoneID: ZoneID?
    package var atomic: Bool?

    package init(operations: [EncodedOperation], zoneID: ZoneID?, atomic: Bool?) {
        self.operations = operations
        self.zoneID = zoneID
        self.atomic = atomic
    }

    /// The request it stands for.
    package var request: ModifyRecordsRequest {
        ModifyRecordsRequest(operations: operations.map(\.operation), zoneID: zoneID, atomic: atomic)
    }

    package func encode(to encoder: any Encoder) throws { try JSONWire.encode(self, to: encoder) }

    func write(to writer: inout JSONWriter) throws {
        if let failure = operations.lazy.compactMap(\.failure).first {
            throw EncodingError.invalidValue(operations, .init(codingPath: [], debugDescription: failure))
        }
        var first = true
        writer.open()
        if let atomic { writer.key("atomic", first: &first); writer.writeBool(atomic) }
        writer.key("operations", first: &first)
        writer.array(operations) { $0.bytes.append(contentsOf: $1.json) }
        if let zoneID { writer.key("zoneID", first: &first); zoneID.write(to: &writer) }
        writer.close()
    }
}

// MARK: - Answers

extension RecordsResponse: Codable, JSONDirectWritable, JSONDirectDecodable {
    public init(from decoder: any Decoder) throws { self = try JSONWire.decode(Self.self, from: decoder) }
    public func encode(to encoder: any Encoder) throws { try JSONWire.encode(self, to: encoder) }

    /// `{"includedRecords"?, "records"}`.
    func write(to writer: inout JSONWriter) throws {
        var first = true
        writer.open()
        if let includedRecords {
            writer.key("includedRecords", first: &first)
            try writer.array(includedRecords) { try $1.write(to: &$0) }
        }
        writer.key("records", first: &first)
        if let storedFields, storedFields.count == records.count {
            try writer.array(records.indices) { writer, index in
                if case .success(let record, let cascaded) = records[index], let text = storedFields[index],
                   WireForm.storedFieldsAnswerAsTheyAre(text, numbersAsStrings: writer.numbersAsStrings) {
                    try record.write(to: &writer, cascadedRecordNames: cascaded, fieldsJSON: text)
                } else {
                    try records[index].write(to: &writer)
                }
            }
        } else {
            try writer.array(records) { try $1.write(to: &$0) }
        }
        writer.close()
    }

    init(direct parser: inout JSONParser) throws {
        var records: [RecordResult]?, included: [Record]?
        try parser.forEachMember { parser, key in
            switch key {
            case "records": records = try parser.directArray(of: RecordResult.self)
            case "includedRecords": included = try parser.takeNull() ? nil : try parser.directArray(of: Record.self)
            default: try parser.skipValue()
            }
        }
        guard let records else { throw DecodingError.missing("records") }
        self.init(records: records, includedRecords: included)
    }
}

extension QueryRecordsResponse: Codable, JSONDirectWritable, JSONDirectDecodable {
    public init(from decoder: any Decoder) throws { self = try JSONWire.decode(Self.self, from: decoder) }
    public func encode(to encoder: any Encoder) throws { try JSONWire.encode(self, to: encoder) }

    /// `{"continuationMarker"?, "includedRecords"?, "records"}`.
    func write(to writer: inout JSONWriter) throws {
        var first = true
        writer.open()
        if let continuationMarker { writer.key("continuationMarker", first: &first); writer.writeString(continuationMarker) }
        if let includedRecords {
            writer.key("includedRecords", first: &first)
            try writer.array(includedRecords) { try $1.write(to: &$0) }
        }
        writer.key("records", first: &first)
        try writer.array(records) { try $1.write(to: &$0) }
        writer.close()
    }

    init(direct parser: inout JSONParser) throws {
        var records: [Record]?, marker: String?, included: [Record]?
        try parser.forEachMember { parser, key in
            switch key {
            case "records": records = try parser.directArray(of: Record.self)
            case "continuationMarker": marker = try parser.directOptionalString()
            case "includedRecords": included = try parser.takeNull() ? nil : try parser.directArray(of: Record.self)
            default: try parser.skipValue()
            }
        }
        guard let records else { throw DecodingError.missing("records") }
        self.init(records: records, continuationMarker: marker, includedRecords: included)
    }
}
