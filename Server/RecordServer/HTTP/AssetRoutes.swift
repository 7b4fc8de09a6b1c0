import Crypto
import Foundation
import Hummingbird
import NIOCore
import RecordModel
import RecordRules

/// The asset byte endpoints: `POST /assets/1/upload/TOKEN` (the URLs `assets/upload` hands out)
/// and `GET /assets/1/download/TOKEN/FILENAME` (the `downloadURL` of every asset a read
/// answers). Neither needs a bearer token: the token in the path, signed with a key every server
/// over the storage shares, grants one upload or one download for a limited time. Bytes stream
/// both ways, never held whole in memory.
struct AssetRoutes: Sendable {
    let store: RecordStore
    /// Where uploads are written while they arrive (under the data directory).
    let incoming: String

    func register(on router: Router<RequestContextWithAddress>) {
        router.post("/assets/1/upload/:token") { request, context in
            try await self.upload(request, token: context.parameters.get("token") ?? "")
        }
        router.get("/assets/1/download/:token/:file") { request, context in
            try await self.download(request, token: context.parameters.get("token") ?? "", file: context.parameters.get("file") ?? "", head: false)
        }
        router.head("/assets/1/download/:token/:file") { request, context in
            try await self.download(request, token: context.parameters.get("token") ?? "", file: context.parameters.get("file") ?? "", head: true)
        }
    }

    // MARK: Upload

    /// Streams the body (raw, or the file part of `multipart/form-data`) to a file, hashing it,
    /// then keeps it and answers its receipt. An upload over the limit keeps nothing.
    func upload(_ request: Request, token: String) async throws -> Response {
        let grant = try await store.uploadGrant(token)
        try FileManager.default.createDirectory(atPath: incoming, withIntermediateDirectories: true)
        let file = URL(fileURLWithPath: incoming).appendingPathComponent(UUID().uuidString)
        guard FileManager.default.createFile(atPath: file.path, contents: nil), let handle = FileHandle(forWritingAtPath: file.path) else {
            throw RecordSyncError(.internalError, "could not open a file for the upload")
        }
        var kept = false
        defer {
            try? handle.close()
            if !kept { try? FileManager.default.removeItem(at: file) }
        }
        let limit = store.limits.maximumAssetBytes
        var hasher = SHA256()
        var size: Int64 = 0
        var multipart = try MultipartFile(contentType: request.headers[.contentType])
        // The body arrives in pieces of tens of kilobytes: hashed as they come, written a
        // quarter megabyte at a time.
        var pending = ByteBuffer()
        pending.reserveCapacity(256 << 10)
        let write = { (bytes: ByteBuffer) throws in
            size += Int64(bytes.readableBytes)
            guard size <= limit else {
                throw RecordSyncError(.limitExceeded, "the asset is larger than the limit of \(limit) bytes")
            }
            bytes.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            var bytes = bytes
            pending.writeBuffer(&bytes)
            if pending.readableBytes >= 256 << 10 {
                try handle.write(contentsOf: pending.readableBytesView)
                pending.clear()
            }
        }
        for try await chunk in request.body {
            if multipart != nil {
                for piece in try multipart!.take(chunk) { try write(piece) }
            } else {
                try write(chunk)
            }
        }
        if multipart != nil { for piece in try multipart!.finish() { try write(piece) } }
        if pending.readableBytes > 0 { try handle.write(contentsOf: pending.readableBytesView) }
        try handle.synchronize()
        try handle.close()
        let checksum = hasher.finalize().map { String(format: "%02x", $0) }.joined()
        kept = true  // store(file:) consumes the file
        let receipt = try await store.storeUpload(file: file, checksum: checksum, size: size, grant: grant)
        return try JSONBody.response(receipt)
    }

    // MARK: Download

