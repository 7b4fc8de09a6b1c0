import Foundation
@testable import RecordServer
import RecordRules
import Logging
import RecordModel
import ServiceLifecycle
import TestSupport
import Synchronization
import Testing

/// `ChangePageReadAhead`: the next change page is read before it is asked for, and a request
/// gets it only while its zone has not changed since.
@Suite struct ReadAheadTests {
    /// A store of each engine in which alice saved `count` artists (`a0`, `a1`, …) in her default zone.
    func withArtists(_ count: Int, _ body: (RecordStore, DatabaseScope) async throws -> Void) async throws {
        for backend in Backend.all {
            try await withTemporaryDirectory { directory in
                try await backend.withStore(directory) { store in
                    let alice = try await store.createUser(named: "alice", tokenHash: Data([1]))
                    let scope = DatabaseScope(container: "iCloud.test", environment: "development", kind: .private, user: alice)
                    try await save((0..<count).map { Record.artist("a\($0)") }, in: store, scope)
                    try await body(store, scope)
                }
            }
        }
    }

    func save(_ records: [Record], in store: RecordStore, _ scope: DatabaseScope) async throws {
        let saved = try await store.modifyRecords(ModifyRecordsRequest(operations: records.map { RecordOperation(.forceReplace, RecordPayload($0)) }), in: scope)
        #expect(saved.records.allSatisfy { $0.error == nil })
    }

    /// Asks for one page of 2 records at a time through `readAhead` and decodes it.
    func page(since token: String?, _ readAhead: ChangePageReadAhead<PreparedResponse>, _ store: RecordStore, _ scope: DatabaseScope) async throws -> ZoneChanges {
        let answer = try await readAhead.answer(RecordChangesRequest(syncToken: token, resultsLimit: 2), in: scope, from: store, gzip: false)
        return try JSONDecoder().decode(ZoneChanges.self, from: Data(buffer: answer.body))
    }

    /// The names of the records on the pages after `page`, asked for one after another
    /// through `readAhead` until no more are coming.
    func namesReadingOn(from page: ZoneChanges, _ readAhead: ChangePageReadAhead<PreparedResponse>, _ store: RecordStore,
                        _ scope: DatabaseScope) async throws -> [String] {
        var names: [String] = []
        var token: String? = page.moreComing ? page.syncToken : nil
        while let since = token {
            let next = try await self.page(since: since, readAhead, store, scope)
            names += next.records.map(\.recordName)
            token = next.moreComing ? next.syncToken : nil
        }
        return names
    }

    /// The first page of a read is answered once it is encoded, before the page read with it.
    @Test func aPageReadAheadIsAnsweredBeforeThePageReadWithItIsEncoded() async throws {
        try await withArtists(6) { store, scope in
            let readAhead = ChangePageReadAhead<StoredZoneChanges>()
            // The third page's encoding waits until the test lets it go, or gives up after 10 s.
            let held = Mutex(true), gaveUp = Mutex(false)
            let encode: ChangePageReadAhead<StoredZoneChanges>.Encode = { page in
                if page.entries.first?.record.recordName == "a4" {
                    let start = ContinuousClock.now
                    while held.withLock({ $0 }) {
                        if ContinuousClock.now - start > .seconds(10) { gaveUp.withLock { $0 = true }; break }
                        Thread.sleep(forTimeInterval: 0.001)
                    }
                }
                return page
            }
            func page(_ token: String?) async throws -> StoredZoneChanges {
                try await readAhead.answer(RecordChangesRequest(syncToken: token, resultsLimit: 2), in: scope, from: store, variant: "test", encode: encode)
            }
            let first = try await page(nil)
            let second = try await page(first.syncToken)
            #expect(second.entries.map(\.record.recordName) == ["a2", "a3"])
            #expect(!gaveUp.withLock { $0 }, "the second page waited for the third's encoding")
            held.withLock { $0 = false }
            let third = try await page(second.syncToken)
            #expect(third.entries.map(\.record.recordName) == ["a4", "a5"])
            #expect(readAhead.statistics.served == 2)
        }
    }

