/// The order in which a cascading delete removes records, stated as plain code: the contract
/// every engine's ``StorageTransaction/collectCascade(from:inZone:)`` meets (the tombstones are
/// numbered in this order, so it is what a client reads in the change feed). Engines walk the
/// references set-based, never like this; the protocol tests compare them with it.
public enum CascadeOrder {
    /// The records deleting `root` removes, in order: `root` first, then breadth first, each
    /// level in the order of the level before, each record's `DELETE_SELF` sources as
    /// `sources` lists them (by the order their field names were first stored, then by name in
    /// byte order; a batch stores the new names its saves carry sorted by name, before writing);
    /// a record reached twice is removed once, where it was first reached.
    ///
    /// - Parameter sources: the records holding a `DELETE_SELF` reference to a record, in that order.
    public static func doomed(root: String, sources: (String) -> [String]) -> [String] {
        var order = [root]
        var seen: Set<String> = [root]
        var next = 0
        while next < order.count {
            for source in sources(order[next]) where seen.insert(source).inserted {
                order.append(source)
            }
            next += 1
        }
        return order
    }
}
