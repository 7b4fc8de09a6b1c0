import RecordModel
import Testing

@Suite struct DependencyOrderTests {
    @Test func targetsComeBeforeSources() {
        // artwork -> artist -> label, listed sources first.
        let order = DependencyOrder.savingOrder([("artwork", ["artist"]), ("artist", ["label"]), ("label", [])])
        #expect(order == [[2], [1], [0]])
    }

    @Test func independentItemsKeepTheirOrder() {
        #expect(DependencyOrder.savingOrder([("a", []), ("b", []), ("c", ["zzz-not-in-batch"])]) == [[0], [1], [2]])
    }

    @Test func cyclesFormOneGroupAfterTheirTargets() {
        let order = DependencyOrder.savingOrder([("a", ["b"]), ("b", ["a", "c"]), ("c", [])])
        #expect(order == [[2], [0, 1]])
    }

    @Test func aSelfReferenceIsItsOwnGroup() {
        #expect(DependencyOrder.savingOrder([("a", ["a"])]) == [[0]])
    }

    @Test func aVeryLongChainDoesNotOverflowTheStack() {
        let count = 200_000
        let order = DependencyOrder.groups(count: count) { $0 + 1 < count ? [$0 + 1] : [] }
        #expect(order.count == count)
        #expect(order.first == [count - 1])
        #expect(order.last == [0])
    }
}
