import Foundation
import RecordModel

/// Which record types' words are indexed (``SearchIndex``), and making a type so.
///
/// Every string field could be searched, but an index of every word of every record costs
/// each write several rows (a fifth of a save's time, a third of a cascade's, in
/// `docs/performance.md`). So a record type's words are indexed from the first word search
/// that names it on, as CloudKit indexes a field once it is marked `SEARCHABLE`: that search
/// (or a query subscription holding one) marks the type in its container and indexes the words
/// of the type's stored records, in one write transaction; every write after indexes its
/// records' words in its own transaction. Locations are indexed for every type.
enum SearchTypes {
    /// A query needs record types marked searchable first (thrown by ``check(_:schema:inContainer:in:)``).
    struct Needed: Error {
        var types: Set<String>
        var container: Int64
    }

    /// Throws ``Needed`` when `query` searches the words of a record type that is not yet
    /// searchable. A query whose key paths do not resolve is left to the compiler to refuse.
    static func check(_ query: Query, schema: QuerySchema, inContainer container: Int64, in transaction: any StorageTransaction) throws {
        let filters = query.filterBy ?? []
        guard QueryFilter.searchWords(filters),
              let needed = try? QueryFilter.wordSearchTypes(filters, recordType: query.recordType, schema: schema), !needed.isEmpty else { return }
        let missing = needed.subtracting(try transaction.searchableTypes(inContainer: container))
        if !missing.isEmpty { throw Needed(types: missing, container: container) }
    }

    /// Marks `types` searchable in the container, indexing the words of their stored records,
    /// 1,000 records a round (in the calling write transaction).
    static func mark(_ types: Set<String>, inContainer container: Int64, in transaction: any StorageTransaction) throws {
        for type in types.sorted() where try transaction.markSearchable(type, inContainer: container) {
            var after: (zone: Int64, name: String)?
            while true {
                let batch = try transaction.records(ofType: type, inContainer: container, after: after, limit: 1_000)
                guard let last = batch.last else { break }
                after = (last.zone, last.name)
                for record in batch {
                    let texts = try Record.fields(fromJSON: record.fields).filter { if case .location = $0.value { false } else { true } }
                    let words = SearchIndex(fields: texts)
                    if !words.isEmpty { try transaction.insertSearchIndex(words, of: record.name, inZone: record.zone) }
                }
            }
        }
    }
}

extension RecordStore {
    /// Runs `body`; when it throws ``SearchTypes/Needed``, marks those types searchable in a
    /// write transaction and runs it again.
    func markingSearchTypes<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let needed as SearchTypes.Needed {
            try await engine.write { transaction in
                try SearchTypes.mark(needed.types, inContainer: needed.container, in: transaction)
                return .commit(())
            }
            return try await body()
        }
    }
}
