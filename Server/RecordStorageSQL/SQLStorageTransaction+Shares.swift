import Foundation
import RecordModel
import RecordSQL
import RecordStorage

extension SQLStorageTransaction {
    public func insertShare(_ share: StoredShare) throws -> Int64 {
        guard let key = try fetch("""
            INSERT INTO shares(zone_id, name, root, short_guid, public_permission)
            VALUES (\(share.zoneKey), \(share.recordName), \(share.root), \(share.shortGUID), \(share.publicPermission.rawValue)) RETURNING id
            """).first?.int64(0) else { throw StaleWrite("share \(share.recordName) was not stored") }
        return key
    }

    public func shares(inZone zone: Int64) throws -> [StoredShare] {
        try fetch("SELECT \(raw: ShareRows.shareColumns) FROM shares s WHERE s.zone_id = \(zone) ORDER BY s.name").map { try ShareRows.share(from: $0) }
    }

    public func share(shortGUID: String) throws -> LocatedShare? {
        try fetch("""
            SELECT \(raw: ShareRows.shareColumns), z.name, z.uid, z.seq, z.deleted, d.id, c.id, c.name, c.environment, u.id, u.name, u.record_name
            FROM shares s JOIN zones z ON z.id = s.zone_id JOIN databases d ON d.id = z.database_id JOIN containers c ON c.id = d.container_id
            JOIN users u ON u.id = d.owner_id
            WHERE s.short_guid = \(shortGUID)
            """).first.map { row in
            let share = try ShareRows.share(from: row)
            return LocatedShare(share: share, zone: StoredZone(key: share.zoneKey, name: try row.string(6), uid: try row.uuid(7), sequence: try row.int64(8), deleted: try row.bool(9)),
                                databaseKey: try row.int64(10), containerKey: try row.int64(11), container: try row.string(12), environment: try row.string(13),
                                owner: User(id: try row.int64(14), name: try row.string(15), userRecordName: try row.string(16)))
        }
    }

    public func setPublicPermission(_ permission: SharePermission, ofShare share: Int64) throws {
        try run("UPDATE shares SET public_permission = \(permission.rawValue) WHERE id = \(share)")
    }

    public func deleteShare(_ share: Int64) throws {
        try run("DELETE FROM share_participants WHERE share_id = \(share)")
        try run("DELETE FROM share_departures WHERE share_id = \(share)")
        try run("DELETE FROM shares WHERE id = \(share)")
    }

    public func participants(ofShare share: Int64) throws -> [StoredParticipant] {
        try fetch("""
            SELECT \(raw: ShareRows.participantColumns) FROM share_participants p LEFT JOIN users u ON u.id = p.user_id
            WHERE p.share_id = \(share) ORDER BY p.participant_id
            """).map { try ShareRows.participant(from: $0) }
    }

    public func saveParticipant(_ participant: StoredParticipant, ofShare share: Int64) throws {
        try run("DELETE FROM share_participants WHERE share_id = \(share) AND participant_id = \(participant.id)")
        try run("""
            INSERT INTO share_participants(share_id, participant_id, user_id, email, permission, type, status)
            VALUES (\(share), \(participant.id), \(participant.user?.id), \(participant.email), \(participant.permission.rawValue),
                    \(participant.type.rawValue), \(participant.status.rawValue))
            """)
    }

    public func deleteParticipant(_ participantID: String, ofShare share: Int64) throws -> Bool {
        try run("DELETE FROM share_participants WHERE share_id = \(share) AND participant_id = \(participantID)") > 0
    }

    public func participation(ofUser user: Int64, inZone zone: Int64) throws -> [(share: StoredShare, participant: StoredParticipant)] {
        try fetch("""
            SELECT \(raw: ShareRows.shareColumns), \(raw: ShareRows.participantColumns)
            FROM shares s JOIN share_participants p ON p.share_id = s.id JOIN users u ON u.id = p.user_id
            WHERE s.zone_id = \(zone) AND p.user_id = \(user) AND p.status = \(ShareParticipantStatus.accepted.rawValue)
            ORDER BY s.name
            """).map { (try ShareRows.share(from: $0), try ShareRows.participant(from: $0, at: 6)) }
    }

    public func hierarchy(below root: String, inZone zone: Int64) throws -> [(name: String, recordType: String)] {
        let sql = "SELECT name, type FROM records WHERE zone_id = ? AND name IN (\(ShareHierarchy.belowSQL(rootCount: 1)))"
        return try fetch(SQLStatement(compiled: dialect.numbered(sql), values: [.integer(zone)] + ShareHierarchy.arguments(zone: zone, roots: [root])))
            .map { (try $0.string(0), try $0.string(1)) }
    }

    public func insertDepartures(_ records: [(name: String, recordType: String)], ofShare share: Int64, firstSequence: Int64) throws {
        for (offset, record) in records.enumerated() {
            try run("""
                INSERT INTO share_departures(share_id, name, type, seq) VALUES (\(share), \(record.name), \(record.recordType), \(firstSequence + Int64(offset)))
                ON CONFLICT(share_id, name) DO UPDATE SET type = excluded.type, seq = excluded.seq
                """)
        }
    }

    public func deleteDepartures(named names: [String], ofShare share: Int64) throws {
        guard !names.isEmpty else { return }
        try run("DELETE FROM share_departures WHERE share_id = \(share) AND \(SQLStatement.member("name", of: names, in: dialect))")
    }

