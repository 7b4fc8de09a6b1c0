/// A table of the server's storage, described once and spelled for each ``SQLDialect``:
/// its columns, keys, indexes and constraints (``StorageSchema``).
///
/// A description says what the engines store; the shipped migrations say how a database got
/// there. `StorageCatalogueTests` builds a database each way, on each engine, and compares
/// their catalogues, so the two never drift. A new migration is written in these terms
/// (``createStatements(in:)``, ``IndexDefinition/createStatement(on:in:)``).
public struct TableDefinition: Sendable {
    /// The table's name.
    public var name: String
    /// Its columns, in their order in the table.
    public var columns: [ColumnDefinition]
    /// The primary key.
    public var primaryKey: KeyColumns
    /// Unique constraints other than the primary key (each a list of columns).
    public var uniques: [[String]]
    /// Secondary indexes.
    public var indexes: [IndexDefinition]
    /// The engines that keep the table (PostgreSQL alone keeps asset bytes in a table).
    public var dialects: [SQLDialect]
    /// Whether `data copy` carries its rows as they are; `false` for tables an engine fills
    /// itself (a counter it creates, a sum it counts from other tables).
    public var copied: Bool

    public init(_ name: String, _ columns: [ColumnDefinition], primaryKey: KeyColumns, uniques: [[String]] = [], indexes: [IndexDefinition] = [],
                dialects: [SQLDialect] = [.sqlite, .postgres], copied: Bool = true) {
        self.name = name
        self.columns = columns
        self.primaryKey = primaryKey
        self.uniques = uniques
        self.indexes = indexes
        self.dialects = dialects
        self.copied = copied
    }

    /// The column named `name`.
    public func column(_ name: String) -> ColumnDefinition? {
        columns.first { $0.name == name }
    }

    /// Whether the table is SQLite's rowid table (its key a single integer column: the rowid);
    /// every other table is `WITHOUT ROWID`, stored in its key's order.
    var isRowidTable: Bool {
        let key = primaryKey.columns(in: .sqlite)
        guard key.count == 1, let column = column(key[0]) else { return false }
        return column.type.isInteger
    }

    /// `CREATE TABLE` and `CREATE INDEX` statements that make the table in `dialect`.
    public func createStatements(in dialect: SQLDialect) -> [String] {
        let key = primaryKey.columns(in: dialect)
        var parts = columns.map { $0.definition(in: dialect, soleKey: key == [$0.name]) }
        if key.count > 1 { parts.append("PRIMARY KEY(\(key.joined(separator: ", ")))") }
        parts += uniques.map { "UNIQUE(\($0.joined(separator: ", ")))" }
        var table = "CREATE TABLE \(name)(\n    \(parts.joined(separator: ",\n    ")))"
        if dialect == .sqlite, !isRowidTable { table += " WITHOUT ROWID" }
        return [table] + indexes.map { $0.createStatement(on: self, in: dialect) }
    }
}

/// The columns of a key, in order. SQLite may order them otherwise: a key searched only by
/// equality leads there with the name, not the zone (a zone's keys all share their first
/// column, so every comparison ties on it and takes SQLite's slow general path;
/// docs/performance.md, "Keys that lead with the name"), where PostgreSQL leads every key of a
/// zone's contents with the zone (docs/deploying.md, "When one PostgreSQL is not enough").
public struct KeyColumns: Sendable, ExpressibleByArrayLiteral {
    var postgres: [String]
    var sqlite: [String]

    public init(_ columns: [String], sqlite: [String]? = nil) {
        postgres = columns
        self.sqlite = sqlite ?? columns
    }

    public init(arrayLiteral elements: String...) { self.init(elements) }

    /// The key's columns in `dialect`.
    public func columns(in dialect: SQLDialect) -> [String] {
        dialect == .sqlite ? sqlite : postgres
    }
}

/// A column.
public struct ColumnDefinition: Sendable {
    public var name: String
    public var type: ColumnType
    public var nullable: Bool
    /// Compared and sorted in byte order: PostgreSQL spells it `COLLATE "C"` (SQLite's text
    /// compares so anyway).
    public var byteOrder: Bool
    public var defaultValue: DefaultValue?
    /// How a key column gets its values, if the engine makes them.
    public var generated: KeyGeneration?
    /// `table(column)` it references (a foreign key).
    public var references: String?
    /// A check on its values, as SQL both dialects read.
    public var check: String?

    public init(_ name: String, _ type: ColumnType, nullable: Bool = false, byteOrder: Bool = false, default defaultValue: DefaultValue? = nil,
                generated: KeyGeneration? = nil, references: String? = nil, check: String? = nil) {
        self.name = name
        self.type = type
        self.nullable = nullable
        self.byteOrder = byteOrder
        self.defaultValue = defaultValue
        self.generated = generated
        self.references = references
        self.check = check
    }

    /// A text column compared in byte order.
    public static func name(_ name: String, nullable: Bool = false, default defaultValue: DefaultValue? = nil) -> ColumnDefinition {
        ColumnDefinition(name, .text, nullable: nullable, byteOrder: true, default: defaultValue)
    }

