import AsyncHTTPClient
import Foundation
import GRDB
import NIOCore
import NIOHTTP1
import PostgresNIO
import RecordClient
import RecordModel
import Synchronization

/// `initial-sync`: a plain HTTP client (AsyncHTTPClient, each page parsed whole by a plain JSON
/// parser, not the client library) reads a zone from scratch through `records/changes`, page
/// after page, as an app that does not use RecordSync's library would: in RecordSync's compact
/// form (`recordSyncCompact`, the figure) and in CloudKit's (in the notes). The parser is
/// `JSONValue.parse` (RecordModel's byte parser into an untyped tree); Foundation's
/// `JSONSerialization` on Linux made the client three quarters of the time. The floor is the
/// same rows read by one prepared statement on the server's own engine, in the same run; beside
/// it, when a Kinto is given, a 1,000-record zone is read side by side with Kinto reading the
/// same records through its own feed (`GET …/records?_since=0`).
enum InitialSync {
    /// The page size asked for, in either form: the most `records/changes` answers
    /// (`StoreLimits.maximumChangeResultsLimit`).
    static let pageSize = 1000

    static func run(_ scale: Scale, repetitions: Int) async throws -> Measurement {
        let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        defer { _ = http.shutdown() }
        let count = scale.initialSyncRecords
        return try await withBenchServer { server in
            let database = server.container.privateCloudDatabase
            let big = ZoneID(zoneName: "A"), small = ZoneID(zoneName: "B")
            _ = try await database.modifyRecordZones(saving: [RecordZone(zoneID: big), RecordZone(zoneID: small)], deleting: [])
            say("  seeding \(count) records…")
            try await Workload.save(database, count: count, zone: big) { $0.map { Workload.artwork($0, artists: 1000) } }
            try await Workload.save(database, count: 1_000, zone: small) { $0.map { Workload.artwork($0, artists: 1000) } }
            try await server.storage.analyze()
            let reader = ChangesReader(http: http, server: server)
            // Warm both paths once.
            _ = try await reader.read(zone: small.zoneName, compact: true)
            _ = try await reader.read(zone: small.zoneName, compact: false)
            _ = try await Self.floor(server, zone: "B", expect: 1_000)

            // Each repetition reads the zone in the compact form (the figure) and in CloudKit's
            // form (for the notes), between two floors.
            var figures: [Double] = [], floors: [Double] = [], cloudKit: [Double] = [], pages = 0, bytes = 0, cloudKitBytes = 0, parsed: [Double] = []
            for _ in 0..<repetitions {
                reader.parsing.withLock { $0 = 0 }
                let before = try await Self.floor(server, zone: "A", expect: count)
                var read = (records: 0, pages: 0, bytes: 0)
                let elapsed = try await seconds { read = try await reader.read(zone: big.zoneName, compact: true) }
                guard read.records == count else { throw BenchError("read \(read.records) records, not \(count)") }
                parsed.append(reader.parsing.withLock { $0 } / elapsed)
                var full = (records: 0, pages: 0, bytes: 0)
                let fullElapsed = try await seconds { full = try await reader.read(zone: big.zoneName, compact: false) }
                guard full.records == count else { throw BenchError("read \(full.records) records, not \(count)") }
                let after = try await Self.floor(server, zone: "A", expect: count)
                figures.append(Double(count) / elapsed)
                cloudKit.append(Double(count) / fullElapsed)
                floors.append(Double(count) / Floor.bracketed(seconds: before, after))
                (pages, bytes, cloudKitBytes) = (read.pages, read.bytes, full.bytes)
            }
            let ratio = pairedRatio(figures, over: floors)
            // 1,000 records, many rounds.
            var small1k: [Double] = []
            for _ in 0..<31 {
                small1k.append(try await seconds {
                    let read = try await reader.read(zone: small.zoneName, compact: true)
                    guard read.records == 1_000 else { throw BenchError("read \(read.records) records, not 1000") }
                })
            }
            let notes = String(format: "compact form: %d pages, %.0f bytes a record, %.0f%% of the time parsing JSON (client); CloudKit's form: %.0f records/s (%.3f of the floor), %.0f bytes a record; 1,000 records in %.2f ms (p90 %.2f)",
                               pages, Double(bytes) / Double(count), median(parsed) * 100, median(cloudKit), pairedRatio(cloudKit, over: floors),
                               Double(cloudKitBytes) / Double(count), median(small1k) * 1000, percentile(small1k, 90) * 1000)
            let met = ratio >= 0.30
            return Measurement(scenario: "initial-sync", unit: "records/s", figure: median(figures), floor: median(floors), ratio: ratio,
                               target: "≥ 0.30 of floor", met: met, notes: notes)
        }
    }

