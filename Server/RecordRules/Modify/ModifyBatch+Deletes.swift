import Foundation
import RecordModel

extension ModifyBatch {
    /// Runs the deletes (in request order), each with its `DELETE_SELF` cascade, then applies
    /// the `VALIDATE` rule of ``DeleteRounds``.
    ///
    /// In a zone without `VALIDATE` references (one primitive call; deletes never add references)
    /// nothing can block a delete, so the deletes run without savepoints: a delete throws only
    /// before it writes. A savepoint makes SQLite keep a copy of every page the deletes change,
    /// which a large cascade pays for (docs/performance.md, "Deletes without savepoints…").
    ///
    /// - Returns: `false` when an atomic batch must stop.
    mutating func runDeletes(_ indices: [Int]) throws -> Bool {
        if indices.isEmpty { return true }
        let validating = try transaction.anyValidatingReference(inZone: zone.key)
        if !validating {
            for index in indices {
                guard try attempt([index], savepoint: false, { batch in try batch.delete(index, isLast: index == indices.last, noting: false) }) else { return false }
            }
            return true
        }
        var rounds = DeleteRounds(operations: indices, atomic: atomic)
        var action = rounds.start()
        while case .run(let active) = action {
            let before = (progress, results)
            var blockers: [ValidatingBlocker] = []
            var stopped = false
            try transaction.savepoint {
                try transaction.startDeleteRound()
                for index in active {
                    guard try attempt([index], { batch in try batch.delete(index, isLast: index == active.last, noting: true) }) else {
                        stopped = true
                        return false
                    }
                }
                blockers = try transaction.validatingBlockers(inZone: zone.key)
                return blockers.isEmpty
            }
            if stopped { return false }
            // A blocking record the caller may not read is not named.
            let unreadable = access.readsEverything || blockers.isEmpty ? [] : Set(try transaction.records(named: blockers.map(\.source), inZone: zone.key, zoneID: zone.zoneID)
                .filter { !access.mayRead($0) }.map(\.recordName))
            let failures: [DeleteRounds.Failure]
            (action, failures) = rounds.roundEnded(blockers: blockers, names: names, unreadable: unreadable)
            if action == .keep { return true }
            (progress, results) = before
            for failure in failures { results.fail(failure.operation, failure.error, name: name(of: failure.operation)) }
        }
        return action != .stop
    }

    /// Clears the `NULLIFY` references to the records the delete removes, in the `count` records
    /// ``StorageTransaction/collectNullifying(inZone:)`` collected: a single reference field is
    /// removed, a list loses those elements (an emptied list stays, empty). Each record is a
    /// change: a new tag and place in the feed (in byte order of name, before the tombstones),
    /// modified now by the deleter, whoever owns it. Read and written a thousand at a time.
    mutating func nullify(_ count: Int) throws {
        let first = progress.feed.take(count)
        let modified = Stamp(timestamp: now, userRecordName: scope.user.userRecordName)
        var position = 1
        while position <= count {
            let last = min(position + 999, count)
            for record in try transaction.nullifyingRecords(inZone: zone.key, positions: position...last) {
                let targets = Dictionary(grouping: record.references, by: \.field).mapValues { Set($0.map(\.target)) }
                let fields = try Record.fieldsText(record.fields, clearingNullifyReferencesTo: targets)
                let sequence = first + Int64(position - 1)
                try transaction.updateRecord(RecordWrite(name: record.name, recordType: record.recordType, changeTag: ZoneFeedWriter.changeTag(sequence),
                                                         fields: fields, created: record.created, modified: modified, sequence: sequence,
                                                         assetBytes: nil, parent: record.parent), inZone: zone.key)
                if firing != nil { progress.saved.append((record.name, false)) }
                if shareReach != nil { progress.written.insert(record.name) }
                position += 1
            }
            position = last + 1
        }
        try transaction.removeNullifiedReferences(inZone: zone.key)
    }

    /// The record name of operation `index`, if it was validated.
    private func name(of index: Int) -> String? { operations[index]?.name }