    /// The column's definition in `dialect`; `soleKey` when it alone is the primary key
    /// (declared with it: a SQLite `INTEGER PRIMARY KEY` is the rowid).
    func definition(in dialect: SQLDialect, soleKey: Bool) -> String {
        var parts = [name]
        switch (dialect, generated) {
        case (.postgres, .serial?): parts.append("BIGSERIAL")
        case (.postgres, .rowid?), (.postgres, .neverReused?): parts.append("\(type.spelling(in: dialect)) GENERATED BY DEFAULT AS IDENTITY")
        default: parts.append(type.spelling(in: dialect))
        }
        if dialect == .postgres, byteOrder { parts.append("COLLATE \"C\"") }
        if soleKey {
            parts.append("PRIMARY KEY")
            if dialect == .sqlite, generated == .neverReused || generated == .serial { parts.append("AUTOINCREMENT") }
        } else if !nullable {
            parts.append("NOT NULL")
        }
        if let defaultValue { parts.append("DEFAULT \(defaultValue.spelling(in: dialect))") }
        if let references { parts.append("REFERENCES \(references)") }
        if let check { parts.append("CHECK (\(check))") }
        return parts.joined(separator: " ")
    }
}

/// What a column holds.
public enum ColumnType: Sendable, Hashable {
    case int64, int32, int16
    /// SQLite: 0 or 1; PostgreSQL: `BOOLEAN`.
    case bool
    case double
    case text
    case bytes
    /// SQLite: 16 bytes; PostgreSQL: `UUID`.
    case uuid

    var isInteger: Bool { self == .int64 || self == .int32 || self == .int16 }

    /// The type's name in `dialect`.
    public func spelling(in dialect: SQLDialect) -> String {
        switch (self, dialect) {
        case (.int64, .sqlite), (.int32, .sqlite), (.int16, .sqlite), (.bool, .sqlite): "INTEGER"
        case (.double, .sqlite): "REAL"
        case (.text, _): "TEXT"
        case (.bytes, .sqlite), (.uuid, .sqlite): "BLOB"
        case (.int64, .postgres): "BIGINT"
        case (.int32, .postgres): "INT"
        case (.int16, .postgres): "SMALLINT"
        case (.bool, .postgres): "BOOLEAN"
        case (.double, .postgres): "DOUBLE PRECISION"
        case (.bytes, .postgres): "BYTEA"
        case (.uuid, .postgres): "UUID"
        }
    }
}

/// A column's default.
public enum DefaultValue: Sendable, Hashable {
    case integer(Int64)
    case text(String)
    case bool(Bool)

    func spelling(in dialect: SQLDialect) -> String {
        switch self {
        case .integer(let value): "\(value)"
        case .text(let value): "'\(value.replacingOccurrences(of: "'", with: "''"))'"
        case .bool(let value): dialect == .sqlite ? (value ? "1" : "0") : (value ? "TRUE" : "FALSE")
        }
    }
}

/// How the engine makes a key column's values.
public enum KeyGeneration: Sendable, Hashable {
    /// The next free number. SQLite: the rowid (`INTEGER PRIMARY KEY`; the largest key, once
    /// deleted, may be given again); PostgreSQL: an identity.
    case rowid
    /// The next number never given before. SQLite: `AUTOINCREMENT`; PostgreSQL: an identity.
    case neverReused
    /// As ``neverReused``, from a sequence of its own on PostgreSQL (`BIGSERIAL`).
    case serial
}

/// A secondary index.
public struct IndexDefinition: Sendable {
    public var name: String
    public var columns: KeyColumns
    /// Columns the index carries without ordering by them: PostgreSQL's `INCLUDE`; SQLite
    /// orders by them after ``columns``, but for those of the table's key (every SQLite
    /// index entry carries the key).
    public var include: [String]
    public var unique: Bool
    /// Only the rows where this holds (SQL both dialects read).
    public var predicate: String?

    public init(_ name: String, _ columns: KeyColumns, include: [String] = [], unique: Bool = false, where predicate: String? = nil) {
        self.name = name
        self.columns = columns
        self.include = include
        self.unique = unique
        self.predicate = predicate
    }

    /// `CREATE INDEX` for the index of `table` in `dialect`.
    public func createStatement(on table: TableDefinition, in dialect: SQLDialect) -> String {
        var keyed = columns.columns(in: dialect)
        var carried: [String] = []
        switch dialect {
        case .sqlite:
            let key = table.primaryKey.columns(in: .sqlite)
            keyed += include.filter { !key.contains($0) }
        case .postgres:
            carried = include
        }
        var statement = "CREATE \(unique ? "UNIQUE " : "")INDEX \(name) ON \(table.name)(\(keyed.joined(separator: ", ")))"
        if !carried.isEmpty { statement += " INCLUDE (\(carried.joined(separator: ", ")))" }
        if let predicate { statement += " WHERE \(predicate)" }
        return statement
    }
}
