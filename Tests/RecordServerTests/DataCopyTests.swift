import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RecordModel
import TestSupport
import Testing

/// `recordserver data copy`: a SQLite data directory moved into PostgreSQL answers as before.
@Suite(.serialized, .enabled(if: TestPostgres.url != nil, "needs RECORDSYNC_TEST_POSTGRES"))
struct DataCopyTests {
    /// POSTs `body` to `path` under `server` as the holder of `token`.
    static func post(_ server: URL, _ path: String, _ body: String, token: String, environment: String = "development") async throws -> (status: Int, text: String) {
        var request = URLRequest(url: server.appendingPathComponent("database/1/iCloud.test.Move/\(environment)/\(path)"))
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    /// POSTs to the container's `/auth/1/…` path.
    /// A request to the operators' API, `/admin/1/PATH`.
    static func admin(_ server: URL, _ method: String, _ path: String, _ body: String?, secret: String) async throws -> (status: Int, text: String) {
        var request = URLRequest(url: server.appendingPathComponent("admin/1/\(path)"))
        request.httpMethod = method
        request.setValue("Bearer \(secret)", forHTTPHeaderField: "Authorization")
        request.httpBody = body.map { Data($0.utf8) }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    static func auth(_ server: URL, _ path: String, _ body: String) async throws -> (status: Int, text: String) {
        var request = URLRequest(url: server.appendingPathComponent("auth/1/iCloud.test.Move/development/\(path)"))
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    static func json(_ text: String) -> JSONValue { (try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))) ?? .null }

    /// An answer without the `uuid` that names each error (new on every request).
    static func comparable(_ value: JSONValue) -> JSONValue {
        switch value {
        // A download link names the server and is signed afresh by each answer.
        case .object(let members): .object(members.filter { $0.key != "uuid" }.mapValues(comparable).mapValues { $0.stringValue?.contains("/assets/1/download/") == true ? .string("link") : $0 })
        case .array(let elements): .array(elements.map(comparable))
        default: value
        }
    }

    static func record(_ name: String, _ type: String, _ fields: String) -> String {
        "{\"operationType\": \"forceReplace\", \"record\": {\"recordName\": \"\(name)\", \"recordType\": \"\(type)\", \"fields\": {\(fields)}}}"
    }

    @Test func aMovedDirectoryAnswersAsBeforeWithTokensAndTagsIssuedBeforeTheMove() async throws {
        try await withTemporaryDirectory { directory in
            let data = "\(directory)/data"
            let alice = try await ChildProcess.run("recordserver", ["user", "add", "alice", "--data", data, "--email", "Alice@Example.com", "--given-name", "Alice"])
                .output.trimmingCharacters(in: .whitespacesAndNewlines)
            let bob = try await ChildProcess.run("recordserver", ["user", "add", "bob", "--data", data, "--token-name", "phone", "--expires-in", "30d"])
                .output.trimmingCharacters(in: .whitespacesAndNewlines)
            let operatorSecret = try await ChildProcess.run("recordserver", ["operator", "add", "ops", "--scope", "users", "--data", data])
                .output.trimmingCharacters(in: .whitespacesAndNewlines)
            let deployer = try await ChildProcess.run("recordserver", ["operator", "add", "deployer", "--scope", "schema", "--data", data])
                .output.trimmingCharacters(in: .whitespacesAndNewlines)
            let mail = "\(directory)/mail"
            let sqlite = try await ServerProcess(data: data, arguments: ["--sign-up", "open", "--mail-directory", mail, "--password-hash-rounds", "1024"])
            let old = URL(string: "http://127.0.0.1:\(sqlite.port)")!

            // An operator's request, in the audit log.
            var operatorBefore = URLRequest(url: old.appendingPathComponent("admin/1/users"))
            operatorBefore.setValue("Bearer \(operatorSecret)", forHTTPHeaderField: "Authorization")
            #expect((try await URLSession.shared.data(for: operatorBefore).1 as? HTTPURLResponse)?.statusCode == 200)
            // An account, signed up with the code of the mail the server wrote.
            #expect(try await Self.auth(old, "signup", #"{"email": "carol@example.com", "password": "carol's password"}"#).status == 200)
            let message = try String(contentsOfFile: "\(mail)/\(try #require(try FileManager.default.contentsOfDirectory(atPath: mail).first))", encoding: .utf8)
            let code = try #require(AccountTests.code(in: message))
            let carol = Self.json(try await Self.auth(old, "signup/verify", #"{"email": "carol@example.com", "code": "\#(code)"}"#).text)["userRecordName"]?.stringValue
            #expect(carol != nil)

            // A schema imported and deployed: production's is locked, and its history moves.
            let schemaFile = "DEFINE SCHEMA\n    CREATE ROLE staff;\n    RECORD TYPE Notice (\n        text STRING QUERYABLE\n    );\n    RECORD TYPE Memo (\n        text STRING QUERYABLE,\n        GRANT CREATE, WRITE TO staff\n    );\n"
            #expect(try await Self.admin(old, "POST", "iCloud.test.Move/development/schema/import", schemaFile, secret: deployer).status == 200)
            #expect(try await Self.admin(old, "POST", "iCloud.test.Move/production/schema/deploy", nil, secret: deployer).status == 200)
            // A security role, given from the command line: only its holders make and read memos.
            let given = try await ChildProcess.run("recordserver", ["role", "give", "iCloud.test.Move", "development", "staff", "bob", "--data", data], mergeErrors: true)
            #expect(given.status == 0, "\(given.output)")
            #expect(try await ChildProcess.run("recordserver", ["role", "list", "iCloud.test.Move", "development", "--data", data]).output == "staff\tbob\n")
            #expect(try await Self.post(old, "public/records/modify", "{\"operations\": [\(Self.record("memo", "Memo", "\"text\": {\"value\": \"staff only\"}"))]}", token: bob).text.contains("\"recordName\":\"memo\""))
            // References, a cascade's tombstones, two users, two zones, the public database.
            #expect(try await Self.post(old, "private/zones/modify", #"{"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": "Gallery"}}}]}"#, token: alice).status == 200)
            var saves: [String] = []
            for i in 0..<30 {
                saves.append(Self.record("artist\(i)", "Artist", "\"name\": {\"value\": \"Artist \(29 - i)\"}, \"born\": {\"value\": \(1800 + i)}, \"home\": {\"type\": \"LOCATION\", \"value\": {\"latitude\": \(48 + Double(i) / 100), \"longitude\": 2.35}}"))
                for j in 0..<3 {
                    saves.append(Self.record("work\(i)-\(j)", "Artwork", "\"title\": {\"value\": \"Work \(j)\"}, \"artist\": {\"value\": {\"recordName\": \"artist\(i)\", \"action\": \"DELETE_SELF\"}}"))
                }
            }
            let gallery = #""zoneID": {"zoneName": "Gallery"}"#
            #expect(try await Self.post(old, "private/records/modify", "{\(gallery), \"operations\": [\(saves.joined(separator: ","))]}", token: alice).status == 200)
            let midway = Self.json(try await Self.post(old, "private/records/changes", "{\(gallery)}", token: alice).text)["syncToken"]?.stringValue ?? ""
            let midwayDatabase = Self.json(try await Self.post(old, "private/changes/database", "{}", token: alice).text)["syncToken"]?.stringValue ?? ""
            #expect(try await Self.post(old, "private/records/modify", "{\(gallery), \"operations\": [{\"operationType\": \"forceDelete\", \"record\": {\"recordName\": \"artist3\"}}, \(Self.record("artist4", "Artist", "\"name\": {\"value\": \"Renamed\"}"))]}", token: alice).status == 200)
            #expect(try await Self.post(old, "public/records/modify", "{\"operations\": [\(Self.record("notice", "Notice", "\"text\": {\"value\": \"hello\"}"))]}", token: bob).status == 200)
            // An asset, whose bytes move from files into PostgreSQL.
            let assetBytes = AssetTests.bytes(700_000)
            let uploadURL = Self.json(try await Self.post(old, "private/assets/upload", "{\(gallery), \"tokens\": [{\"recordType\": \"Artist\", \"fieldName\": \"portrait\"}]}", token: alice).text)["tokens"]?[0]?["url"]?.stringValue ?? ""
            let uploaded = try await AssetTests.post(assetBytes, to: uploadURL)
            #expect(uploaded.status == 200, "\(uploaded.json)")
            let portrait = try (uploaded.json["singleFile"] ?? .null).serializedString()
            #expect(try await Self.post(old, "private/records/modify", "{\(gallery), \"operations\": [\(Self.record("artist6", "Artist", "\"portrait\": {\"value\": \(portrait)}"))]}", token: alice).status == 200)
            // A subscription, which moves too.
            #expect(try await Self.post(old, "private/subscriptions/modify", #"{"operations": [{"operationType": "create", "subscription": {"subscriptionID": "artists", "subscriptionType": "query", "query": {"recordType": "Artist"}}}]}"#, token: alice).status == 200)
            // Gallery shared with Bob, who accepted: the share, its participant and his shared database move.
            let aliceName = Self.json(try await Self.post(old, "public/users/caller", "{}", token: alice).text)["userRecordName"]?.stringValue ?? ""
            let bobName = Self.json(try await Self.post(old, "public/users/caller", "{}", token: bob).text)["userRecordName"]?.stringValue ?? ""
            let shared = Self.json(try await Self.post(old, "private/records/modify", """
                {\(gallery), "operations": [{"operationType": "create", "record": {"recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "fields": {},
                 "participants": [{"userIdentity": {"lookupInfo": {"userRecordName": "\(bobName)"}}, "permission": "READ_ONLY"}]}}]}
                """, token: alice).text)
            let guid = shared["records"]?[0]?["shortGUID"]?.stringValue ?? ""
            #expect(!guid.isEmpty, "\(shared)")
            #expect(Self.json(try await Self.post(old, "public/records/accept", #"{"shortGUIDs": [{"value": "\#(guid)"}]}"#, token: bob).text)["results"]?[0]?["participantStatus"]?.stringValue == "ACCEPTED")
            let sharedGallery = #""zoneID": {"zoneName": "Gallery", "ownerRecordName": "\#(aliceName)"}"#
            let before = Self.json(try await Self.post(old, "private/records/lookup", "{\(gallery), \"records\": [{\"recordName\": \"artist5\"}]}", token: alice).text)
            let oldTag = before["records"]?[0]?["recordChangeTag"]?.stringValue ?? ""

            let firstQueryPage = Self.json(try await Self.post(old, "private/records/query", """
                {\(gallery), "resultsLimit": 7, "query": {"recordType": "Artist", "filterBy": [{"fieldName": "born", "comparator": "GREATER_THAN", "fieldValue": {"value": 1805}}], "sortBy": [{"fieldName": "name"}]}}
                """, token: alice).text)
            let marker = firstQueryPage["continuationMarker"]?.stringValue ?? ""
            #expect(!marker.isEmpty)

            // Each probe is asked of the SQLite server, then of PostgreSQL after the move.
            let probes: [(path: String, body: String, token: String)] = [
                ("private/records/changes", "{\(gallery)}", alice),
                ("private/records/changes", "{\(gallery), \"resultsLimit\": 5}", alice),
                ("private/records/changes", "{\(gallery), \"syncToken\": \"\(midway)\"}", alice),
                ("private/records/changes", "{}", alice),
                ("private/changes/database", "{}", alice),
                ("private/changes/database", "{\"syncToken\": \"\(midwayDatabase)\"}", alice),
                ("private/zones/list", "{}", alice),
                ("private/records/lookup", "{\(gallery), \"records\": [{\"recordName\": \"artist5\"}, {\"recordName\": \"work3-1\"}, {\"recordName\": \"artist3\"}]}", alice),
                ("private/records/query", "{\(gallery), \"resultsLimit\": 7, \"query\": {\"recordType\": \"Artist\", \"filterBy\": [{\"fieldName\": \"born\", \"comparator\": \"GREATER_THAN\", \"fieldValue\": {\"value\": 1805}}], \"sortBy\": [{\"fieldName\": \"name\"}]}}", alice),
                ("private/records/query", "{\(gallery), \"resultsLimit\": 7, \"continuationMarker\": \"\(marker)\", \"query\": {\"recordType\": \"Artist\", \"filterBy\": [{\"fieldName\": \"born\", \"comparator\": \"GREATER_THAN\", \"fieldValue\": {\"value\": 1805}}], \"sortBy\": [{\"fieldName\": \"name\"}]}}", alice),
                ("private/records/query", "{\(gallery), \"query\": {\"recordType\": \"Artwork\", \"filterBy\": [{\"fieldName\": \"artist\", \"comparator\": \"EQUALS\", \"fieldValue\": {\"value\": {\"recordName\": \"artist7\"}}}]}}", alice),
                ("public/records/query", "{\"query\": {\"recordType\": \"Notice\"}}", alice),
                // The search index moves too: words, and places sorted by distance.
                ("private/records/query", "{\(gallery), \"query\": {\"recordType\": \"Artwork\", \"filterBy\": [{\"comparator\": \"CONTAINS_ALL_TOKENS\", \"fieldValue\": {\"value\": \"WORK 2\"}}]}}", alice),
                ("private/records/query", "{\(gallery), \"query\": {\"recordType\": \"Artist\", \"filterBy\": [{\"comparator\": \"NEAR\", \"fieldName\": \"home\", \"fieldValue\": {\"value\": {\"latitude\": 48.1, \"longitude\": 2.35}}, \"distance\": 5000}], \"sortBy\": [{\"fieldName\": \"home\", \"relativeLocation\": {\"latitude\": 48.1, \"longitude\": 2.35}}]}}", alice),
                ("public/records/changes", "{}", bob),
                ("private/records/changes", "{}", bob),
                // Alice's email, names and discoverability move too.
                ("public/users/lookup/email", #"{"users": [{"emailAddress": "alice@example.com"}]}"#, bob),
                ("public/users/caller", "{}", alice),
                ("private/subscriptions/list", "{}", alice),
                ("shared/zones/list", "{}", bob),
                ("shared/changes/database", "{}", bob),
                ("shared/records/lookup", "{\(sharedGallery), \"records\": [{\"recordName\": \"artist5\"}, {\"recordName\": \"cloudkit.zoneshare\"}]}", bob),
                ("public/records/resolve", #"{"shortGUIDs": [{"value": "\#(guid)"}]}"#, bob),
                ("public/records/query", "{\"query\": {\"recordType\": \"Memo\"}}", bob),
                ("public/records/query", "{\"query\": {\"recordType\": \"Memo\"}}", alice),
            ]
            var answers: [String] = []
            for probe in probes {
                let answer = try await Self.post(old, probe.path, probe.body, token: probe.token)
                #expect(answer.status == 200, "\(probe.path): \(answer.text)")
                #expect(!answer.text.contains(#""users":[]"#), "\(probe.path): \(answer.text)")
                answers.append(answer.text)
            }
            // Bob's role lets him read the memo, and Alice sees none (so that the same answers after the move mean the role moved).
            #expect(answers[answers.count - 2].contains("staff only") && !answers[answers.count - 1].contains("staff only"), "\(answers.suffix(2))")
            // The searches find records before the move (so that the same answer after it means something).
            #expect(Self.json(answers[12])["records"]?.arrayValue?.count == 29, "\(answers[12])")
            let nearby = Self.json(answers[13])["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } ?? []
            #expect(nearby.first == "artist10" && Set(nearby) == Set((7...14).map { "artist\($0)" }), "\(answers[13])")
            _ = await sqlite.stop(signal: SIGTERM)

            let target = try await TestPostgres.databaseURL(for: directory)
            let copy = try await ChildProcess.run("recordserver", ["data", "copy", "--from", data, "--to", target], mergeErrors: true)
            #expect(copy.status == 0, "\(copy.output)")
            #expect(copy.output.contains("records: 119 of 119"), "\(copy.output)")

            // Token names and expiries come along.
            let tokens = try await ChildProcess.run("recordserver", ["user", "tokens", "bob", "--data", data]).output
            #expect(tokens.hasPrefix("phone\t") && tokens.contains("\texpires "), "\(tokens)")
            #expect(try await ChildProcess.run("recordserver", ["user", "tokens", "bob", "--database", target]).output == tokens)

            let deployment = try await Deployment(databaseURL: target, nodes: 1)
            defer { deployment.kill() }
            let moved = deployment.nodes[0].url
            for (probe, answer) in zip(probes, answers) {
                let now = try await Self.post(moved, probe.path, probe.body, token: probe.token)
                #expect(now.status == 200)
                #expect(Self.comparable(Self.json(now.text)) == Self.comparable(Self.json(answer)), "\(probe.path) \(probe.body)")
            }
            // The operator's secret works on the copy, and its audit entry came along.
            var operatorRequest = URLRequest(url: moved.appendingPathComponent("admin/1/users"))
            operatorRequest.setValue("Bearer \(operatorSecret)", forHTTPHeaderField: "Authorization")
            let (_, operatorAnswer) = try await URLSession.shared.data(for: operatorRequest)
            #expect((operatorAnswer as? HTTPURLResponse)?.statusCode == 200)
            let audit = try await ChildProcess.run("recordserver", ["operator", "audit", "--database", target]).output
            #expect(audit.split(separator: "\n").count == 4 && audit.contains("\tops\tGET /admin/1/users\t")
                    && audit.contains("\tdeployer\tPOST /admin/1/iCloud.test.Move/production/schema/deploy\t"), "\(audit)")
            let history = Self.json(try await Self.admin(moved, "GET", "iCloud.test.Move/production/schema/history", nil, secret: deployer).text)
            #expect(history["history"]?[0]?["action"]?.stringValue == "deploy" && history["history"]?[0]?["operatorName"]?.stringValue == "deployer", "\(history)")
            let newType = Self.json(try await Self.post(moved, "public/records/modify", "{\"operations\": [\(Self.record("poster", "Poster", "\"text\": {\"value\": \"no\"}"))]}", token: bob, environment: "production").text)
            #expect(newType["records"]?[0]?["reason"]?.stringValue == "Cannot create new type Poster in production schema", "\(newType)")
            // The account signs in with its password.
            let signedIn = Self.json(try await Self.auth(moved, "signin/password", #"{"email": "carol@example.com", "password": "carol's password"}"#).text)
            #expect(signedIn["userRecordName"]?.stringValue == carol, "\(signedIn)")
            // The asset downloads from PostgreSQL.
            let moved6 = Self.json(try await Self.post(moved, "private/records/lookup", "{\(gallery), \"records\": [{\"recordName\": \"artist6\"}]}", token: alice).text)
            let link = moved6["records"]?[0]?["fields"]?["portrait"]?["value"]?["downloadURL"]?.stringValue ?? ""
            #expect(try await AssetTests.get(link.replacingOccurrences(of: "${f}", with: "p.jpg")).data == assetBytes, "\(moved6)")
            // A tag issued before the move saves; the same tag again is now stale.
            let update = "{\(gallery), \"operations\": [{\"operationType\": \"update\", \"record\": {\"recordName\": \"artist5\", \"recordType\": \"Artist\", \"recordChangeTag\": \"\(oldTag)\", \"fields\": {\"name\": {\"value\": \"Moved\"}}}}]}"
            let saved = Self.json(try await Self.post(moved, "private/records/modify", update, token: alice).text)
            #expect(saved["records"]?[0]?["serverErrorCode"] == nil, "\(saved)")
            let stale = Self.json(try await Self.post(moved, "private/records/modify", update, token: alice).text)
            #expect(stale["records"]?[0]?["serverErrorCode"]?.stringValue == "CONFLICT", "\(stale)")
            // The token from before the move sees exactly what changed since, the save included.
            let since = Self.json(try await Self.post(moved, "private/records/changes", "{\(gallery), \"syncToken\": \"\(midway)\"}", token: alice).text)
            #expect(Set((since["records"]?.arrayValue ?? []).compactMap { $0["recordName"]?.stringValue }) == ["artist3", "work3-0", "work3-1", "work3-2", "artist4", "artist5", "artist6", "cloudkit.zoneshare"])
        }
    }

    @Test func aCopyRefusesAServedSourceAndAFullTargetAndRunsAgainAfterAnInterruption() async throws {
        try await withTemporaryDirectory { directory in
            let data = "\(directory)/data"
            let token = try await ChildProcess.run("recordserver", ["user", "add", "alice", "--data", data]).output.trimmingCharacters(in: .whitespacesAndNewlines)
            let sqlite = try await ServerProcess(data: data)
            let server = URL(string: "http://127.0.0.1:\(sqlite.port)")!
            let records = (0..<20000).map { Self.record("r\($0)", "Note", "\"n\": {\"value\": \($0)}, \"text\": {\"value\": \"\(String(repeating: "x", count: 100))\"}") }
            for chunk in stride(from: 0, to: records.count, by: 400) {
                #expect(try await Self.post(server, "private/records/modify", "{\"operations\": [\(records[chunk..<chunk + 400].joined(separator: ","))]}", token: token).status == 200)
            }
            let target = try await TestPostgres.databaseURL(for: directory)
            let served = try await ChildProcess.run("recordserver", ["data", "copy", "--from", data, "--to", target], mergeErrors: true)
            #expect(served.status != 0)
            #expect(served.output.contains("a running recordserver holds"), "\(served.output)")
            _ = await sqlite.stop(signal: SIGTERM)

            // Killed in the middle, the copy leaves nothing behind, and simply runs again.
            let interrupted = try ChildProcess("recordserver", ["data", "copy", "--from", data, "--to", target])
            #expect(try await interrupted.waitFor("records: [0-9]+ of 20000") != nil, "\(interrupted.text)")
            _ = await interrupted.stop(signal: SIGKILL)
            #expect(!interrupted.text.contains("copied"), "the copy ended before it was killed")
            let again = try await ChildProcess.run("recordserver", ["data", "copy", "--from", data, "--to", target], mergeErrors: true)
            #expect(again.status == 0, "\(again.output)")

            let full = try await ChildProcess.run("recordserver", ["data", "copy", "--from", data, "--to", target], mergeErrors: true)
            #expect(full.status != 0)
            #expect(full.output.contains("already holds data; give --replace"), "\(full.output)")
            let replaced = try await ChildProcess.run("recordserver", ["data", "copy", "--from", data, "--to", target, "--replace"], mergeErrors: true)
            #expect(replaced.status == 0, "\(replaced.output)")
            #expect(replaced.output.contains("records: 20000 of 20000"))
        }
    }
}
