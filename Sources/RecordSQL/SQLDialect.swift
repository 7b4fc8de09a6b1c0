import Foundation
import GRDB
import RecordModel

/// A value bound to a statement, whatever database runs it.
public enum SQLValue: Sendable, Hashable {
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
    case null

    /// A SQLite value as it is.
    public init(_ value: DatabaseValue) {
        switch value.storage {
        case .null: self = .null
        case .int64(let integer): self = .integer(integer)
        case .double(let real): self = .real(real)
        case .string(let text): self = .text(text)
        case .blob(let data): self = .blob(data)
        }
    }

    /// The value for GRDB.
    public var databaseValue: DatabaseValue {
        switch self {
        case .integer(let number): number.databaseValue
        case .real(let number): number.databaseValue
        case .text(let string): string.databaseValue
        case .blob(let data): data.databaseValue
        case .null: .null
        }
    }
}

/// The SQL a ``QueryCompiler`` writes: SQLite's (the server's SQLite engine and the client's
/// cache) or PostgreSQL's. The compiler decides what a query means once; a dialect only says
/// how each piece is spelled. Both read the same row shape: `records` with the fields as their
/// wire JSON text, `refs` with one row per reference.
///
/// The answers are the same in both: fields are read as the typed value SQLite's `json_extract`
/// gives (an integer, a real, text; a boolean as 0 or 1), strings compare and sort in byte
/// order (PostgreSQL: `COLLATE "C"`), and a missing value sorts first ascending and last
/// descending, as in SQLite.
public enum SQLDialect: Sendable {
    case sqlite
    case postgres

    /// The value of a field of `r` as a comparable SQL value of `scalar`'s type (`alias` `nil`:
    /// of the table's own row, as an index's expression names it).
    func fieldValue(_ field: String, _ scalar: ScalarType?, alias: String? = "r") -> String {
        let fields = alias.map { "\($0).fields" } ?? "fields"
        switch self {
        case .sqlite:
            return "json_extract(\(fields), '$.\(field).value')"
        case .postgres:
            return Self.postgresValue("\(fields)::jsonb #> '{\(field),value}'", scalar)
        }
    }

    /// The scalar types whose fields get an index (``fieldIndex(_:_:)``) when a schema marks
    /// them `QUERYABLE` or `SORTABLE`: those compared and sorted through ``fieldValue(_:_:alias:)``
    /// (references go through `refs`, places through `search_locations`, lists through their
    /// elements).
    public static let indexedScalars: Set<ScalarType> = [.string, .int64, .double, .timestamp, .boolean]

    /// The index on `records` that lets a query compare or sort the field `field` of `scalar`'s
    /// type by a search of the zone's records of one type rather than a scan: on the zone, the
    /// type and the very expression ``fieldValue(_:_:alias:)`` compiles (so the planner matches
    /// it), over the records holding the field only. Its name is `records_q_` and a hash of
    /// what it covers (SQLite's expression is the same for every type: one index per field);
    /// PostgreSQL builds it without blocking writes.
    public func fieldIndex(_ field: String, _ scalar: ScalarType) -> (name: String, sql: String) {
        let value = fieldValue(field, scalar, alias: nil)
        switch self {
        case .sqlite:
            let name = "records_q_" + Self.hash(field)
            return (name, "CREATE INDEX IF NOT EXISTS \(name) ON records(zone_id, type, \(value)) WHERE \(value) IS NOT NULL")
        case .postgres:
            let name = "records_q_" + Self.hash(field + "/" + value)
            return (name, "CREATE INDEX CONCURRENTLY IF NOT EXISTS \(name) ON records (zone_id, type, (\(value))) WHERE (\(value)) IS NOT NULL")
        }
    }

    /// PostgreSQL's statistics of a field index's expression (named as the index, `records_s_`
    /// for `records_q_`): without them its planner takes an equality on the expression for
    /// half a percent of the rows, and may read a type's records in a sort's order, all of
    /// them, rather than search the index; with them it knows how few match. `nil` on SQLite,
    /// whose `ANALYZE` describes the index itself.
    public func fieldStatistics(_ field: String, _ scalar: ScalarType) -> (name: String, sql: String)? {
        guard self == .postgres else { return nil }
        let name = "records_s_" + fieldIndex(field, scalar).name.dropFirst("records_q_".count)
        return (name, "CREATE STATISTICS IF NOT EXISTS \(name) ON (\(fieldValue(field, scalar, alias: nil))) FROM records")
    }

