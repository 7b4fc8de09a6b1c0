import Foundation
@testable import recordctl
import RecordClient
import TestSupport
import Testing

@Suite struct RecordCtlTests {
    @Test func settingsComeFromFlagsThenEnvironmentThenProfile() throws {
        try withTemporaryDirectorySync { directory in
            let profile = directory + "/profile.json"
            try Data(#"{"server": "http://profile:1", "token": "profile-token-123", "container": "iCloud.profile", "database": "public"}"#.utf8)
                .write(to: URL(fileURLWithPath: profile))
            let flags = try parsed(ConnectionOptions.self, ["--profile", profile, "--server", "http://flag:2"])
            let settings = try Settings.resolve(flags: flags, environment: ["RECORDCTL_SERVER": "http://env:3", "RECORDCTL_CONTAINER": "iCloud.env"])
            #expect(settings.server.value == "http://flag:2" && settings.server.source == "flag")
            #expect(settings.container.value == "iCloud.env" && settings.container.source.hasPrefix("environment"))
            #expect(settings.token.value == "profile-token-123" && settings.token.source == "profile")
            #expect(settings.database.value == "public")
            #expect(Settings.masked("profile-token-123") == "prof*************")
        }
    }

    @Test func configShowMasksTheToken() async throws {
        let run = await recordctl(["config", "show", "--server", "http://127.0.0.1:1", "--token", "secret-token", "--profile", "/nonexistent/x.json"])
        #expect(run.status == 64 || run.status == 1)
        let shown = await recordctl(["config", "show", "--server", "http://127.0.0.1:1", "--token", "secret-token"])
        #expect(shown.status == 0)
        #expect(shown.output.contains("secr********"))
        #expect(!shown.output.contains("secret-token"))
        // A token may begin with "-" (base64url tokens issued before the "rs_" prefix could).
        let dashed = await recordctl(["config", "show", "--server", "http://127.0.0.1:1", "--token", "-Xsecret-token"])
        #expect(dashed.status == 0, "\(dashed.errors)")
        #expect(dashed.output.contains("-Xse**********"))
    }

    @Test func usageErrorsExitWith64AndServerErrorsWith1() async throws {
        #expect(await recordctl(["query"]).status == 64)
        #expect(await recordctl(["query", "T", "--limit", "0"]).status == 64)
        // Connection settings are the caller's to fix, never the server's answer.
        for flags in [["--server", "127.0.0.1:8080", "--token", "x"], ["--server", "not a url", "--token", "x"], ["--server", "http://", "--token", "x"],
                      ["--server", "http://127.0.0.1:9"], ["--server", "http://127.0.0.1:9", "--token", "x", "--database", "other"],
                      ["--server", "http://127.0.0.1:9", "--token", "x", "--profile", "/nonexistent/profile.json"]] {
            let run = await recordctl(["zones", "list"] + flags)
            #expect(run.status == 64 && run.errors.hasPrefix("usage: "), "\(flags): \(run.status) \(run.errors)")
        }
        let unreachable = await recordctl(["zones", "list", "--server", "http://127.0.0.1:9", "--token", "x"])
        #expect(unreachable.status == 1)
        #expect(unreachable.errors.hasPrefix("NETWORK_FAILURE: "))
        #expect(unreachable.errors.split(separator: "\n").count == 1)
    }

    @Test func zonesAreCreatedListedAndDeleted() async throws {
        try await withServer { server in
            let flags = try await server.flags(forNewUser: "alice")
            let create = await recordctl(["zones", "create", "A", "B"] + flags)
            #expect(create.lines == ["created A", "created B"], "\(create.errors)")
            let list = await recordctl(["zones", "list"] + flags)
            #expect(list.lines == ["A", "B", "_defaultZone"], "\(list.errors)")
            let delete = await recordctl(["zones", "delete", "B"] + flags)
            #expect(delete.lines == ["deleted B"], "\(delete.errors)")
            let bad = await recordctl(["zones", "delete", "Nope"] + flags)
            #expect(bad.status == 2 && bad.errors.contains("Nope: ZONE_NOT_FOUND"))
        }
    }

    @Test func aBatchFileWithDeliberateErrorsReportsEachAndExitsWith2() async throws {
        try await withServer { server in
            let flags = try await server.flags(forNewUser: "alice")
            try await withTemporaryDirectory { directory in
                let file = directory + "/batch.ndjson"
                try Data("""
                    {"recordName": "lilies", "recordType": "Artwork", "fields": {"title": "Water Lilies", "artist": {"ref": "monet", "action": "validate"}}}
                    {"recordName": "monet", "recordType": "Artist", "fields": {"name": "Claude Monet", "born": 1840}}
                    {"recordName": "ghost-work", "recordType": "Artwork", "fields": {"artist": {"ref": "nobody", "action": "validate"}}}
                    {"recordName": "typo", "recordType": "Artist", "fields": {"born": "eighteen forty"}}
                    {"op": "delete", "recordName": "never-existed"}

                    """.utf8).write(to: URL(fileURLWithPath: file))
                let run = await recordctl(["records", "modify", "--file", file] + flags)
                #expect(run.status == 2)
                #expect(run.lines.sorted() == ["saved lilies (tag 2)", "saved monet (tag 1)"])
                let errors = run.errors.split(separator: "\n").map(String.init)
                #expect(errors.contains { $0.hasPrefix("ghost-work: VALIDATING_REFERENCE_ERROR") })
                #expect(errors.contains { $0.hasPrefix("typo: BAD_REQUEST") && $0.contains("'born'") })
                #expect(errors.contains { $0.hasPrefix("never-existed: NOT_FOUND") })
                #expect(errors.last == "3 of 5 records failed")

                let malformed = directory + "/bad.ndjson"
                try Data("{\"recordName\": \"x\"}\nnot json\n".utf8).write(to: URL(fileURLWithPath: malformed))
                let bad = await recordctl(["records", "modify", "--file", malformed] + flags)
                #expect(bad.status == 1)
                #expect(bad.errors == "BAD_REQUEST: line 1: recordType (a string) is required for a save\n")
            }
        }
    }

    @Test func atomicRefusesABatchThatNeedsSeveralRequests() async throws {
        try await withServer { server in
            let flags = try await server.flags(forNewUser: "alice")
            try await withTemporaryDirectory { directory in
                let file = directory + "/big.ndjson"
                let lines = (0..<401).map { #"{"recordName": "n\#($0)", "recordType": "Note"}"# }
                try Data(lines.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: file))
                let run = await recordctl(["records", "modify", "--atomic", "--file", file] + flags)
                #expect(run.status == 1)
                #expect(run.errors.hasPrefix("LIMIT_EXCEEDED: --atomic"))
                #expect(await recordctl(["query", "Note", "--all", "--json"] + flags).output.isEmpty)
            }
        }
    }

    @Test func getIncludesReferencesAndDeleteShowsTheCascade() async throws {
        try await withServer { server in
            let flags = try await server.flags(forNewUser: "alice")
            try await withTemporaryDirectory { directory in
                let file = directory + "/gallery.json"
                try Data("""
                    [{"recordName": "w1", "recordType": "Artwork", "fields": {"title": "One", "artist": {"ref": "monet", "action": "deleteSelf"}}},
                     {"recordName": "w2", "recordType": "Artwork", "fields": {"title": "Two", "artist": {"ref": "monet", "action": "deleteSelf"}}},
                     {"recordName": "monet", "recordType": "Artist", "fields": {"name": "Claude Monet"}}]
                    """.utf8).write(to: URL(fileURLWithPath: file))
                #expect(await recordctl(["records", "modify", "--file", file] + flags).status == 0)
                let get = await recordctl(["records", "get", "w1", "--include", "artist", "--json"] + flags)
                #expect(get.lines.map { $0.contains(#""recordType":"Artist""#) } == [true, false])
                let missing = await recordctl(["records", "get", "w1", "nope"] + flags)
                #expect(missing.status == 2 && missing.errors.hasPrefix("nope: NOT_FOUND"))
                // The changes with the records their references reach (not already among them),
                // those first and marked.
                let token = try #require(await recordctl(["changes", "--json"] + flags).lines.last?.split(separator: " ").last.map(String.init))
                let third = directory + "/third.json"
                try Data(#"[{"recordName": "w3", "recordType": "Artwork", "fields": {"title": "Three", "artist": {"ref": "monet", "action": "deleteSelf"}}}]"#.utf8)
                    .write(to: URL(fileURLWithPath: third))
                #expect(await recordctl(["records", "modify", "--file", third] + flags).status == 0)
                let changes = await recordctl(["changes", "--since", token, "--include", "artist", "--json"] + flags)
                #expect(changes.status == 0, "\(changes.errors)")
                #expect(changes.lines.count == 3 && changes.lines[1].contains(#""recordName":"w3""#), "\(changes.output)")
                #expect(changes.lines.first?.hasPrefix(#"{"included":true,"#) == true && changes.lines.first?.contains(#""recordName":"monet""#) == true, "\(changes.output)")
                #expect(changes.lines.dropFirst().filter { $0.contains(#""included""#) }.isEmpty, "\(changes.output)")
                #expect(await recordctl(["changes", "--include", "artist", "--depth", "0"] + flags).status == 64)
                let delete = await recordctl(["records", "delete", "monet"] + flags)
                #expect(delete.lines == ["deleted monet (cascade: w1, w2, w3)"])
            }
        }
    }

    @Test func queryFiltersSortsAndLimits() async throws {
        try await withServer { server in
            let flags = try await server.flags(forNewUser: "alice")
            try await withTemporaryDirectory { directory in
                let file = directory + "/works.ndjson"
                let lines = (0..<12).map { #"{"recordName": "w\#($0)", "recordType": "Artwork", "fields": {"year": \#(1900 + $0), "title": "T\#($0)"}}"# }
                try Data(lines.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: file))
                #expect(await recordctl(["records", "modify", "--file", file] + flags).status == 0)
                let run = await recordctl(["query", "Artwork", "--where", "year >= 1905 AND title BEGINSWITH 'T'", "--sort", "year:desc", "--limit", "3", "--json"] + flags)
                #expect(run.status == 0)
                #expect(run.lines.map { $0.contains(#""recordName":"w11""#) } == [true, false, false])
                #expect(run.lines.count == 3)
                let all = await recordctl(["query", "Artwork", "--where", "year IN {1900, 1901}", "--all", "--json"] + flags)
                #expect(all.lines.count == 2)
                let artists = directory + "/artists.ndjson"
                try Data(#"""
                    {"recordName": "ann", "recordType": "Artist", "fields": {"name": "Ann"}}
                    {"recordName": "w3", "recordType": "Artwork", "fields": {"year": 1903, "title": "T3", "artist": {"ref": "ann"}}}
                    {"recordName": "w4", "recordType": "Artwork", "fields": {"year": 1904, "title": "T4", "artist": {"ref": "ann", "action": "nullify"}, "place": {"type": "NESTED", "value": {"city": "Paris"}}}}
                    """#.utf8).write(to: URL(fileURLWithPath: artists))
                #expect(await recordctl(["records", "modify", "--file", artists] + flags).status == 0)
                let backlinks = await recordctl(["records", "get", "ann", "--backlinks", "--json"] + flags)
                #expect(backlinks.status == 0, "\(backlinks.errors)")
                #expect(backlinks.lines.suffix(2) == [#"{"action":"NONE","backlinkOf":"ann","fieldName":"artist","recordName":"w3","recordType":"Artwork"}"#,
                                                      #"{"action":"NULLIFY","backlinkOf":"ann","fieldName":"artist","recordName":"w4","recordType":"Artwork"}"#], "\(backlinks.output)")
                let withArtist = await recordctl(["query", "Artwork", "--where", "artist.name == 'Ann'", "--include", "artist", "--json"] + flags)
                #expect(withArtist.status == 0 && withArtist.lines.count == 3 && withArtist.lines[0].contains(#""recordName":"ann""#), "\(withArtist.output)\(withArtist.errors)")
                let inside = await recordctl(["query", "Artwork", "--where", "place.city BEGINSWITH[c] 'par'", "--json"] + flags)
                #expect(inside.status == 0 && inside.lines.count == 1 && inside.lines[0].contains(#""recordName":"w4""#), "\(inside.output)\(inside.errors)")
                let byPath = await recordctl(["query", "Artwork", "--where", "artist.name == 'Ann'", "--json"] + flags)
                #expect(byPath.status == 0 && byPath.lines.count == 2 && byPath.lines[0].contains(#""recordName":"w3""#), "\(byPath.output)\(byPath.errors)")
                let either = await recordctl(["query", "Artwork", "--where", "year == 1900 OR (title ENDSWITH[c] '1' AND NOT year < 1911)", "--all", "--json"] + flags)
                #expect(either.status == 0)
                #expect(either.lines.map { $0.contains(#""recordName":"w0""#) || $0.contains(#""recordName":"w11""#) } == [true, true])
                // Words and places.
                let placed = directory + "/placed.ndjson"
                try Data(#"""
                    {"recordName": "lilies", "recordType": "Artwork", "fields": {"title": "Water Lilies", "spot": {"type": "LOCATION", "value": {"latitude": 49.0756, "longitude": 1.5337}}}}
                    {"recordName": "louvre", "recordType": "Artwork", "fields": {"title": "Mona Lisa", "spot": {"type": "LOCATION", "value": {"latitude": 48.8606, "longitude": 2.3376}}}}
                    """#.utf8).write(to: URL(fileURLWithPath: placed))
                #expect(await recordctl(["records", "modify", "--file", placed] + flags).status == 0)
                let worded = await recordctl(["query", "Artwork", "--where", "self CONTAINS 'LILIES water'", "--json"] + flags)
                #expect(worded.status == 0 && worded.lines.count == 1 && worded.lines[0].contains(#""recordName":"lilies""#), "\(worded.output)\(worded.errors)")
                let close = await recordctl(["query", "Artwork", "--where", "distanceToLocation:fromLocation:(spot, {48.86, 2.34}) < 1", "--json"] + flags)
                #expect(close.status == 0 && close.lines.count == 1 && close.lines[0].contains(#""recordName":"louvre""#), "\(close.output)\(close.errors)")
                let sorted = await recordctl(["query", "Artwork", "--where", "distanceToLocation:fromLocation:(spot, {49, 2}) < 100", "--sort", "spot@49.07,1.53", "--json"] + flags)
                #expect(sorted.status == 0 && sorted.lines.map { $0.contains(#""recordName":"lilies""#) } == [true, false], "\(sorted.output)\(sorted.errors)")
                let farthest = await recordctl(["query", "Artwork", "--where", "distanceToLocation:fromLocation:(spot, {49, 2}) < 100", "--sort", "spot@49.07,1.53:desc", "--json"] + flags)
                #expect(farthest.status == 0 && farthest.lines.map { $0.contains(#""recordName":"louvre""#) } == [true, false], "\(farthest.output)\(farthest.errors)")
                let badSort = await recordctl(["query", "Artwork", "--sort", "spot@north"] + flags)
                #expect(badSort.status == 64 && badSort.errors.contains("LATITUDE,LONGITUDE"), "\(badSort.errors)")
                let noWords = await recordctl(["query", "Artwork", "--where", "SELF CONTAINS '...'"] + flags)
                #expect(noWords.status == 1 && noWords.errors.contains("holds no word"), "\(noWords.errors)")
                let bad = await recordctl(["query", "Artwork", "--where", "title MATCHES '(a'"] + flags)
                #expect(bad.status == 1 && bad.errors.hasPrefix("BAD_REQUEST: ''(a'' at column 15: MATCHES pattern at character 3"), "\(bad.errors)")
                // Deleting Ann clears w4's NULLIFY reference, and w4 keeps its other fields.
                #expect(await recordctl(["records", "delete", "ann"] + flags).status == 0)
                let cleared = await recordctl(["records", "get", "w4", "--json"] + flags)
                #expect(cleared.status == 0 && cleared.lines.count == 1 && !cleared.lines[0].contains(#""artist""#) && cleared.lines[0].contains(#""place""#),
                        "\(cleared.output)\(cleared.errors)")
            }
        }
    }

    @Test func changesPrintTheNewTokenAndOnlyWhatCameAfterIt() async throws {
        try await withServer { server in
            let flags = try await server.flags(forNewUser: "alice")
            try await withTemporaryDirectory { directory in
                let file = directory + "/a.ndjson"
                try Data(#"{"recordName": "a", "recordType": "Note"}"#.utf8).write(to: URL(fileURLWithPath: file))
                _ = await recordctl(["records", "modify", "--file", file] + flags)
                let first = await recordctl(["changes", "--json"] + flags)
                #expect(first.lines.count == 2 && first.lines[1].hasPrefix("token "))
                let token = String(first.lines[1].dropFirst(6))
                _ = await recordctl(["records", "delete", "a"] + flags)
                let next = await recordctl(["changes", "--json", "--since", token] + flags)
                #expect(next.lines.count == 2)
                #expect(next.lines[0].contains(#""deleted":true"#) && next.lines[0].contains(#""recordName":"a""#))
            }
        }
    }

    @Test func tenThousandRecordsImportedSourcesFirstRoundTripThroughExport() async throws {
        try await withServer { server in
            let flags = try await server.flags(forNewUser: "alice")
            try await withTemporaryDirectory { directory in
                // 9,500 artworks listed before the 500 artists they reference, in export's format;
                // the first 100 have their artist as their parent too.
                var lines: [String] = []
                for i in 0..<9_500 {
                    let parent = i < 100 ? #","parent":{"recordName":"artist\#(499 - i)"}"# : ""
                    lines.append(#"{"fields":{"artist":{"type":"REFERENCE","value":{"action":"DELETE_SELF","recordName":"artist\#(i % 500)"}},"title":{"type":"STRING","value":"work \#(i)"},"year":{"type":"INT64","value":\#(1800 + i % 200)}}\#(parent),"recordName":"work\#(i)","recordType":"Artwork"}"#)
                }
                for i in 0..<500 {
                    lines.append(#"{"fields":{"name":{"type":"STRING","value":"artist \#(i)"},"tags":{"type":"STRING_LIST","value":["a","b"]}},"recordName":"artist\#(i)","recordType":"Artist"}"#)
                }
                let file = directory + "/gallery.ndjson"
                try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: file))
                _ = await recordctl(["zones", "create", "Gallery"] + flags)
                let imported = await recordctl(["import", file, "--zone", "Gallery"] + flags)
                #expect(imported.status == 0, "\(imported.errors)")
                #expect(imported.lines.last == "imported 10000 of 10000 records")
                let exported = await recordctl(["export", "--zone", "Gallery"] + flags)
                #expect(exported.status == 0)
                #expect(exported.lines.sorted() == lines.sorted())
                // References are intact: deleting an artist cascades to its 19 artworks.
                let delete = await recordctl(["records", "delete", "artist7", "--zone", "Gallery"] + flags)
                #expect(delete.output.contains("(cascade: work1007, "))
                #expect(delete.output.split(separator: ",").count == 19)
            }
        }
    }
}

/// A synchronous variant of `withTemporaryDirectory`.
func withTemporaryDirectorySync(_ body: (String) throws -> Void) throws {
    let directory = (NSTemporaryDirectory() as NSString).appendingPathComponent("recordctl-test-\(UUID().uuidString)")
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try body(directory)
}

/// Assets and subscriptions from the command line.
@Suite struct AssetAndSubscriptionCommandTests {
    @Test func recordsModifyUploadsAssetsAndGetDownloadsThem() async throws {
        try await withServer { server in
            let flags = try await server.flags(forNewUser: "alice")
            let bytes = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 5) })
            let file = server.directory + "/scan.bin"
            try bytes.write(to: URL(fileURLWithPath: file))
            let batch = server.directory + "/batch.json"
            try Data(#"[{"op": "save", "recordName": "s1", "recordType": "Scan", "fields": {"file": {"asset": "\#(file)"}, "pages": [{"asset": "\#(file)"}]}}]"#.utf8)
                .write(to: URL(fileURLWithPath: batch))
            let saved = await recordctl(["records", "modify", "--file", batch] + flags)
            #expect(saved.status == 0, "\(saved.errors)")
            let downloads = server.directory + "/downloads"
            let got = await recordctl(["records", "get", "s1", "--download", downloads] + flags)
            #expect(got.status == 0, "\(got.errors)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: downloads + "/s1.file")) == bytes)
            #expect(try Data(contentsOf: URL(fileURLWithPath: downloads + "/s1.pages.0")) == bytes)
        }
    }

    @Test func subscriptionsAreCreatedListedWatchedAndDeleted() async throws {
        try await withServer { server in
            let flags = try await server.flags(forNewUser: "alice")
            let created = await recordctl(["subscriptions", "create", "new-art", "--record-type", "Artwork", "--where", "year > 1900", "--fires-on", "create"] + flags)
            #expect(created.status == 0 && created.output == "new-art\n", "\(created.errors)")
            let listed = await recordctl(["subscriptions", "list"] + flags)
            #expect(listed.output == "new-art\tquery\tArtwork create\n", "\(listed.output)")
            async let watched = recordctl(["subscriptions", "watch", "--count", "1"] + flags)
            try await Task.sleep(for: .milliseconds(500))
            let batch = server.directory + "/art.json"
            try Data(#"[{"op": "save", "recordName": "old", "recordType": "Artwork", "fields": {"year": 1800}}, {"op": "save", "recordName": "new", "recordType": "Artwork", "fields": {"year": 1950}}]"#.utf8)
                .write(to: URL(fileURLWithPath: batch))
            #expect(await recordctl(["records", "modify", "--file", batch] + flags).status == 0)
            let watch = await watched
            #expect(watch.status == 0, "\(watch.errors)")
            let payload = try JSONValue.parse(Data(watch.output.utf8))
            guard case .object(let ck)? = payload["ck"], case .object(let qry)? = ck["qry"] else { Issue.record("\(watch.output)"); return }
            #expect(qry["rid"] == .string("new") && qry["fo"] == .int(1))
            #expect(await recordctl(["subscriptions", "delete", "new-art"] + flags).status == 0)
            #expect(await recordctl(["subscriptions", "list"] + flags).output.isEmpty)
            #expect(await recordctl(["subscriptions", "delete", "new-art"] + flags).status == 1)
        }
    }
}
