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
        let groups = DependencyOrder.savingOrder(saves.map { operation in
            (operation.record.recordName ?? "", Self.targets(of: operation.record))
        })
        var requests: [[RecordOperation]] = []
        var current: [RecordOperation] = []
        var currentBytes = 0
        let encoder = JSONValueEncoder()
        for group in groups {
            guard group.count <= limit else {
                throw RecordSyncError(.limitExceeded, "a reference cycle of \(group.count) records cannot be split across requests of at most \(limit) operations")
            }
            let bytes = group.reduce(0) { $0 + ((try? encoder.encode(saves[$1]).count) ?? 0) }
            if !current.isEmpty && (current.count + group.count > limit || currentBytes + bytes > maximumBytes) {
                requests.append(current)
                current = []
                currentBytes = 0
            }
            current += group.map { saves[$0] }
            currentBytes += bytes
        }
        for delete in deletes {
            if current.count == limit {
                requests.append(current)
                current = []
            }
            current.append(delete)
        }
        if !current.isEmpty { requests.append(current) }
        return requests
    }

    /// The names a payload's reference fields point at.
    static func targets(of payload: RecordPayload) -> [String] {
        (payload.fields ?? [:]).values.flatMap { raw -> [String] in
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
