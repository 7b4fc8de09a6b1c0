import Foundation
import RecordClient

/// How records are printed: a table on a terminal, exact JSON with `--json` (one record per
/// line; identical whether it came from the server or a cache).
enum Rendering {
    /// A record's printable JSON: its system fields and typed fields, without the zone owner.
    static func json(_ record: Record) -> String {
        var printable = record
        printable.zoneID = nil
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? String(decoding: encoder.encode(printable), as: UTF8.self)) ?? "{}"
    }

    /// Prints records: JSON lines when asked (or not on a terminal), else a table.
    static func print(_ records: [Record], json: Bool) {
        if json || !Console.isTerminal {
            for record in records { Console.line(Self.json(record)) }
            return
        }
        let fields = Array(Set(records.flatMap(\.fields.keys))).sorted()
        let header = ["recordName", "recordType"] + fields
        let rows = records.map { record in [record.recordName, record.recordType] + fields.map { record.fields[$0].map(text) ?? "" } }
        table(header, rows)
        Console.line("(\(records.count) record\(records.count == 1 ? "" : "s"))")
    }

    /// Prints the records referring to `target`: one JSON object per reference (`backlinkOf`,
    /// `recordName`, `recordType`, `fieldName`, `action`), else a table under a heading.
    static func printBacklinks(of target: String, _ referencing: [ReferencingRecord], json: Bool) {
        let rows = referencing.flatMap { found in found.references.map { [found.record.recordName, found.record.recordType, $0.fieldName, $0.action.rawValue] } }
        if json || !Console.isTerminal {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            for row in rows {
                let object = ["backlinkOf": target, "recordName": row[0], "recordType": row[1], "fieldName": row[2], "action": row[3]]
                Console.line((try? String(decoding: encoder.encode(object), as: UTF8.self)) ?? "{}")
            }
            return
        }
        Console.line("")
        Console.line("records referring to \(target):")
        table(["recordName", "recordType", "field", "action"], rows)
        Console.line("(\(rows.count) reference\(rows.count == 1 ? "" : "s"))")
    }

    /// A short human form of a value.
    static func text(_ value: FieldValue) -> String {
        switch value {
        case .string(let string): string
        case .int64(let number): String(number)
        case .double(let number): String(number)
        case .timestamp(let milliseconds):
            ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        case .bytes(let data): "<\(data.count) bytes>"
        case .reference(let reference): "→" + reference.recordName + (reference.action == .none ? "" : " (\(reference.action.rawValue))")
        case .location(let location): "(\(location.latitude), \(location.longitude))"
        case .asset: "<asset>"
        case .boolean(let flag): flag ? "true" : "false"
        case .list(_, let elements): "[" + elements.map(text).joined(separator: ", ") + "]"
        case .nested(let json): (try? json.serializedString()) ?? "<nested>"
        }
    }

    /// Prints an aligned table.
    static func table(_ header: [String], _ rows: [[String]]) {
        let clipped = rows.map { $0.map { $0.count > 40 ? String($0.prefix(39)) + "…" : $0 } }
        let widths = header.indices.map { column in ([header] + clipped).map { $0[column].count }.max() ?? 0 }
        func render(_ cells: [String]) -> String {
            zip(cells, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
                .trimmingCharacters(in: .whitespaces)
        }
        Console.line(render(header))
        Console.line(render(widths.map { String(repeating: "-", count: $0) }))
        for row in clipped { Console.line(render(row)) }
    }
}
