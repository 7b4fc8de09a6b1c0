import Foundation
import RecordModel

extension Database {
    /// Saves and deletes records (CloudKit's `modifyRecords(saving:deleting:savePolicy:atomically:)`).
    ///
    /// Records may be in several zones; each zone's records go in their own requests. A batch
    /// larger than ``maximumOperationsPerRequest`` is split so that every record is sent in the
    /// same or a later request than the records it references (a reference cycle stays in one
    /// request), and the results are reported per record as if it were one operation.
    /// `atomically` applies to each request: if a request fails, it changes nothing, and the
    /// requests after it are not sent (their records fail with `ATOMIC_ERROR`); requests already
    /// answered stay applied.
    ///
    /// - Returns: a result per saved record (the server's copy, with its new change tag) and
    ///   per deleted ID.
    /// - Throws: a request-level error (authentication, unknown zone, …) raised before anything
    ///   was applied; later failures are reported per record.
    public func modifyRecords(
        saving recordsToSave: [Record], deleting recordIDsToDelete: [Record.ID],
        savePolicy: SavePolicy = .ifServerRecordUnchanged, atomically: Bool = true
    ) async throws -> (saveResults: [Record.ID: Result<Record, RecordSyncError>], deleteResults: [Record.ID: Result<Void, RecordSyncError>]) {
        let recordsToSave = try await uploadingAssets(recordsToSave)
        var zones: [ZoneID] = []
        var saves: [ZoneID: [RecordOperation]] = [:]
        var deletes: [ZoneID: [RecordOperation]] = [:]
        for record in recordsToSave {
            let zone = record.recordID.zoneID
            if saves[zone] == nil && deletes[zone] == nil { zones.append(zone) }
            saves[zone, default: []].append(RecordOperation(savePolicy.operationType(for: record), RecordPayload(record)))
        }
        for id in recordIDsToDelete {
            if saves[id.zoneID] == nil && deletes[id.zoneID] == nil { zones.append(id.zoneID) }
            deletes[id.zoneID, default: []].append(RecordOperation(.forceDelete, RecordPayload(recordName: id.recordName)))
        }

        var saveResults: [Record.ID: Result<Record, RecordSyncError>] = [:]
        var deleteResults: [Record.ID: Result<Void, RecordSyncError>] = [:]
        var anythingSent = false
        for zone in zones {
            let results = try await send(saves: saves[zone] ?? [], deletes: deletes[zone] ?? [], zone: zone,
                                         atomically: atomically, throwFirstFailure: !anythingSent)
            anythingSent = true
            for (operation, result) in results {
                let id = Record.ID(recordName: operation.record.recordName ?? "", zoneID: zone)
                if operation.operationType.isDelete {
                    deleteResults[id] = result.map { _ in () }
                } else {
                    saveResults[id] = result
                }
            }
        }
        return (saveResults, deleteResults)
    }

    /// Sends one zone's operations in as many requests as needed.
    ///
    /// - Returns: each operation with its result, in sending order.
    func send(saves: [RecordOperation], deletes: [RecordOperation], zone: ZoneID, atomically: Bool,
              throwFirstFailure: Bool, progress: (@Sendable (_ done: Int, _ total: Int) -> Void)? = nil) async throws -> [(RecordOperation, Result<Record, RecordSyncError>)] {
        try await sendReportingCascades(saves: saves, deletes: deletes, zone: zone, atomically: atomically,
                                        throwFirstFailure: throwFirstFailure, progress: progress).map { ($0.0, $0.1) }
    }

