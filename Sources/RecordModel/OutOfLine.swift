/// An optional member kept out of line: its holder stores one reference, or nothing when the
/// value is `nil`, instead of the value itself.
///
/// For large, rarely set members of value types that are copied often: a ``Record``'s
/// ``Record/shareInfo`` (416 bytes inline, set on share records only) and a
/// ``RecordSyncError``'s records (three records inline, set on conflicts only), which made every
/// `Record` 624 bytes and every `RecordResult` nearly 2 KB, moved in full at each copy of an
/// array element. Equality and hashing are the value's; setting it stores a new box, so the
/// holder keeps value semantics.
@propertyWrapper
public struct OutOfLine<Wrapped: Hashable & Sendable>: Hashable, Sendable {
    private final class Box: Sendable {
        let value: Wrapped
        init(_ value: Wrapped) { self.value = value }
    }

    private var box: Box?

    public init(wrappedValue: Wrapped?) {
        box = wrappedValue.map(Box.init)
    }

    public var wrappedValue: Wrapped? {
        get { box?.value }
        set { box = newValue.map(Box.init) }
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.box === rhs.box || lhs.box?.value == rhs.box?.value
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(box?.value)
    }
}
