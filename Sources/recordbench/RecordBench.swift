import ArgumentParser
import RecordServer
import Foundation

/// `recordbench`: measures RecordSync against its bare-SQLite floors and prints one table.
@main
struct RecordBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recordbench",
        abstract: "Measure RecordSync against the bare-SQLite floor.",
        discussion: """
            Each scenario starts a real server on a loopback port with a fresh SQLite data directory \
            and drives it through the client library over HTTP; figures with a floor are ratios against \
            plain SQLite measured around them in the same run, as medians of the repetitions. Build in release: \
            swift run -c release recordbench --scale full. See docs/performance.md.

            Scenarios: \(Scenario.allCases.map(\.rawValue).joined(separator: ", ")).
            """,
        subcommands: [Run.self, LoadCommand.self, Serve.self],
        defaultSubcommand: Run.self
    )
}

enum Scenario: String, CaseIterable, ExpressibleByArgument {
    case save, changes, cascade, nullify, queryByReference = "query-by-reference", keyPath = "key-path", fullText = "full-text", indexBuild = "index-build", near, cacheApply = "cache-apply", propagation, memory, nodes, assets, initialSync = "initial-sync",
         publicReads = "public-reads", sharedReads = "shared-reads", console, kinto
}

enum BackendName: String, CaseIterable, ExpressibleByArgument {
    case sqlite, postgres
}

enum ScaleName: String, CaseIterable, ExpressibleByArgument {
    case tiny, small, full
}

extension RecordBench {
    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Run the scenarios and print the table (the default).")

        @Option(help: "tiny: a few hundred records (checks the harness); small: every scenario in about a minute (a smoke test); full: the issue's sizes.")
        var scale: ScaleName = .small

        @Option(help: "Run only these scenarios (repeatable).")
        var only: [Scenario] = []

        @Option(help: "Repetitions of each measurement; the median is reported (of the ratios, for the scenarios with a floor).")
        var repetitions: Int = 5

        @Flag(help: "Print the results as JSON instead of a table.")
        var json = false

        @Option(help: "The storage engine the servers run on.")
        var backend: BackendName = .sqlite

        @Option(help: ArgumentHelp("With --backend postgres: the PostgreSQL server (each bench server gets a schema of its own); else RECORDSYNC_BENCH_POSTGRES.", valueName: "url"))
        var postgres: String?

        @Option(help: ArgumentHelp("kinto: the kinto command to compare with, or `install` to install Kinto 26.5 from PyPI into .build/kinto and use it; else RECORDSYNC_BENCH_KINTO.", valueName: "path|install"))
        var kinto: String?

        func validate() throws {
            guard repetitions >= 1 else { throw ValidationError("--repetitions must be at least 1") }
            if backend == .postgres, postgresURL == nil {
                throw ValidationError("--backend postgres needs --postgres URL or RECORDSYNC_BENCH_POSTGRES")
            }
        }

        var kintoCommand: String? { kinto ?? ProcessInfo.processInfo.environment["RECORDSYNC_BENCH_KINTO"].flatMap { $0.isEmpty ? nil : $0 } }

        var postgresURL: String? { postgres ?? ProcessInfo.processInfo.environment["RECORDSYNC_BENCH_POSTGRES"] }

