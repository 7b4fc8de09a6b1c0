import Foundation

/// A schema in CloudKit's schema language (`.ckdb`, as `cktool export-schema` writes it;
/// docs/protocol.md, "The schema language"): roles, and record types with their fields,
/// indexes and grants.
///
/// Two schemas are equal when they say the same: ``normalized()`` orders types, fields, roles
/// and grants one way, and gathers each grantee's permissions on one line; ``read(_:)`` answers
/// a normalized schema and ``written`` writes one, so an export read back is the schema
/// exported and two exports of it are the same bytes.
public struct CloudKitSchema: Sendable, Hashable {
    /// The roles (`CREATE ROLE`), by name.
    public var roles: [String]
    /// The record types, by name.
    public var recordTypes: [SchemaRecordType]

    public init(roles: [String] = [], recordTypes: [SchemaRecordType] = []) {
        self.roles = roles
        self.recordTypes = recordTypes
    }

    /// The record type named `name`.
    public func recordType(_ name: String) -> SchemaRecordType? {
        recordTypes.first { $0.name == name }
    }

    /// The schema in its one order: roles and types by name (byte order), each type's system
    /// fields first (in ``SchemaField/systemFields``' order) then the others by name, grants
    /// by grantee (`_creator`, `_icloud`, `_world`, then roles by name), each grantee's
    /// permissions on one line in the order `CREATE`, `READ`, `WRITE`.
    public func normalized() -> CloudKitSchema {
        CloudKitSchema(roles: Array(Set(roles)).sorted(by: Self.byteOrder),
                       recordTypes: recordTypes.map { $0.normalized() }.sorted { Self.byteOrder($0.name, $1.name) })
    }

    static func byteOrder(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }
}

/// A record type of a schema.
public struct SchemaRecordType: Sendable, Hashable {
    public var name: String
    public var fields: [SchemaField]
    public var grants: [SchemaGrant]

    public init(name: String, fields: [SchemaField] = [], grants: [SchemaGrant] = []) {
        self.name = name
        self.fields = fields
        self.grants = grants
    }

    /// The field named `name`.
    public func field(_ name: String) -> SchemaField? {
        fields.first { $0.name == name }
    }

    func normalized() -> SchemaRecordType {
        let fields = fields.sorted { CloudKitSchema.byteOrder($0.name, $1.name) }
        var byGrantee: [String: Set<SchemaPermission>] = [:]
        for grant in grants { byGrantee[grant.grantee, default: []].formUnion(grant.permissions) }
        let grants = byGrantee.map { SchemaGrant(permissions: $0.value.sorted(), grantee: $0.key) }
            .sorted { SchemaGrant.granteeOrder($0.grantee, $1.grantee) }
        return SchemaRecordType(name: name, fields: fields, grants: grants)
    }
}

/// A field of a record type: its type, and the indexes it has.
public struct SchemaField: Sendable, Hashable {
    public var name: String
    public var type: FieldType
    /// `ENCRYPTED`: stored encrypted; never indexed.
    public var encrypted: Bool
    /// `QUERYABLE`: filters may name it.
    public var queryable: Bool
    /// `SORTABLE`: sorts may name it.
    public var sortable: Bool
    /// `SEARCHABLE`: its words are indexed for token comparators.
    public var searchable: Bool

    public init(name: String, type: FieldType, encrypted: Bool = false, queryable: Bool = false, sortable: Bool = false, searchable: Bool = false) {
        self.name = name
        self.type = type
        self.encrypted = encrypted
        self.queryable = queryable
        self.sortable = sortable
        self.searchable = searchable
    }

    /// The system fields every record type has, as CloudKit's schema names them, with their
    /// types.
    public static let systemFields: [(name: String, type: FieldType)] = [
        ("___createTime", FieldType(.timestamp)), ("___createdBy", FieldType(.reference)), ("___etag", FieldType(.string)),
        ("___modTime", FieldType(.timestamp)), ("___modifiedBy", FieldType(.reference)), ("___recordID", FieldType(.reference)),
    ]