    @Test func eachPageAfterTheFirstIsReadAhead() async throws {
        try await withArtists(5) { store, scope in
            let readAhead = ChangePageReadAhead<PreparedResponse>()
            var names: [String] = []
            var token: String?
            repeat {
                let page = try await page(since: token, readAhead, store, scope)
                names += page.records.map(\.recordName)
                token = page.moreComing ? page.syncToken : nil
            } while token != nil
            #expect(names == ["a0", "a1", "a2", "a3", "a4"])
            #expect(readAhead.statistics.served == 2)
            #expect(readAhead.statistics.readAgain == 0)
            #expect(readAhead.keptPageCount == 0)
            // Another user asking with the same token is not given alice's page.
            let bob = try await store.createUser(named: "bob", tokenHash: Data([2]))
            let first = try await page(since: nil, readAhead, store, scope)
            let bobs = DatabaseScope(container: scope.container, environment: scope.environment, kind: .private, user: bob)
            let refused = await #expect(throws: RecordSyncError.self) {
                try await readAhead.answer(RecordChangesRequest(syncToken: first.syncToken, resultsLimit: 2), in: bobs, from: store, gzip: false)
            }
            #expect(refused?.code == .badRequest)
            #expect(readAhead.statistics.served == 2)
        }
    }

    /// Pages are read two at a time: the first request reads its page with the next, and each
    /// request then finds its page read. (A window of two pages.)
    @Test func twoPagesAreReadAhead() async throws {
        try await withArtists(9) { store, scope in
            let readAhead = ChangePageReadAhead<PreparedResponse>(window: 2)
            let first = try await page(since: nil, readAhead, store, scope)
            await readAhead.settle()
            // The first request read the second page with its own, and with one page kept the
            // third and fourth were read: each kept page has its task (the second's and the
            // fourth's encodings, the third's read).
            #expect(readAhead.keptPageCount == 3 && readAhead.keptReads.count == 3)
            let second = try await page(since: first.syncToken, readAhead, store, scope)
            await readAhead.settle()
            // Two pages kept after the second: answering it read nothing more.
            #expect(readAhead.keptPageCount == 2)
            let names = first.records.map(\.recordName) + second.records.map(\.recordName)
                + (try await namesReadingOn(from: second, readAhead, store, scope))
            #expect(names == (0..<9).map { "a\($0)" })
            #expect(readAhead.statistics.served == 4 && readAhead.statistics.readAgain == 0)
            #expect(readAhead.keptPageCount == 0)
            // Reading one page at a time, only the next is kept.
            let shallow = ChangePageReadAhead<PreparedResponse>(depth: 1, window: 1)
            _ = try await page(since: nil, shallow, store, scope)
            await shallow.settle()
            #expect(shallow.keptPageCount == 1)
        }
    }

    /// A read that ends starts the next while fewer than the window's pages of the client's
    /// are kept, so a client taking pages as fast as they are read finds the next read under
    /// way; the window bounds what one client has kept.
    @Test func readingGoesOnToTheWindow() async throws {
        try await withArtists(13) { store, scope in
            // Seven pages: the first read with the second, then the third and fourth, then
            // (three kept, fewer than four) the fifth and sixth: five kept, not the seventh.
            let readAhead = ChangePageReadAhead<PreparedResponse>()
            let first = try await page(since: nil, readAhead, store, scope)
            await readAhead.settle()
            #expect(readAhead.keptPageCount == 5)
            let names = first.records.map(\.recordName) + (try await namesReadingOn(from: first, readAhead, store, scope))
            #expect(names == (0..<13).map { "a\($0)" })
            #expect(readAhead.statistics.served == 6 && readAhead.statistics.readAgain == 0)
            #expect(readAhead.keptPageCount == 0)
            // Read again after the zone changed, the pages kept from before are dropped, not
            // kept beside the new ones.
            let again = try await page(since: nil, readAhead, store, scope)
            await readAhead.settle()
            try await save([Record.artist("z")], in: store, scope)
            _ = try await page(since: again.syncToken, readAhead, store, scope)
            await readAhead.settle()
            #expect(readAhead.statistics.readAgain == 1)
            #expect(readAhead.keptPageCount == 5)
            // Another client's pages count apart: each reads on to its own window.
            let bob = try await store.createUser(named: "bob", tokenHash: Data([2]))
            let bobs = DatabaseScope(container: "iCloud.test", environment: "development", kind: .private, user: bob)
            try await save((0..<13).map { Record.artist("b\($0)") }, in: store, bobs)
            _ = try await page(since: nil, readAhead, store, scope)
            _ = try await page(since: nil, readAhead, store, bobs)
            await readAhead.settle()
            #expect(readAhead.keptPageCount == 10)
        }
    }

    /// Pages read together in one snapshot are the pages read one after another: the same
    /// changes, tokens and ends, with tombstones, a type filter and desired keys.
    @Test func pagesReadTogetherAreThePagesReadOneByOne() async throws {
        try await withArtists(7) { store, scope in
            let before = try await store.recordChangesPage(RecordChangesRequest(resultsLimit: 100), in: scope).page.syncToken
            _ = try await store.modifyRecords(ModifyRecordsRequest(operations: ["a1", "a4"].map { RecordOperation(.forceDelete, RecordPayload(recordName: $0)) }), in: scope)
            try await save(["a0", "a2", "a5"].map { Record.artist($0, "renamed") } + [Record(recordName: "n0", recordType: "Note", fields: ["text": .string("n")])],
                           in: store, scope)
            for request in [RecordChangesRequest(syncToken: nil, resultsLimit: 2),
                            RecordChangesRequest(syncToken: before, resultsLimit: 2),
                            RecordChangesRequest(syncToken: before, resultsLimit: 2, desiredKeys: ["name"], desiredRecordTypes: ["Artist"])] {
                var oneByOne: [StoredZoneChanges] = []
                var asked = request
                while true {
                    let page = try await store.recordChangesPage(asked, in: scope).page
                    oneByOne.append(page)
                    guard page.moreComing else { break }
                    asked.syncToken = page.syncToken
                }
                #expect(oneByOne.count > 2)
                for count in [1, 2, oneByOne.count, oneByOne.count + 3] {
                    let together = try await store.recordChangesPages(request, in: scope, count: count).map(\.page)
                    #expect(together.count == min(count, oneByOne.count))
                    for (read, alone) in zip(together, oneByOne) {
                        #expect(read.syncToken == alone.syncToken && read.moreComing == alone.moreComing)
                        #expect(try read.decoded().records == alone.decoded().records)
                    }
                }
                // From a token in the middle, too.
                let middle = RecordChangesRequest(syncToken: oneByOne[0].syncToken, resultsLimit: request.resultsLimit, desiredKeys: request.desiredKeys,
                                                  desiredRecordTypes: request.desiredRecordTypes)
                let fromMiddle = try await store.recordChangesPages(middle, in: scope, count: 2).map(\.page)
                #expect(fromMiddle.map(\.syncToken) == oneByOne.dropFirst().prefix(2).map(\.syncToken))
            }
        }
    }

    /// Stopped (at the server's shutdown), it drops and cancels what it read ahead and reads
    /// nothing more ahead; requests are still answered.
    @Test func stoppedItReadsNothingAhead() async throws {
        try await withArtists(5) { store, scope in
            let readAhead = ChangePageReadAhead<PreparedResponse>()
            let first = try await page(since: nil, readAhead, store, scope)
            readAhead.stop()
            let second = try await page(since: first.syncToken, readAhead, store, scope)
            #expect(second.records.map(\.recordName) == ["a2", "a3"])
            let third = try await page(since: second.syncToken, readAhead, store, scope)
            #expect(third.records.map(\.recordName) == ["a4"] && !third.moreComing)
            #expect(readAhead.statistics.served == 0 && readAhead.statistics.readAgain == 0)
        }
    }

    /// As a service, it lives until graceful shutdown: then the reads it kept are cancelled
    /// and dropped, and nothing more is read ahead.
    @Test func gracefulShutdownCancelsTheReadsItKept() async throws {
        try await withArtists(5) { store, scope in
            // A window of one page: the read ahead does not read on once it is done, so one read is kept.
            let readAhead = ChangePageReadAhead<PreparedResponse>(depth: 1, window: 1)
            let first = try await page(since: nil, readAhead, store, scope)
            let kept = readAhead.keptReads
            #expect(kept.count == 1)
            let services = ServiceGroup(configuration: .init(services: [readAhead], logger: Logger(label: "test")))
            async let running: Void = services.run()
            await services.triggerGracefulShutdown()
            try await running
            #expect(kept.allSatisfy(\.isCancelled) && readAhead.keptReads.isEmpty)
            let second = try await page(since: first.syncToken, readAhead, store, scope)
            #expect(second.records.map(\.recordName) == ["a2", "a3"] && readAhead.keptReads.isEmpty)
            #expect(readAhead.statistics.served == 0)
        }
    }

    /// A read dropped to keep within the capacity is cancelled, not left running; a page further
    /// ahead is read only if there is room.
    @Test func aReadDroppedPastTheCapacityIsCancelled() async throws {
        try await withArtists(5) { store, scope in
            let readAhead = ChangePageReadAhead<PreparedResponse>(capacity: 1)
            _ = try await page(since: nil, readAhead, store, scope)
            await readAhead.settle()
            let first = readAhead.keptReads
            // Another request (3 records a page) takes the only slot.
            _ = try await readAhead.answer(RecordChangesRequest(syncToken: nil, resultsLimit: 3), in: scope, from: store, gzip: false)
            #expect(first.count == 1 && first.allSatisfy(\.isCancelled))
            #expect(readAhead.keptReads.count == 1 && !readAhead.keptReads.allSatisfy(\.isCancelled))
        }
    }

    /// A page read ahead before a change to its zone is read again: the answer is never older
    /// than the request (a client that saves, then fetches, sees its save).
    @Test func aPageReadBeforeItsZoneChangedIsReadAgain() async throws {
        try await withArtists(4) { store, scope in
            let readAhead = ChangePageReadAhead<PreparedResponse>()
            let first = try await page(since: nil, readAhead, store, scope)
            #expect(first.records.map(\.recordName) == ["a0", "a1"] && first.moreComing)
            // The next page (a2, a3) was read ahead; then a2 is deleted and a0 changed.
            await readAhead.settle()
            _ = try await store.modifyRecords(ModifyRecordsRequest(operations: [RecordOperation(.forceDelete, RecordPayload(recordName: "a2"))]), in: scope)
            try await save([Record.artist("a0", "renamed")], in: store, scope)
            let second = try await page(since: first.syncToken, readAhead, store, scope)
            #expect(second.records.map(\.recordName) == ["a3", "a2"])
            #expect(second.records.last?.deleted == true)
            #expect(readAhead.statistics.readAgain == 1 && readAhead.statistics.served == 0)
            let third = try await page(since: second.syncToken, readAhead, store, scope)
            #expect(third.records.map(\.recordName) == ["a0"] && third.records.first?.fields["name"] == .string("renamed"))
            #expect(!third.moreComing)
            // A deleted zone's page read ahead is not served: the request gets the error.
            let zones = try await store.modifyZones(ModifyZonesRequest(operations: [.init(.create, ZoneID(zoneName: "Z"))]), in: scope)
            #expect(zones.allSatisfy { $0.zone != nil })
            let inZone = (0..<3).map { Record(recordName: "z\($0)", recordType: "Artist", zoneID: ZoneID(zoneName: "Z"), fields: ["name": .string("z")]) }
            _ = try await store.modifyRecords(ModifyRecordsRequest(operations: inZone.map { RecordOperation(.forceReplace, RecordPayload($0)) },
                                                                   zoneID: ZoneID(zoneName: "Z")), in: scope)
            let zonePage = try await readAhead.answer(RecordChangesRequest(zoneID: ZoneID(zoneName: "Z"), resultsLimit: 2), in: scope, from: store, gzip: false)
            let zoneChanges = try JSONDecoder().decode(ZoneChanges.self, from: Data(buffer: zonePage.body))
            await readAhead.settle()
            _ = try await store.modifyZones(ModifyZonesRequest(operations: [.init(.delete, ZoneID(zoneName: "Z"))]), in: scope)
            let gone = await #expect(throws: RecordSyncError.self) {
                try await readAhead.answer(RecordChangesRequest(zoneID: ZoneID(zoneName: "Z"), syncToken: zoneChanges.syncToken, resultsLimit: 2),
                                           in: scope, from: store, gzip: false)
            }
            #expect(gone?.code == .zoneNotFound)
            #expect(readAhead.statistics.readAgain == 2)
        }
    }
}
