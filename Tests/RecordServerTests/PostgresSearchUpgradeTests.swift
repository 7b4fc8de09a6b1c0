import Foundation
import Logging
import PostgresNIO
import RecordModel
import RecordPostgresEngine
import TestSupport
import Testing

/// A PostgreSQL database written before the search tables existed gets them, built from its
/// records, when a server of this release first starts on it.
@Suite struct PostgresSearchUpgradeTests {
    @Test(.enabled(if: TestPostgres.url != nil, "needs RECORDSYNC_TEST_POSTGRES"))
    func theSearchRowsOfRecordsStoredBeforeTheUpgradeAreBuilt() async throws {
        try await withTemporaryDirectory { directory in
            let deployment = try await Deployment(directory: directory, nodes: 1)
            defer { deployment.kill() }
            let token = try await deployment.addUser("alice")
            let records = (0..<1_500).map { i in
                #"{"operationType": "create", "record": {"recordName": "r\#(i)", "recordType": "Note", "fields": {"text": {"value": "note \#(i) \#(i % 7 == 0 ? "lilies" : "roses")"}, "spot": {"type": "LOCATION", "value": {"latitude": \#(48 + Double(i) / 10_000), "longitude": 2.3}}}}}"#
            }
            for chunk in stride(from: 0, to: records.count, by: 300) {
                let body = "{\"operations\": [\(records[chunk..<min(chunk + 300, records.count)].joined(separator: ","))]}"
                #expect(try await MultiNodeTests.post(deployment.nodes[0].url, "records/modify", body, token: token).status == 200)
            }
            await deployment.stop()
            // The database as the release before left it.
            let url = try await TestPostgres.databaseURL(for: directory)
            try await PostgresEngine.withConnection(to: try PostgresLocation(url: url), logger: Logger(label: "test")) { connection in
                for statement in ["DROP TABLE search_tokens", "DROP TABLE search_locations", "DROP TABLE search_types", "DELETE FROM recordsync_migrations WHERE name = 'v6'"] {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: Logger(label: "test"))
                }
            }
            let node = try await deployment.startNode()
            let words = #"{"query": {"recordType": "Note", "filterBy": [{"comparator": "CONTAINS_ALL_TOKENS", "fieldName": "text", "fieldValue": {"value": "LILIES note"}}]}, "resultsLimit": 400}"#
            let (status, json) = try await MultiNodeTests.post(node.url, "records/query", words, token: token)
            #expect(status == 200)
            #expect(json["records"]?.arrayValue?.count == (0..<1_500).filter { $0 % 7 == 0 }.count)
            let near = #"{"query": {"recordType": "Note", "filterBy": [{"comparator": "NEAR", "fieldName": "spot", "fieldValue": {"value": {"latitude": 48.1499, "longitude": 2.3}}, "distance": 5}]}}"#
            let (nearStatus, nearJSON) = try await MultiNodeTests.post(node.url, "records/query", near, token: token)
            #expect(nearStatus == 200)
            #expect(nearJSON["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } == ["r1499"])
        }
    }
}
