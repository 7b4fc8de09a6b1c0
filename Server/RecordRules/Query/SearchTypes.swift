import Foundation
import Synchronization
import RecordModel

/// Which record types' words are indexed (``SearchIndex``), and making a type so.
///
/// Every string field could be searched, but an index of every word of every record costs
/// each write several rows (a fifth of a save's time, a third of a cascade's, in
/// `docs/performance.md`). So a record type's words are indexed from the first word search
/// that names it on, as CloudKit indexes a field once it is marked `SEARCHABLE`: that search,
/// a query subscription holding one, or a schema import or deploy marking a field `SEARCHABLE`
/// marks the type in its container, and from that write on every write indexes its records'
/// words in its own transaction. The records stored before are indexed by a *build*
/// (`search_builds`) into word blocks (``SearchWordBlock``): in write transactions of
/// ``StoreLimits/searchIndexBatch`` records each, in the order of their zone key and name, run
/// one at a time in a process by the search that needs it (for up to
/// ``StoreLimits/searchIndexWait``) or by the server's background builder, so that writes to
/// the container are answered between them. A search of a type still being
/// built then answers `TRY_AGAIN_LATER` with ``retryAfter``; a query subscription with a word
/// search is created only once its types are built (they fire by the stored words). Locations
/// are indexed for every type.
enum SearchTypes {
    /// The `retryAfter` of a search answered `TRY_AGAIN_LATER` while its types are built.
    static let retryAfter: Double = 5

    /// A query needs record types marked searchable first, or their builds finished (thrown
    /// by ``check(_:schema:inContainer:in:)``).
    struct Needed: Error {
        /// The types not marked yet.
        var unmarked: Set<String>
        /// The types whose builds are not finished.
        var building: Set<String>
        var container: Int64
    }

    /// Throws ``Needed`` when `query` searches the words of a record type that is not yet
    /// searchable, or whose stored records are not all indexed yet. A query whose key paths
    /// do not resolve is left to the compiler to refuse.
    static func check(_ query: Query, schema: QuerySchema, inContainer container: Int64, in transaction: any StorageTransaction) throws {
        let filters = query.filterBy ?? []
        guard QueryFilter.searchWords(filters),
              let needed = try? QueryFilter.wordSearchTypes(filters, recordType: query.recordType, schema: schema), !needed.isEmpty else { return }
        try require(needed, inContainer: container, in: transaction)
    }

    /// Throws ``Needed`` unless every one of `needed` is searchable with its build finished.
    static func require(_ needed: Set<String>, inContainer container: Int64, in transaction: any StorageTransaction) throws {
        guard !needed.isEmpty else { return }
        let unmarked = needed.subtracting(try transaction.searchableTypes(inContainer: container))
        let building = needed.subtracting(unmarked).intersection(try transaction.searchBuilds(inContainer: container))
        if !unmarked.isEmpty || !building.isEmpty { throw Needed(unmarked: unmarked, building: building, container: container) }
    }

    /// Marks `types` searchable in the container (in the calling write transaction), each
    /// newly marked one with a build of its stored records to run once the transaction commits.
    static func mark(_ types: Set<String>, inContainer container: Int64, at now: Int64, in transaction: any StorageTransaction) throws {
        for type in types.sorted() where try transaction.markSearchable(type, inContainer: container) {
            try transaction.startSearchBuild(SearchBuild(container: container, recordType: type, startedAt: now))
        }
    }

    /// Indexes the words of up to `limit` more records of `build` (taken in `transaction`) as
    /// a word block a zone, stores how far it came, and answers whether it is finished. Every
    /// block is current: the records are read in the same transaction (on PostgreSQL locked,
    /// with no write of the container running); a record written since the type was marked
    /// already has its rows, which hold the same words; a later save changing its words or
    /// its delete takes it out of its block.
    static func advance(_ build: SearchBuild, limit: Int, blockCapacity: Int, in transaction: any StorageTransaction) throws -> (build: SearchBuild, finished: Bool) {
        var build = build
        let batch = try transaction.records(ofType: build.recordType, inContainer: build.container,
                                            after: build.after.map { ($0.zone, $0.name) }, limit: limit)
        let tokens = try Self.tokens(of: batch)
        // A word block a zone (the records come by zone, then name in byte order): each word
        // of each field with the names holding it, in the order of the postings' key.
        var start = batch.startIndex
        while start < batch.endIndex {
            let zone = batch[start].zone
            let end = batch[start...].firstIndex { $0.zone != zone } ?? batch.endIndex
            var words: [String: [String: [String]]] = [:]
            for index in start..<end {
                let name = batch[index].name
                for (field, token) in tokens[index] {
                    words[token, default: [:]][field, default: []].append(name)
                }
            }
            var postings: [SearchWordBlock.Posting] = []
            postings.reserveCapacity(words.count)
            for token in words.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                let fields = words[token]!
                for field in fields.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                    postings.append(SearchWordBlock.Posting(token: token, field: field, names: fields[field]!))
                }
            }
            try transaction.insertSearchBlock(SearchWordBlock(zone: zone, names: batch[start..<end].map(\.name), postings: postings), capacity: blockCapacity)
            start = end
        }
        if let last = batch.last { build.after = SearchBuild.Position(zone: last.zone, name: last.name) }
        build.indexed += Int64(batch.count)
        let finished = batch.count < limit
        try transaction.updateSearchBuild(build, finished: finished)
        return (build, finished)
    }
}

