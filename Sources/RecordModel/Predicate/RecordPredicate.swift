import Foundation

/// Which records a query matches, written in the `NSPredicate` format CloudKit users know and
/// compiled to the wire filters of ``Query``.
///
/// ```swift
/// let predicate = try RecordPredicate(format: "artist == %@ AND year >= %@", artistID, 1880)
/// let recent = try RecordPredicate(format: "ANY tags IN %@ AND NOT (title BEGINSWITH 'Untitled')", ["oil", "ink"])
/// ```
///
/// The format is checked when the predicate is made, so a predicate the server cannot run never
/// reaches it. Conditions are ANDed (`AND`, `&&`, parentheses); a condition compares a key
/// (a field name, `%K`, or a system field such as `recordName` or `creationDate`) with a value
/// (`%@`, a string, a number, `TRUE`/`FALSE`, or an array literal `{1, 2}`):
///
/// | format | wire comparator |
/// |---|---|
/// | `key == v`, `!=`/`<>`, `<`, `<=`/`=<`, `>`, `>=`/`=>` | `EQUALS`, `NOT_EQUALS`, `LESS_THAN`, … |
/// | `key BEGINSWITH 'p'` | `BEGINS_WITH` |
/// | `key IN %@`, `key IN {1, 2}`, `key CONTAINS v` (reversed) | `IN` |
/// | `list CONTAINS v`, `v IN list`, `ANY list == v` | `LIST_CONTAINS` |
/// | `ANY list BEGINSWITH 'p'` | `LIST_MEMBER_BEGINS_WITH` |
/// | `ANY list IN %@`, `ANY %@ IN list` | `LIST_CONTAINS_ANY` |
/// | `ALL %@ IN list` | `LIST_CONTAINS_ALL` |
/// | `key BETWEEN {low, high}` | `GREATER_THAN_OR_EQUALS` and `LESS_THAN_OR_EQUALS` |
///
/// `v OP key` is flipped (`5 < year` is `year > 5`). `NOT` (or `!`) negates one comparison
/// into the opposite comparator (`NOT a < 1` is `a >= 1`, `NOT (a IN %@)` is `NOT_IN`), and
/// `NONE` is a negated `ANY`.
public struct RecordPredicate: Sendable, Hashable {
    /// The compiled wire filters, ANDed; empty for ``all``.
    public let filters: [QueryFilter]

    /// The predicate matching every record (`TRUEPREDICATE`): no filters.
    public static let all = RecordPredicate(filters: [])

    private init(filters: [QueryFilter]) {
        self.filters = filters
    }

    /// Parses a predicate format, substituting `arguments` for its `%@` and `%K` placeholders
    /// in order.
    ///
    /// Arguments may be `String`, any integer, `Double`, `Float`, `Bool`, `Date` (a
    /// `TIMESTAMP`), `Data` (`BYTES`), ``Reference``, ``RecordID`` or ``Record`` (a
    /// `REFERENCE` to it), ``FieldValue``, or an array of them for `IN` and its list forms.
    /// `%K` takes a `String` naming the key. An `[any Sendable]` passed alone is taken as the
    /// whole argument list, as Swift passes it to a variadic parameter; to pass one as a single
    /// argument, use ``init(format:argumentArray:)``.
    ///
    /// - Throws: ``RecordSyncError`` with ``ServerErrorCode/badRequest`` and a reason naming the
    ///   offending token and its column when the format does not parse, uses what the server
    ///   cannot run (`OR`, `LIKE`, `MATCHES`, `ENDSWITH`, comparison options such as `[c]`,
    ///   `SUBQUERY`, key paths, `NOT` over several conditions), or has more or fewer
    ///   placeholders than arguments, or an argument of an unsupported type.
    public init(format: String, _ arguments: any Sendable...) throws {
        try self.init(format: format, argumentArray: arguments)
    }

    /// Parses a predicate format, substituting the elements of `argumentArray` for its `%@`
    /// and `%K` placeholders in order; see ``init(format:_:)``.
    ///
    /// - Throws: ``RecordSyncError`` with ``ServerErrorCode/badRequest``, as
    ///   ``init(format:_:)`` does.
    public init(format: String, argumentArray: [any Sendable]) throws {
        var parser = PredicateParser(format: format, arguments: argumentArray)
        filters = try parser.parse().map { try $0.filter() }
    }
}
