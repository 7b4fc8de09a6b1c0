import Foundation
import RecordModel

extension RecordStore {
    /// How far ``startNewHistory()`` moves every feed number: more than any deployment writes
    /// between a backup and its restore, so that no change tag or token of the lost time is
    /// issued again.
    static let historyGap: Int64 = 1 << 32

    /// Makes the stored data start a new history, after it was put back from a backup: changes
    /// made after the backup are gone, yet clients may hold them, with change tokens and tags
    /// the restored feeds would reach again and mean something else by.
    ///
    /// Every live zone becomes a new incarnation (a token of any zone, from before the backup or
    /// after it, is `CHANGE_TOKEN_EXPIRED`: the client fetches the zone afresh and learns what
    /// it holds that the server does not), every zone is reported changed in its database's feed
    /// (so a client following `changes/database` from any token fetches each zone again), and
    /// every feed number jumps by ``historyGap`` (change tags and database tokens of the lost
    /// time are never valid again by coincidence). Answers how many zones it renewed.
    @discardableResult
    public func startNewHistory() async throws -> Int {
        try await engine.write { transaction in
            var renewed = 0
            for database in try transaction.databaseKeys() {
                _ = try transaction.advanceDatabaseSequence(database, by: Self.historyGap)
                for zone in try transaction.zones(in: database) {
                    let place = try DatabaseFeed.take(database, in: transaction)
                    if !zone.deleted {
                        let uid = UUID()
                        try transaction.reviveZone(zone.key, uid: uid, databaseSequence: place)
                        try transaction.insertIncarnation(uid, of: zone.key)
                        renewed += 1
                    }
                    try transaction.setZoneSequence(zone.key, to: zone.sequence + Self.historyGap, databaseSequence: place)
                }
            }
            return .commit(renewed)
        }
    }
}
