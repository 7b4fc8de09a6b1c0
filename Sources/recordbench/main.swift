// recordbench: measures RecordSync against its floors and prints one table (or --json).
// `swift run -c release recordbench [--scale small|full] [--only NAME] [--json] [--repetitions N]`.
// Scenarios so far: save, changes, query-by-reference, propagation. Not yet: cascade, cache-apply, memory.
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String) -> String? { arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil } }
let scale: Scale = option("--scale") == "full" ? .full : .small
let only = option("--only")
let repetitions = Int(option("--repetitions") ?? "") ?? 3
let json = arguments.contains("--json")
let known = ["save", "changes", "query-by-reference", "propagation"]
if let only, !known.contains(only) {
    FileHandle.standardError.write(Data("unknown scenario \(only); known: \(known.joined(separator: ", "))\n".utf8))
    exit(64)
}

var results: [Measurement] = []
do {
    for name in known where only == nil || only == name {
        FileHandle.standardError.write(Data("running \(name)…\n".utf8))
        switch name {
        case "save": results.append(try await Scenarios.save(scale, repetitions: repetitions))
        case "changes": results.append(try await Scenarios.changes(scale, repetitions: repetitions))
        case "query-by-reference": results.append(try await Scenarios.queryByReference(scale, repetitions: repetitions))
        default: results.append(try await Scenarios.propagation(scale))
        }
    }
} catch {
    FileHandle.standardError.write(Data("recordbench failed: \(error)\n".utf8))
    exit(1)
}

if json {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    FileHandle.standardOutput.write((try? encoder.encode(results)) ?? Data())
    FileHandle.standardOutput.write(Data("\n".utf8))
} else {
    func cell(_ text: String, _ width: Int) -> String { text.padding(toLength: width, withPad: " ", startingAt: 0) }
    print(cell("scenario", 20) + cell("figure", 34) + cell("floor", 14) + cell("ratio", 9) + cell("target", 32) + "met?")
    for result in results {
        print(cell(result.scenario, 20) + cell(String(format: "%.3f ", result.figure) + result.unit, 34)
              + cell(result.floor.map { String(format: "%.0f", $0) } ?? "-", 14) + cell(String(format: "%.3f", result.ratio), 9)
              + cell(result.target, 32) + (result.met ? "yes" : "no"))
    }
}
