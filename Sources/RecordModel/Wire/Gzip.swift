import CZlib
import Foundation

/// gzip for request bodies (`Content-Encoding: gzip`, an extension of the protocol).
///
/// The client compresses large bodies because a smaller upload is cheaper everywhere, and,
/// when it goes through a `URLSession` on Linux (an app's own), because FoundationNetworking's
/// `URLSession` keeps a socket's write source armed from
/// the moment an upload needs a second write until the answer arrives: with a body larger than
/// libcurl's 64 KiB upload buffer, the client spins a core while the server works. Compressed,
/// a 400-operation save fits in one write.
public enum Gzip {
    /// Bodies at least this large are worth compressing.
    public static let threshold = 16 * 1024

    /// Why a gzip body could not be decompressed.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The data is not a complete gzip stream.
        case invalid(String)
        /// The decompressed data would exceed the limit.
        case tooLarge

        public var description: String {
            switch self {
            case .invalid(let why): why
            case .tooLarge: "larger than the limit once decompressed"
            }
        }
    }

    /// `data` as a gzip stream (fastest level: the point is fewer bytes, cheaply).
    public static func compress(_ data: Data) -> Data {
        var stream = z_stream()
        // windowBits 15 + 16: a gzip header and trailer rather than zlib's.
        guard deflateInit2_(&stream, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            preconditionFailure("zlib's deflateInit2 failed")
        }
        defer { deflateEnd(&stream) }
        var output = Data(count: Int(deflateBound(&stream, uLong(data.count))))
        let written: Int = data.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in
                stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = out.bindMemory(to: Bytef.self).baseAddress
                stream.avail_out = uInt(out.count)
                // deflateBound leaves room for everything in one call.
                let status = deflate(&stream, Z_FINISH)
                precondition(status == Z_STREAM_END, "zlib's deflate did not finish: \(status)")
                return out.count - Int(stream.avail_out)
            }
        }
        output.count = written
        return output
    }

    /// The data of a gzip stream, refusing to produce more than `limit` bytes.
    ///
    /// - Throws: ``Failure``.
    public static func decompress(_ data: Data, limit: Int) throws -> Data {
        var stream = z_stream()
        guard inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw Failure.invalid("zlib could not start")
        }
        defer { inflateEnd(&stream) }
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        try data.withUnsafeBytes { input in
            stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
            stream.avail_in = uInt(input.count)
            while true {
                let (status, produced) = chunk.withUnsafeMutableBufferPointer { buffer in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = uInt(buffer.count)
                    let status = inflate(&stream, Z_NO_FLUSH)
                    return (status, buffer.count - Int(stream.avail_out))
                }
                guard output.count + produced <= limit else { throw Failure.tooLarge }
                output.append(contentsOf: chunk[0..<produced])
                switch status {
                case Z_STREAM_END:
                    guard stream.avail_in == 0 else { throw Failure.invalid("data follows the end of the gzip stream") }
                    return
                case Z_OK:
                    continue
                case Z_BUF_ERROR where stream.avail_in == 0:
                    throw Failure.invalid("the gzip stream ends early")
                default:
                    let message = stream.msg.map { String(cString: $0) } ?? "zlib status \(status)"
                    throw Failure.invalid(message)
                }
            }
        }
        return output
    }

    /// The first `count` bytes (fewer if the stream ends first) of the data of a gzip stream,
    /// the rest of it left undecompressed.
    ///
    /// - Throws: ``Failure`` for a stream that is not gzip up to there.
    public static func prefix(of data: Data, upTo count: Int) throws -> Data {
        var stream = z_stream()
        guard inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw Failure.invalid("zlib could not start")
        }
        defer { inflateEnd(&stream) }
        var output = Data(count: count)
        let produced = try data.withUnsafeBytes { input in
            try output.withUnsafeMutableBytes { buffer -> Int in
                stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = buffer.bindMemory(to: Bytef.self).baseAddress
                stream.avail_out = uInt(buffer.count)
                while stream.avail_out > 0 {
                    let status = inflate(&stream, Z_NO_FLUSH)
                    switch status {
                    case Z_STREAM_END: return buffer.count - Int(stream.avail_out)
                    case Z_OK: continue
                    case Z_BUF_ERROR where stream.avail_in == 0: throw Failure.invalid("the gzip stream ends early")
                    default: throw Failure.invalid(stream.msg.map { String(cString: $0) } ?? "zlib status \(status)")
                    }
                }
                return buffer.count
            }
        }
        output.count = produced
        return output
    }
}
