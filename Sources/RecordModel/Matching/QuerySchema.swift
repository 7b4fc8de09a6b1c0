import Foundation

/// The field types a query is compiled against: those of the queried record type, and those of
/// every record type of its container, which key paths (`artist.name`) step into.
public struct QuerySchema: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    /// The fields of the queried type.
    public var fields: [String: FieldType]
    /// The fields of every record type of the container, by type.
    public var types: [String: [String: FieldType]]

    /// Which records of each type the query may see, when not every record (a public
    /// database's security roles: docs/protocol.md, "Security roles"); `nil`: all. A key path
    /// steps only into records the query may see.
    public var readers: QueryReaders?

    /// The most names a key path may have (`a.b.c.d`: three references followed).
    public static let maximumKeyPathLength = 4

    public init(fields: [String: FieldType], types: [String: [String: FieldType]] = [:], readers: QueryReaders? = nil) {
        self.fields = fields
        self.types = types
        self.readers = readers
    }

    public init(dictionaryLiteral elements: (String, FieldType)...) {
        self.init(fields: Dictionary(uniqueKeysWithValues: elements))
    }

    /// The schema of `recordType` among `types`.
    public init(recordType: String, types: [String: [String: FieldType]]) {
        self.init(fields: types[recordType] ?? [:], types: types)
    }

    /// One step of a key path: a reference field of this type, the record types the records it
    /// points at may have, and what follows.
    public struct Step: Sendable {
        /// The reference field followed (`artist`).
        public var field: String
        /// Its type (a `REFERENCE` or `REFERENCE_LIST`).
        public var type: FieldType
        /// The record types that hold the next name: only their records can pass what follows.
        public var targetTypes: [String]
        /// The rest of the path, compared on the records pointed at (`name`, or `label.city`).
        public var rest: String
        /// The schema the rest is compiled against.
        public var targetSchema: QuerySchema
    }

    /// The first step of the key path `path` (a field name holding a `.`).
    ///
    /// A step goes through a `REFERENCE` or `REFERENCE_LIST` field to the records it points at,
    /// of any type that has the next name. A first name the type has no field for yet leads
    /// nowhere (no type is a target), as a comparison with an unknown field matches nothing.
    ///
    /// - Throws: ``RecordSyncError`` (`BAD_REQUEST`) for a path that is too long, a bad name, a
    ///   step through a field that is no reference, or a next name whose type differs between
    ///   the types that hold it.
    public func step(_ path: String) throws -> Step {
        let names = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard names.count <= Self.maximumKeyPathLength else {
            throw RecordSyncError(.badRequest, "key path \(NameRules.quoted(path)) has \(names.count) names; the limit is \(Self.maximumKeyPathLength)")
        }
        for name in names {
            if let problem = NameRules.problem(withFieldName: name) { throw RecordSyncError(.badRequest, "key path \(NameRules.quoted(path)): \(problem)") }
        }
        let field = names[0], next = names[1]
        let type = fields[field] ?? FieldType(.reference)
        guard type.scalar == .reference else {
            throw RecordSyncError(.badRequest, "key path \(NameRules.quoted(path)) steps through \(NameRules.quoted(field)), which is \(type); a key path follows REFERENCE and REFERENCE_LIST fields")
        }
        // `allTokens` last (a token search of every text field) is held by every type.
        let everyType = names.count == 2 && next == QueryFilter.allTokensField
        let targetTypes = fields[field] == nil ? [] : types.filter { (everyType || $0.value[next] != nil) && readers?.hidden.contains($0.key) != true }.keys.sorted()
        var targetFields: [String: FieldType] = [:]
        for target in targetTypes {
            for (name, fieldType) in types[target] ?? [:] where targetFields[name] == nil { targetFields[name] = fieldType }
            if let known = targetFields[next], let here = types[target]?[next], known != here {
                let first = targetTypes.first { types[$0]?[next] == known } ?? target
                throw RecordSyncError(.badRequest, "key path \(NameRules.quoted(path)): field \(NameRules.quoted(next)) is \(known) in \(first) but \(here) in \(target); a key path needs one type")
            }
        }
        return Step(field: field, type: type, targetTypes: targetTypes, rest: names[1...].joined(separator: "."),
                    targetSchema: QuerySchema(fields: targetFields, types: types, readers: readers))
    }

    /// The type of the field `name` names, following a key path to its last field; `nil` when
    /// no type has it yet.
    public func type(of name: String) throws -> FieldType? {
        guard name.contains(".") else { return fields[name] }
        let step = try self.step(name)
        return try step.targetSchema.type(of: step.rest)
    }
}

/// Which records of each type a query may see (``QuerySchema/readers``): none of the `hidden`
/// types, only those `creator` created of the `creatorOnly` types, every record of the others.
public struct QueryReaders: Sendable, Hashable {
    /// Types none of whose records may be seen.
    public var hidden: Set<String>
    /// Types whose records may be seen only by their creator.
    public var creatorOnly: Set<String>
    /// The user record name of the caller (matched against `created_by`).
    public var creator: String
    /// For a participant of record shares: the shares' roots; only the records of their
    /// hierarchies (each root, and the records whose `parent` leads to it) may be seen.
    public var shareRoots: [String]?
    /// The key of the zone holding ``shareRoots``.
    public var shareZone: Int64

    public init(hidden: Set<String>, creatorOnly: Set<String>, creator: String, shareRoots: [String]? = nil, shareZone: Int64 = 0) {
        self.hidden = hidden
        self.creatorOnly = creatorOnly
        self.creator = creator
        self.shareRoots = shareRoots
        self.shareZone = shareZone
    }
}