    /// FNV-1a (64 bits) of `text`, in hexadecimal: a name that is the same on every run.
    private static func hash(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash, radix: 16)
    }

    /// The record name a reference field of `r` points at.
    func referenceName(_ field: String) -> String {
        switch self {
        case .sqlite: "json_extract(r.fields, '$.\(field).value.recordName')"
        case .postgres: "(r.fields::jsonb #>> '{\(field),value,recordName}') COLLATE \"C\""
        }
    }

    /// What a value inside a nested field is compared as.
    enum NestedKind { case text, number, boolean }

    /// The value at `path` inside the nested field `field` of `alias`, when it is of `kind`
    /// (JSON string, number, or `true`/`false` as 1/0); else NULL, so a comparison with a value
    /// of another kind is unknown, as with a missing one. Names are field-name safe (letters,
    /// digits, underscores), so they are written into the path.
    func nestedValue(_ field: String, path: [String], _ kind: NestedKind, alias: String = "r") -> String {
        switch self {
        case .sqlite:
            let json = "json_extract(\(alias).fields, '$.\(field).value')"
            let at = "'$." + path.joined(separator: ".") + "'"
            let kinds = switch kind {
            case .text: "'text'"
            case .number: "'integer', 'real'"
            case .boolean: "'true', 'false'"
            }
            return "(CASE WHEN json_type(\(json), \(at)) IN (\(kinds)) THEN json_extract(\(json), \(at)) END)"
        case .postgres:
            let json = "((\(alias).fields::jsonb #>> '{\(field),value}')::jsonb)"
            let at = "'{" + path.joined(separator: ",") + "}'"
            return switch kind {
            case .text: "(CASE WHEN jsonb_typeof(\(json) #> \(at)) = 'string' THEN (\(json) #>> \(at)) END) COLLATE \"C\""
            // numeric, as SQLite compares a stored integer: exactly.
            case .number: "(CASE WHEN jsonb_typeof(\(json) #> \(at)) = 'number' THEN (\(json) #>> \(at))::numeric END)"
            case .boolean: "(CASE WHEN jsonb_typeof(\(json) #> \(at)) = 'boolean' THEN (\(json) #>> \(at))::boolean::int END)"
            }
        }
    }

    /// Whether `r` holds the field (whatever its value).
    func fieldPresent(_ field: String, alias: String = "r") -> String {
        switch self {
        case .sqlite: "json_extract(\(alias).fields, '$.\(field).value') IS NOT NULL"
        case .postgres: "\(alias).fields::jsonb #> '{\(field),value}' IS NOT NULL"
        }
    }

    /// A sub-query source of the elements of a list field of `r`, and the expression of one
    /// element as a value of `scalar`'s type.
    func listElements(_ field: String, _ scalar: ScalarType, alias: String = "r") -> (from: String, value: String) {
        switch self {
        case .sqlite:
            return ("json_each(\(alias).fields, '$.\(field).value')", "json_each.value")
        case .postgres:
            return ("jsonb_array_elements(\(alias).fields::jsonb #> '{\(field),value}') AS e(v)", Self.postgresValue("e.v", scalar))
        }
    }

    /// A condition: `r.name` is one of the names `subquery` selects (in one zone). PostgreSQL gets
    /// them as an array first, so that it looks each up by the records' key: given `IN`, it walked
    /// the zone's records in key order (the query's own order) and probed the sub-query for each,
    /// 369 ms for 100 of 20,000 records against 31 ms for 100 of 2,000.
    func nameIn(_ subquery: String, alias: String = "r") -> String {
        switch self {
        case .sqlite: "\(alias).name IN (\(subquery))"
        case .postgres: "\(alias).name = ANY(ARRAY(\(subquery)))"
        }
    }

    /// The names of the records of the word blocks of a zone (`zone`: the condition on its
    /// key) whose postings meet `conditions` (on `token` and `field`), while the records are
    /// in those blocks: each block's key read in turn, in the zone's blocks' order. With
    /// `tested` (the alias of the one record tested, of that zone), its own block's posting alone.
    func wordBlockNames(zone: String, conditions: String, tested: String? = nil) -> String {
        switch (self, tested) {
        case (.sqlite, nil):
            // CROSS JOIN keeps the order: left to itself, SQLite walked every posting of the zone.
            """
            SELECT m.name FROM search_blocks b CROSS JOIN search_postings p CROSS JOIN json_each(p.names) j CROSS JOIN search_members m \
            WHERE b.zone_id \(zone) AND p.zone_id = b.zone_id AND p.block = b.block AND \(conditions) \
            AND m.zone_id = p.zone_id AND m.name = j.value AND m.block = p.block AND m.part = p.part
            """
        case (.sqlite, let tested?):
            """
            SELECT m.name FROM search_members m CROSS JOIN search_postings p CROSS JOIN json_each(p.names) j \
            WHERE m.zone_id \(zone) AND m.name = \(tested).name AND p.zone_id = m.zone_id AND p.block = m.block AND p.part = m.part AND \(conditions) \
            AND j.value = m.name
            """
        case (.postgres, nil):
            """
            SELECT m.name FROM search_blocks b JOIN search_postings p ON p.zone_id = b.zone_id AND p.block = b.block \
            CROSS JOIN LATERAL json_array_elements_text(p.names::json) AS j(value) \
            JOIN search_members m ON m.zone_id = p.zone_id AND m.name = j.value COLLATE "C" AND m.block = p.block AND m.part = p.part \
            WHERE b.zone_id \(zone) AND \(conditions)
            """
        case (.postgres, let tested?):
            """
            SELECT m.name FROM search_members m JOIN search_postings p ON p.zone_id = m.zone_id AND p.block = m.block AND p.part = m.part \
            CROSS JOIN LATERAL json_array_elements_text(p.names::json) AS j(value) \
            WHERE m.zone_id \(zone) AND m.name = \(tested).name AND \(conditions) AND j.value COLLATE "C" = m.name
            """
        }
    }

    /// A condition: `expression` (text) begins with `prefix`.
    func beginsWith(_ expression: String, _ prefix: String) -> (String, [SQLValue]) {
        switch self {
        case .sqlite: ("substr(\(expression), 1, ?) = ?", [.integer(Int64(prefix.unicodeScalars.count)), .text(prefix)])
        case .postgres: ("starts_with(\(expression), ?)", [.text(prefix)])
        }
    }

    /// A double as a literal of the database's double type (the shortest text that reads back
    /// as the same number).
    func real(_ value: Double) -> String {
        switch self {
        case .sqlite: "(\(value))"
        case .postgres: "(\(value))::double precision"
        }
    }

    /// The constant true or false as a condition.
    func constant(_ value: Bool) -> String {
        switch self {
        case .sqlite: value ? "1" : "0"
        case .postgres: value ? "TRUE" : "FALSE"
        }
    }

    /// An ORDER BY term: missing values first ascending, last descending (SQLite's order).
    func orderTerm(_ expression: String, ascending: Bool) -> String {
        switch self {
        case .sqlite: "\(expression) \(ascending ? "ASC" : "DESC")"
        case .postgres: "\(expression) \(ascending ? "ASC NULLS FIRST" : "DESC NULLS LAST")"
        }
    }

    /// The statement with the dialect's placeholders: SQLite's `?` as written, PostgreSQL's
    /// `$1`, `$2`, …. The compiler writes no `?` other than placeholders (no string literal
    /// holds one: JSON paths are field names, letters, digits and underscores).
    public func numbered(_ sql: String) -> String {
        guard self == .postgres else { return sql }
        var result = ""
        result.reserveCapacity(sql.utf8.count + 16)
        var number = 0
        for character in sql {
            if character == "?" {
                number += 1
                result += "$\(number)"
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// A JSON value (`jsonb`) as PostgreSQL's value of the type SQLite's `json_extract` would
    /// give: BIGINT for integers and timestamps, DOUBLE PRECISION for doubles, 0 or 1 for
    /// booleans, text in byte order for strings and everything else.
    private static func postgresValue(_ json: String, _ scalar: ScalarType?) -> String {
        switch scalar {
        case .int64, .timestamp: "(\(json) #>> '{}')::bigint"
        case .double: "(\(json) #>> '{}')::double precision"
        case .boolean: "(\(json) #>> '{}')::boolean::int"
        default: "(\(json) #>> '{}') COLLATE \"C\""
        }
    }
}

/// Values that bind as a ``SQLValue``.
public protocol SQLValueConvertible {
    /// The bound value.
    var sqlValue: SQLValue { get }
}

extension Int64: SQLValueConvertible { public var sqlValue: SQLValue { .integer(self) } }
extension Int: SQLValueConvertible { public var sqlValue: SQLValue { .integer(Int64(self)) } }
extension Double: SQLValueConvertible { public var sqlValue: SQLValue { .real(self) } }
extension String: SQLValueConvertible { public var sqlValue: SQLValue { .text(self) } }
extension Data: SQLValueConvertible { public var sqlValue: SQLValue { .blob(self) } }
