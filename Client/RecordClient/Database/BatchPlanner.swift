import Foundation
import RecordModel

/// Splits a batch of saves and deletes into requests the server accepts: every request holds
/// at most `limit` operations and about `maximumBytes` of JSON, every record is sent in the
/// same or a later request than the records it references, and a reference cycle stays in one
/// request. Deletes follow the saves.
struct BatchPlanner {
    let limit: Int
    var maximumBytes: Int = 8 * 1024 * 1024

    /// The requests, as lists of operations, in sending order.
    ///
    /// - Throws: `LIMIT_EXCEEDED` when a reference cycle is larger than one request can hold.
    func plan(saves: [RecordOperation], deletes: [RecordOperation]) throws -> [[RecordOperation]] {
        try planEncoded(saves: saves, deletes: deletes).map { $0.map(\.operation) }
    }

    /// The requests, as lists of operations each encoded once (to be sized, and then sent as
    /// those bytes), in sending order. An operation that cannot be encoded counts as empty here;
    /// its request fails when it is sent (``EncodedOperation/failure``).
    ///
    /// A batch that fits one request is that request, saves then deletes in the order given:
    /// the server saves targets before sources whatever the order, so only a batch split
    /// across requests needs ordering here.
    ///
    /// - Throws: `LIMIT_EXCEEDED` when a reference cycle is larger than one request can hold.
    func planEncoded(saves: [RecordOperation], deletes: [RecordOperation]) throws -> [[EncodedOperation]] {
        if saves.count + deletes.count <= limit {
            let encoded = saves.map(EncodedOperation.init)
            if encoded.reduce(0, { $0 + $1.json.count }) <= maximumBytes {
                return encoded.isEmpty && deletes.isEmpty ? [] : [encoded + deletes.map(EncodedOperation.init)]
            }
            return try planOrdered(encoded, deletes: deletes)
        }
        return try planOrdered(saves.map(EncodedOperation.init), deletes: deletes)
    }

    /// ``planEncoded(saves:deletes:)`` for a batch that needs more than one request: the saves
    /// (already encoded) in dependency order, split by count and bytes.
    private func planOrdered(_ saves: [EncodedOperation], deletes: [RecordOperation]) throws -> [[EncodedOperation]] {
        let groups = DependencyOrder.savingOrder(saves.map(\.operation).map { operation in
            (operation.record.recordName ?? "", Self.targets(of: operation.record))
        })
        var requests: [[EncodedOperation]] = []
        var current: [EncodedOperation] = []
        var currentBytes = 0
        for group in groups {
            guard group.count <= limit else {
                throw RecordSyncError(.limitExceeded, "a reference cycle of \(group.count) records cannot be split across requests of at most \(limit) operations")
            }
            let encoded = group.map { saves[$0] }
            let bytes = encoded.reduce(0) { $0 + $1.json.count }
            if !current.isEmpty && (current.count + group.count > limit || currentBytes + bytes > maximumBytes) {
                requests.append(current)
                current = []
                currentBytes = 0
            }
            current += encoded
            currentBytes += bytes
        }
        for delete in deletes {
            if current.count == limit {
                requests.append(current)
                current = []
            }
            current.append(EncodedOperation(delete))
        }
        if !current.isEmpty { requests.append(current) }
        return requests
    }

    /// The names a payload's reference fields and its `parent` point at.
    static func targets(of payload: RecordPayload) -> [String] {
        [payload.parent?.name].compactMap { $0 } + (payload.fields ?? [:]).values.flatMap { raw -> [String] in
            guard raw.type == nil || raw.type?.scalar == .reference else { return [] }
            switch raw.value {
            case .object(let members):
                if case .string(let name)? = members["recordName"] { return [name] }
            case .array(let elements):
                return elements.compactMap { if case .string(let name)? = $0["recordName"] { name } else { nil } }
            default: break
            }
            return []
        }
    }
}
