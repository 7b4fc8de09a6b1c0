import Foundation
import RecordClient
import RecordModel
import TestSupport
import Testing

/// `records/backlinks`, `include` on queries, and the client's and cache's forms of both,
/// through real HTTP on each engine.
@Suite struct BacklinksAndIncludeTests {
    @Test func backlinksListEveryReferringRecordWithFieldAndAction() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await QueryLanguageTests.seedGallery(alice)
            // A record referring to monet from two fields, one a list, with two actions.
            try await alice.save([Record(recordName: "study", recordType: "Sketch", fields: [
                "artist": .reference(Reference(recordName: "monet", action: .deleteSelf)),
                "influences": .list(.reference, [.reference(Reference(recordName: "manet", action: .none)), .reference(Reference(recordName: "monet", action: .none))]),
            ])])
            let reply = try await alice.post("records/backlinks", BacklinksRequest(recordName: "monet"))
            #expect(reply.status == 200, "\(reply.reason)")
            let answer = try reply.decode(BacklinksResponse.self)
            #expect(answer.records.map(\.recordName) == ["lilies", "study", "sunrise"])
            #expect(answer.backlinks == [
                Backlink(recordName: "lilies", fieldName: "artist", action: .none),
                Backlink(recordName: "study", fieldName: "artist", action: .deleteSelf),
                Backlink(recordName: "study", fieldName: "influences", action: .none),
                Backlink(recordName: "sunrise", fieldName: "artist", action: .none),
            ])
            #expect(answer.continuationMarker == nil)
            // Pages of one referring record each, with all its references.
            var pages: [[String]] = []
            var marker: String?
            repeat {
                let page = try await alice.post("records/backlinks", BacklinksRequest(recordName: "monet", resultsLimit: 1, continuationMarker: marker)).decode(BacklinksResponse.self)
                pages.append(page.records.map(\.recordName) + page.backlinks.map(\.fieldName))
                marker = page.continuationMarker
            } while marker != nil
            #expect(pages == [["lilies", "artist"], ["study", "artist", "influences"], ["sunrise", "artist"]])
            let none = try await alice.post("records/backlinks", BacklinksRequest(recordName: "nobody")).decode(BacklinksResponse.self)
            #expect(none.records.isEmpty && none.backlinks.isEmpty)
            let bad = try await alice.post("records/backlinks", #"{"recordName": ""}"#)
            #expect(bad.code == "BAD_REQUEST")
            let missing = try await alice.post("records/backlinks", BacklinksRequest(recordName: "monet", zoneID: ZoneID(zoneName: "Nowhere")))
            #expect(missing.code == "ZONE_NOT_FOUND")
            let forged = try await alice.post("records/backlinks", BacklinksRequest(recordName: "monet", continuationMarker: answer.continuationMarker ?? "garbage"))
            #expect(forged.code == "BAD_REQUEST")
        }
    }

    @Test func aQueryIncludesWhatItsReferencesReachTargetsFirst() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await QueryLanguageTests.seedGallery(alice)
            let query = Query(recordType: "Artwork", filterBy: [QueryFilter("artist.born", .lessThan, RawFieldValue(value: .int(1841)))])
            let one = try await alice.post("records/query", QueryRecordsRequest(query: query, include: ["artist"])).decode(QueryRecordsResponse.self)
            #expect(one.records.map(\.recordName) == ["lilies", "olympia", "sunrise"])
            #expect(one.includedRecords?.map(\.recordName).sorted() == ["manet", "monet"])
            let two = try await alice.post("records/query", QueryRecordsRequest(query: query, include: ["artist", "label"], includeDepth: 2)).decode(QueryRecordsResponse.self)
            let included = two.includedRecords?.map(\.recordName) ?? []
            #expect(Set(included) == ["manet", "monet", "durand", "ruel"])
            #expect(included.firstIndex(of: "durand")! < included.firstIndex(of: "monet")!, "targets first: \(included)")
            let deep = try await alice.post("records/query", QueryRecordsRequest(query: query, include: ["artist"], includeDepth: 9))
            #expect(deep.code == "BAD_REQUEST")
        }
    }

    /// A page whose includes would pass the results limit is made smaller, never refused; the
    /// pages together hold every record, and every record's targets come with it.
    @Test func aPageWithTooManyIncludesIsMadeSmaller() async throws {
        try await withServer(configure: { $0.limits.maximumResultsLimit = 6 }) { server in
            let alice = try await server.user("alice")
            var records: [Record] = (0..<8).map { Record.artist("a\($0)") }
            for index in 0..<8 {
                var work = Record.artwork("w\(index)", by: "a\(index)", action: .none)
                work["artists"] = .list(.reference, (0..<(index == 0 ? 8 : 1)).map { .reference(Reference(recordName: "a\(($0 + index) % 8)", action: .none)) })
                records.append(work)
            }
            try await alice.save(records)
            var pages: [QueryRecordsResponse] = []
            var marker: String?
            repeat {
                let page = try await alice.post("records/query", QueryRecordsRequest(query: Query(recordType: "Artwork"), resultsLimit: 4, continuationMarker: marker, include: ["artists"]))
                #expect(page.status == 200, "\(page.reason)")
                pages.append(try page.decode(QueryRecordsResponse.self))
                marker = pages.last?.continuationMarker
            } while marker != nil && pages.count < 20
            #expect(pages.flatMap(\.records).map(\.recordName) == (0..<8).map { "w\($0)" })
            for page in pages {
                #expect(page.records.count + (page.includedRecords?.count ?? 0) <= 6, "\(page.records.map(\.recordName)) + \(page.includedRecords?.map(\.recordName) ?? [])")
            }
            // w0 points at all 8 artists: alone on its page, with the 5 that fit.
            #expect(pages[0].records.map(\.recordName) == ["w0"] && pages[0].includedRecords?.count == 5)
            #expect(pages.count > 2)
        }
    }

    @Test func theClientAndTheCacheListBacklinksAndQueryWithIncludes() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("Gallery")
            try await QueryLanguageTests.seedGallery(alice, zone: "Gallery")
            let container = Container(serverURL: URL(string: "http://127.0.0.1:\(alice.client.port!)")!, identifier: alice.container, credentials: .bearerToken(alice.token))
            let database = container.privateCloudDatabase
            let zone = ZoneID(zoneName: "Gallery")
            let lilies = Record.ID(recordName: "lilies", zoneID: zone)
            let remote = try await database.records(referencing: lilies)
            #expect(remote.map(\.record.recordName) == ["show"])
            #expect(remote.first?.references == [Backlink(recordName: "show", fieldName: "works", action: .none)])
            let cache = try RecordCache(path: ":memory:")
            _ = try await SyncEngine(database: database, cache: cache).fetchChanges()
            let cached = try await cache.records(referencing: lilies)
            #expect(cached.map(\.references) == remote.map(\.references))
            #expect(cached.map { $0.record.fields } == remote.map { $0.record.fields })
            let monet = Record.ID(recordName: "monet", zoneID: zone)
            #expect(try await cache.records(referencing: monet).map(\.record.recordName) == ["lilies", "sunrise"])

            let page = try await database.records(matching: RecordQuery(recordType: "Exhibition", predicate: try RecordPredicate(format: "ANY works.artist.name BEGINSWITH 'Berthe'")),
                                                  inZoneWith: zone, including: ["works", "artist"], depth: 2)
            #expect(page.records.map(\.recordName) == ["solo"])
            #expect(page.includedRecords.map(\.recordName) == ["morisot", "cradle"])
            #expect(page.queryCursor == nil)
        }
    }
}

