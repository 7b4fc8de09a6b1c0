import RecordModel

/// The rule that a record still holding a `VALIDATE` reference blocks the deletion of its target,
/// as a plain state machine: it says which deletes to run, is told which records block them,
/// and answers what fails and whether to run again. No storage.
///
/// The deletes run together (in a savepoint), then the store is asked which remaining records
/// hold a `VALIDATE` reference to a record they removed. Checking after all of them lets a batch
/// delete a target and its sources in any order, and never trusts a later delete that then fails.
/// If none blocks, the round is kept. Otherwise the round is undone, each blocked operation
/// fails with `VALIDATING_REFERENCE_ERROR`, and an atomic batch stops while a non-atomic one runs
/// the others again (whose deletes may now be blocked in turn, since a source they counted on
/// deleting stays).
struct DeleteRounds: Sendable {
    /// What to do next.
    enum Action: Equatable, Sendable {
        /// Run these delete operations (in this order) as one round, then report ``roundEnded(blockers:)``.
        case run([Int])
        /// Keep the last round: the deletes are done.
        case keep
        /// Undo the last round and stop: the atomic batch failed.
        case stop
    }

    /// A blocked operation's failure.
    struct Failure: Equatable, Sendable {
        var operation: Int
        var error: RecordSyncError

        static func == (lhs: Failure, rhs: Failure) -> Bool {
            lhs.operation == rhs.operation && lhs.error.code == rhs.error.code && lhs.error.reason == rhs.error.reason
        }
    }

    let operations: [Int]
    let atomic: Bool
    private(set) var excluded: Set<Int> = []

    /// Rounds over the delete operations `operations` (in request order).
    init(operations: [Int], atomic: Bool) {
        self.operations = operations
        self.atomic = atomic
    }

    /// The first round: every delete.
    func start() -> Action { .run(operations) }

    /// A round ended with these blockers (`names` gives each operation's record name; the
    /// sources in `unreadable`, records the caller may not read, go unnamed).
    ///
    /// - Returns: what to do, and the failures to record once the round is undone.
    mutating func roundEnded(blockers: [ValidatingBlocker], names: (Int) -> String?, unreadable: Set<String> = []) -> (Action, [Failure]) {
        guard !blockers.isEmpty else { return (.keep, []) }
        var failures: [Failure] = []
        for blocker in blockers where excluded.insert(blocker.operation).inserted {
            failures.append(Failure(operation: blocker.operation, error: RecordSyncError(
                .validatingReferenceError,
                unreadable.contains(blocker.source)
                    ? "cannot delete \(NameRules.quoted(blocker.target)): a record you may not read holds a VALIDATE reference to it"
                    : "cannot delete \(NameRules.quoted(blocker.target)): \(NameRules.quoted(blocker.source)) holds a VALIDATE reference to it (delete that record in the same batch)",
                recordName: names(blocker.operation))))
        }
        if atomic { return (.stop, failures) }
        return (.run(operations.filter { !excluded.contains($0) }), failures)
    }
}