    /// Deletes one record and everything its `DELETE_SELF` cascade reaches; with `noting`, notes
    /// the removed records that something holds a `VALIDATE` reference to, for the round's check.
    /// `isLast`: no delete of the batch runs after this one. Its errors (`NOT_FOUND`, `CONFLICT`,
    /// `ACCESS_DENIED`, `INTERNAL_ERROR` for an operation never validated) are thrown before it
    /// writes anything.
    mutating func delete(_ index: Int, isLast: Bool, noting: Bool) throws {
        let operation = try prepared(index)
        let name = operation.name
        if progress.cascadedNames.contains(name) {
            results.succeed(index, .success(Record(recordName: name, recordType: "", zoneID: zone.zoneID, deleted: true), cascadedRecordNames: []))
            return
        }
        let stored = try transaction.record(named: name, inZone: zone.key, zoneID: zone.zoneID)
        if let stored, stored.recordType == ShareInfo.recordType, access.participation?.parts.contains(where: { $0.share == name }) == true {
            // A participant who deletes the share leaves it; the share stays.
            try leaveShare(stored)
            results.succeed(index, .success(Record(recordName: name, recordType: stored.recordType, zoneID: zone.zoneID, deleted: true), cascadedRecordNames: []))
            return
        }
        let current = try SaveRules.checkDelete(operation.type, name: name, changeTag: operation.changeTag, against: stored, access: access)
        let count = try transaction.collectCascade(from: name, inZone: zone.key)
        if count > 1, let participation = access.participation, participation.members != nil {
            // Nor through a DELETE_SELF cascade.
            let doomed = Set(try transaction.doomedNames())
            if let part = participation.parts.first(where: { $0.root.map(doomed.contains) == true }) {
                throw RecordSyncError(.accessDenied, "only the owner deletes the root of share \(NameRules.quoted(part.share)); deleting \(NameRules.quoted(name)) would take it along", recordName: name)
            }
        }
        // Only the doomed records that something holds a VALIDATE reference to can block the
        // batch (references are only removed while deleting, never added), so only they are noted.
        if noting {
            try transaction.noteValidatedInCascade(operation: index, inZone: zone.key)
        }
        if let firing, firing.firesOnDeletes {
            progress.deleteMatches += try firing.matches(try transaction.doomedNames(), reason: 3, in: transaction)
        }
        let nullifying = try transaction.collectNullifying(inZone: zone.key)
        if nullifying > 0 {
            // Clearing writes as it goes: a failure part way (stored text that does not read)
            // must end the whole request, never leave some sources cleared under feed numbers
            // the batch then hands out again.
            do { try nullify(nullifying) } catch let error as RecordSyncError { throw NullifyFailed(error: error) }
        }
        // A DELETE_SELF reference is its holder's consent: the cascade takes records whoever
        // created them, but names only those the caller may read.
        let hidden = access.readsEverything || count <= 1 ? [] : Set(try transaction.records(named: try transaction.doomedNames(), inZone: zone.key, zoneID: zone.zoneID)
            .filter { !access.mayRead($0) }.map(\.recordName))
        var cascaded = try transaction.deleteCascade(root: name, inZone: zone.key, firstSequence: progress.feed.take(count))
        if current.recordType == ShareInfo.recordType || cascaded.contains(ShareInfo.zoneShareName) {
            try deleteShare(named: current.recordType == ShareInfo.recordType ? name : ShareInfo.zoneShareName)
        }
        cascaded += try deleteSharesOfRoots([name] + cascaded)
        if shareReach != nil { progress.written.formUnion([name] + cascaded) }
        // Later deletes of the batch skip what this one cascaded to; the last needs no note.
        if !isLast { progress.cascadedNames.formUnion(cascaded) }
        results.succeed(index, .success(Record(recordName: name, recordType: current.recordType, zoneID: zone.zoneID, deleted: true),
                                        cascadedRecordNames: hidden.isEmpty ? cascaded : cascaded.filter { !hidden.contains($0) }))
    }
}

/// A `NULLIFY` rewrite that failed part way: not a ``RecordSyncError``, so no operation's
/// failure absorbs it and the request's transaction rolls back.
struct NullifyFailed: Error, CustomStringConvertible {
    var error: RecordSyncError
    var description: String { "clearing NULLIFY references failed: \(error.reason)" }
}
