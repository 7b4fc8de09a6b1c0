import Foundation
import Logging

/// Writes each log message as one JSON object a line on standard error (`--log-format json`):
/// `time` (ISO 8601, UTC, milliseconds), `level`, `label`, `message`, and the message's metadata
/// as further members (a member the metadata names `time`, `level`, `label` or `message` is
/// written as `meta.NAME`).
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String) {
        self.label = label
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// One line at a time, whichever thread logs.
    private static let output = NSLock()

    func log(event: LogEvent) {
        var object: [String: Any] = [
            "time": Self.timestamp(Date()),
            "level": event.level.rawValue,
            "label": label,
            "message": event.message.description,
        ]
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let given = event.metadata { merged.merge(given) { $1 } }
        for (key, value) in merged {
            object[object[key] == nil ? key : "meta.\(key)"] = Self.json(value)
        }
        guard var line = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        line.append(0x0A)
        Self.output.withLock { FileHandle.standardError.write(line) }
    }

    /// A metadata value as JSON: strings, arrays and objects as themselves.
    static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): convertible.description
        case .array(let values): values.map(json)
        case .dictionary(let members): members.mapValues(json)
        }
    }

    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
