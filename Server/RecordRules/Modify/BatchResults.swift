import RecordModel

/// The per-operation results of a `records/modify` batch as it runs, and the answer they make:
/// plain values, no storage.
///
/// Each operation gets one result, in request order. A failure is recorded against the
/// operation it names; the other members of a failed reference cycle fail with it; an atomic
/// batch that failed answers every operation with an error (the failures their own, the rest
/// `ATOMIC_ERROR`).
struct BatchResults: Sendable {
    /// The zone every result names.
    let zoneID: ZoneID
    /// The result of each operation so far (`nil`: not decided yet).
    private(set) var results: [RecordResult?]
    /// The record names whose operations failed.
    private(set) var failedNames: Set<String> = []
    /// A saved record's fields as stored, for each result that holds all of them
    /// (``RecordsResponse/storedFields``).
    private var storedFields: [String?]

    init(count: Int, zoneID: ZoneID) {
        self.zoneID = zoneID
        results = Array(repeating: nil, count: count)
        storedFields = Array(repeating: nil, count: count)
    }

    /// Records operation `index`'s success; `storedFields`, the text its save stored when the
    /// result's record holds every field of it.
    mutating func succeed(_ index: Int, _ result: RecordResult, storedFields text: String? = nil) {
        results[index] = result
        storedFields[index] = text
    }

    /// Forgets the results of `indices` (their work was undone).
    mutating func forget(_ indices: [Int]) {
        for index in indices {
            results[index] = nil
            storedFields[index] = nil
        }
    }

    /// Records `error` against operation `index` (which saves or deletes `name`).
    mutating func fail(_ index: Int, _ error: RecordSyncError, name: String?) {
        var error = error
        error.recordName = error.recordName ?? name
        error.zoneID = zoneID
        results[index] = .failure(error)
        if let name { failedNames.insert(name) }
    }

    /// Records `error` against the operation of `indices` it names (or the first), and against
    /// the others a reference-cycle error (`VALIDATING_REFERENCE_ERROR` if that is the cause,
    /// else `ATOMIC_ERROR`) naming the culprit. `names` gives each operation's record name.
    mutating func failGroup(_ indices: [Int], _ error: RecordSyncError, names: (Int) -> String?) {
        let culprit = indices.first { names($0) == error.recordName } ?? indices[0]
        fail(culprit, error, name: names(culprit))
        for index in indices where index != culprit {
            let name = names(index)
            fail(index, RecordSyncError(error.code == .validatingReferenceError ? .validatingReferenceError : .atomicError,
                                        "not saved: it is in a reference cycle with \(NameRules.quoted(names(culprit) ?? "")), which failed",
                                        recordName: name), name: name)
        }
    }

    /// The answer of a batch that ran to its end (an operation never decided is an internal error).
    func response() -> RecordsResponse {
        var response = RecordsResponse(records: results.map { $0 ?? .failure(RecordSyncError(.internalError, "operation was not applied")) })
        if storedFields.contains(where: { $0 != nil }) { response.storedFields = storedFields }
        return response
    }

    /// The answer of an atomic batch that failed: the failures keep their errors, every other
    /// operation is `ATOMIC_ERROR` naming the first failure.
    func atomicFailure(names: (Int) -> String?) -> RecordsResponse {
        let culprit = results.compactMap { $0?.error }.first
        let reason = "not applied: the atomic batch failed" + (culprit.map { " (\($0.recordName.map(NameRules.quoted) ?? "an operation"): \($0.code))" } ?? "")
        return RecordsResponse(records: results.indices.map { index in
            if let error = results[index]?.error { return .failure(error) }
            return .failure(RecordSyncError(.atomicError, reason, recordName: names(index), zoneID: zoneID))
        })
    }
}
