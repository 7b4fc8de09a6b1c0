import Foundation
import RecordModel

/// What a ``SyncEngine/fetchChanges()`` did.
public struct FetchReport: Sendable, Hashable {
    /// Zones whose changes were fetched.
    public var fetchedZones: [ZoneID] = []
    /// Zones deleted on the server (or, in the shared database, no longer shared with the
    /// user) and purged from the cache.
    public var purgedZones: [ZoneID] = []
    /// The records whose queued local edits were dropped, never sent: with a purged zone, or
    /// by a deletion on the server (the record, deleted or no longer in a share the user
    /// takes part in, left the cache).
    public var droppedEdits: [Record.ID] = []
    /// Changed records written to the cache.
    public var changedRecordCount = 0
    /// Tombstones applied.
    public var deletedRecordCount = 0
    /// Zones fetched again from scratch because their token had expired.
    public var resetZones: [ZoneID] = []
}

extension SyncEngine {
    /// Fetches every change since the saved tokens into the cache: the database's changed and
    /// deleted zones, then each changed zone's records, page by page. Each page is written with
    /// its token in one transaction; the database token is saved only after all its zones were
    /// fetched, so a crash never skips a change.
    ///
    /// A zone deleted on the server is purged from the cache; a zone whose token expired is
    /// fetched again from scratch.
    ///
    /// - Throws: what the server answers after retries of transient failures.
    /// Fetches and sends never overlap: a call waits for the one in progress.
    @discardableResult
    public func fetchChanges() async throws -> FetchReport {
        try await passLock.withLock { try await fetchChangesNow() }
    }

    /// A zone ID as the engine's cache keeps it: with its owner in the shared database, by
    /// name alone in one's own.
    func cacheZone(_ zoneID: ZoneID) -> ZoneID {
        database.scope == .shared ? zoneID : ZoneID(zoneName: zoneID.zoneName)
    }

    private func fetchChangesNow() async throws -> FetchReport {
        try checkCacheScope()
        if database.scope == .shared, try await !cache.hasUserName() {
            // The name the server's refusals give the user, for the cache's own.
            let user = try await retrying("users/current") { try await database.container.currentUser() }
            try await cache.setUserName(user.userName ?? "")
        }
        var report = FetchReport()
        var token = try await cache.databaseToken()
        var changed: [ZoneID] = []
        var deleted: [ZoneID] = []
        while true {
            let since = token
            let page = try await retrying("changes/database") { try await database.databaseChanges(since: since) }
            changed += page.modifications
            deleted += page.deletions
            token = page.changeToken
            if !page.moreComing { break }
        }
        // In the shared database a zone is its name and its owner; in one's own, its name.
        let changedZones = changed.map(cacheZone).uniqued()
        for zone in deleted.map(cacheZone).uniqued() where !changedZones.contains(zone) {
            report.droppedEdits += try await cache.purge(zone)
            report.purgedZones.append(zone)
        }
        for zone in changedZones {
            try await fetchZone(zone, into: &report)
        }
        if let token { try await cache.setDatabaseToken(token) }
        return report
    }

    /// Fetches one zone's changes since its saved token, as a pipeline of three stages: while
    /// a page is written to the cache, the next one is decoded and the one after it is on its
    /// way. The next page is asked for as soon as an answer arrives: its token is read from the
    /// answer's first bytes, decompressing no more of it and decoding no record
    /// (``StoredZoneChanges/continuation(of:)``); the rest is decompressed with the decoding, off
    /// that path. Pages are
    /// still written one after another, in feed order, each with its token; at most
    /// ``pagesAhead`` pages are asked for beyond the one being written. A failure to fetch or
    /// read a page is thrown when that page's turn comes (the pages before it are written
    /// first); an expired token (the zone is fetched again from scratch) and a deleted zone (it
    /// is purged) are acted on at once. Every stage is a child task of this fetch: if it fails
    /// or is cancelled, so are they, and it ends after them. (The requests of a fetch started
    /// over are not cancelled: their answers are dropped when they come.)
    ///
    /// A fetch from scratch (no token, or an expired one) that takes more than one page
    /// suspends the cache's index of references by target until it ends, whether it completes,
    /// fails or is cancelled (``RecordCache/suspendReferenceIndex()``): building it once costs
    /// less than keeping it through every page.
    func fetchZone(_ zoneID: ZoneID, into report: inout FetchReport) async throws {
        var suspended = false
        do {
            try await fetchZonePages(zoneID, into: &report, suspending: &suspended)
        } catch {
            if suspended { try? await cache.restoreReferenceIndex() }
            throw error
        }
        if suspended { try await cache.restoreReferenceIndex() }
    }

