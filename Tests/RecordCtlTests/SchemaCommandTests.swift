import Foundation
@testable import recordctl
import RecordClient
import TestSupport
import Testing

/// `recordctl schema …` against a live server: export, validate, import (dry run, refused,
/// deleting records), diff, deploy (refused, confirmed), reset, lock and history.
@Suite struct SchemaCommandTests {
    static let file = """
        DEFINE SCHEMA
            RECORD TYPE Note (
                title           STRING QUERYABLE SORTABLE,
                body            STRING,
                GRANT WRITE TO "_creator",
                GRANT CREATE TO "_icloud",
                GRANT READ TO "_world"
            );
        """

    @Test func aSchemaIsImportedDiffedDeployedResetAndListed() async throws {
        try await withServer { server in
            try await withTemporaryDirectory { directory in
                let secret = try await server.secret(forNewOperator: "deployer", scopes: ["schema"])
                let flags = ["--server", server.url.absoluteString, "--container", "iCloud.test.ctl", "--operator-secret", secret]
                let path = directory + "/notes.ckdb"
                try Data(Self.file.utf8).write(to: URL(fileURLWithPath: path))

                // Without a secret: a usage error. A broken file: the server says where.
                #expect(await recordctl(["schema", "diff", "--server", server.url.absoluteString]).status == 64)
                let brokenPath = directory + "/broken.ckdb"
                try Data("DEFINE SCHEMA\n    RECORD TYPE Note (\n        title STRNG\n    );\n".utf8).write(to: URL(fileURLWithPath: brokenPath))
                let broken = await recordctl(["schema", "validate", "--file", brokenPath] + flags)
                #expect(broken.status == 1 && broken.errors.contains("line 3, column 15"), "\(broken.errors)")
                let valid = await recordctl(["schema", "validate-schema", "--file", path] + flags)
                #expect(valid.status == 0 && valid.lines == ["\(path) is a valid schema"], "\(valid.errors)")

                let dryRun = await recordctl(["schema", "import", "--file", path, "--dry-run"] + flags)
                #expect(dryRun.lines == ["+ add record type Note", "+ add field Note.body STRING", "+ add field Note.title STRING",
                                         "+ add index QUERYABLE to Note.title", "+ add index SORTABLE to Note.title",
                                         "+ grant WRITE on Note to _creator", "+ grant CREATE on Note to _icloud", "+ grant READ on Note to _world",
                                         "nothing applied"], "\(dryRun.output) \(dryRun.errors)")
                let imported = await recordctl(["schema", "import-schema", "--file", path] + flags)
                #expect(imported.status == 0 && imported.lines.last == "applied", "\(imported.errors)")
                let exported = await recordctl(["schema", "export"] + flags)
                #expect(exported.output.contains("        title           STRING QUERYABLE SORTABLE,\n"), "\(exported.output)")
                let outputPath = directory + "/out.ckdb"
                #expect(await recordctl(["schema", "export-schema", "--output-file", outputPath] + flags).status == 0)
                #expect(try String(contentsOfFile: outputPath, encoding: .utf8) == exported.output)

                // A save in development adds a field; the diff shows it; deploy carries it.
                let user = try await server.flags(forNewUser: "alice")
                let batch = directory + "/batch.json"
                try Data(#"{"recordName": "n1", "recordType": "Note", "fields": {"title": "hello", "mood": "glad"}}"#.utf8).write(to: URL(fileURLWithPath: batch))
                let saved = await recordctl(["records", "modify", "--file", batch] + user)
                #expect(saved.status == 0, "\(saved.errors)")
                let diff = await recordctl(["schema", "diff"] + flags)
                #expect(diff.lines.contains("+ add field Note.mood STRING"), "\(diff.output) \(diff.errors)")
                let deployed = await recordctl(["schema", "deploy", "--json"] + flags)
                #expect(deployed.status == 0 && deployed.output.contains(#""applied" : true"#), "\(deployed.output) \(deployed.errors)")
                #expect(await recordctl(["schema", "diff"] + flags).lines == ["no change"])

                // Dropping a field records hold: refused, then deleted with --delete-records.
                let refused = await recordctl(["schema", "import", "--file", path] + flags)
                #expect(refused.status == 1 && refused.errors.contains("Note 'n1'"), "\(refused.errors)")
                let deleting = await recordctl(["schema", "import", "--file", path, "--delete-records"] + flags)
                #expect(deleting.lines.contains("deleted 1 record(s):") && deleting.lines.contains { $0.hasPrefix("    Note n1 in private of _") && $0.hasSuffix("/_defaultZone") },
                        "\(deleting.output) \(deleting.errors)")
                // Production keeps Note.mood: the deploy is refused, naming it.
                let refusedDeploy = await recordctl(["schema", "deploy"] + flags)
                #expect(refusedDeploy.status == 1 && refusedDeploy.errors.contains("remove field Note.mood STRING"), "\(refusedDeploy.errors)")
                let diffRefused = await recordctl(["schema", "diff"] + flags)
                #expect(diffRefused.lines == ["x remove field Note.mood STRING (refused)"], "\(diffRefused.output)")
                // Reset brings development back to production's.
                let reset = await recordctl(["schema", "reset-schema"] + flags)
                #expect(reset.lines == ["+ add field Note.mood STRING", "applied"], "\(reset.output) \(reset.errors)")
                #expect(await recordctl(["schema", "diff"] + flags).lines == ["no change"])

                let history = await recordctl(["schema", "history"] + flags)
                #expect(history.lines.filter { !$0.hasPrefix(" ") }.map { $0.split(separator: " ").dropFirst().joined(separator: " ") }
                        == ["reset by deployer", "import by deployer", "import by deployer"], "\(history.output)")
                let production = await recordctl(["schema", "history", "--environment", "production"] + flags)
                #expect(production.lines.first?.hasSuffix("  deploy  by deployer") == true && production.lines.contains("    add field Note.mood STRING"), "\(production.output)")
                // Production was locked from the start (made after the upgrade): lock says so again.
                #expect(await recordctl(["schema", "lock"] + flags).status == 0)
            }
        }
    }
}
