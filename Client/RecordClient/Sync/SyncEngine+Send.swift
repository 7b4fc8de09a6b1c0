import Foundation
import RecordModel

/// What a ``SyncEngine/sendChanges()`` did.
public struct SendReport: Sendable {
    /// Records the server saved.
    public var saved: [Record.ID] = []
    /// Records the server deleted (or had already deleted).
    public var deleted: [Record.ID] = []
    /// Conflicts settled by the resolution policy (their results are sent in a later round).
    public var resolvedConflicts: [Record.ID] = []
    /// Changes the server refused for good; their local edits were dropped and the server's
    /// version (if any) put back in the cache.
    public var failures: [Record.ID: RecordSyncError] = [:]
    /// Changes left in the outbox after a transient failure; a later send retries them.
    public var deferred: [Record.ID: RecordSyncError] = [:]
}

extension SyncEngine {
    /// Sends the outbox: each record's queued edits folded into one operation (a save then a
    /// delete sends only the delete), in server-sized batches with every record in the same or
    /// a later batch than the records it references. Conflicts (`CONFLICT`, or `EXISTS` for a record created on two
    /// clients) go through the resolution policy and are sent again in the next round.
    ///
    /// - Throws: only request-level failures that outlast the retries (the server unreachable).
    /// Sends and fetches never overlap: a call waits for the one in progress.
    @discardableResult
    public func sendChanges() async throws -> SendReport {
        try await passLock.withLock { try await sendChangesNow() }
    }

    private func sendChangesNow() async throws -> SendReport {
        try checkCacheScope()
        var report = SendReport()
        for _ in 0..<configuration.maximumSendRounds {
            let pending = try await cache.pendingChanges()
            let retryable = pending.filter { report.deferred[$0.recordID] == nil && report.failures[$0.recordID] == nil }
            guard !retryable.isEmpty else { break }
            var resolvedAny = false
            for zone in retryable.map(\.zoneID).uniqued() {
                let changes = retryable.filter { $0.zoneID == zone }
                resolvedAny = try await send(changes, zone: zone, into: &report) || resolvedAny
            }
            if !resolvedAny && report.deferred.isEmpty { break }
        }
        return report
    }

    /// Sends one zone's changes; returns whether a conflict was resolved (another round is due).
    private func send(_ changes: [PendingChange], zone: ZoneID, into report: inout SendReport) async throws -> Bool {
        var byName: [String: PendingChange] = [:]
        var saves: [RecordOperation] = []
        var deletes: [RecordOperation] = []
        // Assets waiting to be uploaded go first (their copies stay until the record is acknowledged).
        let toSave = changes.compactMap { change in change.kind == .save ? change.record : nil }
        let uploaded: [String: Record]
        do {
            uploaded = Dictionary(try await retrying("assets/upload") { try await database.uploadingAssets(toSave) }.map { ($0.recordName, $0) },
                                  uniquingKeysWith: { first, _ in first })
        } catch let error as RecordSyncError where !error.code.isTransient {
            for change in changes { report.deferred[change.recordID] = error }
            configuration.logger.warning("assets refused", metadata: ["record.zone": "\(zone.zoneName)", "sync.error": "\(error.code)"])
            return false
        }
        for change in changes {
            byName[change.name] = change
            switch change.kind {
            case .delete:
                deletes.append(RecordOperation(.forceDelete, RecordPayload(recordName: change.name)))
            case .save:
                guard let record = change.record else { continue }
                saves.append(Self.operation(saving: uploaded[record.recordName] ?? record, changedKeys: change.changedKeys))
            }
        }
        let results: [(RecordOperation, Result<Record, RecordSyncError>)]
        do {
            results = try await retrying("records/modify") {
                try await database.send(saves: saves, deletes: deletes, zone: zone, atomically: false, throwFirstFailure: true)
            }
        } catch let error as RecordSyncError where !error.code.isTransient {
            for change in changes { report.deferred[change.recordID] = error }
            configuration.logger.warning("zone refused the changes", metadata: ["record.zone": "\(zone.zoneName)", "sync.error": "\(error.code)"])
            return false
        }
        var resolvedAny = false
        var innocent: [(PendingChange, RecordSyncError)] = []
        for (operation, result) in results {
            guard let change = byName[operation.record.recordName ?? ""] else { continue }
            switch result {
            case .success(let record) where change.kind == .save:
                try await cache.acknowledgeSave(change, serverRecord: record)
                if let sent = change.record { cache.forgetLocalAssets(of: sent) }
                report.saved.append(change.recordID)
            case .success:
                try await cache.acknowledgeDelete(change)
                report.deleted.append(change.recordID)
            case .failure(let error) where error.code == .atomicError || error.code == .validatingReferenceError:
                // Possibly failed only because another record of the batch did (a cycle
                // member, or the VALIDATE target of a conflicting record): judged below.
                innocent.append((change, error))
            case .failure(let error):
                resolvedAny = try await handle(error, for: change, into: &report) || resolvedAny
            }
        }
        for (change, error) in innocent where !resolvedAny {
            // Nothing was resolved, so sending again would fail the same way.
            try await refuse(change, error, into: &report)
        }
        return resolvedAny
    }

