import Foundation
import RecordClient

/// The human-writable batch format of `records modify` and `import`: a JSON array, or one JSON
/// object per line (NDJSON). Each entry:
///
/// ```
/// {"recordName": "monet", "recordType": "Artist", "fields": {"name": "Claude Monet", "born": 1840}}
/// {"recordName": "lilies", "recordType": "Artwork", "fields": {"artist": {"ref": "monet", "action": "deleteSelf"}}}
/// {"op": "delete", "recordName": "old"}
/// ```
///
/// `op` is `save` (the default: create or replace), `delete`, or any wire `operationType`.
/// Field values are plain JSON (typed by the server's schema, or inferred); a reference is
/// `{"ref": NAME, "action": "none" | "deleteSelf" | "validate" | "nullify"}`; the full wire form
/// `{"value": …, "type": "…"}` is accepted too. An entry in the wire shape of a record
/// (`export` writes those) is accepted as a save.
enum BatchFile {
    /// Reads a batch.
    ///
    /// - Throws: `BAD_REQUEST` naming the entry (line or index) and what is wrong.
    static func operations(from data: Data) throws -> [RecordOperation] {
        let text = String(decoding: data, as: UTF8.self)
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        func converted(_ json: JSONValue, _ label: String) throws -> RecordOperation {
            do {
                return try operation(from: json)
            } catch let error as RecordSyncError {
                throw RecordSyncError(.badRequest, "\(label): \(error.reason)")
            }
        }
        if trimmed.hasPrefix("[") {
            guard case .array(let elements)? = try? JSONValue.parse(trimmed) else {
                throw RecordSyncError(.badRequest, "the batch is not a valid JSON array")
            }
            return try elements.enumerated().map { try converted($0.element, "entry \($0.offset + 1)") }
        }
        var operations: [RecordOperation] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let content = line.trimmingCharacters(in: .whitespaces)
            guard !content.isEmpty else { continue }
            guard let json = try? JSONValue.parse(content) else {
                throw RecordSyncError(.badRequest, "line \(number + 1): not a JSON object")
            }
            operations.append(try converted(json, "line \(number + 1)"))
        }
        return operations
    }

    static func operation(from json: JSONValue) throws -> RecordOperation {
        guard case .object(let entry) = json else { throw RecordSyncError(.badRequest, "an entry must be a JSON object") }
        guard case .string(let name)? = entry["recordName"] else { throw RecordSyncError(.badRequest, "recordName (a string) is required") }
        let op: String
        switch entry["op"] ?? entry["operationType"] {
        case nil: op = "save"
        case .string(let value)?: op = value
        default: throw RecordSyncError(.badRequest, "op must be a string")
        }
        let type: OperationType
        switch op {
        case "save": type = .forceReplace
        case "delete": type = .forceDelete
        default:
            guard let wire = OperationType(rawValue: op) else {
                throw RecordSyncError(.badRequest, "op '\(op)' is not save, delete or a wire operationType")
            }
            type = wire
        }
        var tag: String?
        if case .string(let value)? = entry["recordChangeTag"] { tag = value }
        if type.isDelete { return RecordOperation(type, RecordPayload(recordName: name, recordChangeTag: tag)) }
        guard case .string(let recordType)? = entry["recordType"] else { throw RecordSyncError(.badRequest, "recordType (a string) is required for a save") }
        var fields: [String: RawFieldValue] = [:]
        if case .object(let given)? = entry["fields"] {
            for (key, value) in given {
                do {
                    fields[key] = try field(value)
                } catch let error as RecordSyncError {
                    throw RecordSyncError(.badRequest, "field '\(key)': \(error.reason)")
                }
            }
        } else if entry["fields"] != nil {
            throw RecordSyncError(.badRequest, "fields must be an object")
        }
        var parent: RecordPayload.ParentChange?
        switch entry["parent"] {
        case nil: break
        case .null?: parent = .remove
        case .string(let name)?: parent = .set(name)
        case .object(let reference)?:
            guard case .string(let name)? = reference["recordName"] else { throw RecordSyncError(.badRequest, "parent must be a record name or {\"recordName\": …}") }
            parent = .set(name)
        default: throw RecordSyncError(.badRequest, "parent must be a record name or {\"recordName\": …}")
        }
        return RecordOperation(type, RecordPayload(recordName: name, recordType: recordType, recordChangeTag: tag, fields: fields, parent: parent))
    }

    /// A field from its plain or wire JSON form.
    static func field(_ json: JSONValue) throws -> RawFieldValue {
        if case .object(let members) = json {
            if members["ref"] != nil { return RawFieldValue(try reference(json)) }
            if case .string(let path)? = members["asset"], members.count == 1 { return RawFieldValue(value: asset(path), type: FieldType(.asset)) }
            if let value = members["value"] {
                var type: FieldType?
                if case .string(let name)? = members["type"] {
                    guard let parsed = FieldType(rawValue: name) else { throw RecordSyncError(.badRequest, "unknown type '\(name)'") }
                    type = parsed
                }
                return RawFieldValue(value: value, type: type)
            }
        }
        if case .array(let elements) = json, let first = elements.first, first["ref"] != nil {
            return RawFieldValue(.list(.reference, try elements.map(reference)))
        }
        if case .array(let elements) = json, !elements.isEmpty {
            let paths = elements.compactMap { element -> String? in if case .string(let path)? = element["asset"] { path } else { nil } }
            if paths.count == elements.count { return RawFieldValue(value: .array(paths.map(asset)), type: FieldType(.asset, isList: true)) }
        }
        return RawFieldValue(value: json, type: nil)
    }

    /// A file to upload as an asset (`{"asset": "path"}`), relative to the working directory.
    static func asset(_ path: String) -> JSONValue {
        let url = URL(fileURLWithPath: path).standardizedFileURL
        guard case .asset(let json) = Asset(fileURL: url).fieldValue else { return .null }
        return json
    }

    static func reference(_ json: JSONValue) throws -> FieldValue {
        guard case .string(let target)? = json["ref"] else { throw RecordSyncError(.badRequest, "ref must be a record name") }
        let action: Reference.Action
        switch json["action"] {
        case nil, .string("none")?, .string("NONE")?: action = .none
        case .string("deleteSelf")?, .string("DELETE_SELF")?: action = .deleteSelf
        case .string("validate")?, .string("VALIDATE")?: action = .validate
        case .string("nullify")?, .string("NULLIFY")?: action = .nullify
        default: throw RecordSyncError(.badRequest, "action must be none, deleteSelf, validate or nullify")
        }
        return .reference(Reference(recordName: target, action: action))
    }
}
