import Foundation
import RecordModel

/// What a ``SyncEngine/fetchChanges()`` did.
public struct FetchReport: Sendable, Hashable {
    /// Zones whose changes were fetched.
    public var fetchedZones: [ZoneID] = []
    /// Zones deleted on the server and purged from the cache.
    public var purgedZones: [ZoneID] = []
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

    private func fetchChangesNow() async throws -> FetchReport {
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
        for zone in deleted where !changed.contains(where: { $0.zoneName == zone.zoneName }) {
            try await cache.purge(zone)
            report.purgedZones.append(zone)
        }
        for zone in changed {
            try await fetchZone(ZoneID(zoneName: zone.zoneName), into: &report)
        }
        if let token { try await cache.setDatabaseToken(token) }
        return report
    }

    /// Fetches one zone's changes since its saved token. While a page is written to the cache,
    /// the next one (asked for with the page's token) is already on its way: pages are still
    /// applied one after another, in feed order. The page asked for ahead is a child task of
    /// this fetch: if the fetch fails or is cancelled, so is it, and the fetch ends after it.
    func fetchZone(_ zoneID: ZoneID, into report: inout FetchReport) async throws {
        var token = try await cache.changeToken(for: zoneID)
        report.fetchedZones.append(zoneID)
        try await withThrowingTaskGroup(of: ZoneChangesPage.self) { pages in
            func ask(since token: ServerChangeToken?) {
                pages.addTask { [self] in
                    try await retrying("records/changes") {
                        try await database.recordZoneChanges(inZoneWith: zoneID, since: token, resultsLimit: configuration.pageSize)
                    }
                }
            }
            var resetting = false
            ask(since: token)
            while true {
                let since = token
                let page: ZoneChangesPage
                do {
                    // One page is asked for at a time, so the next result is that page.
                    guard let next = try await pages.next() else { return }
                    page = next
                } catch let error as RecordSyncError where error.code == .changeTokenExpired && !resetting {
                    configuration.logger.info("zone token expired; fetching the zone again", metadata: ["record.zone": "\(zoneID.zoneName)"])
                    report.resetZones.append(zoneID)
                    token = nil
                    resetting = true
                    ask(since: nil)
                    continue
                } catch let error as RecordSyncError where error.code == .zoneNotFound {
                    try await cache.purge(zoneID)
                    report.purgedZones.append(zoneID)
                    return
                }
                if page.moreComing { ask(since: page.changeToken) }
                // A fetch without a token returns the zone's current records and no tombstones of
                // records deleted before it, so it replaces what the cache held (its own sends,
                // say), except records with queued edits.
                try await cache.apply(page, to: zoneID, resetting: since == nil)
                report.changedRecordCount += page.modifications.count
                report.deletedRecordCount += page.deletions.count
                token = page.changeToken
                if !page.moreComing { return }
            }
        }
    }
}
