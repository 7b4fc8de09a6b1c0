import Foundation
import PostgresNIO
import RecordModel
import RecordStorage
import RecordStorageSQL

extension PostgresTransaction {
    func noteZoneRead(_ zone: Int64, uid: UUID, deleted: Bool) {
        zonesSeen[zone] = (uid, deleted)
    }

    func checkLockedZone(_ zone: Int64, uid: UUID, deleted: Bool) throws {
        if let seen = zonesSeen[zone], seen.uid != uid || seen.deleted != deleted {
            throw PostgresRetry("zone \(zone) changed before it was locked")
        }
    }
}
