import RecordModel
@testable import RecordRules
import Testing

/// What `VALIDATE` blocks and what a cascade reaches, without a database.
@Suite struct DeleteRulesTests {
    static let names = ["lilies", "monet", "manet", "olympia"]
    static func name(_ index: Int) -> String? { names[index] }

    // MARK: VALIDATE blocking

    @Test func deletesNothingBlocksAreKeptInOneRound() {
        var rounds = DeleteRounds(operations: [0, 2], atomic: true)
        #expect(rounds.start() == .run([0, 2]))
        let (action, failures) = rounds.roundEnded(blockers: [], names: Self.name)
        #expect(action == .keep && failures.isEmpty)
    }

    @Test func aBlockedDeleteStopsAnAtomicBatch() {
        var rounds = DeleteRounds(operations: [1, 2], atomic: true)
        let (action, failures) = rounds.roundEnded(blockers: [ValidatingBlocker(operation: 2, source: "olympia", target: "manet")], names: Self.name)
        #expect(action == .stop)
        #expect(failures.count == 1 && failures[0].operation == 2 && failures[0].error.code == .validatingReferenceError)
        #expect(failures[0].error.reason == "cannot delete 'manet': 'olympia' holds a VALIDATE reference to it (delete that record in the same batch)")
        #expect(failures[0].error.recordName == "manet")
    }

    @Test func aNonAtomicBatchRunsTheOtherDeletesAgainUntilNothingBlocks() {
        var rounds = DeleteRounds(operations: [0, 1, 2], atomic: false)
        // Round 1: deleting manet (2) is blocked; the others run again without it.
        var (action, failures) = rounds.roundEnded(blockers: [ValidatingBlocker(operation: 2, source: "olympia", target: "manet")], names: Self.name)
        #expect(action == .run([0, 1]) && failures.map(\.operation) == [2])
        // Round 2: deleting monet (1) is now blocked (it counted on a source that stays).
        (action, failures) = rounds.roundEnded(blockers: [ValidatingBlocker(operation: 1, source: "lilies", target: "monet")], names: Self.name)
        #expect(action == .run([0]) && failures.map(\.operation) == [1])
        (action, failures) = rounds.roundEnded(blockers: [], names: Self.name)
        #expect(action == .keep && failures.isEmpty)
        #expect(rounds.excluded == [1, 2])
    }

    @Test func whenEveryDeleteIsBlockedTheLastRoundRunsNothing() {
        var rounds = DeleteRounds(operations: [3], atomic: false)
        let (action, _) = rounds.roundEnded(blockers: [ValidatingBlocker(operation: 3, source: "x", target: "olympia")], names: Self.name)
        #expect(action == .run([]))
    }

    // MARK: Cascade reach

    /// Sources of each record (holders of a DELETE_SELF reference to it), in the contract's order.
    static func graph(_ edges: [String: [String]]) -> (String) -> [String] { { edges[$0] ?? [] } }

    @Test func aCascadeReachesEveryOwnedRecordBreadthFirst() {
        let sources = Self.graph(["root": ["b", "a"], "a": ["a1", "a2"], "b": ["b1"], "b1": ["b11"]])
        #expect(CascadeOrder.doomed(root: "root", sources: sources) == ["root", "b", "a", "b1", "a1", "a2", "b11"])
    }

    @Test func aRecordReachedTwiceGoesWhereItWasFirstReachedAndCyclesEnd() {
        // shared is owned by both a and b (first delete wins); c and root own each other.
        let sources = Self.graph(["root": ["a", "b", "c"], "a": ["shared"], "b": ["shared", "b1"], "c": ["root"], "shared": ["a"]])
        #expect(CascadeOrder.doomed(root: "root", sources: sources) == ["root", "a", "b", "c", "shared", "b1"])
    }

    @Test func aRecordNobodyOwnsGoesAlone() {
        #expect(CascadeOrder.doomed(root: "alone", sources: Self.graph([:])) == ["alone"])
    }

    @Test func aLongChainIsWalkedWithoutRecursion() {
        let count = 100_000
        let order = CascadeOrder.doomed(root: "n0", sources: { name in
            let next = Int(name.dropFirst())! + 1
            return next < count ? ["n\(next)"] : []
        })
        #expect(order.count == count && order.last == "n\(count - 1)")
    }
}
