import Foundation

// Hand-written JSON forms of the types every record passes through on the wire and in storage.
// ``JSONValueEncoder`` and ``JSONValueDecoder`` use them instead of the `Codable` conformances
// (which stay, and define the format): `Codable`'s generic containers cost tens of microseconds
// per record, most of a save's CPU time. `JSONTreeTests` checks that both forms agree, and the
// decoding errors are the same `DecodingError`s (kinds and coding paths) `Codable` raises.

/// A type with a hand-written JSON tree form.
protocol JSONTreeEncodable {
    func jsonTree() throws -> JSONValue
}

/// A type that reads itself from a JSON tree, raising `Codable`'s errors.
protocol JSONTreeDecodable {
    init(jsonTree value: JSONValue, path: [any CodingKey]) throws
}

/// The members of a JSON object being decoded, with `Codable`-shaped errors.
struct TreeObject {
    let members: [String: JSONValue]
    let path: [any CodingKey]

    init(_ value: JSONValue, path: [any CodingKey]) throws {
        switch value {
        case .object(let members): self.members = members
        case .null: throw DecodingError.valueNotFound([String: Any].self, .init(codingPath: path, debugDescription: "Cannot get keyed decoding container -- found null value instead"))
        default: throw TreeDecoder.mismatch([String: Any].self, value, path)
        }
        self.path = path
    }

    func required<T: Decodable>(_ key: String, as type: T.Type = T.self) throws -> T {
        guard let value = members[key] else {
            throw DecodingError.keyNotFound(TreeKey(stringValue: key), .init(codingPath: path, debugDescription: "No value associated with key \(key)."))
        }
        return try TreeDecoder.unbox(value, as: type, path: path + [TreeKey(stringValue: key)])
    }

    func optional<T: Decodable>(_ key: String, as type: T.Type = T.self) throws -> T? {
        guard let value = members[key], value != .null else { return nil }
        return try TreeDecoder.unbox(value, as: type, path: path + [TreeKey(stringValue: key)])
    }

    func string(_ key: String) throws -> String? {
        switch members[key] {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case let other?: throw TreeDecoder.mismatch(String.self, other, path + [TreeKey(stringValue: key)])
        }
    }

    /// A `RawRepresentable` enum by its raw string, with `Codable`'s error for an unknown value.
    func enumeration<E: RawRepresentable>(_ key: String, as type: E.Type) throws -> E? where E.RawValue == String {
        guard let raw = try string(key) else { return nil }
        guard let value = E(rawValue: raw) else {
            throw DecodingError.dataCorrupted(.init(codingPath: path + [TreeKey(stringValue: key)], debugDescription: "Cannot initialize \(E.self) from invalid String value \(raw)"))
        }
        return value
    }

    func keyNotFound(_ key: String) -> DecodingError {
        .keyNotFound(TreeKey(stringValue: key), .init(codingPath: path, debugDescription: "No value associated with key \(key)."))
    }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// Sets `key` when `value` is not nil (`encodeIfPresent`).
    mutating func set(_ key: String, _ value: JSONValue?) {
        if let value { self[key] = value }
    }
}

extension ZoneID: JSONTreeEncodable, JSONTreeDecodable {
    func jsonTree() -> JSONValue {
        var members: [String: JSONValue] = ["zoneName": .string(zoneName)]
        members.set("ownerRecordName", ownerRecordName.map(JSONValue.string))
        return .object(members)
    }

    init(jsonTree value: JSONValue, path: [any CodingKey]) throws {
        let object = try TreeObject(value, path: path)
        guard let name = try object.string("zoneName") else {
            if object.members["zoneName"] == nil { throw object.keyNotFound("zoneName") }
            throw TreeDecoder.notFound(String.self, path + [TreeKey(stringValue: "zoneName")])
        }
        self.init(zoneName: name, ownerRecordName: try object.string("ownerRecordName"))
    }
}

