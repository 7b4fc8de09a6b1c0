import Foundation
@testable import recordctl
import TestSupport
import Testing

@Suite struct SyncWatchTests {
    @Test func watchingCachesConvergeWithConcurrentWriters() async throws {
        try await withServer { server in
            let flags = try await server.flags(forNewUser: "alice")
            let caches = (0..<3).map { "\(server.directory)/watch-\($0).sqlite" }
            let watchers = try caches.map { try ChildProcess("recordctl", ["sync", "--watch", "--cache", $0] + flags) }
            for watcher in watchers { #expect(try await watcher.waitFor("watching") != nil, "\(watcher.text)") }

            // Two writers at once: artists, artworks owned by them, edits and a cascading delete.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<2 {
                    group.addTask {
                        for round in 0..<5 {
                            let file = "\(server.directory)/w\(writer)-\(round).ndjson"
                            var lines = [#"{"recordName": "a\#(writer)-\#(round)", "recordType": "Artist", "fields": {"name": "artist \#(round)", "rank": \#(round)}}"#]
                            for work in 0..<4 {
                                lines.append(#"{"recordName": "w\#(writer)-\#(round)-\#(work)", "recordType": "Artwork", "fields": {"year": \#(1900 + work), "artist": {"ref": "a\#(writer)-\#(round)", "action": "deleteSelf"}}}"#)
                            }
                            try Data(lines.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: file))
                            let run = await recordctl(["records", "modify", "--file", file] + flags)
                            #expect(run.status == 0, "\(run.errors)")
                            if round == 2 { _ = await recordctl(["records", "delete", "a\(writer)-1"] + flags) }
                        }
                    }
                }
                try await group.waitForAll()
            }

            let queries = [["Artwork", "--sort", "year:desc", "--sort", "recordName"], ["Artist", "--where", "rank >= 2"]]
            for query in queries {
                let expected = await recordctl(["query"] + query + ["--all", "--json"] + flags)
                #expect(expected.status == 0)
                #expect(!expected.output.isEmpty)
                for cache in caches {
                    let converged = try await eventually(within: 60) {
                        await recordctl(["query"] + query + ["--all", "--json", "--cache", cache] + flags).output == expected.output
                    }
                    #expect(converged, "\(cache) differs for \(query)")
                }
            }
            // The cascade took the deleted artist's works; the others are there.
            let gone = await recordctl(["query", "Artwork", "--where", "artist == 'a0-1'", "--all", "--json"] + flags)
            #expect(gone.status == 0 && gone.output.isEmpty)
            let kept = await recordctl(["query", "Artwork", "--where", "artist == 'a0-2'", "--all", "--json"] + flags)
            #expect(kept.status == 0 && kept.lines.count == 4)
            for watcher in watchers { _ = await watcher.stop(signal: SIGTERM) }
        }
    }
}

/// Waits until `condition` holds, checking every 50 ms, for at most `seconds`.
func eventually(within seconds: Double, _ condition: @Sendable () async throws -> Bool) async throws -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}
