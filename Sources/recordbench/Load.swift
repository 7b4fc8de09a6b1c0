import AsyncHTTPClient
import Foundation
import NIOCore
import RecordModel

/// `recordbench load`: many connections at once against a server process, each running a
/// realistic mix for a set time, then a final read that looks for every acknowledged write.
///
/// Each connection is a worker with a zone of its own in the private database of one of the
/// users (several workers a user): it saves Artists with Artworks that hold `DELETE_SELF`
/// references to them, updates with change tags, looks records up, queries by reference, pages
/// through its zone's changes, deletes Artists (a cascade), uploads and saves assets, and races
/// the other workers of its user on one shared record (a `CONFLICT` there is expected). Every
/// other error is unexpected. At the end each worker reads back what it was told was written:
/// each record it saved, at the change tag it was last given, and each one deleted, gone; a
/// difference is a lost write. The server's rate limit is set far above the offered load.
enum Load {
    struct Options: Sendable {
        var connections = 64
        var users = 8
        var duration: Duration = .seconds(60)
        var seed: UInt64 = 1
    }

    /// What one worker saw.
    struct Tally: Sendable {
        var requests = 0
        var latencies: [String: [Double]] = [:]
        var expected: [String: Int] = [:]
        var unexpected: [String: Int] = [:]
        var lost: [String] = []
        var acknowledged = 0

        mutating func merge(_ other: Tally) {
            requests += other.requests
            for (kind, values) in other.latencies { latencies[kind, default: []] += values }
            for (code, count) in other.expected { expected[code, default: 0] += count }
            for (code, count) in other.unexpected { unexpected[code, default: 0] += count }
            lost += other.lost
            acknowledged += other.acknowledged
        }
    }

    static func run(_ options: Options, executable: URL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()) async throws -> Measurement {
        try await BenchStorage.with { storage in
            let server = try await Memory.ServerProcess(storage, executable: executable, arguments: [
                "--users", "\(options.users)", "--rate-limit", "1000000", "--rate-burst", "1000000",
            ])
            defer { server.stop() }
            var configuration = HTTPClient.Configuration()
            configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: options.connections + 8)
            let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
            defer { _ = http.shutdown() }
            let base = server.url.absoluteString + "/database/1/iCloud.bench/development/private/"
            let clients = server.tokens.map { LoadClient(http: http, base: base, token: $0, assets: server.url.absoluteString) }
            // Each user's shared record, which the workers of that user race to update.
            for client in clients {
                _ = try await client.post("records/modify", #"{"operations":[{"operationType":"forceReplace","record":{"recordName":"counter","recordType":"Counter","fields":{"n":{"value":0}}}}]}"#)
            }
            say("  \(options.connections) connections, \(options.users) users, \(options.duration)…")
            let deadline = ContinuousClock.now + options.duration
            let started = ContinuousClock.now
            var total = Tally()
            try await withThrowingTaskGroup(of: Tally.self) { group in
                for index in 0..<options.connections {
                    let client = clients[index % clients.count]
                    group.addTask {
                        var worker = LoadWorker(index: index, client: client, seed: options.seed &+ UInt64(index))
                        try await worker.start()
                        while ContinuousClock.now < deadline { try await worker.step() }
                        try await worker.verify()
                        return worker.tally
                    }
                }
                for try await tally in group { total.merge(tally) }
            }
            let elapsed = (ContinuousClock.now - started).seconds
            let rate = Double(total.requests) / elapsed
            let all = total.latencies.values.flatMap { $0 }
            let unexpected = total.unexpected.values.reduce(0, +)
            var notes = String(format: "%d requests; latency p50 %.1f ms, p95 %.1f, p99 %.1f; ", total.requests,
                               percentile(all, 50) * 1000, percentile(all, 95) * 1000, percentile(all, 99) * 1000)
            notes += total.latencies.keys.sorted().map { kind in
                String(format: "%@ p50 %.1f p99 %.1f", kind, percentile(total.latencies[kind]!, 50) * 1000, percentile(total.latencies[kind]!, 99) * 1000)
            }.joined(separator: ", ")
            notes += "; expected: " + (total.expected.isEmpty ? "none" : total.expected.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", "))
            notes += "; unexpected errors: \(unexpected)" + (unexpected == 0 ? "" : " (" + total.unexpected.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ") + ")")
            notes += "; \(total.acknowledged) writes acknowledged, \(total.lost.count) lost" + (total.lost.isEmpty ? "" : " (" + total.lost.prefix(5).joined(separator: ", ") + ")")
            return Measurement(scenario: "load", unit: "requests/s", figure: rate, floor: nil, ratio: Double(unexpected + total.lost.count),
                               target: "0 unexpected errors, 0 lost writes", met: unexpected == 0 && total.lost.isEmpty && total.acknowledged > 0,
                               notes: notes)
        }
    }
}

