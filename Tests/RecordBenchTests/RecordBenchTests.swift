import Foundation
@testable import recordbench
import TestSupport
import Testing

/// Every recordbench scenario runs end to end at a tiny scale: the harness starts its servers,
/// the workloads are written and read back (each scenario checks its own counts: 100 changes,
/// 100 children, every tombstone, every record in the cache), and the floors run. The figures
/// themselves are not judged here: timings belong to `recordbench`, not to tests.
@Suite(.serialized) struct RecordBenchTests {
    @Test func everyScenarioRunsAtATinyScale() async throws {
        let measurements = try await Self.everyEngineScenario()
        #expect(measurements.map(\.scenario) == ["save", "changes", "cascade", "nullify", "query-by-reference", "public-reads", "shared-reads", "key-path", "full-text", "near", "cache-apply", "propagation", "memory", "assets", "initial-sync"])
        Self.expectFigures(measurements)
    }

    /// The scenarios of either engine, at a tiny scale, in the table's order.
    static func everyEngineScenario() async throws -> [recordbench.Measurement] {
        [
            try await Scenarios.save(.tiny, repetitions: 1),
            try await Scenarios.changes(.tiny, repetitions: 1),
            try await Scenarios.cascade(.tiny, repetitions: 1),
            try await Scenarios.nullify(.tiny, repetitions: 1),
            try await Scenarios.queryByReference(.tiny, repetitions: 1),
            try await Scenarios.publicReads(.tiny, repetitions: 1),
            try await SharedReads.run(.tiny, repetitions: 1),
            try await Scenarios.keyPath(.tiny, repetitions: 1),
            try await Scenarios.fullText(.tiny, repetitions: 1),
            try await Scenarios.near(.tiny, repetitions: 1),
            try await Scenarios.cacheApply(.tiny, repetitions: 1),
            try await Scenarios.propagation(.tiny),
            try await Memory.run(.tiny, executable: ChildProcess.executable("recordbench")),
            try await AssetsScenario.run(.tiny, repetitions: 1, executable: ChildProcess.executable("recordbench")),
            try await InitialSync.run(.tiny, repetitions: 1),
        ]
    }

