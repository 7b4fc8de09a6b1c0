import Foundation
import RecordModel
import ServiceLifecycle

/// Reads the next pages of a zone's change feed while the client is busy with the page just
/// answered, so that a client catching up on a large zone does not wait for each page's read.
///
/// A client fetching changes asks for one page after another, each with the token the
/// previous answer gave; a page's read and encoding on the server (2–4 ms for 400 records)
/// were part of every step of that chain. When a `records/changes` answer says more is coming,
/// the next request is already known: the same request with the new token, from the same
/// user. Pages are read ``depth`` at a time in one snapshot (the fixed cost of a read, its
/// round trips to the database, shared by them) and kept here: the first of a read can be
/// taken as soon as it is encoded, and each after it is encoded by a task of its own (a client
/// that asks for the next page as soon as it has read a page's head would otherwise wait for
/// them all). A request that finds no page kept reads its own with the ``depth`` - 1 after it
/// (and drops the client's pages kept from before). When a read ends, the next starts at once
/// while fewer than ``window`` of the client's pages are kept, so one read is under way after
/// another while the client takes the pages already read; and when the client takes a page
/// with fewer than ``depth`` kept after it, a read starts after the last. A request, when it
/// comes, gets its page provided the zone's feed has not moved since it was read
/// (``ChangeFeedMark``: the zone's incarnation and its last change, checked with one small
/// read). Otherwise the page is read again, so an answer is never older than the request: a
/// client that saves and then fetches sees its save.
///
/// At most ``capacity`` pages are kept, each for at most ``lifetime``; a client that stops
/// asking has cost at most ``window`` + ``depth`` - 1 pages. A page is kept as the server will
/// send it (`Answer`: the HTTP layer keeps the encoded response), prepared by the `encode`
/// closure it is given with each request; `variant` tells apart answers of the same page that
/// are encoded differently (gzip or not).
///
/// Each read runs in a task this object owns: a read dropped (expired, or past the capacity)
/// is cancelled. It is a `Service` of the application: at graceful shutdown ``run()`` returns
/// after ``stop()``, which cancels every read still kept and ends reading ahead (requests are
/// then answered by reading their page).
public final class ChangePageReadAhead<Answer: Sendable>: Service, @unchecked Sendable {
    /// Prepares a page's answer.
    public typealias Encode = @Sendable (StoredZoneChanges) throws -> Answer

    /// What a page was read for: the request, whose user, and how its answer is encoded.
    struct Key: Hashable, Sendable {
        var scope: DatabaseScope
        var request: RecordChangesRequest
        var variant: String

        /// The pages a client reading on from this one asks for: the same request but for its
        /// token, from the same user, encoded the same way.
        var chain: Key {
            var chain = self
            chain.request.syncToken = nil
            return chain
        }
    }

    /// A page ready to send.
    public struct Prepared: Sendable {
        var answer: Answer
        var mark: ChangeFeedMark
        /// The request for the page after it, if more is coming.
        var next: RecordChangesRequest?
    }

    /// A page kept for its request, with the task that makes it (done or not): the first page
    /// of a read has the read's task; a page read along with it has the task that encodes it
    /// (and ``encoding``).
    private struct Kept {
        var read: Task<Prepared, any Error>?
        var until: ContinuousClock.Instant
        /// Tells this page's read from a later one of the same request.
        var id: Int
        /// The page, once read.
        var prepared: Prepared?
        /// For a page read with the one before it and being encoded: the request for the page
        /// after it, if more is coming. (The first page of a read has its read bring the pages
        /// after it.)
        var encoding: RecordChangesRequest?? = nil
    }

    /// A page read, not yet encoded.
    private struct ReadPage {
        var request: RecordChangesRequest
        var page: StoredZoneChanges
        var mark: ChangeFeedMark
        var next: RecordChangesRequest?

        func prepared(_ encode: Encode) throws -> Prepared {
            Prepared(answer: try encode(page), mark: mark, next: next)
        }
    }

    /// How long a page read ahead is kept for its request.
    let lifetime: Duration
    /// How many pages are kept; past it, the oldest is dropped.
    let capacity: Int
    /// How many pages one read ahead reads.
    let depth: Int
    /// How many pages of one client's reading on may be kept before it takes them: while
    /// fewer are, a read ahead that ends starts the next at once.
    let window: Int

    private let lock = NSLock()
    private var pages: [Key: Kept] = [:]
    private var nextID = 0
    private var counts = (served: 0, readAgain: 0)
    /// Set by ``stop()``: nothing more is read ahead.
    private var stopped = false

    /// Creates a read-ahead that reads `depth` pages at a time, reads on while fewer than
    /// `window` pages of a client's are kept (at least `depth`), and keeps at most `capacity`
    /// pages, each for at most `lifetime`.
    public init(lifetime: Duration = .seconds(30), capacity: Int = 64, depth: Int = 2, window: Int = 4) {
        self.lifetime = lifetime
        self.capacity = capacity
        self.depth = max(1, depth)
        self.window = max(self.depth, window)
    }

