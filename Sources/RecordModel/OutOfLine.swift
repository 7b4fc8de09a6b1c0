/// An optional member kept out of line: its holder stores one reference, or nothing when the
/// value is `nil`, instead of the value itself.
///
/// For large, rarely set members of value types that are copied often: a ``Record``'s
/// ``Record/shareInfo`` (416 bytes inline, set on share records only) and a
/// ``RecordSyncError``'s records (three records inline, set on conflicts only). Inline, they
/// would make every `Record` 624 bytes and every `RecordResult` nearly 2 KB, moved in full at
/// each copy of an array element. Equality, hashing and printing are the value's; setting it
/// (an edit in place too, such as `record.shareInfo?.participants.append(…)`) stores a new
/// box, so the holder keeps value semantics.
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

extension OutOfLine: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The value's description (`nil` when there is none), as the member inline would print.
    public var description: String { box.map { String(describing: $0.value) } ?? "nil" }
    /// The value's debug description (`nil` when there is none).
    public var debugDescription: String { box.map { String(reflecting: $0.value) } ?? "nil" }
    /// The value's mirror, so a holder's printed form (a failing test's message) shows the value,
    /// not the box.
    public var customMirror: Mirror { Mirror(reflecting: wrappedValue as Any) }
}