    /// ``send(saves:deletes:zone:atomically:throwFirstFailure:progress:)``, with the names each
    /// delete's cascade removed.
    func sendReportingCascades(saves: [RecordOperation], deletes: [RecordOperation], zone: ZoneID, atomically: Bool,
                               throwFirstFailure: Bool, progress: (@Sendable (_ done: Int, _ total: Int) -> Void)? = nil) async throws
        -> [(RecordOperation, Result<Record, RecordSyncError>, [String])] {
        // Saves whose answer need not repeat their fields ask for the system fields only.
        var trimmed: Set<String> = []
        let saves = saves.map { operation -> RecordOperation in
            guard let name = operation.record.recordName, Self.answerNeedsNoFields(operation) else { return operation }
            trimmed.insert(name)
            var wire = operation
            wire.desiredKeys = []
            return wire
        }
        let trimmedNames = trimmed
        let requests = try BatchPlanner(limit: maximumOperationsPerRequest, maximumBytes: maximumRequestBytes).planEncoded(saves: saves, deletes: deletes)
        let total = saves.count + deletes.count
        var results: [(RecordOperation, Result<Record, RecordSyncError>, [String])] = []
        var stopped: RecordSyncError?
        for (index, encoded) in requests.enumerated() {
            // As the caller gave them (without the desiredKeys added above).
            let operations = encoded.map { encoded in
                var operation = encoded.operation
                if let name = operation.record.recordName, trimmed.contains(name) { operation.desiredKeys = nil }
                return operation
            }
            if let stopped {
                for operation in operations {
                    results.append((operation, .failure(RecordSyncError(.atomicError, "not sent: an earlier request of this batch failed (\(stopped.code))", recordName: operation.record.recordName, zoneID: zone)), []))
                }
                continue
            }
            // The fields the answer leaves out, worked out while the request is on its way
            // (a child task: off the request's chain of steps).
            async let knownFields: [[String: FieldValue]?] = operations.map { operation in
                guard let name = operation.record.recordName, trimmedNames.contains(name) else { return nil }
                return Self.fieldsKnownLocally(operation)
            }
            let answer: RecordsResponse
            do {
                answer = try await transport.post("records/modify", EncodedModifyRecordsRequest(operations: encoded, zoneID: zone, atomic: atomically), as: RecordsResponse.self)
            } catch let error as RecordSyncError {
                if throwFirstFailure && index == 0 { throw error }
                for operation in operations {
                    var failure = error
                    failure.recordName = operation.record.recordName
                    results.append((operation, .failure(failure), []))
                }
                if atomically { stopped = error }
                continue
            }
            let known = await knownFields
            for (position, operation) in operations.enumerated() {
                guard position < answer.records.count else {
                    results.append((operation, .failure(RecordSyncError(.internalError, "the server did not answer for this record", recordName: operation.record.recordName, zoneID: zone)), []))
                    continue
                }
                switch answer.records[position] {
                case .success(var record, let cascaded):
                    if record.fields.isEmpty, let fields = known[position] {
                        record.fields = fields
                    }
                    results.append((operation, .success(record), cascaded ?? []))
                case .failure(let error): results.append((operation, .failure(error), []))
                }
            }
            if atomically, let failure = answer.records.compactMap(\.error).first { stopped = failure }
            progress?(results.count, total)
        }
        return results
    }

    /// The fields a save will have on the server, when the client knows them without being
    /// told: an operation that replaces every field (`create`, `replace`, `forceReplace`), asks
    /// for all fields back, and types every value. The server stores such values exactly as
    /// sent (a typed value is never resolved against the schema), so its answer need not carry
    /// them: the client asks for the system fields only (`desiredKeys: []`) and fills these in,
    /// halving what a batch of saves brings back.
    static func fieldsKnownLocally(_ operation: RecordOperation) -> [String: FieldValue]? {
        guard answerNeedsNoFields(operation), let raw = operation.record.fields else { return nil }
        var fields: [String: FieldValue] = [:]
        fields.reserveCapacity(raw.count)
        for (name, value) in raw {
            guard let type = value.type else { return nil }
            if value.value == .null { continue }
            guard let field = try? FieldValue(json: value.value, type: type) else { return nil }
            fields[name] = field
        }
        return fields
    }

    /// Whether ``fieldsKnownLocally(_:)`` can work out the operation's fields (checked before
    /// sending, without converting them).
    static func answerNeedsNoFields(_ operation: RecordOperation) -> Bool {
        guard operation.desiredKeys == nil, let raw = operation.record.fields else { return false }
        switch operation.operationType {
        // The server answers an asset with its download link, which only the answer knows.
        case .create, .replace, .forceReplace: return raw.values.allSatisfy { $0.type != nil && $0.type?.scalar != .asset }
        default: return false
        }
    }

    /// Fetches records by ID (CloudKit's `records(for:desiredKeys:)`).
    ///
    /// The records come back targets before sources, so model objects can be linked as they
    /// arrive; IDs that failed (`NOT_FOUND`, …) are listed with their errors for a retry.
    ///
    /// - Parameters:
    ///   - including: extension: reference fields to follow; the records they reach
    ///     (`depth` hops) come back in ``FetchedRecords/includedRecords``.
    /// - Throws: a request-level error (authentication, unknown zone, …).
    public func records(for ids: [Record.ID], desiredKeys: [String]? = nil, including: [String] = [], depth: Int = 1) async throws -> FetchedRecords {
        var found: [Record] = []
        var included: [Record] = []
        var errors: [Record.ID: RecordSyncError] = [:]
        let zones = Dictionary(grouping: ids, by: \.zoneID)
        for zone in ids.map(\.zoneID).uniqued() {
            let zoneIDs = zones[zone] ?? []
            for start in stride(from: 0, to: zoneIDs.count, by: maximumOperationsPerRequest) {
                let chunk = Array(zoneIDs[start..<min(start + maximumOperationsPerRequest, zoneIDs.count)])
                let request = LookupRecordsRequest(records: chunk.map { .init(recordName: $0.recordName) }, zoneID: zone, desiredKeys: desiredKeys,
                                                   include: including.isEmpty ? nil : including, includeDepth: including.isEmpty ? nil : depth)
                let answer = try await transport.post("records/lookup", request, as: RecordsResponse.self)
                for (id, result) in zip(chunk, answer.records) {
                    switch result {
                    case .success(let record, _): found.append(record)
                    case .failure(let error): errors[id] = error
                    }
                }
                included += answer.includedRecords ?? []
            }
        }
        return FetchedRecords(records: found.orderedTargetsFirst(), includedRecords: included.orderedTargetsFirst(),
                              errors: errors, failedIDs: ids.filter { errors[$0] != nil })
    }