extension Stamp: JSONTreeEncodable, JSONTreeDecodable {
    func jsonTree() -> JSONValue {
        var members: [String: JSONValue] = ["timestamp": .int(timestamp), "userRecordName": .string(userRecordName)]
        members.set("deviceID", deviceID.map(JSONValue.string))
        return .object(members)
    }

    init(jsonTree value: JSONValue, path: [any CodingKey]) throws {
        let object = try TreeObject(value, path: path)
        self.init(timestamp: try object.required("timestamp"), userRecordName: try object.required("userRecordName"),
                  deviceID: try object.string("deviceID"))
    }
}

extension FieldValue: JSONTreeEncodable, JSONTreeDecodable {
    func jsonTree() -> JSONValue {
        let wire = WireForm.type(type)
        var members: [String: JSONValue] = ["type": .string(wire.type.rawValue), "value": wireJSON]
        members.set(WireForm.typeExtensionKey, wire.extensionType.map { .string($0.rawValue) })
        return .object(members)
    }

    init(jsonTree value: JSONValue, path: [any CodingKey]) throws {
        let raw = try RawFieldValue(jsonTree: value, path: path)
        do {
            self = try FieldValue(json: raw.value, type: raw.type, numbersMayBeStrings: raw.type != nil)
        } catch let error as RecordSyncError {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: error.reason))
        }
    }
}

extension RawFieldValue: JSONTreeEncodable, JSONTreeDecodable {
    func jsonTree() -> JSONValue {
        var members: [String: JSONValue] = ["value": value]
        if let type {
            let wire = WireForm.type(type)
            members["type"] = .string(wire.type.rawValue)
            members.set(WireForm.typeExtensionKey, wire.extensionType.map { .string($0.rawValue) })
        }
        return .object(members)
    }

    init(jsonTree value: JSONValue, path: [any CodingKey]) throws {
        let object = try TreeObject(value, path: path)
        var type: FieldType?
        if let name = try object.string("type") {
            guard let known = FieldType(rawValue: name) else {
                throw DecodingError.dataCorrupted(.init(codingPath: path + [TreeKey(stringValue: "type")], debugDescription: "unknown field type \(NameRules.quoted(name))"))
            }
            type = known
        }
        var extensionType: FieldType?
        if case .string(let name)? = object.members[WireForm.typeExtensionKey] { extensionType = FieldType(rawValue: name) }
        self.init(value: object.members["value"] ?? .null, type: WireForm.type(type: type, extensionType: extensionType))
    }
}

/// Fields by name, decoded member by member with their paths.
private func decodeFields<V: JSONTreeDecodable>(_ value: JSONValue, path: [any CodingKey], as type: V.Type) throws -> [String: V] {
    switch value {
    case .object(let members):
        var fields: [String: V] = [:]
        fields.reserveCapacity(members.count)
        for (name, member) in members {
            fields[name] = try V(jsonTree: member, path: path + [TreeKey(stringValue: name)])
        }
        return fields
    case .null: throw DecodingError.valueNotFound([String: Any].self, .init(codingPath: path, debugDescription: "Cannot get keyed decoding container -- found null value instead"))
    default: throw TreeDecoder.mismatch([String: Any].self, value, path)
    }
}

extension Record: JSONTreeEncodable, JSONTreeDecodable {
    func jsonTree() -> JSONValue {
        var members: [String: JSONValue] = ["recordName": .string(recordName), "recordType": .string(recordType)]
        members.set("zoneID", zoneID?.jsonTree())
        if deleted {
            members["deleted"] = .bool(true)
            return .object(members)
        }
        members.set("recordChangeTag", recordChangeTag.map(JSONValue.string))
        members["fields"] = .object(fields.mapValues { $0.jsonTree() })
        members.set("created", created?.jsonTree())
        members.set("modified", modified?.jsonTree())
        return .object(members)
    }