    /// The blob's bytes, whole or the one range a `Range` header asks for. Served as an
    /// attachment of type `application/octet-stream` with `nosniff`, so that no browser runs or
    /// renders what a user stored (an SVG or HTML asset is a file to save, never a page of this
    /// origin); `?inline=1` serves a PNG, JPEG, GIF or WebP image (known by its first bytes, never
    /// by a name or a type the uploader chose) inline with its image type, for previews.
    func download(_ request: Request, token: String, file: String, head: Bool) async throws -> Response {
        let grant = try await store.downloadGrant(token)
        let bytes = store.engine.assetBytes
        guard try await bytes.contains(grant.checksum) else {
            throw RecordSyncError(.notFound, "the asset is no longer stored (no record holds it)")
        }
        let size = grant.size
        var range: Range<Int64> = 0..<size
        var status = HTTPResponse.Status.ok
        var headers: HTTPFields = [.contentType: "application/octet-stream", .acceptRanges: "bytes", .cacheControl: "private, max-age=3600",
                                   .init("X-Content-Type-Options")!: "nosniff"]
        var image: String?
        if request.uri.queryParameters["inline"] == "1" {
            var head = Data()
            try await bytes.read(grant.checksum, range: 0..<min(size, 12)) { head.append($0) }
            image = RasterImage.type(of: head)
        }
        if let image {
            headers[.contentType] = image
            headers[.contentDisposition] = "inline"
        } else {
            headers[.contentDisposition] = "attachment; filename=\"\(Self.safeFileName(file))\""
        }
        if let header = request.headers[.range] {
            switch ByteRange.parse(header, size: size) {
            case .whole: break
            case .range(let asked):
                range = asked
                status = .partialContent
                headers[.contentRange] = "bytes \(asked.lowerBound)-\(asked.upperBound - 1)/\(size)"
            case .unsatisfiable:
                headers[.contentRange] = "bytes */\(size)"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            }
        }
        headers[.contentLength] = String(range.count)
        if head || range.isEmpty { return Response(status: status, headers: headers) }
        let checksum = grant.checksum
        let asked = range
        let body = ResponseBody { writer in
            try await bytes.read(checksum, range: asked) { piece in
                try await writer.write(ByteBuffer(data: piece))
            }
            try await writer.finish(nil)
        }
        return Response(status: status, headers: headers, body: body)
    }
}

extension AssetRoutes {
    /// The path's file name as `Content-Disposition` may carry it: letters, digits, `.`, `-`
    /// and `_` kept, anything else (quotes, slashes, CloudKit JS's unreplaced `${f}`) made `_`.
    static func safeFileName(_ name: String) -> String {
        let kept = String(name.prefix(200).map { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) ? $0 : "_" })
        return kept.isEmpty || kept.allSatisfy({ $0 == "." }) ? "asset" : kept
    }
}

/// The raster image formats a browser may be shown inline, known by their first bytes.
enum RasterImage {
    static func type(of head: Data) -> String? {
        let b = [UInt8](head)
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            b.count >= offset + prefix.count && Array(b[offset..<offset + prefix.count]) == prefix
        }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if starts([0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return "image/gif" }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return "image/webp" }
        return nil
    }
}

/// A `Range` header's meaning for a body of `size` bytes (RFC 9110, one range; several are
/// answered with the whole body, as the RFC allows).
enum ByteRange: Equatable {
    case whole
    case range(Range<Int64>)
    case unsatisfiable

    static func parse(_ header: String, size: Int64) -> ByteRange {
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.lowercased().hasPrefix("bytes=") else { return .whole }
        let spec = value.dropFirst(6).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(",") else { return .whole }
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2 else { return .whole }
        if parts[0].isEmpty {
            // The last N bytes.
            guard let count = Int64(parts[1]), count >= 0 else { return .whole }
            guard count > 0, size > 0 else { return .unsatisfiable }
            return .range(max(0, size - count)..<size)
        }
        guard let first = Int64(parts[0]), first >= 0 else { return .whole }
        guard first < size else { return .unsatisfiable }
        if parts[1].isEmpty { return .range(first..<size) }
        guard let last = Int64(parts[1]), last >= first else { return .whole }
        // `last` may be any 64-bit number: no `last + 1`.
        return .range(first..<(last >= size - 1 ? size : last + 1))
    }
}