/// One user's plain HTTP to the server.
struct LoadClient: Sendable {
    var http: HTTPClient
    var base: String
    var token: String
    /// The server's root (upload URLs are absolute).
    var assets: String

    /// POSTs a JSON body to an endpoint: HTTP status and parsed answer.
    func post(_ endpoint: String, _ body: String) async throws -> (status: Int, json: JSONValue) {
        var request = HTTPClientRequest(url: base + endpoint)
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await http.execute(request, timeout: .seconds(120))
        let data = try await response.body.collect(upTo: 64 << 20)
        return (Int(response.status.code), (try? JSONValue.parse(Data(buffer: data))) ?? .null)
    }

    /// POSTs bytes to an upload URL.
    func upload(_ bytes: Data, to url: String) async throws -> (status: Int, json: JSONValue) {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.body = .bytes(ByteBuffer(data: bytes))
        let response = try await http.execute(request, timeout: .seconds(120))
        let data = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), (try? JSONValue.parse(Data(buffer: data))) ?? .null)
    }
}

/// One connection's loop (``Load``).
struct LoadWorker {
    let index: Int
    let client: LoadClient
    var random: SplitMix
    var tally = Load.Tally()
    /// The records this worker was told are saved, by name: their last change tag.
    var live: [String: String] = [:]
    /// Artists it saved, still live, with their Artworks.
    var artists: [String: [String]] = [:]
    /// The records it was told are deleted.
    var gone: Set<String> = []
    var counter = 0
    var syncToken: String?
    var zone: String { "z\(index)" }

    init(index: Int, client: LoadClient, seed: UInt64) {
        self.index = index
        self.client = client
        self.random = SplitMix(seed: seed)
    }

