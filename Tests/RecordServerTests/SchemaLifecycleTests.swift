import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Hummingbird
import RecordModel
import RecordRules
import RecordServer
@testable import RecordSQL
import TestSupport
import Testing

/// The schema lifecycle (docs/protocol.md, "Development and production", "The schema API"):
/// production takes only what is deployed, development infers; import, diff, deploy, reset,
/// lock and history through the operators' API; declared indexes.
@Suite struct SchemaLifecycleTests {
    static let container = OperatorTests.container

    /// A schema as a team keeps it: a note with a title, a count and a body, and a role.
    static let notes = """
        DEFINE SCHEMA
            CREATE ROLE editor;
            // What the app saves.
            RECORD TYPE Note (
                "___createTime" TIMESTAMP QUERYABLE SORTABLE,
                "___recordID"   REFERENCE QUERYABLE,
                title           STRING QUERYABLE SORTABLE SEARCHABLE,
                count           DOUBLE QUERYABLE,
                body            STRING,
                GRANT WRITE TO "_creator",
                GRANT CREATE TO "_icloud",
                GRANT READ TO "_world",
                GRANT READ, WRITE TO editor
            );
        """

    @Test func productionTakesOnlyWhatIsDeployed() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let secret = try await OperatorTests.makeOperator(server, "deployer", [.schema])
            // A production made now is locked from the start: a type nobody deployed is refused.
            let note = #"{"operations": [{"operationType": "create", "record": {"recordName": "n1", "recordType": "Note", "fields": {"title": {"value": "hi"}}}}]}"#
            let refused = try await alice.post("records/modify", note, environment: "production")
            #expect(refused.json["records"]?[0]?["serverErrorCode"]?.stringValue == "BAD_REQUEST")
            #expect(refused.json["records"]?[0]?["reason"]?.stringValue == "Cannot create new type Note in production schema", "\(refused.json)")
            // The built-in types are never refused.
            let share = try await alice.post("records/modify", #"{"operations": [{"operationType": "create", "record": {"recordName": "s1", "recordType": "cloudkit.share", "fields": {}}}]}"#,
                                             environment: "production")
            #expect(share.json["records"]?[0]?["recordName"]?.stringValue == "s1", "\(share.json)")

            // Deployed, Note is taken with its fields; a value without a type takes the schema's.
            try await Self.importSchema(server, secret, Self.notes)
            try await Self.deploy(server, secret)
            let saved = try await alice.post("records/modify", #"{"operations": [{"operationType": "create", "record": {"recordName": "n1", "recordType": "Note", "fields": {"title": {"value": "hi"}, "count": {"value": 2}}}}]}"#,
                                             environment: "production")
            #expect(saved.json["records"]?[0]?["fields"]?["count"]?["type"]?.stringValue == "DOUBLE", "\(saved.json)")
            let fraction = try await alice.post("records/modify", #"{"operations": [{"operationType": "forceUpdate", "record": {"recordName": "n1", "recordType": "Note", "fields": {"count": {"value": 2.5}}}}]}"#,
                                                environment: "production")
            #expect(fraction.json["records"]?[0]?["fields"]?["count"]?["value"] == .double(2.5), "\(fraction.json)")
            // A field it lacks refuses the whole atomic batch, naming the field.
            let batch = try await alice.post("records/modify", """
                {"operations": [
                    {"operationType": "create", "record": {"recordName": "n2", "recordType": "Note", "fields": {"title": {"value": "fine"}}}},
                    {"operationType": "create", "record": {"recordName": "n3", "recordType": "Note", "fields": {"title": {"value": "x"}, "mood": {"value": "glad"}}}}
                ]}
                """, environment: "production")
            #expect(batch.json["records"]?[1]?["reason"]?.stringValue == "Cannot create or modify field 'mood' in record 'Note' in production schema", "\(batch.json)")
            let lookup = try await alice.post("records/lookup", #"{"records": [{"recordName": "n2"}, {"recordName": "n3"}]}"#, environment: "production")
            #expect(lookup.json["records"]?[0]?["serverErrorCode"]?.stringValue == "NOT_FOUND" && lookup.json["records"]?[1]?["serverErrorCode"]?.stringValue == "NOT_FOUND")
            // A value of another type is refused too.
            let typed = try await alice.post("records/modify", #"{"operations": [{"operationType": "forceUpdate", "record": {"recordName": "n1", "recordType": "Note", "fields": {"title": {"value": 3, "type": "INT64"}}}}]}"#,
                                             environment: "production")
            #expect(typed.json["records"]?[0]?["serverErrorCode"]?.stringValue == "BAD_REQUEST", "\(typed.json)")
            // Development still infers.
            let inferred = try await alice.post("records/modify", #"{"operations": [{"operationType": "create", "record": {"recordName": "d1", "recordType": "Draft", "fields": {"mood": {"value": "glad"}}}}]}"#)
            #expect(inferred.json["records"]?[0]?["recordName"]?.stringValue == "d1", "\(inferred.json)")
        }
    }

