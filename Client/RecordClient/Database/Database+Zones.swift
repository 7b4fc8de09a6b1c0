import Foundation
import RecordModel

extension Database {
    /// Creates a zone, or returns it if it exists (CloudKit's `save(_:)` for a zone).
    @discardableResult
    public func save(_ zone: RecordZone) async throws -> RecordZone {
        let results = try await modifyRecordZones(saving: [zone], deleting: [])
        return try results.saveResults[zone.zoneID]?.get() ?? zone
    }

    /// Deletes a zone and every record in it (CloudKit's `deleteRecordZone(withID:)`).
    @discardableResult
    public func deleteRecordZone(withID zoneID: ZoneID) async throws -> ZoneID {
        let results = try await modifyRecordZones(saving: [], deleting: [zoneID])
        try results.deleteResults[zoneID]?.get()
        return zoneID
    }

    /// Creates and deletes zones in one request.
    public func modifyRecordZones(saving zonesToSave: [RecordZone], deleting zoneIDsToDelete: [ZoneID]) async throws
        -> (saveResults: [ZoneID: Result<RecordZone, RecordSyncError>], deleteResults: [ZoneID: Result<Void, RecordSyncError>]) {
        let operations = zonesToSave.map { ModifyZonesRequest.Operation(.create, $0.zoneID) }
            + zoneIDsToDelete.map { ModifyZonesRequest.Operation(.delete, $0) }
        let answer = try await transport.post("zones/modify", ModifyZonesRequest(operations: operations), as: ZonesResponse.self)
        var saves: [ZoneID: Result<RecordZone, RecordSyncError>] = [:]
        var deletes: [ZoneID: Result<Void, RecordSyncError>] = [:]
        for (operation, result) in zip(operations, answer.zones) {
            let id = operation.zone.zoneID
            switch (operation.operationType, result) {
            case (.create, .success(let zone)): saves[id] = .success(RecordZone(zoneID: zone.zoneID))
            case (.create, .failure(let error)): saves[id] = .failure(error)
            case (.delete, .success): deletes[id] = .success(())
            case (.delete, .failure(let error)): deletes[id] = .failure(error)
            }
        }
        return (saves, deletes)
    }

    /// Every zone of the database (CloudKit's `allRecordZones()`).
    public func allRecordZones() async throws -> [RecordZone] {
        try await transport.post("zones/list", EmptyBody(), as: ZonesResponse.self).zones.compactMap { $0.zone.map { RecordZone(zoneID: $0.zoneID) } }
    }
}
