import AsyncHTTPClient
import Foundation
import NIOCore
import RecordClient
import RecordModel

/// `shared-reads`: a participant of a record share of 100 records in a zone of
/// `queryBigZone` records (a million at full scale) reads them (a lookup of all 100, a query
/// matching them, and the changes after the owner edited them) as fast as their owner does
/// the same in its private database: time(participant) / time(owner) ≤ 1.5. Both go through
/// the same plain HTTP client; rounds alternate who reads first; the figure is the median of
/// the rounds' own ratios.
enum SharedReads {
    static let shared = 100

    static func run(_ scale: Scale, repetitions: Int) async throws -> Measurement {
        try await withBenchServer(otherUsers: 1) { server in
            let database = server.container.privateCloudDatabase
            let zone = ZoneID(zoneName: "Big")
            _ = try await database.modifyRecordZones(saving: [RecordZone(zoneID: zone)], deleting: [])
            let count = scale.queryBigZone
            say("  seeding \(count) records in zone Big…")
            try await Workload.save(database, count: count, zone: zone) { $0.map { Workload.artwork($0, artists: count / 100) } }
            // The shared hierarchy: a root and 99 records under it, each referring to Artist `s`.
            try await Workload.save(database, count: shared, zone: zone) { range in
                range.map { i in
                    var operation = Workload.artwork(i, artists: 1, prefix: "s")
                    operation.record.fields?["artist"] = RawFieldValue(FieldValue.reference(Reference(recordName: "shared-artist", action: .none)))
                    if i > 0 { operation.record.parent = .set("s0") }
                    return operation
                }
            }
            try await server.storage.analyze()

            let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
            defer { _ = http.shutdown() }
            let base = server.url.absoluteString + "/database/1/iCloud.bench/development/"
            @Sendable func post(_ token: String, _ path: String, _ json: [String: Any]) async throws -> [String: Any] {
                let body = try await ChangesReader.post(http, base + path, token: token, json: json).get()
                guard let answer = try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any] else { throw BenchError("\(path) answered no object") }
                return answer
            }
            let owner = server.token, participant = server.otherTokens[0]
            let ownerName = try await server.container.userRecordID().recordName
            let participantName = (try await post(participant, "public/users/current", [:]))["userRecordName"] as? String ?? ""
            let made = try await post(owner, "private/records/modify", ["zoneID": ["zoneName": "Big"], "operations": [[
                "operationType": "create",
                "record": ["recordName": "share", "recordType": "cloudkit.share", "fields": [:] as [String: Any], "forRecord": ["recordName": "s0"],
                           "participants": [["userIdentity": ["lookupInfo": ["userRecordName": participantName]], "permission": "READ_WRITE"]]] as [String: Any],
            ]]])
            guard let guid = ((made["records"] as? [[String: Any]])?.first?["shortGUID"]) as? String else { throw BenchError("the share was not made: \(made)") }
            _ = try await post(participant, "public/records/accept", ["shortGUIDs": [["value": guid]]])

            // The owner reads in its private database, the participant in its shared one.
            let readers: [(token: String, path: String, zone: [String: Any])] = [
                (owner, "private/", ["zoneName": "Big"]),
                (participant, "shared/", ["zoneName": "Big", "ownerRecordName": ownerName]),
            ]
            let names = (0..<shared).map { ["recordName": "s\($0)"] }
            let query: [String: Any] = ["recordType": "Artwork", "filterBy": [["fieldName": "artist", "comparator": "EQUALS",
                                                                                 "fieldValue": ["value": ["recordName": "shared-artist"], "type": "REFERENCE"]]]]
            var tokens: [String?] = [nil, nil]
            for index in 0..<2 {
                var more = true
                while more {
                    var body: [String: Any] = ["zoneID": readers[index].zone]
                    if let token = tokens[index] { body["syncToken"] = token }
                    let page = try await post(readers[index].token, readers[index].path + "records/changes", body)
                    tokens[index] = page["syncToken"] as? String
                    more = page["moreComing"] as? Bool ?? false
                }
            }
            var times: [[Double]] = [[], []], ratios: [Double] = []
            for round in 0..<max(scale.pairedRounds, repetitions) {
                // The owner edits the 100 shared records; both then read them.
                try await Workload.save(database, count: shared, zone: zone) { range in
                    range.map { i in
                        var operation = Workload.artwork(i + round, artists: 1, prefix: "s")
                        operation.record.recordName = "s\(i)"
                        operation.record.fields?["artist"] = RawFieldValue(FieldValue.reference(Reference(recordName: "shared-artist", action: .none)))
                        if i > 0 { operation.record.parent = .set("s0") }
                        return operation
                    }
                }
                var time = [0.0, 0.0]
                for index in round % 2 == 0 ? [0, 1] : [1, 0] {
                    let reader = readers[index]
                    var fetched = 0, found = 0, changed = 0
                    time[index] = try await seconds {
                        for _ in 0..<5 {
                            let looked = try await post(reader.token, reader.path + "records/lookup", ["zoneID": reader.zone, "records": names])
                            fetched += (looked["records"] as? [[String: Any]])?.filter { $0["serverErrorCode"] == nil }.count ?? 0
                        }
                        for _ in 0..<5 {
                            let matched = try await post(reader.token, reader.path + "records/query", ["zoneID": reader.zone, "query": query, "resultsLimit": 200])
                            found += (matched["records"] as? [Any])?.count ?? 0
                        }
                        var more = true
                        while more {
                            var body: [String: Any] = ["zoneID": reader.zone]
                            if let token = tokens[index] { body["syncToken"] = token }
                            let page = try await post(reader.token, reader.path + "records/changes", body)
                            changed += (page["records"] as? [Any])?.count ?? 0
                            tokens[index] = page["syncToken"] as? String
                            more = page["moreComing"] as? Bool ?? false
                        }
                    }
                    guard fetched == 5 * shared, found == 5 * shared, changed == shared else {
                        throw BenchError("the \(index == 0 ? "owner" : "participant") read \(fetched) records, found \(found) and fetched \(changed) changes, not \(5 * shared), \(5 * shared) and \(shared)")
                    }
                }
                times[0].append(time[0])
                times[1].append(time[1])
                ratios.append(time[1] / time[0])
            }
            let ratio = median(ratios)
            return Measurement(scenario: "shared-reads", unit: "ms, lookups, queries and changes", figure: median(times[1]) * 1000,
                               floor: nil, ratio: ratio, target: "time(participant)/time(owner) ≤ 1.5", met: ratio <= 1.5,
                               notes: String(format: "%.2f ms for the owner; %d records in the zone", median(times[0]) * 1000, count + shared))
        }
    }
}
