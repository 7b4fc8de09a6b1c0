import ArgumentParser
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
        subcommands: [Run.self, Serve.self],
        defaultSubcommand: Run.self
    )
}

enum Scenario: String, CaseIterable, ExpressibleByArgument {
    case save, changes, cascade, nullify, queryByReference = "query-by-reference", keyPath = "key-path", fullText = "full-text", near, cacheApply = "cache-apply", propagation, memory, nodes, assets
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

        func validate() throws {
            guard repetitions >= 1 else { throw ValidationError("--repetitions must be at least 1") }
            if backend == .postgres, postgresURL == nil {
                throw ValidationError("--backend postgres needs --postgres URL or RECORDSYNC_BENCH_POSTGRES")
            }
        }

        var postgresURL: String? { postgres ?? ProcessInfo.processInfo.environment["RECORDSYNC_BENCH_POSTGRES"] }

        func run() async throws {
            let sizes: Scale = switch scale {
            case .tiny: .tiny
            case .small: .small
            case .full: .full
            }
            benchBackend = backend == .postgres ? .postgres(url: postgresURL ?? "") : .sqlite
            var results: [Measurement] = []
            for scenario in Scenario.allCases where only.isEmpty || only.contains(scenario) {
                // Several servers share one database on PostgreSQL only.
                if scenario == .nodes, backend == .sqlite { continue }
                say("running \(scenario.rawValue)…")
                let start = ContinuousClock.now
                let result: Measurement
                switch scenario {
                case .save: result = try await Scenarios.save(sizes, repetitions: repetitions)
                case .changes: result = try await Scenarios.changes(sizes, repetitions: repetitions)
                case .cascade: result = try await Scenarios.cascade(sizes, repetitions: repetitions)
                case .nullify: result = try await Scenarios.nullify(sizes, repetitions: repetitions)
                case .queryByReference: result = try await Scenarios.queryByReference(sizes, repetitions: repetitions)
                case .keyPath: result = try await Scenarios.keyPath(sizes, repetitions: repetitions)
                case .fullText: result = try await Scenarios.fullText(sizes, repetitions: repetitions)
                case .near: result = try await Scenarios.near(sizes, repetitions: repetitions)
                case .cacheApply: result = try await Scenarios.cacheApply(sizes, repetitions: repetitions)
                case .propagation: result = try await Scenarios.propagation(sizes)
                case .memory: result = try await Memory.run(sizes)
                case .nodes: result = try await Scenarios.nodes(sizes)
                case .assets: result = try await AssetsScenario.run(sizes, repetitions: repetitions)
                }
                say(String(format: "  %@ in %.1f s", scenario.rawValue, (ContinuousClock.now - start).seconds))
                results.append(result)
            }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                print(String(decoding: try encoder.encode(results), as: UTF8.self))
            } else {
                print(table(results))
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

        func run() async throws {
            try await Memory.serve(directory: directory, databaseURL: database)
        }
    }
}
