import RecordModel

/// The numbers a write transaction gives the changes it makes in one zone.
///
/// Every change (a saved record, a tombstone) takes the zone's next number inside the
/// transaction that commits it, and the zone's number is read under the engine's lock
/// (``StorageTransaction/lockZoneForWriting(_:)``), so numbers become visible in order: a reader
/// paging "after n" never sees n + 1 before n. A record's change tag is its number in base 36,
/// unique within the zone because the numbers are (they go on across the zone's incarnations).
/// When the transaction is done, ``finish(in:)`` stores the zone's last number and moves the
/// zone to the database feed's next place, if anything was numbered.
struct ZoneFeedWriter: Sendable {
    let zone: Int64
    let database: Int64
    /// The zone's last number when the transaction began.
    let start: Int64
    /// The last number taken.
    private(set) var last: Int64

    /// A writer whose zone's last number is `start`.
    init(zone: Int64, database: Int64, start: Int64) {
        self.zone = zone
        self.database = database
        self.start = start
        last = start
    }

    /// Reads (and locks) the zone's number, for the transaction that will write.
    static func locking(zone: Int64, database: Int64, in transaction: any StorageTransaction) throws -> ZoneFeedWriter {
        ZoneFeedWriter(zone: zone, database: database, start: try transaction.lockZoneForWriting(zone))
    }

    /// Takes the next number.
    mutating func next() -> Int64 {
        last += 1
        return last
    }

    /// Takes `count` numbers in a row; returns the first.
    mutating func take(_ count: Int) -> Int64 {
        let first = last + 1
        last += Int64(count)
        return first
    }

    /// Whether any number was taken.
    var moved: Bool { last != start }

    /// Stores the zone's last number and its new place in the database feed, if it moved.
    func finish(in transaction: any StorageTransaction) throws {
        guard moved else { return }
        try transaction.setZoneSequence(zone, to: last, databaseSequence: try DatabaseFeed.take(database, in: transaction))
    }

    /// The change tag of the change numbered `sequence`.
    static func changeTag(_ sequence: Int64) -> String { String(sequence, radix: 36) }
}