extension SearchTypes {
    /// The words of each record's text fields (``SearchIndex``), worked out on as many threads
    /// as the machine has cores (up to 4), a contiguous part of the records each: reading the
    /// stored fields and cutting their words is most of a step's own time.
    static func tokens(of records: [(zone: Int64, name: String, fields: String)]) throws -> [[(field: String, token: String)]] {
        @Sendable func tokens(_ part: ArraySlice<(zone: Int64, name: String, fields: String)>) throws -> [[(field: String, token: String)]] {
            try part.map { record in
                SearchIndex(fields: try Record.fields(fromJSON: record.fields).lazy.filter { if case .location = $0.value { false } else { true } }).tokens
            }
        }
        let parts = min(ProcessInfo.processInfo.activeProcessorCount, 4, records.count / 250)
        guard parts > 1 else { return try tokens(records[...]) }
        let results = Mutex<[Int: Result<[[(field: String, token: String)]], any Error>]>([:])
        DispatchQueue.concurrentPerform(iterations: parts) { part in
            let range = records.count * part / parts..<records.count * (part + 1) / parts
            let result = Result { try tokens(records[range]) }
            results.withLock { $0[part] = result }
        }
        return try results.withLock { results in try (0..<parts).flatMap { try results[$0]!.get() } }
    }
}

/// What ``RecordStore/advanceSearchBuild(inContainer:ofType:)`` did.
public enum SearchBuildStep: Sendable, Equatable {
    /// There was no build to run.
    case none
    /// A step already runs in this process; none was taken.
    case busy
    /// The step indexed more records; the build goes on from where it left.
    case advanced(SearchBuild)
    /// The step indexed the last records; the type's words are all indexed.
    case finished(SearchBuild)
}

extension RecordStore {
    /// Runs `body`; when it throws ``SearchTypes/Needed``, marks the types not marked yet (in
    /// a write transaction of their own), runs their builds (or waits for the step another
    /// task of the process runs) for up to ``StoreLimits/searchIndexWait``, and runs `body`
    /// again once they are finished; else answers `TRY_AGAIN_LATER` with
    /// ``SearchTypes/retryAfter``.
    func markingSearchTypes<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let needed as SearchTypes.Needed {
            if !needed.unmarked.isEmpty {
                let now = Self.now()
                try await engine.write { transaction in
                    try SearchTypes.mark(needed.unmarked, inContainer: needed.container, at: now, in: transaction)
                    return .commit(())
                }
            }
            let deadline = ContinuousClock.now + limits.searchIndexWait
            var waiting = needed.unmarked.union(needed.building).sorted()
            while let type = waiting.first {
                guard ContinuousClock.now < deadline else {
                    throw RecordSyncError(.tryAgainLater, "the words of the stored \(type) records are being indexed for searching; search again in a few seconds",
                                          retryAfter: SearchTypes.retryAfter)
                }
                do {
                    switch try await advanceSearchBuild(inContainer: needed.container, ofType: type) {
                    case .none, .finished: waiting.removeFirst()
                    case .advanced: continue
                    case .busy:
                        try await Task.sleep(for: .milliseconds(20))
                        let container = needed.container
                        if try await !engine.read({ try $0.searchBuilds(inContainer: container) }).contains(type) { waiting.removeFirst() }
                    }
                } catch let error as RecordSyncError where error.code != .tryAgainLater {
                    // The build goes on in the background: the search is answered as while it runs.
                    throw RecordSyncError(.tryAgainLater, "the words of the stored \(type) records are being indexed for searching (\(error.reason)); search again in a few seconds",
                                          retryAfter: SearchTypes.retryAfter)
                }
            }
            do {
                return try await body()
            } catch let again as SearchTypes.Needed {
                // Marked again meanwhile (an import that dropped and added the type back, say).
                throw RecordSyncError(.tryAgainLater, "the words of the stored \(again.unmarked.union(again.building).sorted().joined(separator: ", ")) records are being indexed for searching; search again in a few seconds",
                                      retryAfter: SearchTypes.retryAfter)
            }
        }
    }

    /// Runs one step of a build of a type's stored words (``SearchTypes``) in a write
    /// transaction of its own, unless one already runs in this process: of `recordType` in
    /// `container`, or with `nil`s of the build no other server is running that has indexed the
    /// fewest records. Each server's background builder calls it while it answers a step.
    public func advanceSearchBuild(inContainer container: Int64? = nil, ofType recordType: String? = nil) async throws -> SearchBuildStep {
        guard searchBuildStepping.withLock({ stepping in
            if stepping { return false }
            stepping = true
            return true
        }) else { return .busy }
        defer { searchBuildStepping.withLock { $0 = false } }
        let (limit, capacity) = (limits.searchIndexBatch, limits.searchBlockRecords)
        return try await engine.write { transaction in
            guard let build = try transaction.takeSearchBuild(inContainer: container, ofType: recordType) else { return .rollback(.none) }
            let (advanced, finished) = try SearchTypes.advance(build, limit: limit, blockCapacity: capacity, in: transaction)
            return .commit(finished ? .finished(advanced) : .advanced(advanced))
        }
    }
}