/// The file part of a `multipart/form-data` body as it streams in: the first part whose
/// `Content-Disposition` names a file (or the field `files`, as clients send it), or else the
/// first part. `nil` for any other content type (the body is the file).
struct MultipartFile {
    private enum State { case preamble, headers, body, skipping, done }
    private var state = State.preamble
    private var buffer: [UInt8] = []
    /// `--boundary` (the first delimiter has no CRLF before it).
    private let opening: [UInt8]
    /// `\r\n--boundary`.
    private let delimiter: [UInt8]
    private var sawFile = false

    init?(contentType: String?) throws {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/form-data") else { return nil }
        guard let boundary = contentType.split(separator: ";").map({ $0.trimmingCharacters(in: .whitespaces) })
            .first(where: { $0.lowercased().hasPrefix("boundary=") })?.dropFirst(9).trimmingCharacters(in: CharacterSet(charactersIn: "\"")),
            !boundary.isEmpty, boundary.utf8.count <= 200 else {
            throw RecordSyncError(.badRequest, "multipart/form-data upload without a boundary")
        }
        opening = Array("--\(boundary)".utf8)
        delimiter = Array("\r\n--\(boundary)".utf8)
    }

    /// The file's bytes in `chunk` that are known to be the file's (a possible delimiter's
    /// start is held back until the next chunk).
    mutating func take(_ chunk: ByteBuffer) throws -> [ByteBuffer] {
        buffer.append(contentsOf: chunk.readableBytesView)
        var out: [ByteBuffer] = []
        while true {
            switch state {
            case .done:
                buffer.removeAll()
                return out
            case .preamble:
                guard let found = Self.find(opening, in: buffer) else {
                    if buffer.count > 64 * 1024 { throw RecordSyncError(.badRequest, "the multipart body has no part") }
                    return out
                }
                buffer.removeFirst(found + opening.count)
                state = .headers
            case .headers:
                guard let end = Self.find(Array("\r\n\r\n".utf8), in: buffer) else {
                    if buffer.count > 64 * 1024 { throw RecordSyncError(.badRequest, "a multipart part's headers are too long") }
                    return out
                }
                let headers = String(decoding: buffer[..<end], as: UTF8.self).lowercased()
                buffer.removeFirst(end + 4)
                if headers.hasPrefix("--") { state = .done; continue }  // the closing delimiter
                let isFile = headers.contains("filename=") || headers.contains("name=\"files\"")
                state = isFile || !headers.contains("content-disposition") ? .body : .skipping
                if state == .body { sawFile = true }
            case .body, .skipping:
                if let found = Self.find(delimiter, in: buffer) {
                    if state == .body {
                        out.append(ByteBuffer(bytes: buffer[..<found]))
                        state = .done
                    } else {
                        buffer.removeFirst(found + 2)  // keep `--boundary` for the preamble step
                        state = .preamble
                    }
                    continue
                }
                let safe = buffer.count - (delimiter.count - 1)
                if safe > 0 {
                    if state == .body { out.append(ByteBuffer(bytes: buffer[..<safe])) }
                    buffer.removeFirst(safe)
                }
                return out
            }
        }
    }

    /// The end of the body: the file must have ended with its delimiter.
    mutating func finish() throws -> [ByteBuffer] {
        guard state == .done, sawFile else {
            throw RecordSyncError(.badRequest, "the multipart body ended before its file part did")
        }
        return []
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count, let first = needle.first else { return nil }
        var index = 0
        let last = haystack.count - needle.count
        while index <= last {
            if haystack[index] == first, haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
