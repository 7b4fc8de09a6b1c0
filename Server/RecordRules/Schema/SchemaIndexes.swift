import RecordModel
import RecordStorage

/// The indexes a query may use (docs/protocol.md, "Declared indexes"): in a locked schema only
/// those its fields are marked with, refused in CloudKit's words otherwise; in an unlocked one
/// (development) a field is marked on its first use, so the next deploy carries the index.
enum SchemaIndexes {
    /// Unlocked fields a query uses unmarked (thrown by ``check(_:locked:stored:inContainer:)``).
    struct Needed: Error {
        var recordType: String
        var marks: [(field: String, type: FieldType, index: SchemaIndexUse.Index)]
        var container: Int64
    }

    /// Refuses a query of a locked schema that uses an index its fields lack; throws
    /// ``Needed`` for an unlocked schema's fields that lack one. A field the schema does not
    /// have is left to the query's compiler.
    ///
    /// - Parameter stored: the queried type's fields with their marks
    ///   (``StorageTransaction/schemaIndexes(inContainer:)``), `nil` when the schema lacks the
    ///   type (the query finds nothing, and marks nothing).
    static func check(_ query: Query, locked: Bool, stored: [SchemaField]?, inContainer container: Int64) throws {
        let uses = query.indexUses
        guard !uses.isEmpty, let stored else { return }
        let fields = Dictionary(stored.map { ($0.name, $0) }) { a, _ in a }
        var needed: [(field: String, type: FieldType, index: SchemaIndexUse.Index)] = []
        for use in uses {
            // Every text field of the type, for a word search of all of them.
            let candidates: [SchemaField]
            if use.field == QueryFilter.allTokensField && fields[use.field] == nil {
                // Only a word search takes `allTokens`; any other use is the compiler's to refuse.
                guard use.index == .searchable else { continue }
                candidates = stored.filter { $0.type.scalar == .string }
                if locked, !candidates.contains(where: \.searchable) {
                    throw RecordSyncError(.badRequest, "No field of type '\(query.recordType)' is marked searchable")
                }
                if candidates.contains(where: \.searchable) { continue }
            } else if let field = fields[use.field] {
                candidates = [field]
            } else if let system = SchemaField.systemFields.first(where: { $0.name == use.field }) {
                candidates = [SchemaField(name: system.name, type: system.type)]
            } else {
                continue
            }
            for field in candidates where !has(field, use.index) && takes(field, use.index) {
                if locked { throw RecordSyncError(.badRequest, "Field '\(field.name)' is not marked \(use.index.rawValue)") }
                needed.append((field.name, field.type, use.index))
            }
        }
        if !needed.isEmpty { throw Needed(recordType: query.recordType, marks: needed, container: container) }
    }

    /// ``check(_:locked:stored:inContainer:)`` inside a write transaction: an unlocked
    /// schema's fields are marked in it at once.
    static func require(_ query: Query, inContainer container: Int64, in transaction: any StorageTransaction) throws {
        try transaction.lockSchema(inContainer: container, exclusive: false)
        let stored = try transaction.schemaIndexes(inContainer: container)
        do {
            try check(query, locked: stored.locked, stored: stored.types[query.recordType], inContainer: container)
        } catch let needed as Needed {
            for mark in needed.marks {
                try transaction.markIndex(mark.index, onField: mark.field, type: mark.type, of: needed.recordType, inContainer: container)
            }
        }
    }

    static func has(_ field: SchemaField, _ index: SchemaIndexUse.Index) -> Bool {
        switch index {
        case .queryable: field.queryable
        case .sortable: field.sortable
        case .searchable: field.searchable
        }
    }

    /// Whether the schema language lets `field` take `index` (an encrypted field takes none, an
    /// asset or nested value is never compared or sorted, only text is searched): one that
    /// cannot is left to the query's compiler.
    static func takes(_ field: SchemaField, _ index: SchemaIndexUse.Index) -> Bool {
        switch index {
        case _ where field.encrypted: false
        case .queryable, .sortable: ![.asset, .nested].contains(field.type.scalar)
        case .searchable: field.type.scalar == .string
        }
    }
}

extension RecordStore {
    /// Runs `body`; when it throws ``SchemaIndexes/Needed``, checks `query` again in a write
    /// transaction (the schema may have changed since: locked, or the field dropped), marking
    /// what it needs there, and runs `body` again.
    func markingIndexes<T>(for query: Query, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let needed as SchemaIndexes.Needed {
            try await engine.write { transaction in
                try SchemaIndexes.require(query, inContainer: needed.container, in: transaction)
                return .commit(())
            }
            return try await body()
        }
    }
}

extension RecordStore {
    /// Brings the records' field indexes in line with the schemas' marks: an index for each
    /// field any schema marks `QUERYABLE` or `SORTABLE` (lists aside), none for a field none
    /// marks any more (docs/architecture.md, "Field indexes"). ``FieldIndexBuilder`` runs it on
    /// every server.
    @discardableResult
    public func settleFieldIndexes() async throws -> (built: [String], dropped: [String]) {
        let marked = try await engine.read { transaction in try transaction.markedFields() }
        return try await engine.settleFieldIndexes(Set(marked.filter { !$0.type.isList }.map { FieldIndexKey(field: $0.field, scalar: $0.type.scalar) }))
    }
}

extension QuerySchema {
    /// The schema a query plans with, from the stored fields with their marks (the system
    /// fields' rows left out).
    init(recordType: String, stored: [String: [SchemaField]]) {
        self.init(recordType: recordType, types: stored.mapValues { fields in
            Dictionary(fields.lazy.filter { !$0.name.hasPrefix("___") }.map { ($0.name, $0.type) }) { a, _ in a }
        })
    }
}
