import Foundation
import Testing

/// Every seed of every fuzz target (`Fuzz/corpus/TARGET`) through its harness, as libFuzzer
/// feeds it, in the suite's own build: no libFuzzer and no address sanitising (those need a build
/// of their own, `Scripts/fuzz`). The harnesses are `Fuzz/Sources/recordfuzz`'s, linked here
/// file by file (`Harness/`). A check that fails ends the process (`fatalError`), as under
/// libFuzzer; a crash found by fuzzing becomes a seed, so this runs it for good.
@Suite struct FuzzCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz/corpus")

    @Test(arguments: FuzzTarget.allCases)
    func everySeedPassesItsHarness(_ target: FuzzTarget) async throws {
        let directory = Self.corpus.appendingPathComponent(target.rawValue)
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        #expect(!files.isEmpty, "no seeds in \(directory.path)")
        let inputs = try files.map { try Data(contentsOf: $0) }
        // On a thread of its own: the server's harnesses wait for async work with a semaphore,
        // which must not hold one of the concurrency pool's few threads.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                for input in inputs { target.run(input) }
                done.resume()
            }.start()
        }
    }
}
