import Foundation
import GRDB
import TestSupport
import Testing

/// The search rows the real server writes into its SQLite file.
@Suite struct SearchIndexingTests {
    /// A record type's words are indexed from its first word search on (`SearchTypes`): before
    /// it, saving its records writes no word rows (their locations are indexed at once); the
    /// search indexes the stored ones, and later saves their own.
    @Test func aTypesWordsAreIndexedFromItsFirstWordSearchOn() async throws {
        try await withTemporaryDirectory { directory in
            let token = try await ChildProcess.run("recordserver", ["user", "add", "alice", "--data", directory]).output.trimmingCharacters(in: .whitespacesAndNewlines)
            let server = try await ServerProcess(data: directory)
            defer { Task { _ = await server.stop(signal: SIGKILL) } }
            func save(_ name: String, _ type: String, _ text: String) async throws {
                let body = #"{"operations": [{"operationType": "forceReplace", "record": {"recordName": "\#(name)", "recordType": "\#(type)", "fields": {"text": {"value": "\#(text)"}, "spot": {"value": {"latitude": 1, "longitude": 2}, "type": "LOCATION"}}}}]}"#
                #expect(try await server.post("records/modify", body, token: token).status == 200)
            }
            func rows() async throws -> (words: [String], places: Int) {
                let queue = try DatabaseQueue(path: directory + "/records.sqlite", configuration: { var c = Configuration(); c.readonly = true; return c }())
                defer { try? queue.close() }
                return try await queue.read { db in
                    (try String.fetchAll(db, sql: """
                        SELECT name || ':' || token FROM search_tokens UNION ALL
                        SELECT m.name || ':' || p.token FROM search_postings p, json_each(p.names) j
                        JOIN search_members m ON m.zone_id = p.zone_id AND m.name = j.value AND m.block = p.block AND m.part = p.part ORDER BY 1
                        """), try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM search_locations") ?? 0)
                }
            }
            try await save("n1", "Note", "water lilies")
            try await save("t1", "Task", "buy lilies")
            #expect(try await rows().words == [])
            #expect(try await rows().places == 2)
            let search = #"{"query": {"recordType": "Note", "filterBy": [{"comparator": "CONTAINS_ALL_TOKENS", "fieldValue": {"value": "lilies"}}]}}"#
            let found = try await server.post("records/query", search, token: token)
            #expect(String(decoding: found.data, as: UTF8.self).contains(#""recordName":"n1""#))
            try await save("n2", "Note", "roses")
            try await save("t2", "Task", "sell roses")
            #expect(try await rows().words == ["n1:lilies", "n1:water", "n2:roses"])
            _ = await server.stop(signal: SIGTERM)
        }
    }
}
