import Foundation
import RecordModel
import ServiceLifecycle

/// Reads the next page of a zone's change feed while the client is busy with the page just
/// answered, so that a client catching up on a large zone does not wait for each page's read.
///
/// A client fetching changes asks for one page after another, each with the token the
/// previous answer gave; a page's read and encoding on the server (about 4 ms for 400 records)
/// were part of every step of that chain. When a `records/changes` answer says more is coming,
/// the next request is already known: the same request with the new token, from the same
/// user. That page is read and encoded in the background and kept here, and the request, when
/// it comes, gets it, provided the zone's feed has not moved since it was read
/// (``ChangeFeedMark``: the zone's incarnation and its last change, checked with one small
/// read). Otherwise the page is read again, so an answer is never older than the request: a
/// client that saves and then fetches sees its save.
///
/// At most ``capacity`` pages are kept, each for at most ``lifetime``; a page nobody asks for
/// costs one read. A page is kept as the server will send it (`Answer`: the HTTP layer keeps the
/// encoded response), prepared by the `encode` closure it is given with each request; `variant`
/// tells apart answers of the same page that are encoded differently (gzip or not).
///
/// Each read runs in a task this object owns: a read dropped (expired, past the capacity, or
/// replaced by a newer read of the same request) is cancelled. It is a `Service` of the
/// application: at graceful shutdown ``run()`` returns after ``stop()``, which cancels every
/// read still kept and ends reading ahead (requests are then answered by reading their page).
public final class ChangePageReadAhead<Answer: Sendable>: Service, @unchecked Sendable {
    /// Prepares a page's answer.
    public typealias Encode = @Sendable (StoredZoneChanges) throws -> Answer

    /// What a page was read for: the request, whose user, and how its answer is encoded.
    struct Key: Hashable, Sendable {
        var scope: DatabaseScope
        var request: RecordChangesRequest
        var variant: String
    }

    /// A page ready to send.
    public struct Prepared: Sendable {
        var answer: Answer
        var mark: ChangeFeedMark
        /// The request for the page after it, if more is coming.
        var next: RecordChangesRequest?
    }

    /// How long a page read ahead is kept for its request.
    let lifetime: Duration
    /// How many pages are kept; past it, the oldest is dropped.
    let capacity: Int

    private let lock = NSLock()
    private var pages: [Key: (read: Task<Prepared, any Error>, until: ContinuousClock.Instant)] = [:]
    private var counts = (served: 0, readAgain: 0)
    /// Set by ``stop()``: nothing more is read ahead.
    private var stopped = false

    /// Creates a read-ahead that keeps at most `capacity` pages, each for at most `lifetime`.
    public init(lifetime: Duration = .seconds(30), capacity: Int = 64) {
        self.lifetime = lifetime
        self.capacity = capacity
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
            return pages.values.map(\.read)
        }
        for read in reads { read.cancel() }
    }

    /// The reads kept now, each until a request takes it or it is dropped (tests check that
    /// dropped reads are cancelled).
    public var keptReads: [Task<Prepared, any Error>] { lock.withLock { pages.values.map(\.read) } }

    /// Waits until the pages being read ahead are read (tests use it to change a zone after
    /// its next page was read).
    public func settle() async {
        for read in keptReads { _ = try? await read.value }
    }

    /// The answer to `request`: the page read ahead for it if its zone has not changed since,
    /// else read now. Either way, the page after it is then read ahead.
    public func answer(_ request: RecordChangesRequest, in scope: DatabaseScope, from store: RecordStore, variant: String,
                       encode: @escaping Encode) async throws -> Answer {
        let key = Key(scope: scope, request: request, variant: variant)
        let now = ContinuousClock.now
        let kept = lock.withLock { pages.removeValue(forKey: key) }
        if let kept, kept.until <= now { kept.read.cancel() }  // expired: dropped
        let waiting = kept.flatMap { $0.until > now ? $0.read : nil }
        // Taken, the read belongs to this request: cancelled with it.
        if let waiting, let prepared = try? await withTaskCancellationHandler(operation: { try await waiting.value }, onCancel: { waiting.cancel() }) {
            // A failed check (the zone was deleted, say) reads the page again, which answers the error.
            if let mark = try? await store.changeFeedMark(of: request.zoneID, in: scope), mark == prepared.mark {
                lock.withLock { counts.served += 1 }
                readAhead(after: prepared, in: scope, from: store, variant: variant, encode: encode)
                return prepared.answer
            }
            lock.withLock { counts.readAgain += 1 }
        }
        let prepared = try await Self.prepare(request, in: scope, from: store, encode: encode)
        readAhead(after: prepared, in: scope, from: store, variant: variant, encode: encode)
        return prepared.answer
    }

    /// Reads and encodes a page.
    private static func prepare(_ request: RecordChangesRequest, in scope: DatabaseScope, from store: RecordStore, encode: Encode) async throws -> Prepared {
        let (page, mark) = try await store.recordChangesPage(request, in: scope)
        let answer = try encode(page)
        var next: RecordChangesRequest?
        if page.moreComing {
            next = request
            next?.syncToken = page.syncToken
        }
        return Prepared(answer: answer, mark: mark, next: next)
    }

    /// Starts reading the page after `prepared`, if more is coming.
    private func readAhead(after prepared: Prepared, in scope: DatabaseScope, from store: RecordStore, variant: String, encode: @escaping Encode) {
        guard let next = prepared.next else { return }
        let now = ContinuousClock.now
        let dropped: [Task<Prepared, any Error>] = lock.withLock {
            guard !stopped else { return [] }
            // Owned by this object from here: kept in `pages` until taken, or cancelled when dropped.
            let read = Task { try await Self.prepare(next, in: scope, from: store, encode: encode) }
            var dropped = pages.filter { $0.value.until <= now }.map(\.value.read)
            pages = pages.filter { $0.value.until > now }
            if pages.count >= capacity, let oldest = pages.min(by: { $0.value.until < $1.value.until })?.key,
               let evicted = pages.removeValue(forKey: oldest) {
                dropped.append(evicted.read)
            }
            if let replaced = pages.updateValue((read, now + lifetime), forKey: Key(scope: scope, request: next, variant: variant)) {
                dropped.append(replaced.read)
            }
            return dropped
        }
        for read in dropped { read.cancel() }
    }
}