    /// Whether the field is one of ``systemFields``.
    public var isSystem: Bool { Self.systemFields.contains { $0.name == name } }
}

/// A permission a grant gives.
public enum SchemaPermission: String, Sendable, Hashable, CaseIterable, Comparable {
    case read = "READ", create = "CREATE", write = "WRITE"

    public static func < (a: Self, b: Self) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// `GRANT permissions TO grantee`: `_world` (anyone, signed out too), `_icloud` (any signed-in
/// user), `_creator` (a record's creator) or a role.
public struct SchemaGrant: Sendable, Hashable {
    public var permissions: [SchemaPermission]
    public var grantee: String

    public init(permissions: [SchemaPermission], grantee: String) {
        self.permissions = permissions
        self.grantee = grantee
    }

    /// The grantees CloudKit defines; any other is a role.
    public static let builtInGrantees = ["_creator", "_icloud", "_world"]

    static func granteeOrder(_ a: String, _ b: String) -> Bool {
        switch (builtInGrantees.firstIndex(of: a), builtInGrantees.firstIndex(of: b)) {
        case let (x?, y?): x < y
        case (.some, nil): true
        case (nil, .some): false
        case (nil, nil): CloudKitSchema.byteOrder(a, b)
        }
    }
}

/// Why a schema file does not read: where (line and column, from 1), what was expected there,
/// and what was found.
public struct SchemaSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public var expected: String
    public var found: String

    public var description: String {
        "line \(line), column \(column): expected \(expected), found \(found)"
    }
}

// MARK: Reading

extension CloudKitSchema {
    /// The schema `text` says, normalized.
    ///
    /// - Throws: ``SchemaSyntaxError`` at the first thing that does not read, or that reads but
    ///   cannot be (a name given twice, a grant to a role never created, an index a type cannot
    ///   have, a system field of the wrong type).
    public static func read(_ text: String) throws -> CloudKitSchema {
        var parser = SchemaParser(text)
        return try parser.schema().normalized()
    }
}

/// A token of the language, where it begins.
struct SchemaToken: Hashable {
    enum Kind: Hashable {
        /// A bare word: a keyword or a name.
        case word(String)
        /// A double-quoted name (`""` inside stands for `"`).
        case quoted(String)
        /// One of `( ) , ; < > .`
        case symbol(Character)
        case end
    }

    var kind: Kind
    var line: Int
    var column: Int

    var shown: String {
        switch kind {
        case .word(let word): "'\(word)'"
        case .quoted(let name): "\"\(name)\""
        case .symbol(let symbol): "'\(symbol)'"
        case .end: "the end of the file"
        }
    }
}

/// A recursive-descent reader of the language.
struct SchemaParser {
    private var tokens: [SchemaToken] = []
    private var position = 0
    private var lexError: SchemaSyntaxError?

    init(_ text: String) {
        (tokens, lexError) = Self.tokens(of: text)
    }

    /// The tokens of `text`: words, quoted names and symbols, comments (`//`, `--` to the end
    /// of the line) and white space left out; up to what does not read, if anything does not
    /// (its error is then thrown when the parser reaches it, so that an earlier error of the
    /// grammar is the one reported).
    static func tokens(of text: String) -> ([SchemaToken], SchemaSyntaxError?) {
        var tokens: [SchemaToken] = []
        do {
            try read(text, into: &tokens)
            return (tokens, nil)
        } catch {
            let error = error as? SchemaSyntaxError ?? SchemaSyntaxError(line: 1, column: 1, expected: "text", found: "\(error)")
            tokens.append(SchemaToken(kind: .end, line: error.line, column: error.column))
            return (tokens, error)
        }
    }