    /// The floor: every row of the zone read by one prepared statement on the server's engine,
    /// each column into a Swift value, in feed order. Returns the seconds it took.
    static func floor(_ server: BenchServer, zone: String, expect: Int) async throws -> Double {
        if let url = server.storage.databaseURL {
            return try await BenchStorage.withAdminConnection(url) { connection in
                let zoneKey = try await connection.query("SELECT id FROM zones WHERE name = \(zone)", logger: BenchStorage.logger)
                    .collect().first!.decode(Int64.self)
                let start = ContinuousClock.now
                var rows = 0
                let statement = FloorRows(zone: zoneKey)
                for try await row in try await connection.execute(statement, logger: BenchStorage.logger) {
                    _ = row
                    rows += 1
                }
                guard rows == expect else { throw BenchError("the floor read \(rows) rows, not \(expect)") }
                return (ContinuousClock.now - start).seconds
            }
        }
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: server.directory + "/server/records.sqlite", configuration: configuration)
        defer { try? queue.close() }
        return try await queue.read { db in
            let zoneKey = try Int64.fetchOne(db, sql: "SELECT id FROM zones WHERE name = ?", arguments: [zone])!
            let start = ContinuousClock.now
            let statement = try db.makeStatement(sql: Self.floorSQL)
            let cursor = try Row.fetchCursor(statement, arguments: [zoneKey])
            var rows = 0
            while let row = try cursor.next() {
                let name: String = row[0], type: String = row[1], tag: String = row[2], fields: String = row[3]
                let createdAt: Int64 = row[4], createdBy: String = row[5], modifiedAt: Int64 = row[6], modifiedBy: String = row[7], seq: Int64 = row[8]
                if name.isEmpty && type.isEmpty && tag.isEmpty && fields.isEmpty && createdBy.isEmpty && modifiedBy.isEmpty && createdAt + modifiedAt + seq == 0 { rows -= 1 }
                rows += 1
            }
            guard rows == expect else { throw BenchError("the floor read \(rows) rows, not \(expect)") }
            return (ContinuousClock.now - start).seconds
        }
    }

    static let floorSQL = "SELECT name, type, tag, fields, created_at, created_by, modified_at, modified_by, seq FROM records WHERE zone_id = ? ORDER BY seq"

    struct FloorRows: PostgresPreparedStatement {
        static let sql = "SELECT name, type, tag, fields, created_at, created_by, modified_at, modified_by, seq FROM records WHERE zone_id = $1 ORDER BY seq"
        typealias Row = (String, String, String, String, Int64, String, Int64, String, Int64)
        var zone: Int64
        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(zone)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }
}

/// Reads a zone's changes from scratch with plain HTTP: POST `records/changes` with the last
/// page's `syncToken` until `moreComing` is false, each answer parsed whole.
///
/// The reader asks for the next page before parsing this one. `records/changes` writes
/// `moreComing` and `syncToken` first (docs/protocol.md), so reading them takes a look at the
/// answer's first bytes, and the server works on the next page while the client parses this
/// one. An answer whose head is not in that form is parsed first, and its token taken from
/// the parsed page.
///
/// The client runs on threads of its own, as a client in another process would: each answer
/// is gathered on the HTTP client's event loop, which asks for the next page, and parsed on
/// the client's thread, so none of it waits for (or holds) the threads that run the
/// in-process server's tasks.
final class ChangesReader: Sendable {
    /// Seconds the client's thread spent parsing answers, in all.
    let parsing = Mutex<Double>(0)
    let http: HTTPClient
    let url: String
    let token: String

    init(http: HTTPClient, server: BenchServer) {
        self.http = http
        self.url = server.url.absoluteString + "/database/1/iCloud.bench/development/private/records/changes"
        self.token = server.token
    }

    /// One read of a zone, from its first request to its last page parsed.
    private final class Read: @unchecked Sendable {
        let lock = NSLock()
        var counts = (records: 0, pages: 0, bytes: 0)
        var continuation: CheckedContinuation<(records: Int, pages: Int, bytes: Int), any Error>?

        init(_ continuation: CheckedContinuation<(records: Int, pages: Int, bytes: Int), any Error>) {
            self.continuation = continuation
        }

        /// Whether the read has ended (its last page parsed, or failed): nothing more is asked for.
        var ended: Bool { lock.withLock { continuation == nil } }

        func end(_ result: Result<(records: Int, pages: Int, bytes: Int), any Error>) {
            lock.withLock {
                defer { continuation = nil }
                return continuation
            }?.resume(with: result)
        }
    }

    /// Reads the zone, its pages in RecordSync's compact form (`recordSyncCompact`) or in
    /// CloudKit's.
    func read(zone: String, compact: Bool) async throws -> (records: Int, pages: Int, bytes: Int) {
        try await withCheckedThrowingContinuation { continuation in
            ask(Read(continuation), zone: zone, syncToken: nil, compact: compact)
        }
    }