    @Test func indexesAreDeclaredInProductionAndAddedOnFirstUseInDevelopment() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let secret = try await OperatorTests.makeOperator(server, "deployer", [.schema])
            try await Self.importSchema(server, secret, Self.notes)
            _ = try await alice.save([Record(recordName: "n1", recordType: "Note", fields: ["title": .string("a b"), "count": .double(1), "body": .string("text")])])
            // Development: a filter on body and a sort by count work, and mark the indexes.
            let query = #"{"query": {"recordType": "Note", "filterBy": [{"comparator": "EQUALS", "fieldName": "body", "fieldValue": {"value": "text"}}], "sortBy": [{"fieldName": "count"}, {"systemFieldName": "modifiedTimestamp"}]}}"#
            let development = try await alice.post("records/query", query)
            #expect(development.json["records"]?[0]?["recordName"]?.stringValue == "n1", "\(development.json)")
            let marked = try await server.store.cloudKitSchema(ofContainer: Self.container, environment: "development").recordType("Note")
            #expect(marked?.field("body")?.queryable == true && marked?.field("count")?.sortable == true && marked?.field("___modTime")?.sortable == true)
            #expect(marked?.field("body")?.sortable == false)
            let diff = try await server.send(.get, "/admin/1/\(Self.container)/production/schema/diff", headers: Self.auth(secret))
            let changes = try diff.decode(SchemaPlan.self).changes.map(\.change)
            #expect(changes.contains("add index QUERYABLE to Note.body") && changes.contains("add index SORTABLE to Note.count"), "\(changes)")