    private static func read(_ text: String, into tokens: inout [SchemaToken]) throws {
        let characters = Array(text.unicodeScalars)
        var index = 0, line = 1, column = 1
        func advance() {
            if characters[index] == "\n" {
                line += 1
                column = 1
            } else if characters[index] != "\u{FEFF}" {
                column += 1
            }
            index += 1
        }
        while index < characters.count {
            let character = characters[index]
            if character == "\n" || character == "\r" || character == " " || character == "\t" || character == "\u{FEFF}" {
                advance()
                continue
            }
            let next = index + 1 < characters.count ? characters[index + 1] : nil
            if (character == "/" && next == "/") || (character == "-" && next == "-") {
                while index < characters.count, characters[index] != "\n" { advance() }
                continue
            }
            let (startLine, startColumn) = (line, column)
            if character == "\"" {
                advance()
                var name = ""
                while true {
                    guard index < characters.count, characters[index] != "\n" else {
                        throw SchemaSyntaxError(line: startLine, column: startColumn, expected: "a closing '\"' on the same line", found: "a name left open")
                    }
                    if characters[index] == "\"" {
                        if index + 1 < characters.count, characters[index + 1] == "\"" {
                            name.unicodeScalars.append("\"")
                            advance()
                            advance()
                            continue
                        }
                        advance()
                        break
                    }
                    name.unicodeScalars.append(characters[index])
                    advance()
                }
                tokens.append(SchemaToken(kind: .quoted(name), line: startLine, column: startColumn))
                continue
            }
            if "(),;<>.".unicodeScalars.contains(character) {
                advance()
                tokens.append(SchemaToken(kind: .symbol(Character(character)), line: startLine, column: startColumn))
                continue
            }
            if isWordCharacter(character) {
                var word = ""
                while index < characters.count, isWordCharacter(characters[index]) {
                    word.unicodeScalars.append(characters[index])
                    advance()
                }
                tokens.append(SchemaToken(kind: .word(word), line: startLine, column: startColumn))
                continue
            }
            throw SchemaSyntaxError(line: startLine, column: startColumn, expected: "a name, a keyword or one of ( ) , ; < >",
                                    found: "'\(character.escaped(asASCII: true))'")
        }
        tokens.append(SchemaToken(kind: .end, line: line, column: column))
    }

    /// Letters, digits and `_` make bare words (anything else is quoted).
    static func isWordCharacter(_ character: Unicode.Scalar) -> Bool {
        character == "_" || character.properties.isAlphabetic || ("0"..."9").contains(character)
    }

    // MARK: Grammar

    /// `DEFINE SCHEMA` then roles and record types.
    mutating func schema() throws -> CloudKitSchema {
        do {
            return try grammar()
        } catch let error as SchemaSyntaxError {
            // Stopped where the text stopped reading: the reason is the text's.
            if let lexError, (error.line, error.column) == (lexError.line, lexError.column) { throw lexError }
            throw error
        }
    }

    private mutating func grammar() throws -> CloudKitSchema {
        try keyword("DEFINE")
        try keyword("SCHEMA")
        var roles: [String] = []
        var roleNames: Set<String> = []
        var types: [SchemaRecordType] = []
        var typeNames: Set<String> = []
        var grantsToCheck: [(SchemaToken, String)] = []
        while true {
            let token = current
            if case .end = token.kind { break }
            if isKeyword("CREATE") {
                position += 1
                try keyword("ROLE")
                let nameToken = current
                let role = try name("a role's name")
                guard !SchemaGrant.builtInGrantees.contains(role), roleNames.insert(role).inserted else {
                    throw SchemaSyntaxError(line: nameToken.line, column: nameToken.column, expected: "a role not created before (nor _world, _icloud or _creator)", found: nameToken.shown)
                }
                roles.append(role)
                try symbol(";")
            } else if isKeyword("RECORD") {
                position += 1
                try keyword("TYPE")
                let nameToken = current
                let typeName = try name("a record type's name")
                if let problem = NameRules.problem(withName: typeName, kind: "record type") {
                    throw SchemaSyntaxError(line: nameToken.line, column: nameToken.column, expected: "a record type's name (\(problem))", found: nameToken.shown)
                }
                guard typeNames.insert(typeName).inserted else {
                    throw SchemaSyntaxError(line: nameToken.line, column: nameToken.column, expected: "a record type not defined before", found: nameToken.shown)
                }
                let (type, grants) = try recordType(typeName)
                grantsToCheck += grants
                types.append(type)
            } else {
                throw SchemaSyntaxError(line: token.line, column: token.column, expected: "CREATE ROLE, RECORD TYPE or the end of the file", found: token.shown)
            }
        }
        for (token, grantee) in grantsToCheck where !SchemaGrant.builtInGrantees.contains(grantee) && !roleNames.contains(grantee) {
            throw SchemaSyntaxError(line: token.line, column: token.column, expected: "_world, _icloud, _creator or a role the file creates", found: token.shown)
        }
        return CloudKitSchema(roles: roles, recordTypes: types)
    }

