import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOFoundationCompat
import RecordModel

extension HTTPTransport {
    /// POSTs the file at `file` to `url` (an upload URL: no bearer token), streamed from disk,
    /// and answers the JSON it returns.
    func upload(file: URL, to url: String) async throws -> Data {
        let size = try (FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value ?? 0
        let status: Int, body: Data
        if let session {
            var request = URLRequest(url: try Self.url(url))
            request.httpMethod = "POST"
            request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
            request.timeoutInterval = 600
            do {
                let (data, response) = try await session.upload(for: request, fromFile: file)
                (status, body) = ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
            } catch {
                throw RecordSyncError(.networkFailure, "asset upload: \(error.localizedDescription)", retryAfter: 1)
            }
        } else {
            guard let handle = FileHandle(forReadingAtPath: file.path) else {
                throw RecordSyncError(.badRequest, "the asset file \(file.path) cannot be read")
            }
            defer { try? handle.close() }
            // Read as the request asks for more: never more than a piece ahead of the socket.
            let file = UncheckedFileHandle(handle: handle)
            let chunks = AsyncThrowingStream<ByteBuffer, any Error> {
                // Straight into the buffer the request sends.
                var buffer = ByteBufferAllocator().buffer(capacity: 1 << 20)
                let count = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 1 << 20) { raw in
                    let count = Foundation.read(file.handle.fileDescriptor, raw.baseAddress, raw.count)
                    guard count >= 0 else { throw RecordSyncError(.badRequest, "the asset file cannot be read (errno \(errno))") }
                    return count
                }
                return count == 0 ? nil : buffer
            }
            var request = HTTPClientRequest(url: url)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/octet-stream")
            request.body = .stream(chunks, length: .known(size))
            (status, body) = try await Self.exchange(request, timeout: .minutes(30), what: "asset upload")
        }
        guard status == 200 else { throw Self.error(body, status: status, what: "asset upload") }
        return body
    }

    /// GETs `url` into the file at `destination` (written whole or not at all), streamed.
    func download(_ url: String, to destination: URL) async throws {
        let partial = destination.appendingPathExtension("partial-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: partial) }
        guard FileManager.default.createFile(atPath: partial.path, contents: nil), let handle = FileHandle(forWritingAtPath: partial.path) else {
            throw RecordSyncError(.internalError, "cannot write \(partial.path)")
        }
        defer { try? handle.close() }
        if let session {
            do {
                let (file, response) = try await session.download(for: URLRequest(url: try Self.url(url)))
                let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                guard status == 200 else { throw Self.error((try? Data(contentsOf: file)) ?? Data(), status: status, what: "asset download") }
                try? FileManager.default.removeItem(at: destination)
                try FileManager.default.moveItem(at: file, to: destination)
                return
            } catch let error as RecordSyncError {
                throw error
            } catch {
                throw RecordSyncError(.networkFailure, "asset download: \(error.localizedDescription)", retryAfter: 1)
            }
        }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(HTTPClientRequest(url: url), timeout: .minutes(30))
        } catch {
            throw RecordSyncError(.networkFailure, "asset download: \(error)", retryAfter: 1)
        }
        guard response.status.code == 200 else {
            throw Self.error(Data(buffer: (try? await response.body.collect(upTo: 1 << 20)) ?? ByteBuffer()), status: Int(response.status.code), what: "asset download")
        }
        do {
            // Not synced: a downloaded copy can be fetched again.
            for try await chunk in response.body { try handle.write(contentsOf: chunk.readableBytesView) }
        } catch {
            throw RecordSyncError(.networkFailure, "asset download: \(error)", retryAfter: 1)
        }
        try? FileManager.default.removeItem(at: destination)
        try FileManager.default.moveItem(at: partial, to: destination)
    }

    private static func url(_ text: String) throws -> URL {
        guard let url = URL(string: text) else { throw RecordSyncError(.badRequest, "\(text) is not a URL") }
        return url
    }

    /// The server's error in an answer, or a network failure naming the status.
    static func error(_ body: Data, status: Int, what: String) -> RecordSyncError {
        (try? JSONValueDecoder().decode(ErrorBody.self, from: body))?.error
            ?? RecordSyncError(.networkFailure, "\(what): HTTP \(status) without a RecordSync error body", retryAfter: 1)
    }
}

extension HTTPTransport {
    /// GETs `url` (no bearer token: a webcourier URL) and answers its body.
    func get(_ url: String, timeout: Duration) async throws -> Data {
        let status: Int, body: Data
        if let session {
            var request = URLRequest(url: try Self.url(url))
            request.timeoutInterval = Double(timeout.components.seconds)
            do {
                let (data, response) = try await Self.load(request, in: session)
                (status, body) = ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
            } catch {
                throw RecordSyncError(.networkFailure, "\(url): \(error.localizedDescription)", retryAfter: 1)
            }
        } else {
            (status, body) = try await Self.exchange(HTTPClientRequest(url: url), timeout: .seconds(timeout.components.seconds), what: url)
        }
        guard status == 200 else { throw Self.error(body, status: status, what: "GET \(url)") }
        return body
    }

    /// A request through ``client`` with a small answer: its status and body.
    private static func exchange(_ request: HTTPClientRequest, timeout: TimeAmount, what: String) async throws -> (Int, Data) {
        do {
            let response = try await client.execute(request, timeout: timeout)
            return (Int(response.status.code), Data(buffer: try await response.body.collect(upTo: 1 << 20)))
        } catch {
            throw RecordSyncError(.networkFailure, "\(what): \(error)", retryAfter: 1)
        }
    }
}

/// A file handle read from one task at a time (the upload's body, pulled piece by piece).
private struct UncheckedFileHandle: @unchecked Sendable {
    let handle: FileHandle
}