            // A query of a type the schema lacks, in a container nobody used yet, marks nothing
            // and adds no type.
            let fresh = try await alice.post("records/query", #"{"query": {"recordType": "Typo", "sortBy": [{"systemFieldName": "createdTimestamp"}]}}"#)
            #expect(fresh.status == 200, "\(fresh.reason)")
            let elsewhere = try await server.send(.post, "/database/1/iCloud.test.Fresh/development/private/records/query", headers: [.authorization: "Bearer \(alice.token)"],
                                                  body: #"{"query": {"recordType": "Typo", "sortBy": [{"systemFieldName": "createdTimestamp"}]}}"#)
            #expect(elsewhere.status == 200, "\(elsewhere.reason)")
            #expect(try await server.store.cloudKitSchema(ofContainer: Self.container, environment: "development").recordType("Typo") == nil)
            // An encrypted field takes no index, so the schema still reads.
            try await Self.importSchema(server, secret, Self.notes.replacingOccurrences(of: "body            STRING,", with: "body            STRING,\n        secret          ENCRYPTED STRING,"))
            _ = try await alice.post("records/query", #"{"query": {"recordType": "Note", "filterBy": [{"comparator": "EQUALS", "fieldName": "secret", "fieldValue": {"value": "x"}}]}}"#)
            let encrypted = try await Self.export(server, secret, "development").recordType("Note")?.field("secret")
            #expect(encrypted == SchemaField(name: "secret", type: FieldType(.string), encrypted: true))
            // Production, deployed before those were marked: refused in CloudKit's words.
            try await Self.importSchema(server, secret, Self.notes)
            try await Self.deploy(server, secret)
            _ = try await alice.post("records/modify", #"{"operations": [{"operationType": "create", "record": {"recordName": "n1", "recordType": "Note", "fields": {"title": {"value": "a b"}, "body": {"value": "text"}}}}]}"#,
                                     environment: "production")
            let unqueryable = try await alice.post("records/query", #"{"query": {"recordType": "Note", "filterBy": [{"comparator": "EQUALS", "fieldName": "body", "fieldValue": {"value": "text"}}]}}"#,
                                                   environment: "production")
            #expect(unqueryable.status == 400 && unqueryable.reason == "Field 'body' is not marked queryable", "\(unqueryable.reason)")
            let unsortable = try await alice.post("records/query", #"{"query": {"recordType": "Note", "sortBy": [{"fieldName": "count"}]}}"#, environment: "production")
            #expect(unsortable.reason == "Field 'count' is not marked sortable", "\(unsortable.reason)")
            let unsearchable = try await alice.post("records/query", #"{"query": {"recordType": "Note", "filterBy": [{"comparator": "CONTAINS_ALL_TOKENS", "fieldName": "body", "fieldValue": {"value": "text"}}]}}"#,
                                                    environment: "production")
            #expect(unsearchable.reason == "Field 'body' is not marked searchable", "\(unsearchable.reason)")
            let subscription = try await alice.post("subscriptions/modify", #"{"operations": [{"operationType": "create", "subscription": {"subscriptionID": "s", "subscriptionType": "query", "query": {"recordType": "Note", "filterBy": [{"comparator": "EQUALS", "fieldName": "body", "fieldValue": {"value": "x"}}]}}}]}"#,
                                                    environment: "production")
            #expect(subscription.json["subscriptions"]?[0]?["reason"]?.stringValue == "Field 'body' is not marked queryable", "\(subscription.json)")
            let byModTime = try await alice.post("records/query", #"{"query": {"recordType": "Note", "sortBy": [{"fieldName": "___modTime"}]}}"#, environment: "production")
            #expect(byModTime.reason == "Field '___modTime' is not marked sortable", "\(byModTime.reason)")
            // What is declared works: a filter, a sort and a word search.
            let declared = try await alice.post("records/query", #"{"query": {"recordType": "Note", "filterBy": [{"comparator": "CONTAINS_ALL_TOKENS", "fieldName": "title", "fieldValue": {"value": "b"}}, {"comparator": "EQUALS", "fieldName": "___recordID", "fieldValue": {"value": {"recordName": "n1"}}}], "sortBy": [{"fieldName": "title"}, {"fieldName": "___createTime"}]}}"#,
                                                environment: "production")
            #expect(declared.json["records"]?[0]?["recordName"]?.stringValue == "n1", "\(declared.json)")
            // Production's schema is not changed by a refused query.
            #expect(try await server.store.cloudKitSchema(ofContainer: Self.container, environment: "production").recordType("Note")?.field("body")?.queryable == false)
        }
    }

    @Test func markedFieldsGetIndexesThatQueriesUseAndUnmarkedOnesLoseThem() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let secret = try await OperatorTests.makeOperator(server, "deployer", [.schema])
            try await Self.importSchema(server, secret, Self.notes)
            // title (STRING) and count (DOUBLE) are marked; body is not.
            let first = try await server.store.settleFieldIndexes()
            #expect(first.built.count == 2 && first.dropped.isEmpty, "\(first)")
            #expect(try await server.store.settleFieldIndexes() == ([], []))
            _ = try await alice.save((1...30).map { Record(recordName: "n\($0)", recordType: "Note", fields: ["title": .string("note \($0)"), "count": .double(Double($0 % 3)), "body": .string("b")]) })
            let found = try await alice.post("records/query", #"{"query": {"recordType": "Note", "filterBy": [{"comparator": "EQUALS", "fieldName": "title", "fieldValue": {"value": "note 7"}}]}}"#)
            #expect(found.json["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } == ["n7"], "\(found.json)")
            let counted = try await alice.post("records/query", #"{"query": {"recordType": "Note", "filterBy": [{"comparator": "EQUALS", "fieldName": "count", "fieldValue": {"value": 2}}], "sortBy": [{"fieldName": "title"}]}}"#)
            #expect(counted.json["records"]?.arrayValue?.count == 10, "\(counted.json)")
            // The planner takes the index for the very expression the query compiler writes.
            let dialect: SQLDialect = server.backend.description == "SQLite" ? .sqlite : .postgres
            let plan = try await Backend.plan(of: "SELECT r.name FROM records r WHERE r.zone_id = 1 AND r.type = 'Note' AND \(dialect.fieldValue("title", .string)) = 'note 7'",
                                              on: server.store.engine)
            #expect(plan.contains(dialect.fieldIndex("title", .string).name), "\(plan)")
            // The newest first of a type reads its index, not the zone sorted.
            let newest = try await Backend.plan(of: "SELECT r.name FROM records r WHERE r.zone_id = 1 AND r.type = 'Note' ORDER BY r.modified_at DESC LIMIT 50", on: server.store.engine)
            #expect(newest.contains("records_by_modified"), "\(newest)")
            // A schema without the marks: the indexes go.
            try await Self.importSchema(server, secret, Self.notes.replacingOccurrences(of: "STRING QUERYABLE SORTABLE SEARCHABLE", with: "STRING SEARCHABLE")
                .replacingOccurrences(of: "DOUBLE QUERYABLE", with: "DOUBLE"))
            let second = try await server.store.settleFieldIndexes()
            #expect(second.built.isEmpty && second.dropped.count == 2, "\(second)")
            let after = try await Backend.plan(of: "SELECT r.name FROM records r WHERE r.zone_id = 1 AND r.type = 'Note' AND \(dialect.fieldValue("title", .string)) = 'note 8'",
                                               on: server.store.engine)
            #expect(!after.contains("records_q_"), "\(after)")
        }
    }

    @Test func importDiffDeployAndHistory() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let secret = try await OperatorTests.makeOperator(server, "deployer", [.schema])
            // A file that does not read changes nothing, and says where.
            let broken = try await server.send(.post, "/admin/1/\(Self.container)/development/schema/import", headers: Self.auth(secret),
                                               body: "DEFINE SCHEMA\n    RECORD TYPE Note (\n        title STRNG\n    );\n")
            #expect(broken.status == 400 && broken.reason.contains("line 3, column 15"), "\(broken.reason)")
            let validate = try await server.send(.post, "/admin/1/\(Self.container)/development/schema/validate", headers: Self.auth(secret), body: Self.notes)
            #expect(validate.json["recordTypes"] == .int(1), "\(validate.json)")
            #expect(try await Self.export(server, secret, "development").recordType("Note") == nil)

            // Imported, development's schema is the file's (and Users, which every schema holds).
            try await Self.importSchema(server, secret, Self.notes)
            let imported = try await Self.export(server, secret, "development")
            let file = try CloudKitSchema.read(Self.notes)
            #expect(imported.recordType("Note") == file.withSystemFields().recordType("Note") && imported.roles == ["editor"])
            // Saves in development add to it; the diff shows what a deploy would add.
            _ = try await alice.save([Record(recordName: "n1", recordType: "Note", fields: ["title": .string("t"), "mood": .string("glad")])])
            let diff = try await server.send(.get, "/admin/1/\(Self.container)/production/schema/diff", headers: Self.auth(secret))
            let changes = try diff.decode(SchemaPlan.self).changes
            #expect(changes.contains(SchemaChange("add field Note.mood STRING", .adds, recordType: "Note", field: "mood")), "\(changes)")
            #expect(changes.allSatisfy { $0.effect == .adds })
            let deployed = try await Self.deploy(server, secret)
            #expect(deployed.applied && deployed.changes == changes)
            #expect(try await Self.export(server, secret, "production") == Self.export(server, secret, "development"))

            // A file that drops a field development records hold is refused, listing them.
            let dropping = Self.notes.replacingOccurrences(of: "        body            STRING,\n", with: "")
                .replacingOccurrences(of: "count           DOUBLE", with: "count           INT64")
            let refused = try await server.send(.post, "/admin/1/\(Self.container)/development/schema/import", headers: Self.auth(secret), body: dropping)
            #expect(refused.status == 400 && refused.reason.contains("Note 'n1'"), "\(refused.reason)")
            let dryRun = try await server.send(.post, "/admin/1/\(Self.container)/development/schema/import?dryRun=true", headers: Self.auth(secret), body: dropping)
            let plan = try dryRun.decode(SchemaPlan.self)
            #expect(!plan.applied && plan.recordCount == 1 && plan.records.map(\.recordName) == ["n1"], "\(plan)")
            #expect(plan.changes.map(\.change) == ["remove field Note.body STRING", "change field Note.count from DOUBLE to INT64", "remove field Note.mood STRING"])
            #expect(try await Self.export(server, secret, "development").recordType("Note")?.field("mood") != nil)
            let deleting = try await server.send(.post, "/admin/1/\(Self.container)/development/schema/import?deleteRecords=true", headers: Self.auth(secret), body: dropping)
            #expect(try deleting.decode(SchemaPlan.self).applied)
            #expect(try await alice.post("records/lookup", #"{"records": [{"recordName": "n1"}]}"#).json["records"]?[0]?["serverErrorCode"]?.stringValue == "NOT_FOUND")

            // Production keeps its data: removing and retyping fields are refused, each named.
            let refusedDeploy = try await server.send(.post, "/admin/1/\(Self.container)/production/schema/deploy", headers: Self.auth(secret))
            #expect(refusedDeploy.status == 400, "\(refusedDeploy.reason)")
            for change in ["remove field Note.body STRING", "change field Note.count from DOUBLE to INT64", "remove field Note.mood STRING"] {
                #expect(refusedDeploy.reason.contains(change), "\(refusedDeploy.reason)")
            }
            #expect(try await Self.export(server, secret, "production").recordType("Note")?.field("body") != nil)

            // A tightened grant deploys only when confirmed.
            try await Self.importSchema(server, secret, Self.export(server, secret, "production").written
                .replacingOccurrences(of: "        GRANT READ, WRITE TO editor\n", with: "        GRANT READ TO editor\n"))
            let tightening = try await server.send(.post, "/admin/1/\(Self.container)/production/schema/deploy", headers: Self.auth(secret))
            #expect(tightening.status == 400 && tightening.reason.contains("revoke WRITE on Note from editor") && tightening.reason.contains("confirm=true"), "\(tightening.reason)")
            let confirmed = try await server.send(.post, "/admin/1/\(Self.container)/production/schema/deploy?confirm=true", headers: Self.auth(secret))
            // (Users came with the export: every exported schema holds it.)
            #expect(try confirmed.decode(SchemaPlan.self).changes == [SchemaChange("revoke WRITE on Note from editor", .tightens, recordType: "Note"),
                                                                      SchemaChange("add record type Users", .adds, recordType: "Users"),
                                                                      SchemaChange("grant WRITE on Users to _creator", .adds, recordType: "Users"),
                                                                      SchemaChange("grant CREATE on Users to _icloud", .adds, recordType: "Users"),
                                                                      SchemaChange("grant READ on Users to _world", .adds, recordType: "Users")], "\(confirmed.json)")

            // Nor does a type production has leave it, or a field's encryption change.
            try await Self.importSchema(server, secret, Self.export(server, secret, "production").written
                .replacingOccurrences(of: "        title           STRING QUERYABLE SEARCHABLE SORTABLE,\n", with: "        title           ENCRYPTED STRING,\n"))
            let encrypting = try await server.send(.post, "/admin/1/\(Self.container)/production/schema/deploy?confirm=true", headers: Self.auth(secret))
            #expect(encrypting.status == 400 && encrypting.reason.contains("change field Note.title from STRING to ENCRYPTED STRING"), "\(encrypting.reason)")
            try await Self.importSchema(server, secret, "DEFINE SCHEMA\n    RECORD TYPE Other (\n        text STRING\n    );\n")
            let removing = try await server.send(.post, "/admin/1/\(Self.container)/production/schema/deploy?confirm=true", headers: Self.auth(secret))
            #expect(removing.status == 400 && removing.reason.contains("remove record type Note"), "\(removing.reason)")
            #expect(try await Self.export(server, secret, "production").recordType("Note")?.field("title")?.encrypted == false)

            // Every import and deploy is in the history, newest first, with the operator's name.
            let history = try await server.send(.get, "/admin/1/\(Self.container)/development/schema/history", headers: Self.auth(secret))
            let entries = try #require(history.json["history"]?.arrayValue)
            #expect(entries.compactMap { $0["action"]?.stringValue } == ["import", "import", "import", "import", "import"])
            #expect(entries.allSatisfy { $0["operatorName"]?.stringValue == "deployer" })
            #expect(entries[3]["summary"]?.stringValue?.contains("delete 1 record(s)") == true)
            let production = try await server.send(.get, "/admin/1/\(Self.container)/production/schema/history", headers: Self.auth(secret))
            let deploys = try #require(production.json["history"]?.arrayValue)
            #expect(deploys.compactMap { $0["action"]?.stringValue } == ["deploy", "deploy"])
            let schema = try CloudKitSchema.read(try #require(deploys[0]["schema"]?.stringValue))
            #expect(schema == (try await Self.export(server, secret, "production")))
            // The routes are the schema scope's.
            let reader = try await OperatorTests.makeOperator(server, "reader", [.read])
            #expect(try await server.send(.post, "/admin/1/\(Self.container)/production/schema/deploy", headers: Self.auth(reader)).code == "ACCESS_DENIED")
        }
    }

