import Foundation

/// Orders items so that each comes after the items it depends on: the batch-ordering logic
/// behind "targets before sources".
///
/// Items that depend on each other in a cycle cannot be ordered; they come out together as
/// one group, which must be written in one transaction (one request).
public enum DependencyOrder {
    /// Groups `count` items (named by index) into strongly connected components, each group
    /// after every group it depends on. Independent items keep their input order, and each
    /// group lists its items in input order.
    ///
    /// - Parameters:
    ///   - count: how many items there are.
    ///   - dependencies: the indices item `i` depends on (must be written first). Indices out
    ///     of range are ignored.
    /// - Returns: the groups; a group of more than one item (or one that depends on itself)
    ///   is a cycle.
    ///
    /// Runs in O(items + dependencies), without recursion, so chains of any length are safe.
    public static func groups(count: Int, dependencies: (Int) -> [Int]) -> [[Int]] {
        let edges = (0..<count).map { dependencies($0).filter { (0..<count).contains($0) } }
        var index = [Int](repeating: -1, count: count)
        var low = [Int](repeating: 0, count: count)
        var onStack = [Bool](repeating: false, count: count)
        var stack: [Int] = []
        var result: [[Int]] = []
        var next = 0

        for root in 0..<count where index[root] == -1 {
            var work: [(node: Int, edge: Int)] = []
            func visit(_ node: Int) {
                index[node] = next
                low[node] = next
                next += 1
                stack.append(node)
                onStack[node] = true
                work.append((node, 0))
            }
            visit(root)
            while let (node, edge) = work.last {
                if edge < edges[node].count {
                    work[work.count - 1].edge += 1
                    let target = edges[node][edge]
                    if index[target] == -1 {
                        visit(target)
                    } else if onStack[target] {
                        low[node] = min(low[node], index[target])
                    }
                    continue
                }
                work.removeLast()
                if let parent = work.last?.node { low[parent] = min(low[parent], low[node]) }
                if low[node] == index[node] {
                    var group: [Int] = []
                    while let member = stack.popLast() {
                        onStack[member] = false
                        group.append(member)
                        if member == node { break }
                    }
                    result.append(group.sorted())
                }
            }
        }
        return result
    }

    /// Orders records for saving: every record after the records it references (among those
    /// given), cycles kept together.
    ///
    /// - Parameter references: for each record, its name and the names it references.
    /// - Returns: groups of indices into `references`, targets first.
    public static func savingOrder(_ references: [(name: String, targets: [String])]) -> [[Int]] {
        var position: [String: Int] = [:]
        position.reserveCapacity(references.count)
        for (i, entry) in references.enumerated() where position[entry.name] == nil { position[entry.name] = i }
        let dependencies = references.map { entry in entry.targets.compactMap { position[$0] } }
        // The usual batch: records that reference only records outside it. Each is its own
        // group, in the order given, as the general walk would find.
        if dependencies.allSatisfy(\.isEmpty) { return references.indices.map { [$0] } }
        return groups(count: references.count) { dependencies[$0] }
    }
}
