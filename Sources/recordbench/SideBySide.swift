import AsyncHTTPClient
import Foundation

/// `kinto`: RecordSync and Kinto 26.5 (its memory backend) side by side, driven by one client
/// of neither: a Python program (the standard library's `http.client` on one kept-alive
/// connection per server, `json.loads` over each whole answer) in a process of its own, run by
/// Kinto's own Python. Each round, on each server in turn (alternating which goes first):
///
/// - **create**: 1,000 Artwork-shaped records (six fields) written into a new zone (Kinto: a new
///   collection) in batches of 400 on both (RecordSync's most operations a request, the batches
///   its client sends; Kinto's `batch_max_requests` is set to match, its default being 25);
/// - **read, CloudKit's form**: the zone read from scratch through `records/changes` page after
///   page, no `resultsLimit` given (Kinto: `GET …/records`, one page);
/// - **read, compact form**: the same through `records/changes` with `recordSyncCompact`
///   (version 2: fields by position);
/// - 100 of the records changed (not timed), then **delta**: the changes since the token (the
///   syncToken of the CloudKit-form read; Kinto: `?_since=` its ETag) read in CloudKit's form.
///
/// Also timed, for the notes: the same zone read through `changes/zone` (CloudKit JS's
/// `fetchRecordZoneChanges`) and `records/query` (a query for every Artwork). Each read is of
/// a zone written in the same round, before any other read of it in that form, so no answer
/// kept from an earlier read can serve it. Each round's zone and collection are deleted after
/// it, so neither server holds more than one round's records.
///
/// Four rows: RecordSync's median time (the figure) against Kinto's (the floor column); the
/// ratio is how many times faster RecordSync is.
enum SideBySide {
    static let records = 1_000, changed = 100, batch = 400

    static func run(_ scale: Scale, repetitions: Int, kinto: String?) async throws -> [Measurement] {
        guard let kinto else {
            throw BenchError("the kinto scenario needs --kinto PATH (a kinto command) or --kinto install (installs Kinto \(Kinto.version) from PyPI into .build/kinto)")
        }
        let executable = try Kinto.executable(kinto)
        let python = (executable as NSString).deletingLastPathComponent + "/python3"
        let rounds = max(3, scale.pairedRounds * 2 + 1)
        let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        defer { _ = http.shutdown() }
        return try await withBenchServer { server in
            try await Kinto.withKinto(executable: executable, http: http) { kintoBase in
                let kintoURL = URL(string: kintoBase)!
                let configuration: [String: Any] = [
                    "rsHost": server.url.host ?? "127.0.0.1", "rsPort": server.url.port ?? 80, "rsToken": server.token,
                    "rsPath": server.url.path + "/database/1/iCloud.bench/development/private",
                    "kintoHost": kintoURL.host ?? "127.0.0.1", "kintoPort": kintoURL.port ?? 80,
                    "records": records, "changed": changed, "batch": batch, "rounds": rounds,
                ]
                let output = try runClient(python: python, configuration: configuration)
                return try measurements(from: output)
            }
        }
    }