    /// Fetches one record (CloudKit's `record(for:)`). Throws `NOT_FOUND` if it does not exist.
    public func record(for id: Record.ID, desiredKeys: [String]? = nil) async throws -> Record {
        let fetched = try await records(for: [id], desiredKeys: desiredKeys)
        if let record = fetched.records.first { return record }
        throw fetched.errors[id] ?? RecordSyncError(.notFound, "record \(NameRules.quoted(id.recordName)) does not exist", recordName: id.recordName)
    }

    /// Saves one record with ``SavePolicy/ifServerRecordUnchanged`` (CloudKit's `save(_:)`).
    ///
    /// - Returns: the server's copy, with its new change tag.
    /// - Throws: the record's error (`CONFLICT` with the server record, `EXISTS`, …).
    @discardableResult
    public func save(_ record: Record) async throws -> Record {
        let results = try await modifyRecords(saving: [record], deleting: [])
        guard let result = results.saveResults[record.recordID] else {
            throw RecordSyncError(.internalError, "the server did not answer for \(NameRules.quoted(record.recordName))")
        }
        switch result {
        case .success(let saved):
            return saved
        case .failure(var error):
            error.clientRecord = record
            throw error
        }
    }

    /// Deletes one record and, on the server, everything its `DELETE_SELF` cascade reaches
    /// (CloudKit's `deleteRecord(withID:)`).
    @discardableResult
    public func deleteRecord(withID id: Record.ID) async throws -> Record.ID {
        let results = try await modifyRecords(saving: [], deleting: [id])
        try results.deleteResults[id]?.get()
        return id
    }
}

extension Array where Element == Record {
    /// The records ordered so that each comes after the records it references (and its parent)
    /// among them.
    func orderedTargetsFirst() -> [Record] {
        DependencyOrder.savingOrder(map { ($0.recordName, $0.references.map(\.reference.recordName) + [$0.parent].compactMap { $0 }) })
            .flatMap { $0.map { self[$0] } }
    }
}

extension Array where Element: Hashable {
    /// The elements without repeats, in first-seen order.
    func uniqued() -> [Element] {
        var seen: Set<Element> = []
        return filter { seen.insert($0).inserted }
    }
}

extension Database {
    /// Sends wire operations (fields whose type may be omitted, so the server's schema types
    /// them) to one zone, split into server-sized requests with every record in the same or a
    /// later request than the records it references, saves before deletes (the server saves a
    /// request's targets before their sources, whatever their order in it).
    ///
    /// - Returns: each operation with its result, in sending order.
    /// - Throws: a request-level error raised before anything was applied.
    ///   - progress: called after each request with the operations answered so far and the total.
    /// - Returns: each operation with its result and, for a delete, the names its cascade removed.
    public func modify(_ operations: [RecordOperation], inZoneWith zoneID: ZoneID = .defaultZone, atomically: Bool = true,
                       progress: (@Sendable (_ done: Int, _ total: Int) -> Void)? = nil) async throws
        -> [(operation: RecordOperation, result: Result<Record, RecordSyncError>, cascadedRecordNames: [String])] {
        let saves = try await uploadingAssets(operations.filter { !$0.operationType.isDelete }, zone: zoneID)
        let deletes = operations.filter { $0.operationType.isDelete }
        return try await sendReportingCascades(saves: saves, deletes: deletes, zone: zoneID, atomically: atomically,
                                               throwFirstFailure: true, progress: progress)
            .map { (operation: $0.0, result: $0.1, cascadedRecordNames: $0.2) }
    }

    /// How many requests ``modify(_:inZoneWith:atomically:)`` would send for `operations`.
    ///
    /// - Throws: `LIMIT_EXCEEDED` when a reference cycle is larger than one request.
    public func requestCount(for operations: [RecordOperation]) throws -> Int {
        try BatchPlanner(limit: maximumOperationsPerRequest, maximumBytes: maximumRequestBytes)
            .plan(saves: operations.filter { !$0.operationType.isDelete }, deletes: operations.filter { $0.operationType.isDelete }).count
    }
}