    mutating func start() async throws {
        let client = client, zone = zone
        let created = try await timed("zones") {
            try await client.post("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"\#(zone)"}}}]}"#)
        }
        guard created.status == 200 else { throw BenchError("worker \(index) could not create its zone: \(created.json)") }
    }

    /// One operation of the mix.
    mutating func step() async throws {
        let roll = Int(random.next() % 100)
        switch roll {
        case 0..<22: try await saveArtist()
        case 22..<36: try await update()
        case 36..<52: try await lookup()
        case 52..<62: try await query()
        case 62..<76: try await changes()
        case 76..<84: try await cascade()
        case 84..<90: try await asset()
        default: try await race()
        }
    }

    /// Times a request and counts it; an HTTP error status other than the expected ones is
    /// counted as unexpected by its code.
    mutating func timed(_ kind: String, _ body: () async throws -> (status: Int, json: JSONValue)) async throws -> (status: Int, json: JSONValue) {
        let start = ContinuousClock.now
        let answer = try await body()
        tally.latencies[kind, default: []].append((ContinuousClock.now - start).seconds)
        tally.requests += 1
        if answer.status != 200 {
            tally.unexpected["\(kind) \(answer.status) \(answer.json["serverErrorCode"]?.stringValue ?? "")", default: 0] += 1
        }
        return answer
    }

    /// Notes each record result of a modify: tags of saves, names deleted; per-record errors
    /// are unexpected unless `expect` names their code.
    mutating func note(_ kind: String, _ answer: (status: Int, json: JSONValue), expect: Set<String> = []) -> Bool {
        guard answer.status == 200, case .array(let records)? = answer.json["records"] else { return false }
        var ok = true
        for result in records {
            if let code = result["serverErrorCode"]?.stringValue {
                ok = false
                if expect.contains(code) { tally.expected[code, default: 0] += 1 } else { tally.unexpected["\(kind) \(code)", default: 0] += 1 }
                continue
            }
            guard let name = result["recordName"]?.stringValue else { continue }
            tally.acknowledged += 1
            if result["deleted"] == .bool(true) {
                live[name] = nil
                gone.insert(name)
            } else if let tag = result["recordChangeTag"]?.stringValue {
                live[name] = tag
                gone.remove(name)
            }
        }
        return ok
    }

    static func artwork(_ name: String, artist: String, _ i: Int) -> String {
        #"{"operationType":"forceReplace","record":{"recordName":"\#(name)","recordType":"Artwork","fields":{"artist":{"value":{"recordName":"\#(artist)","action":"DELETE_SELF"}},"title":{"value":"title \#(i)"},"year":{"value":\#(1800 + i % 200)},"price":{"value":\#(Double(i) / 3)}}}}"#
    }

    /// An Artist and four Artworks referring to it, in one atomic batch.
    mutating func saveArtist() async throws {
        counter += 1
        let artist = "a\(index)-\(counter)"
        let works = (0..<4).map { "\(artist)-w\($0)" }
        var operations = [#"{"operationType":"forceReplace","record":{"recordName":"\#(artist)","recordType":"Artist","fields":{"name":{"value":"artist \#(counter)"}}}}"#]
        operations += works.enumerated().map { Self.artwork($1, artist: artist, counter * 4 + $0) }
        let client = client, zone = zone
        let answer = try await timed("save") {
            try await client.post("records/modify", #"{"zoneID":{"zoneName":"\#(zone)"},"operations":[\#(operations.joined(separator: ","))]}"#)
        }
        if note("save", answer) { artists[artist] = works }
    }

    /// An update of a live record with its change tag: never a conflict (the worker owns it).
    mutating func update() async throws {
        guard let name = live.keys.sorted().randomElement(using: &random) else { return try await saveArtist() }
        let tag = live[name]!
        let type = artists[name] != nil ? "Artist" : name.contains("-w") ? "Artwork" : "Photo"
        let client = client, zone = zone, counter = counter
        let answer = try await timed("update") {
            try await client.post("records/modify", #"{"zoneID":{"zoneName":"\#(zone)"},"operations":[{"operationType":"update","record":{"recordName":"\#(name)","recordType":"\#(type)","recordChangeTag":"\#(tag)","fields":{"note":{"value":"edited \#(counter)"}}}}]}"#)
        }
        _ = note("update", answer)
    }

    /// Up to 20 live records looked up: each must come back at the tag last acknowledged.
    mutating func lookup() async throws {
        let names = Array(live.keys.sorted().shuffled(using: &random).prefix(20))
        guard !names.isEmpty else { return try await saveArtist() }
        let client = client, zone = zone
        let answer = try await timed("lookup") {
            try await client.post("records/lookup", #"{"zoneID":{"zoneName":"\#(zone)"},"records":[\#(names.map { #"{"recordName":"\#($0)"}"# }.joined(separator: ","))]}"#)
        }
        guard answer.status == 200, case .array(let records)? = answer.json["records"] else { return }
        for (name, result) in zip(names, records) where result["recordChangeTag"]?.stringValue != live[name] {
            tally.unexpected["lookup stale or missing", default: 0] += 1
            tally.lost.append("\(name) during the run: \(result)")
        }
    }

    /// The Artworks of one live Artist, by reference: exactly its four.
    mutating func query() async throws {
        guard let artist = artists.keys.sorted().randomElement(using: &random) else { return try await saveArtist() }
        let client = client, zone = zone
        let answer = try await timed("query") {
            try await client.post("records/query", #"{"zoneID":{"zoneName":"\#(zone)"},"query":{"recordType":"Artwork","filterBy":[{"fieldName":"artist","comparator":"EQUALS","fieldValue":{"value":{"recordName":"\#(artist)"},"type":"REFERENCE"}}]}}"#)
        }
        if answer.status == 200, case .array(let records)? = answer.json["records"], records.count != 4 {
            tally.unexpected["query found \(records.count), not 4", default: 0] += 1
        }
    }

    /// The zone's changes since the worker's last token, every page.
    mutating func changes() async throws {
        while true {
            let body = syncToken.map { #"{"zoneID":{"zoneName":"\#(zone)"},"syncToken":"\#($0)","resultsLimit":200}"# }
                ?? #"{"zoneID":{"zoneName":"\#(zone)"},"resultsLimit":200}"#
            let client = client
            let answer = try await timed("changes") { try await client.post("records/changes", body) }
            guard answer.status == 200 else { return }
            syncToken = answer.json["syncToken"]?.stringValue
            if answer.json["moreComing"] != .bool(true) { return }
        }
    }

    /// An Artist deleted: its four Artworks go with it.
    mutating func cascade() async throws {
        guard let artist = artists.keys.sorted().randomElement(using: &random) else { return try await saveArtist() }
        let client = client, zone = zone
        let answer = try await timed("cascade") {
            try await client.post("records/modify", #"{"zoneID":{"zoneName":"\#(zone)"},"operations":[{"operationType":"forceDelete","record":{"recordName":"\#(artist)"}}]}"#)
        }
        guard note("cascade", answer), case .array(let cascaded)? = answer.json["records"]?[0]?["cascadedRecordNames"] else { return }
        let works = artists.removeValue(forKey: artist) ?? []
        let names = Set(cascaded.compactMap(\.stringValue))
        if names != Set(works) { tally.unexpected["cascade removed \(names.count), not \(works.count)", default: 0] += 1 }
        for name in names {
            live[name] = nil
            gone.insert(name)
        }
    }

    /// 16 KiB uploaded, then saved in a Photo.
    mutating func asset() async throws {
        counter += 1
        let name = "photo\(index)-\(counter)"
        let client = client, zone = zone
        let grant = try await timed("asset") {
            try await client.post("assets/upload", #"{"zoneID":{"zoneName":"\#(zone)"},"tokens":[{"recordName":"\#(name)","recordType":"Photo","fieldName":"image"}]}"#)
        }
        guard grant.status == 200, let url = grant.json["tokens"]?[0]?["url"]?.stringValue else { return }
        var bytes = Data(count: 16 * 1024)
        for position in stride(from: 0, to: bytes.count, by: 8) { bytes[position] = UInt8(truncatingIfNeeded: random.next()) }
        let uploaded = try await timed("asset") { try await client.upload(bytes, to: url) }
        guard uploaded.status == 200, let file = uploaded.json["singleFile"] else { return }
        let value = try file.serializedString()
        let saved = try await timed("asset") {
            try await client.post("records/modify", #"{"zoneID":{"zoneName":"\#(zone)"},"operations":[{"operationType":"forceReplace","record":{"recordName":"\#(name)","recordType":"Photo","fields":{"image":{"value":\#(value)}}}}]}"#)
        }
        _ = note("asset", saved)
    }

    /// The user's shared record read, then updated with the tag read: another worker of the
    /// same user may have changed it in between (`CONFLICT`, expected).
    mutating func race() async throws {
        let client = client
        let read = try await timed("race") { try await client.post("records/lookup", #"{"records":[{"recordName":"counter"}]}"#) }
        guard read.status == 200, let tag = read.json["records"]?[0]?["recordChangeTag"]?.stringValue,
              case .int(let n)? = read.json["records"]?[0]?["fields"]?["n"]?["value"] else { return }
        let answer = try await timed("race") {
            try await client.post("records/modify", #"{"operations":[{"operationType":"update","record":{"recordName":"counter","recordType":"Counter","recordChangeTag":"\#(tag)","fields":{"n":{"value":\#(n + 1)}}}}]}"#)
        }
        // The counter is shared: its tag is not this worker's to check later.
        guard answer.status == 200, case .array(let records)? = answer.json["records"], let result = records.first else { return }
        if let code = result["serverErrorCode"]?.stringValue {
            if code == "CONFLICT" { tally.expected[code, default: 0] += 1 } else { tally.unexpected["race \(code)", default: 0] += 1 }
        }
    }

    /// Reads back everything acknowledged: every live record at its last tag, every deleted one gone.
    mutating func verify() async throws {
        let names = live.keys.sorted() + gone.sorted()
        for first in stride(from: 0, to: names.count, by: 200) {
            let batch = Array(names[first..<min(first + 200, names.count)])
            let answer = try await client.post("records/lookup", #"{"zoneID":{"zoneName":"\#(zone)"},"records":[\#(batch.map { #"{"recordName":"\#($0)"}"# }.joined(separator: ","))]}"#)
            guard answer.status == 200, case .array(let records)? = answer.json["records"], records.count == batch.count else {
                throw BenchError("the final read of worker \(index) failed: \(answer.json)")
            }
            for (name, result) in zip(batch, records) {
                if let tag = live[name] {
                    if result["recordChangeTag"]?.stringValue != tag { tally.lost.append("\(name) (tag \(tag)): \(result)") }
                } else if result["serverErrorCode"]?.stringValue != "NOT_FOUND" {
                    tally.lost.append("\(name) deleted but \(result)")
                }
            }
        }
    }
}

extension JSONValue {
    var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    subscript(index: Int) -> JSONValue? {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }
}