    /// Runs the Python client with `configuration` on its standard input; its standard output.
    static func runClient(python: String, configuration: [String: Any]) throws -> Data {
        let script = (NSTemporaryDirectory() as NSString).appendingPathComponent("recordbench-sidebyside-\(UUID().uuidString).py")
        try client.write(toFile: script, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: script) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        input.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: configuration))
        try input.fileHandleForWriting.close()
        let result = output.fileHandleForReading.readDataToEndOfFile()
        let problems = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchError("the side-by-side client failed: \(String(decoding: problems, as: UTF8.self))")
        }
        return result
    }

    /// The rows from the client's timings (seconds per round, per server).
    static func measurements(from output: Data) throws -> [Measurement] {
        guard let times = try JSONSerialization.jsonObject(with: output) as? [String: Any],
              let ours = times["recordsync"] as? [String: [Double]], let theirs = times["kinto"] as? [String: [Double]],
              let bytes = times["bytes"] as? [String: Double] else {
            throw BenchError("the side-by-side client printed no timings")
        }
        for key in ["create", "cloudKit", "compact", "delta", "cloudKitParse", "compactParse", "deltaParse"]
        where (ours[key] ?? []).isEmpty || (theirs[key] ?? []).isEmpty {
            throw BenchError("the side-by-side client printed no \(key) timings")
        }
        func ms(_ key: String, _ side: [String: [Double]]) -> Double { median(side[key] ?? []) * 1000 }
        func row(_ name: String, _ key: String, atLeast target: Double, _ notes: String = "", parse: Bool = true) -> Measurement {
            let figure = ms(key, ours), floor = ms(key, theirs)
            let ratio = floor / figure
            // What the client spends in json.loads, of each side's median: the rest is the
            // server's, the connection's and the client's requests.
            let parsing = parse ? String(format: "; of which the client parses %.2f ms (Kinto %.2f)", ms(key + "Parse", ours), ms(key + "Parse", theirs)) : ""
            return Measurement(scenario: "kinto \(name)", unit: "ms", figure: figure, floor: floor, ratio: ratio,
                               target: target == 1 ? "≤ Kinto's time" : String(format: "≥ %.0f× faster than Kinto", target), met: ratio >= target,
                               notes: notes + String(format: "%@spread %.2f–%.2f ms (Kinto %.2f–%.2f)", notes.isEmpty ? "" : "; ",
                                                     (ours[key] ?? []).min()! * 1000, (ours[key] ?? []).max()! * 1000,
                                                     (theirs[key] ?? []).min()! * 1000, (theirs[key] ?? []).max()! * 1000) + parsing)
        }
        return [
            row("create 1,000", "create", atLeast: 30, "batches of \(batch)", parse: false),
            row("read 1,000 (CloudKit's form)", "cloudKit", atLeast: 1, String(
                format: "records/changes, %.0f bytes a record (Kinto %.0f); changes/zone %.2f ms, records/query %.2f ms",
                bytes["cloudKit"] ?? 0, bytes["kinto"] ?? 0, ms("changesZone", ours), ms("query", ours))),
            row("read 1,000 (compact form)", "compact", atLeast: 2, String(format: "%.0f bytes a record", bytes["compact"] ?? 0)),
            row("delta (\(changed) changed)", "delta", atLeast: 4, "CloudKit's form"),
        ]
    }

    /// The client (Python 3, standard library only). Reads its configuration as JSON on standard
    /// input; prints `{"recordsync": {row: [seconds…]}, "kinto": {…}, "bytes": {…}}`.
    static let client = #"""
        import base64, http.client, json, sys, time

        cfg = json.load(sys.stdin)
        N, CHANGED, BATCH, ROUNDS = cfg["records"], cfg["changed"], cfg["batch"], cfg["rounds"]
        TYPES = {"artist": "STRING", "title": "STRING", "year": "INT64", "price": "DOUBLE", "medium": "STRING", "rank": "INT64"}

        class Server:
            def __init__(self, host, port, authorization):
                self.connection = http.client.HTTPConnection(host, port)
                self.headers = {"Authorization": authorization}
            def send(self, method, path, body=None):
                headers = dict(self.headers)
                if body is not None:
                    headers["Content-Type"] = "application/json"
                self.connection.request(method, path, body=body, headers=headers)
                response = self.connection.getresponse()
                data = response.read()
                if response.status not in (200, 201):
                    sys.exit(f"{method} {path} answered {response.status}: {data[:500]!r}")
                return response, data

        # The client's own share of a read: its time in json.loads since `timed` began.
        parsing = [0.0]
        def loads(data):
            start = time.perf_counter()
            value = json.loads(data)
            parsing[0] += time.perf_counter() - start
            return value

        rs = Server(cfg["rsHost"], cfg["rsPort"], "Bearer " + cfg["rsToken"])
        db = cfg["rsPath"]
        kinto = Server(cfg["kintoHost"], cfg["kintoPort"], "Basic " + base64.b64encode(b"bench:bench").decode())

        def artwork(i, generation):
            return {"artist": f"a{i % 1000}", "title": f"title {i} {generation}", "year": 1800 + i % 200,
                    "price": i / 3, "medium": "oil", "rank": i % 7}

        def rs_bodies(zone, names, generation, operation):
            bodies = []
            for first in range(0, len(names), BATCH):
                operations = [{"operationType": operation, "record": {"recordName": f"w{i}", "recordType": "Artwork",
                               "fields": {k: {"value": v, "type": TYPES[k]} for k, v in artwork(i, generation).items()}}}
                              for i in names[first:first + BATCH]]
                bodies.append(json.dumps({"zoneID": {"zoneName": zone}, "operations": operations}))
            return bodies

        def rs_modify(bodies):
            for body in bodies:
                _, data = rs.send("POST", db + "/records/modify", body)
                if b"serverErrorCode" in data:
                    sys.exit(f"records/modify answered an error: {data[:500]!r}")

        def rs_changes(zone, token=None, compact=False):
            count, size = 0, 0
            while True:
                body = {"zoneID": {"zoneName": zone}}
                if token: body["syncToken"] = token
                if compact: body["recordSyncCompact"] = True; body["recordSyncCompactVersion"] = 2
                _, data = rs.send("POST", db + "/records/changes", json.dumps(body))
                page = loads(data)
                count += len(page["records"]); size += len(data); token = page["syncToken"]
                if not page["moreComing"]:
                    return count, token, size

        def rs_zone_changes(zone):
            count, token = 0, None
            while True:
                request = {"zoneID": {"zoneName": zone}}
                if token: request["syncToken"] = token
                _, data = rs.send("POST", db + "/changes/zone", json.dumps({"zones": [request]}))
                page = loads(data)["zones"][0]
                count += len(page["records"]); token = page["syncToken"]
                if not page["moreComing"]:
                    return count

        def rs_query(zone):
            count, marker = 0, None
            while True:
                body = {"zoneID": {"zoneName": zone}, "query": {"recordType": "Artwork"}}
                if marker: body["continuationMarker"] = marker
                _, data = rs.send("POST", db + "/records/query", json.dumps(body))
                page = loads(data)
                count += len(page["records"]); marker = page.get("continuationMarker")
                if not marker:
                    return count

        def k_bodies(collection, names, generation, method):
            return [json.dumps({"defaults": {"method": method}, "requests": [
                        {"path": f"/buckets/bench/collections/{collection}/records/w{i}", "body": {"data": artwork(i, generation)}}
                        for i in names[first:first + BATCH]]})
                    for first in range(0, len(names), BATCH)]

        def k_batch(bodies):
            for body in bodies:
                _, data = kinto.send("POST", "/v1/batch", body)
                if any(r["status"] >= 400 for r in json.loads(data)["responses"]):
                    sys.exit(f"Kinto's batch answered an error: {data[:500]!r}")

        def k_read(collection, since=None):
            path = f"/v1/buckets/bench/collections/{collection}/records" + (f"?_since={since}" if since else "")
            count, size, etag = 0, 0, None
            while path:
                response, data = kinto.send("GET", path)
                count += len(loads(data)["data"]); size += len(data)
                etag = etag or response.getheader("ETag").strip('"')
                following = response.getheader("Next-Page")
                path = following[following.index("/v1/"):] if following else None
            return count, etag, size

        def timed(times, key, body, expect):
            parsing[0] = 0.0
            start = time.perf_counter()
            result = body()
            times.setdefault(key, []).append(time.perf_counter() - start)
            times.setdefault(key + "Parse", []).append(parsing[0])
            count = result[0] if isinstance(result, tuple) else result
            if count != expect:
                sys.exit(f"{key}: {count} records, not {expect}")
            return result

        ours, theirs, sizes = {}, {}, {}
        names = list(range(N))
        changed = names[::N // CHANGED][:CHANGED]

        def recordsync(r):
            zone = f"S{r}"
            rs.send("POST", db + "/zones/modify", json.dumps({"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": zone}}}]}))
            bodies = rs_bodies(zone, names, 0, "create")
            timed(ours, "create", lambda: (rs_modify(bodies), N)[1], N)
            _, token, size = timed(ours, "cloudKit", lambda: rs_changes(zone), N)
            sizes["cloudKit"] = size / N
            _, _, size = timed(ours, "compact", lambda: rs_changes(zone, compact=True), N)
            sizes["compact"] = size / N
            timed(ours, "changesZone", lambda: rs_zone_changes(zone), N)
            timed(ours, "query", lambda: rs_query(zone), N)
            rs_modify(rs_bodies(zone, changed, f"{r} changed", "forceUpdate"))
            timed(ours, "delta", lambda: rs_changes(zone, token), CHANGED)
            rs.send("POST", db + "/zones/modify", json.dumps({"operations": [{"operationType": "delete", "zone": {"zoneID": {"zoneName": zone}}}]}))

        def kinto_round(r):
            collection = f"c{r}"
            kinto.send("PUT", f"/v1/buckets/bench/collections/{collection}")
            bodies = k_bodies(collection, names, 0, "PUT")
            timed(theirs, "create", lambda: (k_batch(bodies), N)[1], N)
            _, etag, size = timed(theirs, "cloudKit", lambda: k_read(collection), N)
            theirs.setdefault("compact", []).append(theirs["cloudKit"][-1])
            theirs.setdefault("compactParse", []).append(theirs["cloudKitParse"][-1])
            sizes["kinto"] = size / N
            k_batch(k_bodies(collection, changed, f"{r} changed", "PATCH"))
            timed(theirs, "delta", lambda: k_read(collection, etag), CHANGED)
            kinto.send("DELETE", f"/v1/buckets/bench/collections/{collection}")

        # One round of each first, not counted: connections opened, code paths warm.
        recordsync("warm"); kinto_round("warm")
        for key in list(ours): ours[key].clear()
        for key in list(theirs): theirs[key].clear()
        for r in range(ROUNDS):
            if r % 2 == 0:
                recordsync(r); kinto_round(r)
            else:
                kinto_round(r); recordsync(r)
        json.dump({"recordsync": ours, "kinto": theirs, "bytes": sizes}, sys.stdout)
        """#
}
