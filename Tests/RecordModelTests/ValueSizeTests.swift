import RecordModel
import Testing

/// The values copied in bulk (a change page's entries, a batch's results, arrays of records)
/// stay small: their large, rarely set members are kept out of line (``OutOfLine``), and still
/// behave as values.
@Suite struct ValueSizeTests {
    /// With their members inline: a record 624 bytes (its share info 416), a record result
    /// 1,985 and an error 1,984 (three records).
    @Test func recordsResultsAndErrorsStaySmallToCopy() {
        #expect(MemoryLayout<Record>.size <= 256)
        #expect(MemoryLayout<RecordResult?>.size <= 256)
        #expect(MemoryLayout<RecordSyncError>.size <= 160)
    }

    @Test func membersOutOfLineAreComparedHashedAndCopiedAsValues() {
        let owner = ShareParticipant(userIdentity: ShareParticipantIdentity(userRecordName: "_alice"), permission: .readWrite)
        let info = ShareInfo(shortGUID: "g", publicPermission: .none, owner: owner, participants: [], currentUserParticipant: nil)
        var share = Record(recordName: "s", recordType: ShareInfo.recordType, shareInfo: info)
        let copy = share
        share.shareInfo?.participants.append(owner)
        #expect(copy.shareInfo?.participants.isEmpty == true && share.shareInfo?.participants.count == 1)
        #expect(share != copy)
        share.shareInfo?.participants = []
        #expect(share == copy && share.hashValue == copy.hashValue)
        share.shareInfo = nil
        #expect(share.shareInfo == nil && share != copy)

        let stored = Record(recordName: "r", recordType: "Item", recordChangeTag: "2")
        var conflict = RecordSyncError(.conflict, "changed since", recordName: "r", serverRecord: stored)
        let before = conflict
        conflict.serverRecord?.recordChangeTag = "3"
        conflict.clientRecord = stored
        #expect(before.serverRecord?.recordChangeTag == "2" && before.clientRecord == nil)
        #expect(conflict.serverRecord?.recordChangeTag == "3" && conflict.clientRecord == stored && conflict.ancestorRecord == nil)
        #expect(Set([before, conflict, RecordSyncError(.conflict, "changed since", recordName: "r", serverRecord: stored)]).count == 2)
    }

    /// A holder prints its member's value (a failing test's message shows the share, not a box).
    @Test func membersOutOfLinePrintAsTheirValues() {
        let owner = ShareParticipant(userIdentity: ShareParticipantIdentity(userRecordName: "_alice"), permission: .readWrite)
        let info = ShareInfo(shortGUID: "guid-42", publicPermission: .none, owner: owner, participants: [], currentUserParticipant: nil)
        let share = Record(recordName: "s", recordType: ShareInfo.recordType, shareInfo: info)
        for printed in [String(describing: share), String(reflecting: share)] {
            #expect(printed.contains("guid-42") && !printed.contains("OutOfLine") && !printed.contains("Box"))
        }
        let conflict = RecordSyncError(.conflict, "changed since", recordName: "r", serverRecord: Record(recordName: "r", recordType: "Item", recordChangeTag: "tag-7"))
        for (value, inside) in [(share, "guid-42"), (conflict, "tag-7")] as [(Any, String)] {
            var dumped = ""
            dump(value, to: &dumped)
            #expect(dumped.contains(inside) && !dumped.contains("OutOfLine"), "\(dumped)")
        }
    }
}