    /// How many requests got a page read ahead, and how many found theirs stale (its zone
    /// changed since) and read it again.
    public var statistics: (served: Int, readAgain: Int) { lock.withLock { counts } }

    /// Reads ahead until graceful shutdown, then stops (``stop()``).
    public func run() async {
        try? await gracefulShutdown()
        stop()
    }

    /// Cancels every read kept and reads nothing ahead from now on.
    public func stop() {
        let reads = lock.withLock {
            stopped = true
            defer { pages = [:] }
            return pages.values.compactMap { $0.read }
        }
        for read in reads { read.cancel() }
    }

    /// The tasks of the pages kept now (reads, and encodings of pages read with another), each
    /// until a request takes its page or it is dropped (tests check that dropped reads are
    /// cancelled).
    public var keptReads: [Task<Prepared, any Error>] { lock.withLock { pages.values.compactMap { $0.read } } }

    /// How many pages are kept now, read or being read.
    public var keptPageCount: Int { lock.withLock { pages.count } }

    /// Waits until the pages being read ahead are read and encoded (tests use it to change a
    /// zone after its next pages were read). A read keeps its other pages' encodings before it
    /// ends, so they are waited for too.
    public func settle() async {
        var waited = Set<Int>()
        while true {
            let pending = lock.withLock { pages.values.filter { $0.read != nil && !waited.contains($0.id) } }
            guard !pending.isEmpty else { return }
            for kept in pending {
                waited.insert(kept.id)
                _ = try? await kept.read?.value
            }
        }
    }

    /// The answer to `request`: the page read ahead for it if its zone has not changed since,
    /// else read now (with the pages after it, kept). Either way, pages after it are then read
    /// ahead.
    public func answer(_ request: RecordChangesRequest, in scope: DatabaseScope, from store: RecordStore, variant: String,
                       encode: @escaping Encode) async throws -> Answer {
        // What a caller may read in the public database changes with its roles and a deploy's
        // grants, and in the shared database with its participation, which a zone's mark does
        // not show: their pages are read for each request.
        if scope.kind != .private { return try encode(try await store.recordChangesPage(request, in: scope).page) }
        let key = Key(scope: scope, request: request, variant: variant)
        let now = ContinuousClock.now
        let kept = lock.withLock { pages.removeValue(forKey: key) }
        if let kept, kept.until <= now { kept.read?.cancel() }  // expired: dropped
        let fresh = kept.flatMap { $0.until > now ? $0 : nil }
        // Taken, the read belongs to this request: cancelled with it.
        if let fresh, let prepared = try? await Self.page(of: fresh) {
            // A failed check (the zone was deleted, say) reads the page again, which answers the error.
            if let mark = try? await store.changeFeedMark(of: request.zoneID, in: scope), mark == prepared.mark {
                lock.withLock { counts.served += 1 }
                readAhead(after: prepared, in: scope, from: store, variant: variant, encode: encode)
                return prepared.answer
            }
            lock.withLock { counts.readAgain += 1 }
        }
        // Read now: this page and the ``depth`` - 1 after it, in one snapshot. This page is
        // answered once it is encoded; the others are kept as a read ahead keeps its pages
        // (a client reading on then finds its next page read, where a read started after
        // this answer would add a read's round trips to its wait).
        let read = try await Self.read(request, pages: depth, in: scope, from: store)
        let prepared = try read[0].prepared(encode)
        // The client's pages kept from before are not where it reads now (or were read before
        // its zone changed): dropped, so that they neither wait out their lifetime nor count
        // against its window.
        let dropped = lock.withLock {
            let chain = key.chain
            let stale = pages.filter { $0.key.chain == chain }
            for old in stale.keys { pages[old] = nil }
            // A closure, not `\.read`: a key path into this generic class's types is built
            // at run time at each use (about 2% of the CPU of an empty zone's read).
            return stale.values.compactMap { $0.read }
        }
        for task in dropped { task.cancel() }
        keep(prepared, readFor: key, id: 0, encodingLater: read.dropFirst(), from: store, encode: encode)
        readAhead(after: prepared, in: scope, from: store, variant: variant, encode: encode)
        return prepared.answer
    }

    /// A kept page, waiting for its read if it is under way (the wait cancelled with the
    /// request, and the read with it).
    private static func page(of kept: Kept) async throws -> Prepared {
        if let prepared = kept.prepared { return prepared }
        guard let read = kept.read else { throw CancellationError() }
        return try await withTaskCancellationHandler(operation: { try await read.value }, onCancel: { read.cancel() })
    }

    /// Reads up to `count` consecutive pages from `request` on in one snapshot; each with the
    /// request it answers.
    private static func read(_ request: RecordChangesRequest, pages count: Int, in scope: DatabaseScope,
                             from store: RecordStore) async throws -> [ReadPage] {
        var asked = request
        var read: [ReadPage] = []
        for (page, mark) in try await store.recordChangesPages(request, in: scope, count: count) {
            var next: RecordChangesRequest?
            if page.moreComing {
                next = asked
                next?.syncToken = page.syncToken
            }
            read.append(ReadPage(request: asked, page: page, mark: mark, next: next))
            if let next { asked = next }
        }
        return read
    }