    @Test func resetPutsDevelopmentBackToProductionsSchema() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let secret = try await OperatorTests.makeOperator(server, "deployer", [.schema])
            try await Self.importSchema(server, secret, Self.notes)
            try await Self.deploy(server, secret)
            _ = try await alice.save([Record(recordName: "n1", recordType: "Note", fields: ["title": .string("kept")]),
                                      Record(recordName: "d1", recordType: "Draft", fields: ["text": .string("gone")]),
                                      Record(recordName: "n2", recordType: "Note", fields: ["mood": .string("gone too")])])
            _ = try await alice.post("records/modify", #"{"operations": [{"operationType": "create", "record": {"recordName": "p1", "recordType": "Draft", "fields": {}}}]}"#, database: "public")
            let dryRun = try await server.send(.post, "/admin/1/\(Self.container)/development/schema/reset?dryRun=true", headers: Self.auth(secret))
            let plan = try dryRun.decode(SchemaPlan.self)
            #expect(!plan.applied && Set(plan.records.map(\.recordName)) == ["d1", "n2", "p1"], "\(plan)")
            #expect(plan.changes.map(\.change).contains("remove record type Draft"))
            #expect(try await Self.export(server, secret, "development").recordType("Draft") != nil)
            let reset = try await server.send(.post, "/admin/1/\(Self.container)/development/schema/reset", headers: Self.auth(secret))
            #expect(try reset.decode(SchemaPlan.self).applied, "\(reset.reason)")
            #expect(try await Self.export(server, secret, "development") == Self.export(server, secret, "production"))
            let lookup = try await alice.post("records/lookup", #"{"records": [{"recordName": "n1"}, {"recordName": "d1"}, {"recordName": "n2"}]}"#)
            #expect(lookup.json["records"]?.arrayValue?.map { $0["serverErrorCode"]?.stringValue ?? "ok" } == ["ok", "NOT_FOUND", "NOT_FOUND"], "\(lookup.json)")
            let history = try await server.send(.get, "/admin/1/\(Self.container)/development/schema/history?limit=1", headers: Self.auth(secret))
            #expect(history.json["history"]?[0]?["action"]?.stringValue == "reset")
        }
    }