    /// `( member, … );` after `RECORD TYPE name`: the type, and each grant's grantee where it
    /// stands (roles are checked once the whole file is read).
    private mutating func recordType(_ name: String) throws -> (SchemaRecordType, [(SchemaToken, String)]) {
        try symbol("(")
        var type = SchemaRecordType(name: name)
        var grantees: [(SchemaToken, String)] = []
        var fieldNames: Set<String> = []
        if accept(")") {
            try symbol(";")
            return (type, grantees)
        }
        repeat {
            if isKeyword("GRANT") {
                position += 1
                var permissions: [SchemaPermission] = []
                repeat {
                    let token = current
                    guard case .word(let word) = token.kind, let permission = SchemaPermission(rawValue: word.uppercased()) else {
                        throw SchemaSyntaxError(line: token.line, column: token.column, expected: "CREATE, READ or WRITE", found: token.shown)
                    }
                    position += 1
                    permissions.append(permission)
                } while accept(",") && !isKeyword("TO")
                try keyword("TO")
                let granteeToken = current
                let grantee = try self.name("_world, _icloud, _creator or a role")
                grantees.append((granteeToken, grantee))
                type.grants.append(SchemaGrant(permissions: permissions, grantee: grantee))
            } else {
                let nameToken = current
                let field = try self.field()
                guard fieldNames.insert(field.name).inserted else {
                    throw SchemaSyntaxError(line: nameToken.line, column: nameToken.column, expected: "a field not defined before in \(NameRules.quoted(name))", found: nameToken.shown)
                }
                if let problem = Self.problem(with: field) {
                    throw SchemaSyntaxError(line: nameToken.line, column: nameToken.column, expected: problem, found: nameToken.shown)
                }
                type.fields.append(field)
            }
        } while accept(",")
        try symbol(")")
        try symbol(";")
        return (type, grantees)
    }

    /// `name [ENCRYPTED] TYPE [QUERYABLE] [SEARCHABLE] [SORTABLE]` (the attributes in any
    /// order); a list is encrypted as Apple's grammar has it, `LIST<ENCRYPTED STRING>` (the
    /// `ENCRYPTED LIST<STRING>` form is read too).
    private mutating func field() throws -> SchemaField {
        let nameToken = current
        let name = try self.name("a field's name or GRANT")
        if let problem = NameRules.problem(withName: name, kind: "field name") {
            throw SchemaSyntaxError(line: nameToken.line, column: nameToken.column, expected: "a field's name (\(problem))", found: nameToken.shown)
        }
        var encrypted = isKeyword("ENCRYPTED")
        if encrypted { position += 1 }
        let type = try fieldType(encrypted: &encrypted)
        var field = SchemaField(name: name, type: type, encrypted: encrypted)
        while case .word(let word) = current.kind {
            let token = current
            switch word.uppercased() {
            case "QUERYABLE" where !field.queryable: field.queryable = true
            case "SORTABLE" where !field.sortable: field.sortable = true
            case "SEARCHABLE" where !field.searchable: field.searchable = true
            default:
                throw SchemaSyntaxError(line: token.line, column: token.column, expected: "QUERYABLE, SORTABLE, SEARCHABLE (each once), ',' or ')'", found: token.shown)
            }
            position += 1
        }
        return field
    }

