import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOSSL
import RecordClient
import RecordModel
import Testing
import TestSupport

/// `recordserver --tls-cert --tls-key` serves HTTPS; the client library and `recordctl` trust a
/// given certificate authority; bad files stop the server before it listens.
@Suite struct TLSTests {
    /// A certificate authority and a certificate it signed for 127.0.0.1, made by openssl in
    /// `directory`: `ca.crt`, `server.crt`, `server.key`, and `other.key` (not the server's).
    static func makeCertificates(in directory: String) async throws {
        func openssl(_ arguments: String) async throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "cd '\(directory)' && openssl \(arguments)"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "openssl \(arguments)")
        }
        let curve = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
        try await openssl("req -x509 \(curve) -keyout ca.key -out ca.crt -days 2 -subj '/CN=RecordSync Test CA'")
        try await openssl("req \(curve) -keyout server.key -out server.csr -subj '/CN=127.0.0.1'")
        try "subjectAltName=IP:127.0.0.1\n".write(toFile: "\(directory)/ext", atomically: true, encoding: .utf8)
        try await openssl("x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile ext")
        try await openssl("ecparam -name prime256v1 -genkey -noout -out other.key")
    }

    @Test func theServerSpeaksHTTPSAndClientsTrustTheGivenAuthority() async throws {
        try await withTemporaryDirectory { directory in
            try await Self.makeCertificates(in: directory)
            let data = "\(directory)/data"
            let token = try await ChildProcess.run("recordserver", ["user", "add", "alice", "--data", data]).output.trimmingCharacters(in: .whitespacesAndNewlines)
            let server = try ChildProcess("recordserver", ["--port", "0", "--data", data, "--tls-cert", "\(directory)/server.crt", "--tls-key", "\(directory)/server.key"])
            defer { Task { _ = await server.stop(signal: SIGKILL) } }
            let line = try #require(try await server.waitFor(#"listening on https://127\.0\.0\.1:\d+"#))
            let port = try #require(line.split(separator: ":").last.map(String.init))
            let url = URL(string: "https://127.0.0.1:\(port)")!

            // The client library, trusting the authority: a save and a fetch, and asset URLs in https.
            var container = Container(serverURL: url, identifier: "iCloud.test.TLS", credentials: .bearerToken(token))
            container.certificateAuthority = "\(directory)/ca.crt"
            var record = Record(recordType: "Note", recordID: Record.ID(recordName: "n1"))
            record["text"] = .string("over TLS")
            _ = try await container.privateCloudDatabase.save(record)
            let fetched = try await container.privateCloudDatabase.records(for: [record.recordID])
            #expect(fetched.records.first?.recordName == "n1")

            // Without the authority the certificate is not trusted.
            let untrusting = Container(serverURL: url, identifier: "iCloud.test.TLS", credentials: .bearerToken(token))
            await #expect { _ = try await untrusting.privateCloudDatabase.records(for: [record.recordID]) } throws: {
                ($0 as? RecordSyncError)?.code == .networkFailure
            }

            // recordctl, with --ca-cert and without.
            let arguments = ["query", "Note", "--server", url.absoluteString, "--token", token, "--container", "iCloud.test.TLS"]
            let trusted = try await ChildProcess.run("recordctl", arguments + ["--ca-cert", "\(directory)/ca.crt"], mergeErrors: true)
            #expect(trusted.status == 0 && trusted.output.contains("n1"), "\(trusted.output)")
            let refused = try await ChildProcess.run("recordctl", arguments, mergeErrors: true)
            #expect(refused.status != 0, "\(refused.output)")

            // Asset URLs name the scheme the server speaks.
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file("\(directory)/ca.crt")]
            let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: .init(tlsConfiguration: tls))
            var request = HTTPClientRequest(url: "\(url.absoluteString)/database/1/iCloud.test.TLS/development/private/assets/upload")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            request.body = .bytes(ByteBuffer(string: #"{"tokens":[{"recordType":"Note","fieldName":"file"}]}"#))
            let response = try await http.execute(request, timeout: .seconds(30))
            let answer = try JSONValue.parse(Data(buffer: try await response.body.collect(upTo: 1 << 20)))
            try await http.shutdown()
            #expect(answer["tokens"]?[0]?["url"]?.stringValue?.hasPrefix("https://127.0.0.1:\(port)/assets/1/upload/") == true, "\(answer)")
        }
    }

    @Test func unusableCertificateFilesStopTheServerBeforeItListens() async throws {
        try await withTemporaryDirectory { directory in
            try await Self.makeCertificates(in: directory)
            let mismatched = try await ChildProcess.run("recordserver", ["--port", "0", "--data", "\(directory)/data",
                                                                         "--tls-cert", "\(directory)/server.crt", "--tls-key", "\(directory)/other.key"], mergeErrors: true)
            #expect(mismatched.status == 1 && mismatched.output.contains("cannot serve HTTPS"), "\(mismatched.output)")
            let missing = try await ChildProcess.run("recordserver", ["--port", "0", "--data", "\(directory)/data",
                                                                      "--tls-cert", "\(directory)/nothing.crt", "--tls-key", "\(directory)/server.key"], mergeErrors: true)
            #expect(missing.status == 1 && missing.output.contains("cannot serve HTTPS"), "\(missing.output)")
            let alone = try await ChildProcess.run("recordserver", ["--port", "0", "--data", "\(directory)/data", "--tls-cert", "\(directory)/server.crt"], mergeErrors: true)
            #expect(alone.status == 64 && alone.output.contains("go together"), "\(alone.output)")
        }
    }
}