    @Test func productionThatHeldDataBeforeTheUpgradeKeepsInferringUntilLocked() async throws {
        try await withServer { server in
            let alice = try await server.user("alice")
            let secret = try await OperatorTests.makeOperator(server, "deployer", [.schema])
            // What the upgrade leaves a production that held data: unlocked (the migration's rule).
            _ = try await alice.post("records/modify", "{}", environment: "production")
            _ = try await server.store.engine.write { transaction in
                let key = try transaction.ensureContainer(named: Self.container, environment: "production")
                try transaction.setSchemaLocked(false, inContainer: key)
                return .commit(())
            }
            let note = #"{"operations": [{"operationType": "create", "record": {"recordName": "n1", "recordType": "Note", "fields": {"title": {"value": "hi"}}}}]}"#
            #expect(try await alice.post("records/modify", note, environment: "production").json["records"]?[0]?["recordName"]?.stringValue == "n1")
            let lock = try await server.send(.post, "/admin/1/\(Self.container)/production/schema/lock", headers: Self.auth(secret))
            #expect(lock.status == 200, "\(lock.reason)")
            let history = try await server.send(.get, "/admin/1/\(Self.container)/production/schema/history", headers: Self.auth(secret))
            #expect(history.json["history"]?[0]?["action"]?.stringValue == "lock" && history.json["history"]?[0]?["operatorName"]?.stringValue == "deployer")
            let later = #"{"operations": [{"operationType": "create", "record": {"recordName": "n2", "recordType": "Note", "fields": {"mood": {"value": "glad"}}}}]}"#
            #expect(try await alice.post("records/modify", later, environment: "production").json["records"]?[0]?["reason"]?.stringValue
                    == "Cannot create or modify field 'mood' in record 'Note' in production schema")
            #expect(try await server.send(.post, "/admin/1/\(Self.container)/development/schema/lock", headers: Self.auth(secret)).status == 400)
        }
    }

    /// The 54bfe40 data directory (OldReleaseFixtureTests), its container moved to production
    /// before the upgrade: opened by this release, production keeps serving and inferring
    /// (unlocked, its fields marked as that release let queries use them) until locked.
    @Test func aProductionThatHeldDataBeforeTheUpgradeKeepsServingUntilLocked() async throws {
        try await withTemporaryDirectory { directory in
            let data = (directory as NSString).appendingPathComponent("data")
            try FileManager.default.copyItem(atPath: OldReleaseFixtureTests.fixture.appendingPathComponent("data").path, toPath: data)
            let child = try ChildProcess(executable: URL(fileURLWithPath: "/usr/bin/python3"), ["-c", """
                import sqlite3, sys
                db = sqlite3.connect(sys.argv[1]); db.execute("UPDATE containers SET environment = 'production'"); db.commit()
                """, (data as NSString).appendingPathComponent("records.sqlite")])
            let moved = await child.wait()
            #expect(moved.status == 0, "\(moved.output)")
            try await withLiveServer(directory: data) { server in
                let container = "iCloud.test.Release"
                #expect(try await server.store.isSchemaLocked(ofContainer: container, environment: "production") == false)
                let schema = try await server.store.cloudKitSchema(ofContainer: container, environment: "production")
                let artwork = try #require(schema.recordType("Artwork"))
                #expect(artwork.field("title") == SchemaField(name: "title", type: FieldType(.string), queryable: true, sortable: true, searchable: true))
                #expect(artwork.field("tags") == SchemaField(name: "tags", type: FieldType(.string, isList: true), queryable: true, searchable: true))
                #expect(artwork.field("thumbnail") == SchemaField(name: "thumbnail", type: FieldType(.bytes), queryable: true))
                #expect(artwork.field("image") == SchemaField(name: "image", type: FieldType(.asset)))
                #expect(artwork.field("details") == SchemaField(name: "details", type: FieldType(.nested)))
                #expect(artwork.field("___modTime") == SchemaField(name: "___modTime", type: FieldType(.timestamp), queryable: true, sortable: true))
                #expect(artwork.field("___etag") == SchemaField(name: "___etag", type: FieldType(.string)))
                #expect(schema.recordType("Letter")?.field("text")?.searchable == false)
                // Types with records but no field of their own are types too, with CloudKit's grants.
                #expect(schema.recordType("Task")?.grants == [SchemaGrant(permissions: [.write], grantee: "_creator"), SchemaGrant(permissions: [.create], grantee: "_icloud"),
                                                               SchemaGrant(permissions: [.read], grantee: "_world")])
                #expect(Set(schema.recordTypes.map(\.name)).isSuperset(of: ["Album", "Artist", "Artwork", "Event", "Letter", "Note", "Notice", "Reply", "Task", "Users"]))

                // It serves queries as before, and takes new types until locked.
                let token = try await server.token(forNewUser: "newcomer")
                let query = try await Self.post(server, token, "public/records/query", #"{"query": {"recordType": "Artwork", "filterBy": [{"comparator": "GREATER_THAN", "fieldName": "year", "fieldValue": {"value": 0}}], "sortBy": [{"fieldName": "title"}]}}"#)
                #expect(query.status == 200, "\(query.body)")
                let save = #"{"operations": [{"operationType": "create", "record": {"recordType": "Poster", "fields": {"title": {"value": "new"}}}}]}"#
                #expect(try await Self.post(server, token, "private/records/modify", save).body.contains("\"recordType\":\"Poster\""))
                try await server.store.lockSchema(ofContainer: container, environment: "production", by: "test")
                #expect(try await Self.post(server, token, "private/records/modify", save.replacingOccurrences(of: "Poster", with: "Flyer")).body
                        .contains("Cannot create new type Flyer in production schema"))
            }
        }
    }

    // MARK: Helpers

    static func post(_ server: LiveServer, _ token: String, _ path: String, _ body: String) async throws -> (status: Int, body: String) {
        var request = URLRequest(url: server.url.appendingPathComponent("database/1/iCloud.test.Release/production/\(path)"))
        request.httpMethod = "POST"
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.httpBody = Data(body.utf8)
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    static func auth(_ secret: String) -> HTTPFields { [.authorization: "Bearer \(secret)"] }

    static func importSchema(_ server: TestServer, _ secret: String, _ text: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let reply = try await server.send(.post, "/admin/1/\(container)/development/schema/import", headers: auth(secret), body: text)
        #expect(reply.status == 200, "\(reply.reason)", sourceLocation: sourceLocation)
    }

    @discardableResult
    static func deploy(_ server: TestServer, _ secret: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> SchemaPlan {
        let reply = try await server.send(.post, "/admin/1/\(container)/production/schema/deploy", headers: auth(secret))
        #expect(reply.status == 200, "\(reply.reason)", sourceLocation: sourceLocation)
        return try reply.decode(SchemaPlan.self)
    }

    static func export(_ server: TestServer, _ secret: String, _ environment: String) async throws -> CloudKitSchema {
        let reply = try await server.send(.get, "/admin/1/\(container)/\(environment)/schema?format=ckdb", headers: auth(secret))
        return try CloudKitSchema.read(String(decoding: reply.data, as: UTF8.self))
    }
}