    private func fetchZonePages(_ zoneID: ZoneID, into report: inout FetchReport, suspending suspended: inout Bool) async throws {
        let saved = try await cache.changeToken(for: zoneID)
        report.fetchedZones.append(zoneID)
        let database = database, cache = cache, pageSize = configuration.pageSize
        /// What a stage delivers; `round` tells a fetch started over (expired token) from the
        /// one it replaced.
        enum Step: Sendable {
            case loaded(round: Int, page: Int, Result<HTTPTransport.Answer, any Error>)
            case decoded(round: Int, page: Int, Result<ZoneChangesPage, any Error>)
            case applied(round: Int, Result<(changed: Int, deleted: Int, moreComing: Bool, dropped: [Record.ID]), any Error>)
        }
        try await withThrowingTaskGroup(of: Step.self) { stages in
            var round = 0
            var resetting = false
            var since: [Int: ServerChangeToken?] = [:]  // the token each page was asked for with
            var decoded: [Int: ZoneChangesPage] = [:]
            var failures: [Int: any Error] = [:]
            var nextToApply = 0
            var applying = false
            var deferred: (page: Int, token: ServerChangeToken)?  // asked for once the window allows
            func ask(_ page: Int, since token: ServerChangeToken) {
                guard page - nextToApply <= Self.pagesAhead else {
                    deferred = (page, token)
                    return
                }
                askNow(page, since: token)
            }
            func askNow(_ page: Int, since token: ServerChangeToken?) {
                since[page] = token
                stages.addTask { [round] in
                    do {
                        return .loaded(round: round, page: page, .success(try await self.retrying("records/changes") {
                            try await database.recordZoneChangesAnswer(inZoneWith: zoneID, since: token, resultsLimit: pageSize)
                        }))
                    } catch {
                        return .loaded(round: round, page: page, .failure(error))
                    }
                }
            }
            /// Decodes an answer; one that cannot be read is asked for again in CloudKit's form
            /// (as a transient failure, like any answer read inside ``retrying(_:_:)``). Either
            /// way the page must then continue with the token its next page was already asked
            /// for with, if it was (checked when it is decoded, below).
            func decode(_ page: Int, _ data: HTTPTransport.Answer, since token: ServerChangeToken?) {
                stages.addTask { [round] in
                    do {
                        return .decoded(round: round, page: page, .success(try await Self.decodeOffThePool(data)))
                    } catch {
                        do {
                            let again = try await self.retrying("records/changes") {
                                try await database.recordZoneChangesInCloudKitsForm(inZoneWith: zoneID, since: token, resultsLimit: pageSize)
                            }
                            return .decoded(round: round, page: page, .success(again))
                        } catch {
                            return .decoded(round: round, page: page, .failure(error))
                        }
                    }
                }
            }
            /// Starts writing the next page in order if it is here and no write is running.
            func applyNext() throws {
                guard !applying else { return }
                if let failure = failures[nextToApply] { throw failure }
                guard let page = decoded.removeValue(forKey: nextToApply) else { return }
                // A fetch without a token returns the zone's current records and no tombstones
                // of records deleted before it, so it replaces what the cache held (its own
                // sends, say), except records with queued edits.
                let replacing = since[nextToApply] == .some(nil)
                applying = true
                stages.addTask { [round] in
                    do {
                        let dropped = try await cache.apply(page, to: zoneID, resetting: replacing)
                        return .applied(round: round, .success((page.modifications.count, page.deletions.count, page.moreComing, dropped)))
                    } catch {
                        return .applied(round: round, .failure(error))
                    }
                }
            }
            defer { stages.cancelAll() }
            askNow(0, since: saved)
            while let step = try await stages.next() {
                switch step {
                case .applied(let stepRound, let result):
                    applying = false
                    if case .success(let written) = result { report.droppedEdits += written.dropped }
                    guard stepRound == round else { break }  // a write of the fetch started over
                    let written = try result.get()
                    report.changedRecordCount += written.changed
                    report.deletedRecordCount += written.deleted
                    if !written.moreComing { return }
                    if nextToApply == 0, since[0] == .some(nil), !suspended {
                        suspended = try await cache.suspendReferenceIndex()
                    }
                    nextToApply += 1
                    if let waiting = deferred {
                        deferred = nil
                        ask(waiting.page, since: waiting.token)
                    }
                case .loaded(let stepRound, _, _) where stepRound != round, .decoded(let stepRound, _, _) where stepRound != round:
                    break  // from the fetch that was started over
                case .loaded(_, let page, .success(let data)):
                    let next = Self.continuation(of: data).flatMap { $0.moreComing ? $0.syncToken : nil }
                    decode(page, data, since: since[page] ?? nil)
                    if let next { ask(page + 1, since: ServerChangeToken(rawValue: next)) }
                case .loaded(_, _, .failure(let error as RecordSyncError)) where error.code == .changeTokenExpired && !resetting:
                    configuration.logger.info("zone token expired; fetching the zone again", metadata: ["record.zone": "\(zoneID.zoneName)"])
                    report.resetZones.append(zoneID)
                    resetting = true
                    round += 1
                    (since, decoded, failures, deferred, nextToApply) = ([:], [:], [:], nil, 0)
                    askNow(0, since: nil)
                case .loaded(_, _, .failure(let error as RecordSyncError)) where error.code == .zoneNotFound:
                    stages.cancelAll()
                    // A write in progress finishes (or is cancelled) before the zone is purged.
                    while let step = try await stages.next() { _ = step }
                    report.droppedEdits += try await cache.purge(zoneID)
                    report.purgedZones.append(zoneID)
                    return
                case .loaded(_, let page, .failure(let error)), .decoded(_, let page, .failure(let error)):
                    failures[page] = error
                case .decoded(_, let page, .success(let changes)):
                    // The next page, if already asked for (or waiting to be), was asked for
                    // with the token read ahead; the decoded page must continue the same way.
                    let askedNext = since[page + 1].flatMap { $0 } ?? (deferred?.page == page + 1 ? deferred?.token : nil)
                    if let askedNext, !changes.moreComing || changes.changeToken != askedNext {
                        failures[page] = RecordSyncError(.networkFailure, "records/changes: an answer's token read ahead differs from the one it decodes to")
                        break
                    }
                    decoded[page] = changes
                    // An answer whose continuation could not be read ahead asks for its next
                    // page now.
                    if changes.moreComing, askedNext == nil {
                        ask(page + 1, since: changes.changeToken)
                    }
                }
                try applyNext()
            }
            // Every page asked for delivers a step, and the last one returns above.
            try Task.checkCancellation()
            throw RecordSyncError(.internalError, "the fetch of zone \(zoneID.zoneName) ended before its last page")
        }
    }