    init(jsonTree value: JSONValue, path: [any CodingKey]) throws {
        let object = try TreeObject(value, path: path)
        guard let name = try object.string("recordName") else {
            if object.members["recordName"] == nil { throw object.keyNotFound("recordName") }
            throw TreeDecoder.notFound(String.self, path + [TreeKey(stringValue: "recordName")])
        }
        var fields: [String: FieldValue] = [:]
        if let members = object.members["fields"], members != .null {
            fields = try decodeFields(members, path: path + [TreeKey(stringValue: "fields")], as: FieldValue.self)
        }
        self.init(recordName: name, recordType: try object.string("recordType") ?? "",
                  zoneID: try object.optional("zoneID"), recordChangeTag: try object.string("recordChangeTag"),
                  fields: fields, created: try object.optional("created"), modified: try object.optional("modified"),
                  deleted: try object.optional("deleted") ?? false)
    }
}

extension RecordResult: JSONTreeEncodable, JSONTreeDecodable {
    func jsonTree() throws -> JSONValue {
        switch self {
        case .success(let record, let cascaded):
            guard let cascaded, case .object(var members) = record.jsonTree() else { return record.jsonTree() }
            members["cascadedRecordNames"] = .array(cascaded.map(JSONValue.string))
            return .object(members)
        case .failure(let error):
            return try JSONValueEncoder().encodeTree(ErrorBody(error))
        }
    }

    init(jsonTree value: JSONValue, path: [any CodingKey]) throws {
        let object = try TreeObject(value, path: path)
        if object.members["serverErrorCode"] != nil {
            self = .failure(try TreeDecoder.unbox(value, as: ErrorBody.self, path: path).error)
        } else {
            self = .success(try Record(jsonTree: value, path: path), cascadedRecordNames: try object.optional("cascadedRecordNames"))
        }
    }
}

extension RecordPayload: JSONTreeEncodable, JSONTreeDecodable {
    func jsonTree() -> JSONValue {
        var members: [String: JSONValue] = [:]
        members.set("recordName", recordName.map(JSONValue.string))
        members.set("recordType", recordType.map(JSONValue.string))
        members.set("recordChangeTag", recordChangeTag.map(JSONValue.string))
        members.set("fields", fields.map { .object($0.mapValues { $0.jsonTree() }) })
        return .object(members)
    }

    init(jsonTree value: JSONValue, path: [any CodingKey]) throws {
        let object = try TreeObject(value, path: path)
        var fields: [String: RawFieldValue]?
        if let members = object.members["fields"], members != .null {
            fields = try decodeFields(members, path: path + [TreeKey(stringValue: "fields")], as: RawFieldValue.self)
        }
        self.init(recordName: try object.string("recordName"), recordType: try object.string("recordType"),
                  recordChangeTag: try object.string("recordChangeTag"), fields: fields)
    }
}

extension RecordOperation: JSONTreeEncodable, JSONTreeDecodable {
    func jsonTree() -> JSONValue {
        var members: [String: JSONValue] = ["operationType": .string(operationType.rawValue), "record": record.jsonTree()]
        members.set("desiredKeys", desiredKeys.map { .array($0.map(JSONValue.string)) })
        return .object(members)
    }

    init(jsonTree value: JSONValue, path: [any CodingKey]) throws {
        let object = try TreeObject(value, path: path)
        guard let type = try object.enumeration("operationType", as: OperationType.self) else {
            if object.members["operationType"] == nil { throw object.keyNotFound("operationType") }
            throw TreeDecoder.notFound(String.self, path + [TreeKey(stringValue: "operationType")])
        }
        guard let record = object.members["record"] else { throw object.keyNotFound("record") }
        if record == .null { throw TreeDecoder.notFound(RecordPayload.self, path + [TreeKey(stringValue: "record")]) }
        self.init(type, try RecordPayload(jsonTree: record, path: path + [TreeKey(stringValue: "record")]),
                  desiredKeys: try object.optional("desiredKeys"))
    }
}