    /// A field type: CloudKit's (`STRING`, …, `LIST<…>`, `NUMBER PREFERRED AS INT64|DOUBLE`),
    /// or RecordSync's extension types `RECORDSYNC.BOOLEAN` and `RECORDSYNC.NESTED`.
    private mutating func fieldType(inList: Bool = false, encrypted: inout Bool) throws -> FieldType {
        let token = current
        let expected = inList ? "a list's element type (not a list)" : "a field type (ASSET, BYTES, DOUBLE, INT64, LOCATION, REFERENCE, STRING, TIMESTAMP, LIST<…>, RECORDSYNC.BOOLEAN, RECORDSYNC.NESTED)"
        guard case .word(let word) = token.kind else {
            throw SchemaSyntaxError(line: token.line, column: token.column, expected: expected, found: token.shown)
        }
        position += 1
        switch word.uppercased() {
        case "LIST" where !inList:
            try symbol("<")
            if isKeyword("ENCRYPTED") {
                position += 1
                encrypted = true
            }
            let element = try fieldType(inList: true, encrypted: &encrypted)
            try symbol(">")
            return FieldType(element.scalar, isList: true)
        case "NUMBER":
            // Apple's grammar: a number stored as the type it prefers.
            try keyword("PREFERRED")
            try keyword("AS")
            let preferred = current
            guard case .word(let name) = preferred.kind, let scalar = ["INT64": ScalarType.int64, "DOUBLE": .double][name.uppercased()] else {
                throw SchemaSyntaxError(line: preferred.line, column: preferred.column, expected: "INT64 or DOUBLE after NUMBER PREFERRED AS", found: preferred.shown)
            }
            position += 1
            return FieldType(scalar)
        case "RECORDSYNC":
            try symbol(".")
            let extensionToken = current
            guard case .word(let name) = extensionToken.kind, let scalar = [ "BOOLEAN": ScalarType.boolean, "NESTED": .nested][name.uppercased()] else {
                throw SchemaSyntaxError(line: extensionToken.line, column: extensionToken.column, expected: "BOOLEAN or NESTED after RECORDSYNC.", found: extensionToken.shown)
            }
            position += 1
            return FieldType(scalar)
        default:
            guard let scalar = SchemaWriter.cloudKitTypes.first(where: { $0.value == word.uppercased() })?.key else {
                throw SchemaSyntaxError(line: token.line, column: token.column, expected: expected, found: token.shown)
            }
            return FieldType(scalar)
        }
    }

    /// What a field may not be, or `nil`: a system field of another type, or encrypted or
    /// attributes, an index its type cannot have.
    static func problem(with field: SchemaField) -> String? {
        if field.name.hasPrefix("___") {
            guard let system = SchemaField.systemFields.first(where: { $0.name == field.name }) else {
                return "a system field (\(SchemaField.systemFields.map(\.name).joined(separator: ", "))) or a name not beginning ___"
            }
            guard system.type == field.type, !field.encrypted else { return "\(field.name) as \(SchemaWriter.spelling(system.type))" }
        }
        let scalar = field.type.scalar
        if field.encrypted {
            if scalar == .asset || scalar == .reference { return "a type that can be ENCRYPTED (assets are encrypted already; references cannot be)" }
            if field.queryable || field.sortable || field.searchable { return "no index on an ENCRYPTED field" }
        }
        if field.searchable, scalar != .string { return "SEARCHABLE on STRING or LIST<STRING> fields only" }
        if field.sortable, [.asset, .nested].contains(scalar) { return "SORTABLE on a field that orders (not ASSET or NESTED)" }
        if field.queryable, [.asset, .nested].contains(scalar) { return "QUERYABLE on a field that can be compared (not ASSET or NESTED)" }
        return nil
    }

    // MARK: Pieces

    private var current: SchemaToken { tokens[min(position, tokens.count - 1)] }

    private func isKeyword(_ keyword: String) -> Bool {
        if case .word(let word) = current.kind { return word.uppercased() == keyword }
        return false
    }

    private mutating func keyword(_ keyword: String) throws {
        guard isKeyword(keyword) else {
            throw SchemaSyntaxError(line: current.line, column: current.column, expected: keyword, found: current.shown)
        }
        position += 1
    }