/// `include` on change fetches.
@Suite struct ChangeIncludeTests {
    /// Each page comes with the targets of its records (targets first); a page whose includes
    /// would pass the limit is made smaller, and the pages together hold every change once.
    @Test func aChangePageIncludesItsTargetsAndShrinksToFit() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            try await alice.createZones("Gallery")
            var records: [Record] = (0..<6).map { Record.artist("a\($0)") }
            for index in 0..<6 {
                var work = Record.artwork("w\(index)", by: "a\(index)", action: .none)
                work["artists"] = .list(.reference, (0..<(index == 2 ? 6 : 1)).map { .reference(Reference(recordName: "a\(($0 + index) % 6)", action: .none)) })
                records.append(work)
            }
            try await alice.save(records, zone: "Gallery")
            // The artists' changes come first; from the works' first change on, ask with include.
            let first = try await alice.post("records/changes", RecordChangesRequest(zoneID: ZoneID(zoneName: "Gallery"), resultsLimit: 6)).decode(ZoneChanges.self)
            #expect(first.records.map(\.recordName) == (0..<6).map { "a\($0)" })
            var token: String? = first.syncToken
            var pages: [ZoneChanges] = []
            repeat {
                let reply = try await alice.post("records/changes", RecordChangesRequest(zoneID: ZoneID(zoneName: "Gallery"), syncToken: token, resultsLimit: 4, include: ["artists"]))
                #expect(reply.status == 200, "\(reply.reason)")
                let page = try reply.decode(ZoneChanges.self)
                pages.append(page)
                token = page.syncToken
                if !page.moreComing { break }
            } while pages.count < 20
            #expect(pages.flatMap(\.records).map(\.recordName) == (0..<6).map { "w\($0)" })
            for page in pages {
                #expect(page.records.count + (page.includedRecords?.count ?? 0) <= 4, "\(page.records.map(\.recordName)) + \(page.includedRecords?.map(\.recordName) ?? [])")
                for record in page.records {
                    for (_, reference) in record.references where page.records.count > 1 || record.recordName != "w2" {
                        #expect(page.includedRecords?.contains { $0.recordName == reference.recordName } == true, "\(record.recordName) → \(reference.recordName)")
                    }
                }
            }
            #expect(pages.contains { $0.records.map(\.recordName) == ["w2"] && $0.includedRecords?.count == 3 })
            // Through the client library too.
            let container = Container(serverURL: URL(string: "http://127.0.0.1:\(alice.client.port!)")!, identifier: alice.container, credentials: .bearerToken(alice.token))
            let page = try await container.privateCloudDatabase.recordZoneChanges(inZoneWith: ZoneID(zoneName: "Gallery"), since: ServerChangeToken(rawValue: first.syncToken),
                                                                                    resultsLimit: 4, including: ["artists"])
            #expect(page.changes.map(\.recordName) == ["w0", "w1"])
            #expect(page.includedRecords.map(\.recordName).sorted() == ["a0", "a1"])
        }
    }
}