    /// After `prepared` was answered: unless the pages after it that are kept reach a read
    /// under way, or number ``depth`` already, reads the next ``depth`` after the last kept.
    /// Only a read right after the page answered may drop another page to keep within the
    /// capacity; a read further ahead is made only if there is room.
    private func readAhead(after prepared: Prepared, in scope: DatabaseScope, from store: RecordStore, variant: String, encode: @escaping Encode) {
        let now = ContinuousClock.now
        var dropped: [Task<Prepared, any Error>] = []
        lock.withLock {
            guard !stopped else { return }
            for (expired, kept) in pages where kept.until <= now {
                if let read = kept.read { dropped.append(read) }
                pages[expired] = nil
            }
            var next = prepared.next
            var ahead = 0
            while let request = next, let kept = pages[Key(scope: scope, request: request, variant: variant)] {
                ahead += 1
                if let read = kept.prepared {
                    next = read.next
                } else if let encoding = kept.encoding {
                    next = encoding
                } else {
                    return  // a read under way brings the pages after it
                }
            }
            guard let request = next, ahead < depth else { return }
            if pages.count >= capacity {
                guard ahead == 0, let oldest = pages.min(by: { $0.value.until < $1.value.until })?.key,
                      let evicted = pages.removeValue(forKey: oldest) else { return }
                if let read = evicted.read { dropped.append(read) }
            }
            startRead(Key(scope: scope, request: request, variant: variant), from: store, encode: encode, now: now)
        }
        for read in dropped { read.cancel() }
    }

    /// Starts reading ``depth`` pages from `key`'s; called with the lock held.
    private func startRead(_ key: Key, from store: RecordStore, encode: @escaping Encode, now: ContinuousClock.Instant) {
        let depth = depth
        nextID += 1
        let id = nextID
        // Owned by this object from here: kept in `pages` until taken, or cancelled when dropped.
        // The first page is answered as soon as it is encoded; the others are encoded after it.
        let read = Task {
            let read = try await Self.read(key.request, pages: depth, in: key.scope, from: store)
            let first = try read[0].prepared(encode)
            self.keep(first, readFor: key, id: id, encodingLater: read.dropFirst(), from: store, encode: encode)
            return first
        }
        pages[key] = Kept(read: read, until: now + lifetime, id: id)
    }

    /// Notes that the read `id` of the page `key` names is done (its request may have taken it
    /// already, and it may have been dropped; a request that read its own page passes an `id`
    /// no read has, 0), and keeps the pages read after it, each encoded
    /// by a task of its own, while there is room: all under one lock, so that a request taking
    /// the first page finds the next ones kept. Then, while fewer than ``window`` pages of the
    /// client's are kept, reads on from the last page read, so that the next read is under way
    /// before the client asks for its pages (one read at a time: a client taking pages as fast
    /// as they are read never waits for a read that starts only when it takes a page).
    private func keep(_ prepared: Prepared, readFor key: Key, id: Int, encodingLater read: ArraySlice<ReadPage>,
                      from store: RecordStore, encode: @escaping Encode) {
        guard !Task.isCancelled else { return }
        let until = ContinuousClock.now + lifetime
        var replaced: [Task<Prepared, any Error>] = []
        lock.withLock {
            guard !stopped else { return }
            if var kept = pages[key], kept.id == id {
                kept.prepared = prepared
                pages[key] = kept
            }
            for page in read {
                let pageKey = Key(scope: key.scope, request: page.request, variant: key.variant)
                if pages[pageKey] == nil && pages.count >= capacity { break }
                nextID += 1
                let pageID = nextID
                let task = Task {
                    let prepared = try page.prepared(encode)
                    self.keepEncoded(prepared, for: pageKey, id: pageID)
                    return prepared
                }
                if let old = pages.updateValue(Kept(read: task, until: until, id: pageID, encoding: .some(page.next)), forKey: pageKey),
                   let read = old.read {
                    replaced.append(read)
                }
            }
            let last = read.last?.next ?? (read.isEmpty ? prepared.next : nil)
            guard let next = last, pages.count < capacity else { return }
            let nextKey = Key(scope: key.scope, request: next, variant: key.variant)
            let chain = key.chain
            guard pages[nextKey] == nil, pages.keys.count(where: { $0.chain == chain }) < window else { return }
            startRead(nextKey, from: store, encode: encode, now: .now)
        }
        for read in replaced { read.cancel() }
    }

    /// Notes that page `key`'s encoding `id` is done, unless it was taken or dropped.
    private func keepEncoded(_ prepared: Prepared, for key: Key, id: Int) {
        guard !Task.isCancelled else { return }
        lock.withLock {
            guard !stopped, var kept = pages[key], kept.id == id else { return }
            kept.prepared = prepared
            kept.encoding = nil
            pages[key] = kept
        }
    }
}