    /// Every figure, ratio and floor was measured.
    static func expectFigures(_ measurements: [recordbench.Measurement]) {
        for measurement in measurements {
            #expect(measurement.figure > 0 && measurement.ratio > 0, "\(measurement)")
            if let floor = measurement.floor { #expect(floor > 0, "\(measurement)") }
        }
    }

    /// The same on PostgreSQL (the servers in a schema of their own each), with the `nodes`
    /// scenario's server processes.
    @Test(.enabled(if: TestPostgres.url != nil, "needs RECORDSYNC_TEST_POSTGRES"))
    func everyScenarioRunsOnPostgreSQLAtATinyScale() async throws {
        benchBackend = .postgres(url: TestPostgres.url ?? "")
        defer { benchBackend = .sqlite }
        let measurements = try await Self.everyEngineScenario()
            + [try await Scenarios.nodes(.tiny, executable: ChildProcess.executable("recordbench"))]
        #expect(measurements.map(\.scenario).last == "nodes")
        Self.expectFigures(measurements)
    }

    /// The `kinto` scenario, with a Kinto given (`RECORDSYNC_BENCH_KINTO`, a `kinto` command;
    /// `recordbench --kinto install` makes one): its four rows, each timed on both servers by
    /// the Python client. Without one, the scenario refuses to run, naming `--kinto`.
    @Test func theKintoScenarioTimesFourRowsOnBothServers() async throws {
        guard let kinto = ProcessInfo.processInfo.environment["RECORDSYNC_BENCH_KINTO"], !kinto.isEmpty else {
            await #expect(throws: BenchError.self) { _ = try await SideBySide.run(.tiny, repetitions: 1, kinto: nil) }
            print("theKintoScenarioTimesFourRowsOnBothServers: Kinto itself not run (set RECORDSYNC_BENCH_KINTO to a kinto command)")
            return
        }
        let rows = try await SideBySide.run(.tiny, repetitions: 1, kinto: kinto)
        #expect(rows.map(\.scenario) == ["kinto create 1,000", "kinto read 1,000 (CloudKit's form)", "kinto read 1,000 (compact form)", "kinto delta (100 changed)"])
        Self.expectFigures(rows)
        #expect(rows.allSatisfy { $0.floor != nil })
        // Each read's notes give the client's share of it on both servers.
        for row in rows.dropFirst() {
            let parse = row.notes.firstMatch(of: /of which the client parses ([0-9.]+) ms \(Kinto ([0-9.]+)\)/)
            #expect(parse.map { Double($0.1)! > 0 && Double($0.2)! > 0 } == true, "\(row.scenario): \(row.notes)")
        }
    }

    /// A scenario that fails is named with its error and the run goes on: the rows of the
    /// scenarios before and after it are kept.
    @Test func aFailingScenarioKeepsTheOthersRows() async {
        func row(_ name: String) -> recordbench.Measurement {
            recordbench.Measurement(scenario: name, unit: "ms", figure: 1, floor: nil, ratio: 1, target: "-", met: true)
        }
        let (results, failures) = await RecordBench.Run.runAll([
            ("first", { [row("first")] }),
            ("broken", { throw BenchError("the database went away") }),
            ("last", { [row("last a"), row("last b")] }),
        ])
        #expect(results.map { $0.scenario } == ["first", "last a", "last b"])
        #expect(failures.map { $0.scenario } == ["broken"])
        #expect(failures.first?.error.contains("the database went away") == true)
    }

    /// A floor measured before and after its figure counts as the mean of the two times: for
    /// seconds their mean, for rates the rate of their mean time.
    @Test func bracketedFloorsAverageTheirTimes() {
        #expect(Floor.bracketed(seconds: 1, 3) == 2)
        #expect(Floor.bracketed(rate: 100, 300) == 150)  // 10 ms and 3.33 ms a row: 6.67 ms
    }

    /// A ratio against a floor is the median of each repetition's own ratio, never a figure of
    /// one repetition over a floor of another.
    @Test func ratiosPairEachFigureWithItsOwnFloor() {
        // The machine ran twice as fast in the second repetition: both figure and floor doubled.
        #expect(pairedRatio([10, 20, 12], over: [40, 80, 48]) == 0.25)
        #expect(median([10, 20, 12]) / median([40, 80, 48]) == 0.25)
        // Here the median figure is the second repetition's and the median floor the third's:
        // their ratio (20 / 90) matches no repetition; the paired ratios are 0.25, 0.2, 0.33.
        #expect(pairedRatio([10, 20, 30], over: [40, 100, 90]) == 0.25)
        #expect(median([10, 20, 30]) / median([40, 100, 90]) < 0.223)
    }

    /// The program itself, as a process: `--only` runs just the scenarios named (in the
    /// table's order), the table has one row each, and `--json` prints the same measurements
    /// as JSON.
    @Test func onlyRunsTheNamedScenariosAndJSONCarriesTheSameData() async throws {
        let table = try await ChildProcess.run("recordbench", ["--scale", "tiny", "--repetitions", "1", "--only", "cascade", "--only", "save"])
        #expect(table.status == 0, "\(table.output)")
        let rows = table.output.split(separator: "\n")
        #expect(rows.count == 3 && rows[0].hasPrefix("scenario") && rows[1].hasPrefix("save") && rows[2].hasPrefix("cascade"), "\(table.output)")

        let json = try await ChildProcess.run("recordbench", ["--scale", "tiny", "--repetitions", "1", "--only", "cascade", "--json"])
        #expect(json.status == 0, "\(json.output)")
        let measurements = try JSONDecoder().decode([recordbench.Measurement].self, from: Data(json.output.utf8))
        #expect(measurements.map(\.scenario) == ["cascade"])
        let cascade = try #require(measurements.first)
        #expect(cascade.figure > 0 && (cascade.floor ?? 0) > 0 && cascade.ratio > 0 && cascade.met == (cascade.ratio <= 3), "\(cascade)")

        let bad = try await ChildProcess.run("recordbench", ["--only", "nonsense"], mergeErrors: true)
        #expect(bad.status != 0 && bad.output.contains("nonsense"), "\(bad.output)")
    }

    @Test func theTableHasARowPerScenario() throws {
        let run = try RecordBench.Run.parse(["--scale", "small"])
        let table = run.table([Measurement(scenario: "save", unit: "records/s", figure: 1000, floor: 4000, ratio: 0.25, target: "≥ 0.25 of floor", met: true)])
        let lines = table.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0].hasPrefix("scenario") && lines[1].hasPrefix("save") && lines[1].contains("yes"))
    }
}
