import Foundation
import RecordClient
import TestSupport
import Testing

/// docs/client.md: its examples are this target's GalleryExample.swift and SharingExample.swift,
/// and they run.
@Suite struct GuideTests {
    static func between(_ text: String, _ start: String, _ end: String) -> String? {
        guard let from = text.range(of: start), let to = text.range(of: end, range: from.upperBound..<text.endIndex) else { return nil }
        return String(text[from.upperBound..<to.lowerBound]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    @Test func theGuideQuotesTheCompiledExampleVerbatim() throws {
        let guide = try String(contentsOf: Self.packageRoot.appendingPathComponent("docs/client.md"), encoding: .utf8)
        let source = try String(contentsOf: Self.packageRoot.appendingPathComponent("Tests/RecordClientTests/GalleryExample.swift"), encoding: .utf8)
        let quoted = try #require(Self.between(guide, "<!-- example -->\n```swift", "```\n<!-- /example -->"))
        let compiled = try #require(Self.between(source, "// BEGIN EXAMPLE", "// END EXAMPLE"))
        #expect(quoted == compiled)
    }

    @Test func theGuideQuotesTheCompiledSharingExampleVerbatim() throws {
        let guide = try String(contentsOf: Self.packageRoot.appendingPathComponent("docs/client.md"), encoding: .utf8)
        let source = try String(contentsOf: Self.packageRoot.appendingPathComponent("Tests/RecordClientTests/SharingExample.swift"), encoding: .utf8)
        let quoted = try #require(Self.between(guide, "<!-- sharing-example -->\n```swift", "```\n<!-- /sharing-example -->"))
        let compiled = try #require(Self.between(source, "// BEGIN SHARING EXAMPLE", "// END SHARING EXAMPLE"))
        #expect(quoted == compiled)
    }

    @Test func theGuidesSharingExampleRuns() async throws {
        try await withServer { server in
            let tokens = (try await server.token(forNewUser: "alice"), try await server.token(forNewUser: "bob"), try await server.token(forNewUser: "carol"))
            let (alice, bob, carol, refusal) = try await runSharedList(serverURL: server.url, tokens: tokens, directory: server.directory)
            #expect(alice == ["Eggs", "Oat milk"] && bob == alice && carol == alice, "\(alice) \(bob) \(carol)")
            #expect(refusal?.code == .accessDenied && refusal?.reason.contains("read-only") == true, "\(String(describing: refusal))")
        }
    }

    @Test func theGuidesExampleRuns() async throws {
        try await withServer { server in
            let token = try await server.token(forNewUser: "alice")
            let file = URL(fileURLWithPath: server.directory + "/portrait.jpg")
            let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            try bytes.write(to: file)
            let (titles, left, portrait, announced) = try await runGallery(serverURL: server.url, token: token, cachePath: server.directory + "/gallery.sqlite",
                                                                           portraitFile: file)
            #expect(titles == ["Impression, soleil levant", "Water Lilies"])
            #expect(left == 0)
            #expect(portrait == bytes)
            #expect(announced == "Haystacks")
        }
    }
}
