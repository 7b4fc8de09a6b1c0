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
/// reaches it. Conditions join with `AND` (`&&`), `OR` (`||`) and `NOT` (`!`) and parentheses,
/// nested at most ``QueryFilter/maximumDepth`` compound levels; a condition compares a key (a
/// field name, `%K`, or a system field such as `recordName` or `creationDate`) with a value (`%@`,
/// a string, a number, `TRUE`/`FALSE`, or an array literal `{1, 2}`):
///
/// | format | wire comparator |
/// |---|---|
/// | `key == v`, `!=`/`<>`, `<`, `<=`/`=<`, `>`, `>=`/`=>` | `EQUALS`, `NOT_EQUALS`, `LESS_THAN`, … |
/// | `key BEGINSWITH 'p'`, `ENDSWITH`, `LIKE`, `MATCHES` | `BEGINS_WITH`, `ENDS_WITH`, `LIKE`, `MATCHES` |
/// | `key CONTAINS 's'` | `CONTAINS`: a substring, or on a list field membership |
/// | `key ==[cd] 's'` (options `c`, `d`, `cd` on string comparisons) | the comparator with `recordSyncOptions` |
/// | `key IN %@`, `key IN {1, 2}`, `{1, 2} CONTAINS key` | `IN` |
/// | `list CONTAINS 5`, `v IN list`, `ANY list == v` | `LIST_CONTAINS` |
/// | `ANY list BEGINSWITH 'p'` | `LIST_MEMBER_BEGINS_WITH` |
/// | `ANY list LIKE 'p*'` (`ENDSWITH`, `MATCHES`) | the comparator, matching any element |
/// | `ANY list IN %@`, `ANY %@ IN list` | `LIST_CONTAINS_ANY` |
/// | `ALL %@ IN list` | `LIST_CONTAINS_ALL` |
/// | `key BETWEEN {low, high}` | `GREATER_THAN_OR_EQUALS` and `LESS_THAN_OR_EQUALS` |
/// | `a OR b`, `NOT (a AND b)` | a compound filter (`recordSyncOperator`) |
///
/// `v OP key` is flipped (`5 < year` is `year > 5`). `NOT` (or `!`) negates one comparison
/// into the opposite comparator when the wire has one (`NOT a < 1` is `a >= 1`, `NOT (a IN %@)`
/// is `NOT_IN`: the same records, since a comparison with a missing field is unknown either way),
/// else into a compound `NOT`; `NONE` is a negated `ANY`.
public struct RecordPredicate: Sendable, Hashable {
    /// The compiled wire filters, ANDed (compound ones among them); empty for ``all``.
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
    ///   cannot run (`SUBQUERY`, functions, key paths, options on a comparison that is not a
    ///   string comparison), holds a `MATCHES` pattern that does not compile, nests too deep, or
    ///   has more or fewer placeholders than arguments, or an argument of an unsupported type.
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
        filters = try parser.parse().filters
    }
}
