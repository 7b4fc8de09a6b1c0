import Foundation
import RecordModel
import TestSupport
import Testing

/// `records/changes` in RecordSync's compact form (`recordSyncCompact`, an extension), tested
/// against CloudKit's form of the same pages, through real HTTP on each engine.
@Suite struct CompactChangesTests {
    /// A compact page in CloudKit's form (``ZoneChanges/expandingCompactPage(_:)``).
    static func expanded(_ page: JSONValue, sourceLocation: SourceLocation = #_sourceLocation) -> JSONValue {
        #expect(page["recordSyncUsers"] != nil, sourceLocation: sourceLocation)
        guard let expanded = ZoneChanges.expandingCompactPage(page) else {
            Issue.record("not a compact page: \(page)", sourceLocation: sourceLocation)
            return page
        }
        return expanded
    }

    /// Reads every page from `token` in both forms, page by page with the same tokens, and
    /// checks that each compact page is its CloudKit page with the repeats taken out. Returns
    /// how many records the pages held.
    @discardableResult
    static func compare(_ session: Session, zone: String, since token: String?, extra: String = "", pageSize: Int,
                        sourceLocation: SourceLocation = #_sourceLocation) async throws -> Int {
        var token = token, records = 0
        while true {
            let common = #""zoneID":{"zoneName":"\#(zone)"},"resultsLimit":\#(pageSize)\#(token.map { #","syncToken":"\#($0)""# } ?? "")\#(extra)"#
            let cloudKit = try await session.post("records/changes", "{\(common)}")
            // Version 1 (the default: fields as objects) and version 2 (fields by position) of
            // the same page; the next page is asked for with version 2's token.
            let firstVersion = try await session.post("records/changes", #"{\#(common),"recordSyncCompact":true}"#)
            let compact = try await session.post("records/changes", #"{\#(common),"recordSyncCompact":true,"recordSyncCompactVersion":2}"#)
            #expect(cloudKit.status == 200 && compact.status == 200 && firstVersion.status == 200, "\(cloudKit.reason) \(compact.reason)",
                    sourceLocation: sourceLocation)
            // One parser for both (JSONDecoder reads 5.0 as an integer).
            let page = try JSONValue.parse(compact.data), cloudKitPage = try JSONValue.parse(cloudKit.data)
            let firstVersionPage = try JSONValue.parse(firstVersion.data)
            #expect(Self.expanded(firstVersionPage, sourceLocation: sourceLocation) == cloudKitPage, "compact version 1 \(String(decoding: firstVersion.data, as: UTF8.self))",
                    sourceLocation: sourceLocation)
            // Each live record's fields: an object in version 1, an array in version 2.
            func fieldsShapes(_ page: JSONValue) -> [String] {
                guard case .array(let records)? = page["records"] else { return [] }
                return records.compactMap { record in
                    guard case .array(let parts) = record, parts.count >= 6 else { return nil }
                    if case .array = parts[5] { return "array" }
                    if case .object = parts[5] { return "object" }
                    return "other"
                }
            }
            #expect(Set(fieldsShapes(page)).isSubset(of: ["array"]) && Set(fieldsShapes(firstVersionPage)).isSubset(of: ["object"]),
                    sourceLocation: sourceLocation)
            #expect(fieldsShapes(page).count == fieldsShapes(firstVersionPage).count, sourceLocation: sourceLocation)
            #expect(page["recordSyncFieldTypes"] != nil, sourceLocation: sourceLocation)
            #expect(cloudKitPage["recordSyncFieldTypes"] == nil, sourceLocation: sourceLocation)
            #expect(Self.expanded(page, sourceLocation: sourceLocation) == cloudKitPage, "compact \(String(decoding: compact.data, as: UTF8.self))\nCloudKit \(String(decoding: cloudKit.data, as: UTF8.self))", sourceLocation: sourceLocation)
            // The client's reader takes the compact answer back to CloudKit's: the same
            // records, and each record's fields as the same text, decoded or skimmed.
            for skimming in [false, true] {
              for answer in [compact, firstVersion] {
                let fromCompact = try StoredZoneChanges.decode(answer.data, skimmingFields: skimming)
                let fromCloudKit = try StoredZoneChanges.decode(cloudKit.data, skimmingFields: skimming)
                #expect(fromCompact.entries.map(\.record) == fromCloudKit.entries.map(\.record), sourceLocation: sourceLocation)
                #expect(fromCompact.entries.map(\.fieldsJSON) == fromCloudKit.entries.map(\.fieldsJSON), sourceLocation: sourceLocation)
                #expect(fromCompact.entries.map { $0.fieldsSummary?.references.map(\.reference) } ==
                        fromCloudKit.entries.map { $0.fieldsSummary?.references.map(\.reference) }, sourceLocation: sourceLocation)
                #expect(fromCompact.entries.map { $0.fieldsSummary?.references.map(\.field) } ==
                        fromCloudKit.entries.map { $0.fieldsSummary?.references.map(\.field) }, sourceLocation: sourceLocation)
                #expect(fromCompact.entries.map { $0.fieldsSummary?.types.map { "\($0.field) \($0.type)" } } ==
                        fromCloudKit.entries.map { $0.fieldsSummary?.types.map { "\($0.field) \($0.type)" } }, sourceLocation: sourceLocation)
                #expect(fromCompact.entries.map { $0.fieldsSummary?.locations.map { "\($0.key) \($0.value)" } } ==
                        fromCloudKit.entries.map { $0.fieldsSummary?.locations.map { "\($0.key) \($0.value)" } }, sourceLocation: sourceLocation)
                #expect((fromCompact.syncToken, fromCompact.moreComing, fromCompact.zoneID) == (fromCloudKit.syncToken, fromCloudKit.moreComing, fromCloudKit.zoneID),
                        sourceLocation: sourceLocation)
                #expect(fromCompact.includedRecords == fromCloudKit.includedRecords, sourceLocation: sourceLocation)
              }
            }
            // The compact answer also begins with moreComing and syncToken.
            #expect(String(decoding: compact.data.prefix(14), as: UTF8.self) == #"{"moreComing":"#, sourceLocation: sourceLocation)
            if case .array(let list)? = page["records"] { records += list.count }
            token = page["syncToken"]?.stringValue
            if page["moreComing"] != .bool(true) { return records }
        }
    }

    /// Two record types with a field of every kind, some records without some fields.
    static func seed(_ alice: Session, zone: String, from first: Int, count: Int) async throws {
        var records: [Record] = []
        for index in first..<(first + count) {
            var artist = Record(recordName: "artist\(index)", recordType: "Artist", fields: [
                "name": .string("Artist \(index) \"quoted\" é"),
                "born": .timestamp(-1_000_000 + Int64(index)),
                "rating": .double(Double(index) / 3),
                "works": .int64(Int64(index * 7)),
                "portrait": .bytes(Data([0, 1, 2, UInt8(index % 256)])),
                "home": .location(Location(latitude: 48.8 + Double(index), longitude: 2.3, horizontalAccuracy: 5)),
                "tags": .list(.string, [.string("a"), .string("b\(index)")]),
                "sizes": .list(.int64, [.int64(1), .int64(Int64(index))]),
                "active": .boolean(index % 2 == 0),
            ])
            if index % 3 == 0 { artist["rating"] = nil; artist["tags"] = nil }
            records.append(artist)
            var work = Record(recordName: "work\(index)", recordType: "Artwork", fields: [
                "artist": .reference(Reference(recordName: "artist\(index)", action: .deleteSelf)),
                "title": .string("Work \(index)"),
                "year": .int64(Int64(1800 + index)),
                "related": .reference(Reference(recordName: "artist\(first)", zoneID: ZoneID(zoneName: zone), action: .none)),
            ])
            if index % 4 == 1 { work["related"] = nil }
            records.append(work)
        }
        try await alice.save(records, zone: zone)
    }

    @Test func compactPagesAreCloudKitPagesWithoutTheirRepeats() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("Gallery")
            try await Self.seed(alice, zone: "Gallery", from: 0, count: 6)
            let token = try await alice.allChanges(zone: "Gallery").token
            try await Self.seed(alice, zone: "Gallery", from: 6, count: 5)
            _ = try await alice.modify([RecordOperation(.forceDelete, RecordPayload(recordName: "work2", recordType: "Artwork")),
                                        RecordOperation(.forceDelete, RecordPayload(recordName: "artist4", recordType: "Artist"))], zone: "Gallery")
            for pageSize in [3, 400] {
                // From scratch, and from a token (tombstones among the changes).
                #expect(try await Self.compare(alice, zone: "Gallery", since: nil, pageSize: pageSize) == 19)
                // 10 saved, work2 and artist4 deleted, and work4 with artist4 (DELETE_SELF).
                #expect(try await Self.compare(alice, zone: "Gallery", since: token, pageSize: pageSize) == 13)
                // The answer's options apply to both forms alike.
                try await Self.compare(alice, zone: "Gallery", since: nil, extra: #","numbersAsStrings":true"#, pageSize: pageSize)
                try await Self.compare(alice, zone: "Gallery", since: nil, extra: #","desiredKeys":["name","artist","sizes"]"#, pageSize: pageSize)
                try await Self.compare(alice, zone: "Gallery", since: nil, extra: #","include":["artist"]"#, pageSize: pageSize)
            }
            // A record is [recordName, recordType, recordChangeTag, created, modified, fields],
            // and a field's value is bare: a string is a string, a reference its object.
            let page = try JSONValue.parse(try await alice.post("records/changes", #"{"zoneID":{"zoneName":"Gallery"},"recordSyncCompact":true}"#).data)
            guard case .array(let records)? = page["records"] else { Issue.record("no records"); return }
            let work = records.lazy.compactMap { record -> [JSONValue]? in
                guard case .array(let parts) = record, parts.first == .string("work0") else { return nil }
                return parts
            }.first
            #expect(work?.count == 6 && work?[1] == .string("Artwork"))
            #expect(work?.last?["title"] == .string("Work 0"))
            #expect(work?.last?["artist"]?["recordName"] == .string("artist0"))
            #expect(page["recordSyncFieldTypes"]?["Artwork"]?["title"] == .object(["type": .string("STRING")]))
            #expect(page["recordSyncFieldTypes"]?["Artist"]?["active"] == .object(["type": .string("INT64"), "recordSyncType": .string("BOOLEAN")]))
        }
    }

    /// A page holds up to 1,000 records in either form, and as many when no `resultsLimit` is
    /// asked for.
    @Test func aPageHoldsUpTo1000RecordsInEitherForm() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("Gallery")
            for first in stride(from: 0, to: 1080, by: 360) {
                try await alice.save((first..<(first + 360)).map {
                    Record(recordName: "work\($0)", recordType: "Artwork", fields: ["title": .string("Work \($0)")])
                }, zone: "Gallery")
            }
            func count(_ extra: String) async throws -> (records: Int, moreComing: Bool) {
                let answer = try await alice.post("records/changes", #"{"zoneID":{"zoneName":"Gallery"}\#(extra)}"#)
                #expect(answer.status == 200, "\(answer.reason)")
                let page = try JSONValue.parse(answer.data)
                guard case .array(let records)? = page["records"] else { return (0, false) }
                return (records.count, page["moreComing"] == .bool(true))
            }
            #expect(try await count(#","resultsLimit":5000,"recordSyncCompact":true"#) == (1000, true))
            #expect(try await count(#","resultsLimit":700,"recordSyncCompact":true"#) == (700, true))
            #expect(try await count(#","resultsLimit":5000"#) == (1000, true))
            #expect(try await count(#","resultsLimit":700"#) == (700, true))
            #expect(try await count(#","recordSyncCompact":true"#) == (1000, true))
            #expect(try await count("") == (1000, true))
            // The 1,080 in two pages.
            var token: String?, total = 0, pages = 0
            repeat {
                let answer = try await alice.post("records/changes", #"{"zoneID":{"zoneName":"Gallery"},"resultsLimit":1000,"recordSyncCompact":true\#(token.map { #","syncToken":"\#($0)""# } ?? "")}"#)
                let page = try JSONValue.parse(answer.data)
                guard case .array(let records)? = page["records"] else { Issue.record("no records"); return }
                total += records.count
                pages += 1
                token = page["moreComing"] == .bool(true) ? page["syncToken"]?.stringValue : nil
            } while token != nil
            #expect(total == 1080 && pages == 2)
        }
    }

    /// A share's own keys (`shortGUID`, `participants`, …) have no place in the compact form:
    /// a page holding a share is written in CloudKit's form, and read with them.
    @Test func aPageHoldingAShareIsWrittenInCloudKitsForm() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("Trip")
            let saved = try await alice.post("records/modify", #"{"zoneID":{"zoneName":"Trip"},"operations":[{"operationType":"create","record":{"recordName":"r1","recordType":"Item","fields":{"note":{"value":"x"}}}},{"operationType":"create","record":{"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","fields":{},"publicPermission":"READ_ONLY"}}]}"#)
            #expect(saved.status == 200 && saved.json["records"]?[1]?["shortGUID"] != nil, "\(saved.json)")
            let page = try await alice.post("records/changes", #"{"zoneID":{"zoneName":"Trip"},"recordSyncCompact":true}"#)
            #expect(page.status == 200 && page.json["recordSyncFieldTypes"] == nil, "\(page.json)")
            let share = page.json["records"]?.arrayValue?.first { $0["recordName"] == .string("cloudkit.zoneshare") }
            #expect(share?["shortGUID"] != nil && share?["publicPermission"] == .string("READ_ONLY"), "\(page.json)")
            let read = try StoredZoneChanges.decode(page.data, skimmingFields: true)
            #expect(read.entries.contains { $0.record.shareInfo?.publicPermission == .readOnly })
        }
    }

    @Test func theCompactFormIsAskedForOnlyWhereItIsTaken() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("Gallery")
            let notABool = try await alice.post("records/changes", #"{"zoneID":{"zoneName":"Gallery"},"recordSyncCompact":"yes"}"#)
            #expect(notABool.status == 400 && notABool.code == "BAD_REQUEST", "\(notABool.reason)")
            #expect(notABool.reason.contains("recordSyncCompact"), "\(notABool.reason)")
            for body in [#"{"zones":[{"zoneID":{"zoneName":"Gallery"},"recordSyncCompact":true}]}"#,
                         #"{"zones":[{"zoneID":{"zoneName":"Gallery"}}],"recordSyncCompact":true}"#,
                         #"{"zones":[{"zoneID":{"zoneName":"Gallery"},"recordSyncCompact":false}]}"#] {
                let zones = try await alice.post("changes/zone", body)
                #expect(zones.status == 400 && zones.code == "BAD_REQUEST", "\(body): \(zones.reason)")
                #expect(zones.reason.contains("recordSyncCompact is taken by records/changes only"), "\(zones.reason)")
            }
            // false is CloudKit's form.
            let plain = try await alice.post("records/changes", #"{"zoneID":{"zoneName":"Gallery"},"recordSyncCompact":false}"#)
            #expect(plain.status == 200 && plain.json["recordSyncFieldTypes"] == nil)
            // A version is 1 or more, a number, and records/changes' alone too.
            for version in ["0", "-2", #""2""#] {
                let bad = try await alice.post("records/changes", #"{"zoneID":{"zoneName":"Gallery"},"recordSyncCompact":true,"recordSyncCompactVersion":\#(version)}"#)
                #expect(bad.status == 400 && bad.code == "BAD_REQUEST" && bad.reason.contains("recordSyncCompactVersion"), "\(version): \(bad.reason)")
            }
            let zones = try await alice.post("changes/zone", #"{"zones":[{"zoneID":{"zoneName":"Gallery"},"recordSyncCompactVersion":2}]}"#)
            #expect(zones.status == 400 && zones.reason.contains("recordSyncCompactVersion is taken by records/changes only"), "\(zones.reason)")
        }
    }

    /// Version 2 gives a record's fields by position in its type's fields, names in byte order,
    /// `null` where it has none and nothing after its last; a later version asked for is
    /// answered with the latest the server writes.
    @Test func versionTwoGivesFieldsByPosition() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("Gallery")
            // The first record lacks fields that sort before and between its own.
            try await alice.save([
                Record(recordName: "a", recordType: "Artwork", fields: ["title": .string("A"), "year": .int64(1901)]),
                Record(recordName: "b", recordType: "Artwork", fields: ["artist": .string("B"), "title": .string("B"), "medium": .string("oil"), "year": .int64(1902)]),
                Record(recordName: "c", recordType: "Artwork", fields: ["artist": .string("C")]),
            ], zone: "Gallery")
            for version in [2, 3] {
                let answer = try await alice.post("records/changes", #"{"zoneID":{"zoneName":"Gallery"},"recordSyncCompact":true,"recordSyncCompactVersion":\#(version)}"#)
                #expect(answer.status == 200, "\(answer.reason)")
                let page = try JSONValue.parse(answer.data)
                guard case .object(let fields)? = page["recordSyncFieldTypes"]?["Artwork"] else { Issue.record("no Artwork types"); return }
                #expect(fields.keys.sorted() == ["artist", "medium", "title", "year"])
                let values = page["records"]?.arrayValue?.map { $0[5] }
                #expect(values == [.array([.null, .null, .string("A"), .int(1901)]),
                                   .array([.string("B"), .string("oil"), .string("B"), .int(1902)]),
                                   .array([.string("C")])], "\(String(decoding: answer.data, as: UTF8.self))")
                // recordSyncFieldTypes is written in byte order, the positions' order.
                let text = String(decoding: answer.data, as: UTF8.self)
                let order = ["\"artist\"", "\"medium\"", "\"title\"", "\"year\""].compactMap { text.range(of: $0)?.lowerBound }
                #expect(order.count == 4 && order == order.sorted())
            }
        }
    }
}