    /// Decodes an answer on a dispatch queue rather than on Swift's cooperative pool.
    ///
    /// A page of 400 records takes a few milliseconds of CPU to decode. The pool has a thread
    /// per core; on a two-core machine a decode holding one of them delayed the steps the
    /// next page waits for (its request's answer resuming, the fetch's loop asking for the
    /// page after it), which set the pace of a large fetch. Measured in `recordbench`'s
    /// `cache-apply`: the time spent waiting for pages fell by about 7%.
    /// The answer is decompressed there too, and read for the cache alone (its records'
    /// fields skimmed: ``ZoneChangesPage/init(answer:skimmingFields:)``).
    static func decodeOffThePool(_ data: HTTPTransport.Answer) async throws -> ZoneChangesPage {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try ZoneChangesPage(answer: data.decompressed(), skimmingFields: true) }) }
        }
    }

    /// The token and `moreComing` of an answer, from its first few kilobytes where RecordSync's
    /// server writes them, or else from the whole answer; `nil` if it does not read as one.
    static func continuation(of answer: HTTPTransport.Answer) -> (syncToken: String, moreComing: Bool)? {
        if answer.gzipped, let start = try? answer.prefix(4096), let found = StoredZoneChanges.continuation(of: start) { return found }
        return (try? answer.decompressed()).flatMap { StoredZoneChanges.continuation(of: $0) }
    }

    /// How many pages a zone's fetch asks for beyond the one it is writing.
    static var pagesAhead: Int { 2 }
}