    /// Asks for the page after `syncToken`; once it has come, asks for the next (if its head
    /// says more is coming) and parses it.
    private func ask(_ read: Read, zone: String, syncToken: String?, compact: Bool) {
        guard !read.ended else { return }
        var body: [String: Any] = ["zoneID": ["zoneName": zone], "resultsLimit": InitialSync.pageSize]
        if compact {
            body["recordSyncCompact"] = true
            body["recordSyncCompactVersion"] = 2
        }
        if let syncToken { body["syncToken"] = syncToken }
        let answer: EventLoopFuture<ByteBuffer>
        do {
            answer = try Self.post(http, url, token: token, json: body)
        } catch {
            return read.end(.failure(error))
        }
        answer.whenComplete { result in
            guard case .success(let data) = result else {
                if case .failure(let error) = result { read.end(.failure(error)) }
                return
            }
            let head = Self.head(of: data)
            // Queued before the next page is asked for, so pages are parsed in order: the last
            // is parsed last.
            Self.client.async {
                do {
                    let start = ContinuousClock.now
                    let page = try Self.parse(data)
                    self.parsing.withLock { $0 += (ContinuousClock.now - start).seconds }
                    guard compact == page.compact else { throw BenchError("records/changes answered the wrong form") }
                    if let head {
                        guard head.syncToken == page.syncToken, head.moreComing == page.moreComing else { throw BenchError("the page's head read wrong") }
                    } else if page.moreComing {
                        self.ask(read, zone: zone, syncToken: page.syncToken, compact: compact)
                    }
                    let counts = read.lock.withLock {
                        read.counts.records += page.records
                        read.counts.pages += 1
                        read.counts.bytes += data.readableBytes
                        return read.counts
                    }
                    if !page.moreComing { read.end(.success(counts)) }
                } catch {
                    read.end(.failure(error))
                }
            }
            if let head, head.moreComing { self.ask(read, zone: zone, syncToken: head.syncToken, compact: compact) }
        }
    }

    /// The client's own thread, on which it parses (and frees) each answer.
    private static let client = DispatchQueue(label: "initial-sync client")

    /// What the reader keeps of a page.
    struct Page: Sendable {
        var records: Int
        var syncToken: String
        var moreComing: Bool
        var compact: Bool
    }

    /// The answer parsed whole.
    static func parse(_ data: ByteBuffer) throws -> Page {
        let page = try JSONValue.parse(Data(buffer: data))
        guard case .array(let list)? = page["records"], let syncToken = page["syncToken"]?.stringValue else {
            throw BenchError("records/changes answered no records or no syncToken")
        }
        return Page(records: list.count, syncToken: syncToken, moreComing: page["moreComing"] == .bool(true),
                    compact: page["recordSyncFieldTypes"] != nil)
    }

    /// A request's answer, gathered whole on the HTTP client's event loop: 200 with a body, or
    /// an error.
    static func post(_ http: HTTPClient, _ url: String, token: String, json: [String: Any]) throws -> EventLoopFuture<ByteBuffer> {
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: "Bearer \(token)")
        headers.add(name: "Content-Type", value: "application/json")
        let request = try HTTPClient.Request(url: url, method: .POST, headers: headers,
                                             body: .byteBuffer(ByteBuffer(data: try JSONSerialization.data(withJSONObject: json))))
        return answer(http, request)
    }

    /// `request`'s answer gathered on the event loop: its body if the status is 200.
    static func answer(_ http: HTTPClient, _ request: HTTPClient.Request) -> EventLoopFuture<ByteBuffer> {
        http.execute(request: request, deadline: .now() + .seconds(60)).flatMapThrowing { response in
            let body = response.body ?? ByteBuffer()
            guard response.status == .ok else { throw BenchError("\(request.url) answered \(response.status): \(String(buffer: body))") }
            return body
        }
    }

    /// `moreComing` and `syncToken` from an answer that begins
    /// `{"moreComing":BOOL,"syncToken":"TOKEN"`, else nil. Tokens are base64url: no escapes.
    static func head(of data: ByteBuffer) -> (moreComing: Bool, syncToken: String)? {
        let prefix = data.getString(at: data.readerIndex, length: min(data.readableBytes, 512)) ?? ""
        var rest = Substring(prefix)
        let moreComing: Bool
        if rest.hasPrefix(#"{"moreComing":true,"syncToken":""#) {
            moreComing = true
        } else if rest.hasPrefix(#"{"moreComing":false,"syncToken":""#) {
            moreComing = false
        } else {
            return nil
        }
        rest = rest.dropFirst(moreComing ? 32 : 33)
        guard let end = rest.firstIndex(of: "\""), !rest[..<end].contains("\\") else { return nil }
        return (moreComing, String(rest[..<end]))
    }
}