    /// Settles one failed change; returns whether it was resolved into a new edit to send.
    private func handle(_ error: RecordSyncError, for change: PendingChange, into report: inout SendReport) async throws -> Bool {
        switch error.code {
        case .notFound where change.kind == .delete:
            try await cache.acknowledgeDelete(change)
            report.deleted.append(change.recordID)
        case .conflict where error.serverRecord != nil && change.record != nil, .exists where error.serverRecord != nil && change.record != nil:
            guard var server = error.serverRecord, let local = change.record else { return false }
            server.zoneID = change.zoneID
            // A save sent again after its answer was lost (the connection broke after the server
            // had committed it) meets its own write: the server already holds every value the
            // save sets. That is the save done, not a conflict.
            if Self.holds(server, everyValueOf: local, changedKeys: change.changedKeys) {
                try await cache.acknowledgeSave(change, serverRecord: server)
                cache.forgetLocalAssets(of: local)
                report.saved.append(change.recordID)
                return false
            }
            let conflict = Conflict(serverRecord: server, clientRecord: local, ancestorRecord: change.ancestor, changedKeys: change.changedKeys)
            if let merged = try await resolver(conflict) {
                try await cache.rebase(change, onto: server, merged: merged)
            } else {
                try await cache.discard(change, restoring: server)
            }
            report.resolvedConflicts.append(change.recordID)
            return true
        case let code where code.isTransient:
            report.deferred[change.recordID] = error
        case .notFound:
            // Updated locally, deleted on the server: the deletion wins.
            try await cache.discard(change, restoring: nil)
            report.failures[change.recordID] = error
        default:
            try await refuse(change, error, into: &report)
        }
        return false
    }

    /// A change the server refuses for good: its edits are dropped and the cache gets the
    /// server's current copy of the record (fetched now: the cached ancestor may be stale, and
    /// a refused delete has none), or loses it if the server has none.
    private func refuse(_ change: PendingChange, _ error: RecordSyncError, into report: inout SendReport) async throws {
        var failure = error
        failure.clientRecord = change.record
        failure.ancestorRecord = change.ancestor
        let id = change.recordID
        let current = try await retrying("records/lookup") { try await database.records(for: [id]) }
        var server = current.records.first
        server?.zoneID = change.zoneID
        try await cache.discard(change, restoring: server)
        report.failures[change.recordID] = failure
        configuration.logger.warning("change refused", metadata: ["record.name": "\(change.name)", "sync.error": "\(error.code)"])
    }

    /// Whether `server` already holds what saving `local` sets: the changed fields of an update
    /// (a removed one absent), or every field of a new record and no other.
    static func holds(_ server: Record, everyValueOf local: Record, changedKeys: Set<String>?) -> Bool {
        guard server.recordType == local.recordType else { return false }
        let zone = local.zoneID?.zoneName ?? server.zoneID?.zoneName
        guard let keys = changedKeys, local.recordChangeTag != nil else {
            return Set(server.fields.keys) == Set(local.fields.keys) && local.fields.allSatisfy { same(server.fields[$0.key], as: $0.value, zone: zone) }
        }
        return keys.allSatisfy { same(server.fields[$0], as: local.fields[$0], zone: zone) }
    }

    /// Whether a server's value is the one a save sent: equal, or the same stored asset (the
    /// same checksum and size; the server signs its download URL anew for each answer) or the
    /// same reference (one without a zone ID is to the record's own `zone`, which the server
    /// may write out).
    static func same(_ server: FieldValue?, as local: FieldValue?, zone: String?) -> Bool {
        if server == local { return true }
        switch (server, local) {
        case (.asset(let server)?, .asset(let local)?):
            guard server["downloadURL"] != nil, case .string(let checksum)? = server["fileChecksum"] else { return false }
            return local["fileChecksum"] == .string(checksum) && local["size"] == server["size"]
        case (.reference(let server)?, .reference(let local)?):
            return server.recordName == local.recordName && server.action == local.action
                && (server.zoneID?.zoneName ?? zone) == (local.zoneID?.zoneName ?? zone)
        case (.list(let serverType, let servers)?, .list(let localType, let locals)?):
            return serverType == localType && servers.count == locals.count && zip(servers, locals).allSatisfy { same($0, as: $1, zone: zone) }
        default:
            return server == local
        }
    }

    /// The operation that sends a record's local edits: an `update` of the changed fields on
    /// top of the server version they started from, a `create` for a new record, or a
    /// `forceReplace` when the edits replace the record wholesale.
    static func operation(saving record: Record, changedKeys: Set<String>?) -> RecordOperation {
        guard let keys = changedKeys else {
            return RecordOperation(.forceReplace, RecordPayload(record))
        }
        guard record.recordChangeTag != nil else {
            return RecordOperation(.create, RecordPayload(record))
        }
        var payload = RecordPayload(record)
        payload.fields = Dictionary(uniqueKeysWithValues: keys.map { key in
            (key, record.fields[key].map(RawFieldValue.init) ?? RawFieldValue(value: .null))
        })
        return RecordOperation(.update, payload)
    }
}

extension SyncEngine {
    /// The local file of an asset a cached record holds: its kept copy while it waits to be
    /// uploaded, else downloaded once into the cache's `downloads/` folder (by checksum) and
    /// read from there afterwards, offline too.
    public func fetchAsset(_ asset: Asset) async throws -> URL {
        try await database.fetchAsset(asset, into: AssetFiles(directory: cache.downloadedAssetDirectory, maximumBytes: configuration.maximumAssetBytes))
    }
}
