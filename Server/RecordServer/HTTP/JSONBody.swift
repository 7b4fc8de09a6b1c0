import Foundation
import Hummingbird
import RecordModel

/// Reading request bodies and writing JSON responses.
enum JSONBody {
    /// Decodes a request body.
    ///
    /// - Throws: `BAD_REQUEST` whose reason names the offending part (`operations[2].operationType`).
    static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        guard !data.isEmpty else { throw RecordSyncError(.badRequest, "the request body is empty; send a JSON object") }
        do {
            return try JSONValueDecoder().decode(type, from: data)
        } catch let error as DecodingError {
            throw RecordSyncError(.badRequest, reason(for: error))
        } catch {
            throw RecordSyncError(.badRequest, "the request body is not valid JSON")
        }
    }

    /// A reason naming where decoding failed and why.
    static func reason(for error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            var text = ""
            for key in codingPath {
                if let index = key.intValue { text += "[\(index)]" } else { text += text.isEmpty ? key.stringValue : ".\(key.stringValue)" }
            }
            return text.isEmpty ? "the request body" : text
        }
        switch error {
        case .keyNotFound(let key, let context):
            let parent = path(context.codingPath)
            return parent == "the request body" ? "missing field \(key.stringValue)" : "\(parent): missing field \(key.stringValue)"
        case .valueNotFound(_, let context):
            return "\(path(context.codingPath)): a value is required, not null"
        case .typeMismatch(let type, let context):
            return "\(path(context.codingPath)): expected \(describe(type))"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                if let parse = context.underlyingError as? JSONParseError { return "the request body is not valid JSON: \(parse)" }
                return "the request body is not valid JSON"
            }
            var detail = context.debugDescription
            if let range = detail.range(of: "from invalid String value ") {
                detail = "unknown value '\(detail[range.upperBound...])'"
            }
            return "\(path(context.codingPath)): \(detail)"
        @unknown default:
            return "the request body could not be read"
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        case is Int.Type, is Int64.Type: "an integer"
        case is Double.Type: "a number"
        default:
            String(describing: type).hasPrefix("Array") ? "an array" : "an object"
        }
    }

    /// What the answer to the request being handled depends on, set once by the routes.
    struct Context: Sendable {
        /// Whether the request accepts a gzip-compressed answer (its `Accept-Encoding`).
        var acceptsGzip = false
        /// `scheme://host` the request reached the server at, for the URLs answers carry.
        var base = ""
        /// How stored assets get their `downloadURL` (``WireForm/assetLinks``).
        var assetLinks: AssetLinks?
        /// CloudKit JS's `numbersAsStrings` (``WireForm/numbersAsStrings``).
        var numbersAsStrings = false
    }

    /// The context of the request being answered. One task-local for all of it: set once
    /// around an endpoint, and the wire options only around each answer's (synchronous) encoding.
    @TaskLocal static var context = Context()

    /// Whether the request being answered accepts a gzip-compressed answer.
    static var acceptsGzip: Bool { context.acceptsGzip }

    /// A JSON response; gzip-compressed (`Content-Encoding: gzip`) when it is at least
    /// ``Gzip/threshold`` bytes and the request accepts gzip (``acceptsGzip``).
    static func response<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok, numbersAsStrings: Bool = false) throws -> Response {
        guard numbersAsStrings else { return try prepared(value, status: status).response }
        var context = self.context
        context.numbersAsStrings = true
        return try $context.withValue(context) { try prepared(value, status: status).response }
    }

    /// ``response(_:status:)``'s status, headers and body, which can make a response later.
    static func prepared<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> PreparedResponse {
        let context = self.context
        let data = try WireForm.$assetLinks.withValue(context.assetLinks) {
            try WireForm.$numbersAsStrings.withValue(context.numbersAsStrings) { try JSONValueEncoder().encodeBytes(value) }
        }
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        guard data.count >= Gzip.threshold else {
            return PreparedResponse(status: status, headers: headers, body: ByteBuffer(bytes: data))
        }
        headers[.vary] = "Accept-Encoding"
        guard acceptsGzip else {
            return PreparedResponse(status: status, headers: headers, body: ByteBuffer(bytes: data))
        }
        headers[.contentEncoding] = "gzip"
        return PreparedResponse(status: status, headers: headers, body: ByteBuffer(bytes: Gzip.compress(Data(data))))
    }

    /// Whether an `Accept-Encoding` header accepts gzip: `gzip` (or `x-gzip`) listed without
    /// `q=0`; failing those, `*` without `q=0` (an explicit entry wins over the wildcard).
    static func acceptsGzip(_ header: String?) -> Bool {
        guard let header else { return false }
        var explicit: Bool?, wildcard: Bool?
        for item in header.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let coding = parts.first else { continue }
            let accepted = !parts.dropFirst().contains { parameter in
                guard parameter.hasPrefix("q=") else { return false }
                return (Double(parameter.dropFirst(2)) ?? 1) == 0
            }
            switch coding {
            case "gzip", "x-gzip": explicit = (explicit ?? false) || accepted
            case "*": wildcard = (wildcard ?? false) || accepted
            default: continue
            }
        }
        return explicit ?? wildcard ?? false
    }

    /// The JSON error response for `error`, with the HTTP status of its code.
    static func response(for error: RecordSyncError) -> Response {
        RequestNotes.failed(error.code.rawValue)
        let data = (try? JSONValueEncoder().encode(ErrorBody(error))) ?? Data()
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if let retryAfter = error.retryAfter { headers[.retryAfter] = String(Int(retryAfter.rounded(.up))) }
        return Response(status: .init(code: error.code.httpStatus), headers: headers,
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// An answer encoded ahead of being sent.
struct PreparedResponse: Sendable {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    var body: ByteBuffer

    var response: Response {
        Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body))
    }
}