    public func children(of name: String, inZone zone: Int64) throws -> [String] {
        try fetch("SELECT name FROM records WHERE zone_id = \(zone) AND parent = \(name) ORDER BY name").map { try $0.string(0) }
    }

    public func namedAsParent(_ names: [String], inZone zone: Int64) throws -> Set<String> {
        Set(try fetch("SELECT DISTINCT parent FROM records WHERE zone_id = \(zone) AND \(SQLStatement.member("parent", of: names, in: dialect))")
            .map { try $0.string(0) })
    }

    public func departures(ofShares shares: [Int64], zoneID: ZoneID, after sequence: Int64, recordTypes: [String]?, limit: Int) throws -> [FeedChange] {
        guard !shares.isEmpty else { return [] }
        let typeFilter: SQLStatement = recordTypes.map { types -> SQLStatement in " AND \(SQLStatement.member("type", of: types, in: dialect))" } ?? ""
        return try fetch("""
            SELECT seq, name, type FROM share_departures WHERE \(SQLStatement.member("share_id", of: shares, in: dialect)) AND seq > \(sequence)\(typeFilter)
            ORDER BY seq LIMIT \(limit)
            """).map { row in
            FeedChange(sequence: try row.int64(0), entry: .init(record: Record(recordName: try row.string(1), recordType: try row.string(2), zoneID: zoneID, deleted: true)))
        }
    }

    public func moveInFeed(_ names: [String], inZone zone: Int64, firstSequence: Int64) throws {
        for (offset, name) in names.enumerated() {
            try run("UPDATE records SET seq = \(firstSequence + Int64(offset)) WHERE zone_id = \(zone) AND name = \(name)")
        }
    }

    public func hierarchy(above name: String, inZone zone: Int64, limit: Int) throws -> [String] {
        try fetch(SQLStatement(compiled: dialect.numbered(ShareHierarchy.aboveSQL(limit: limit)), values: [.integer(zone), .text(name), .integer(zone)]))
            .map { try $0.string(0) }
    }

    public func sharedHolders(ofAsset checksum: String, user: Int64, limit: Int) throws -> [SharedAssetHolder] {
        try fetch("""
            SELECT a.zone_id, a.record_name, s.root FROM asset_refs a JOIN shares s ON s.zone_id = a.zone_id JOIN share_participants p ON p.share_id = s.id
            WHERE a.checksum = \(checksum) AND p.user_id = \(user) AND p.status = \(ShareParticipantStatus.accepted.rawValue)
            ORDER BY s.root IS NOT NULL LIMIT \(Int64(limit))
            """).map { SharedAssetHolder(zoneKey: try $0.int64(0), recordName: try $0.string(1), root: try $0.optionalString(2)) }
    }

    public func sharedZones(ofUser user: Int64, container: String, environment: String) throws -> [SharedZone] {
        try fetch("""
            SELECT \(raw: ShareRows.shareColumns), \(raw: ShareRows.participantColumns), z.name, z.uid, z.seq, o.id, o.name, o.record_name
            FROM share_participants p JOIN users u ON u.id = p.user_id JOIN shares s ON s.id = p.share_id
            JOIN zones z ON z.id = s.zone_id JOIN databases d ON d.id = z.database_id JOIN containers c ON c.id = d.container_id
            JOIN users o ON o.id = d.owner_id
            WHERE p.user_id = \(user) AND p.status = \(ShareParticipantStatus.accepted.rawValue) AND z.deleted = \(false)
              AND c.name = \(container) AND c.environment = \(environment)
            ORDER BY o.record_name, z.name, s.name
            """).map { row in
            let share = try ShareRows.share(from: row)
            return SharedZone(zone: StoredZone(key: share.zoneKey, name: try row.string(14), uid: try row.uuid(15), sequence: try row.int64(16), deleted: false),
                              owner: User(id: try row.int64(17), name: try row.string(18), userRecordName: try row.string(19)),
                              share: share, participant: try ShareRows.participant(from: row, at: 6))
        }
    }
}

/// The columns of `shares` and `share_participants` the share reads select, and their values.
private enum ShareRows {
    static let shareColumns = "s.id, s.zone_id, s.name, s.root, s.short_guid, s.public_permission"

    static func share(from row: SQLRow, at offset: Int = 0) throws -> StoredShare {
        StoredShare(key: try row.int64(offset), zoneKey: try row.int64(offset + 1), recordName: try row.string(offset + 2), root: try row.optionalString(offset + 3),
                    shortGUID: try row.string(offset + 4), publicPermission: SharePermission(rawValue: try row.string(offset + 5)) ?? .unknown)
    }

    static let participantColumns = "p.participant_id, p.user_id, u.name, u.record_name, p.email, p.permission, p.type, p.status"

    static func participant(from row: SQLRow, at offset: Int = 0) throws -> StoredParticipant {
        let user = try row.optionalInt64(offset + 1).map { User(id: $0, name: try row.string(offset + 2), userRecordName: try row.string(offset + 3)) }
        return StoredParticipant(id: try row.string(offset), user: user, email: try row.optionalString(offset + 4),
                                 permission: SharePermission(rawValue: try row.string(offset + 5)) ?? .unknown,
                                 type: ShareParticipantType(rawValue: try row.string(offset + 6)) ?? .unknown,
                                 status: ShareParticipantStatus(rawValue: try row.string(offset + 7)) ?? .unknown)
    }
}