    private mutating func symbol(_ symbol: Character) throws {
        guard accept(symbol) else {
            throw SchemaSyntaxError(line: current.line, column: current.column, expected: "'\(symbol)'", found: current.shown)
        }
    }

    private mutating func accept(_ symbol: Character) -> Bool {
        guard case .symbol(symbol) = current.kind else { return false }
        position += 1
        return true
    }

    /// A bare or quoted name.
    private mutating func name(_ what: String) throws -> String {
        switch current.kind {
        case .word(let word):
            position += 1
            return word
        case .quoted(let name):
            position += 1
            return name
        default:
            throw SchemaSyntaxError(line: current.line, column: current.column, expected: what, found: current.shown)
        }
    }
}

// MARK: Writing

extension CloudKitSchema {
    /// The schema in the language, as `cktool export-schema` lays it out: normalized, names
    /// quoted where a bare word would not read back as them (or would read as a keyword), the
    /// types of a record type's fields in one column.
    public var written: String {
        SchemaWriter.write(normalized())
    }
}

enum SchemaWriter {
    /// CloudKit's spelling of each of its scalar types.
    static let cloudKitTypes: [ScalarType: String] = [
        .asset: "ASSET", .bytes: "BYTES", .double: "DOUBLE", .int64: "INT64", .location: "LOCATION",
        .reference: "REFERENCE", .string: "STRING", .timestamp: "TIMESTAMP",
    ]

    /// Words the reader takes as keywords where a name may stand.
    static let keywords: Set<String> = ["GRANT", "CREATE", "RECORD", "ROLE", "TYPE", "DEFINE", "SCHEMA", "TO", "LIST", "ENCRYPTED", "NUMBER",
                                        "QUERYABLE", "SORTABLE", "SEARCHABLE", "READ", "WRITE", "RECORDSYNC"]

    /// A type as written: `ENCRYPTED` inside a list's brackets, as Apple's grammar has it.
    static func spelling(_ type: FieldType, encrypted: Bool = false) -> String {
        let scalar = (encrypted ? "ENCRYPTED " : "") + (cloudKitTypes[type.scalar] ?? "RECORDSYNC.\(type.scalar.rawValue)")
        return type.isList ? "LIST<\(scalar)>" : scalar
    }

    /// `name` as it is written: bare when it is a word that is no keyword and does not begin
    /// with `_` (as `cktool` quotes system fields and grantees), else quoted.
    static func name(_ name: String) -> String {
        let bare = !name.isEmpty && name.unicodeScalars.allSatisfy(SchemaParser.isWordCharacter) && !name.hasPrefix("_")
            && !keywords.contains(name.uppercased()) && !("0"..."9").contains(name.unicodeScalars.first!)
        return bare ? name : "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func write(_ schema: CloudKitSchema) -> String {
        var text = "DEFINE SCHEMA\n"
        if !schema.roles.isEmpty {
            text += "\n" + schema.roles.map { "    CREATE ROLE \(name($0));\n" }.joined()
        }
        for type in schema.recordTypes {
            text += "\n    RECORD TYPE \(name(type.name)) (\n"
            let names = type.fields.map { name($0.name) }
            let width = names.map(\.count).max() ?? 0
            var members: [String] = []
            for (field, written) in zip(type.fields, names) {
                var line = written + String(repeating: " ", count: width - written.count + 1)
                line += spelling(field.type, encrypted: field.encrypted)
                if field.queryable { line += " QUERYABLE" }
                if field.searchable { line += " SEARCHABLE" }
                if field.sortable { line += " SORTABLE" }
                members.append(line)
            }
            for grant in type.grants {
                members.append("GRANT \(grant.permissions.map(\.rawValue).joined(separator: ", ")) TO \(name(grant.grantee))")
            }
            for (index, member) in members.enumerated() {
                text += "        \(member)\(index < members.count - 1 ? "," : "")\n"
            }
            text += "    );\n"
        }
        return text
    }
}
