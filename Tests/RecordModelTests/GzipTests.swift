import Foundation
@testable import RecordModel
import Testing

@Suite struct GzipTests {
    /// The first bytes of a compressed text, decompressing no more than needed: any count,
    /// shorter than the text, the whole of it, or beyond it.
    @Test func aPrefixIsTheStartOfTheDecompressedData() throws {
        let text = Data((0..<5_000).map { "record \($0) " }.joined().utf8)
        let compressed = Gzip.compress(text)
        for count in [0, 1, 100, 4_096, text.count - 1, text.count, text.count + 10] {
            #expect(try Gzip.prefix(of: compressed, upTo: count) == text.prefix(count), "\(count)")
        }
        #expect(throws: Gzip.Failure.self) { try Gzip.prefix(of: Data("not gzip".utf8), upTo: 10) }
        // A stream cut short fails only where the prefix reaches the cut.
        let cut = compressed.prefix(compressed.count / 2)
        #expect(try Gzip.prefix(of: cut, upTo: 100) == text.prefix(100))
        #expect(throws: Gzip.Failure.self) { try Gzip.prefix(of: cut, upTo: text.count) }
    }
}