        func run() async throws {
            let sizes: Scale = switch scale {
            case .tiny: .tiny
            case .small: .small
            case .full: .full
            }
            benchBackend = backend == .postgres ? .postgres(url: postgresURL ?? "") : .sqlite
            var steps: [(name: String, measure: () async throws -> [Measurement])] = []
            for scenario in Scenario.allCases where only.isEmpty || only.contains(scenario) {
                // Several servers share one database on PostgreSQL only.
                if scenario == .nodes, backend == .sqlite { continue }
                if scenario == .kinto, kintoCommand == nil, !only.contains(.kinto) {
                    say("skipping kinto: no --kinto given")
                    continue
                }
                let repetitions = repetitions, kinto = kintoCommand
                steps.append((scenario.rawValue, {
                    switch scenario {
                    case .kinto: try await SideBySide.run(sizes, repetitions: repetitions, kinto: kinto)
                    default: [try await Self.measure(scenario, sizes, repetitions: repetitions)]
                    }
                }))
            }
            let (results, failures) = await Self.runAll(steps)
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                print(String(decoding: try encoder.encode(results), as: UTF8.self))
            } else {
                print(table(results))
            }
            guard failures.isEmpty else {
                for failure in failures { say("\(failure.scenario) failed: \(failure.error)") }
                throw ExitCode.failure
            }
        }

        /// Runs each step in turn, timing it on standard error. A step that throws is noted
        /// and the run goes on, so that one scenario's failure does not lose the rows of the
        /// others (a full run takes over half an hour).
        static func runAll(_ steps: [(name: String, measure: () async throws -> [Measurement])]) async
            -> (results: [Measurement], failures: [(scenario: String, error: String)]) {
            var results: [Measurement] = [], failures: [(scenario: String, error: String)] = []
            for step in steps {
                say("running \(step.name)…")
                let start = ContinuousClock.now
                do {
                    results += try await step.measure()
                    say(String(format: "  %@ in %.1f s", step.name, (ContinuousClock.now - start).seconds))
                } catch {
                    // The full description: PostgreSQL's errors name their cause only there.
                    failures.append((step.name, String(reflecting: error)))
                    say("  \(step.name) failed after \(String(format: "%.1f", (ContinuousClock.now - start).seconds)) s")
                }
            }
            return (results, failures)
        }

        /// One scenario's measurement (every one but `kinto`, which has four rows).
        static func measure(_ scenario: Scenario, _ sizes: Scale, repetitions: Int) async throws -> Measurement {
            switch scenario {
            case .kinto: throw BenchError("the kinto scenario has rows of its own")
            case .save: try await Scenarios.save(sizes, repetitions: repetitions)
            case .changes: try await Scenarios.changes(sizes, repetitions: repetitions)
            case .cascade: try await Scenarios.cascade(sizes, repetitions: repetitions)
            case .nullify: try await Scenarios.nullify(sizes, repetitions: repetitions)
            case .queryByReference: try await Scenarios.queryByReference(sizes, repetitions: repetitions)
            case .publicReads: try await Scenarios.publicReads(sizes, repetitions: repetitions)
            case .sharedReads: try await SharedReads.run(sizes, repetitions: repetitions)
            case .keyPath: try await Scenarios.keyPath(sizes, repetitions: repetitions)
            case .fullText: try await Scenarios.fullText(sizes, repetitions: repetitions)
            case .indexBuild: try await Scenarios.indexBuild(sizes)
            case .near: try await Scenarios.near(sizes, repetitions: repetitions)
            case .cacheApply: try await Scenarios.cacheApply(sizes, repetitions: repetitions)
            case .propagation: try await Scenarios.propagation(sizes)
            case .memory: try await Memory.run(sizes)
            case .nodes: try await Scenarios.nodes(sizes)
            case .assets: try await AssetsScenario.run(sizes, repetitions: repetitions)
            case .console: try await ConsoleScenario.run(sizes, repetitions: repetitions)
            case .initialSync: try await InitialSync.run(sizes, repetitions: repetitions)
            }
        }

        func table(_ results: [Measurement]) -> String {
            func number(_ value: Double) -> String {
                value >= 1000 ? String(format: "%.0f", value) : value >= 10 ? String(format: "%.1f", value) : String(format: "%.3f", value)
            }
            let rows = [["scenario", "figure", "floor", "ratio", "target", "met?", "notes"]] + results.map { result in
                [result.scenario, number(result.figure) + " " + result.unit, result.floor.map(number) ?? "-",
                 String(format: "%.3f", result.ratio), result.target, result.met ? "yes" : "NO", result.notes]
            }
            let widths = (0..<7).map { column in rows.map { $0[column].count }.max() ?? 0 }
            return rows.map { row in
                row.indices.map { $0 == row.count - 1 ? row[$0] : row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                    .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
            }.joined(separator: "\n")
        }
    }

    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run a bench server in DIR and print 'URL TOKEN' (used by the memory scenario).",
            shouldDisplay: false)

        @Argument(help: "The data directory.")
        var directory: String

        @Option(help: "Serve from this PostgreSQL database instead.")
        var database: String?

        @Option(help: "Users to create (bench, bench-1, …), a token each on the line.")
        var users: Int = 1

        @Option(help: "Requests a second each user may send (as recordserver --rate-limit).")
        var rateLimit: Double?

        @Option(help: "With --rate-limit: the burst.")
        var rateBurst: Double?

        func run() async throws {
            try await Memory.serve(directory: directory, databaseURL: database, users: users,
                                   rateLimit: rateLimit.map { RateLimit(rate: $0, burst: rateBurst) })
        }
    }

    /// `recordbench load`: ``Load``.
    struct LoadCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "load",
            abstract: "Many connections running a realistic mix against a server process for a set time; counts unexpected errors and lost writes (both must be 0).")

        @Option(help: "Concurrent connections (workers).")
        var connections: Int = 64

        @Option(help: "Users the workers are spread over.")
        var users: Int = 8

        @Option(help: "Seconds to run.")
        var duration: Double = 60

        @Option(help: "The seed of the mix (the same operations for the same seed).")
        var seed: UInt64 = 1

        @Option(help: "The storage engine the server runs on.")
        var backend: BackendName = .sqlite

        @Option(help: ArgumentHelp("With --backend postgres: the PostgreSQL server; else RECORDSYNC_BENCH_POSTGRES.", valueName: "url"))
        var postgres: String?

        @Flag(help: "Print the result as JSON instead of a table.")
        var json = false

        func validate() throws {
            guard connections >= 1, users >= 1, duration > 0 else { throw ValidationError("--connections, --users and --duration must be positive") }
            if backend == .postgres, (postgres ?? ProcessInfo.processInfo.environment["RECORDSYNC_BENCH_POSTGRES"]) == nil {
                throw ValidationError("--backend postgres needs --postgres URL or RECORDSYNC_BENCH_POSTGRES")
            }
        }

        func run() async throws {
            if backend == .postgres { benchBackend = .postgres(url: postgres ?? ProcessInfo.processInfo.environment["RECORDSYNC_BENCH_POSTGRES"] ?? "") }
            let result = try await Load.run(Load.Options(connections: connections, users: users, duration: .milliseconds(Int64(duration * 1000)), seed: seed))
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                print(String(decoding: try encoder.encode([result]), as: UTF8.self))
            } else {
                print("\(result.scenario): \(String(format: "%.0f", result.figure)) \(result.unit); \(result.met ? "met" : "NOT MET"): \(result.target)\n\(result.notes)")
            }
            if !result.met { throw ExitCode.failure }
        }
    }
}
