import Foundation
import RecordClient

/// Connection settings with their source: flags, then the environment, then a profile file.
struct Settings {
    struct Value {
        var value: String?
        var source: String
    }

    var server: Value
    var token: Value
    var container: Value
    var database: Value
    var environment: Value
    var profilePath: String

    /// The profile file's shape.
    struct Profile: Codable {
        var server: String?
        var token: String?
        var container: String?
        var database: String?
        var environment: String?
    }

    static func resolve(flags: ConnectionOptions, environment: [String: String]) throws -> Settings {
        let path = flags.profile ?? environment["RECORDCTL_PROFILE"]
            ?? (NSHomeDirectory() as NSString).appendingPathComponent(".config/recordctl/profile.json")
        var profile = Profile()
        if FileManager.default.fileExists(atPath: path) {
            do {
                profile = try JSONDecoder().decode(Profile.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
            } catch {
                throw UsageError("profile \(path) is not a JSON object with server, token, container, database, environment")
            }
        } else if flags.profile != nil {
            throw UsageError("profile \(path) does not exist")
        }
        func pick(_ flag: String?, _ variable: String?, _ file: String?) -> Value {
            if let flag { return Value(value: flag, source: "flag") }
            if let variable, let value = environment[variable] { return Value(value: value, source: "environment (\(variable))") }
            if let file { return Value(value: file, source: "profile") }
            return Value(value: nil, source: "default")
        }
        return Settings(
            server: pick(flags.server, "RECORDCTL_SERVER", profile.server),
            token: pick(flags.token, "RECORDCTL_TOKEN", profile.token),
            container: pick(flags.container, "RECORDCTL_CONTAINER", profile.container),
            database: pick(flags.database, "RECORDCTL_DATABASE", profile.database),
            environment: pick(flags.environment, nil, profile.environment),
            profilePath: path
        )
    }

    /// Writes `token` (nil: removes it) into the profile file at `path`, with the connection it
    /// is for when given, keeping its other settings; the file (and its folder, if new) is made
    /// readable by its owner only.
    static func keep(token: String?, server: String? = nil, container: String? = nil, environment: String? = nil, in path: String) throws {
        let manager = FileManager.default
        var profile = Profile()
        if manager.fileExists(atPath: path) {
            guard let read = try? JSONDecoder().decode(Profile.self, from: Data(contentsOf: URL(fileURLWithPath: path))) else {
                throw UsageError("profile \(path) is not a JSON object with server, token, container, database, environment")
            }
            profile = read
        }
        profile.token = token
        if let server { profile.server = server }
        if let container { profile.container = container }
        if let environment { profile.environment = environment }
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty, !manager.fileExists(atPath: folder) {
            try manager.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        // Created readable by its owner only before the token is written into it.
        if !manager.fileExists(atPath: path) {
            guard manager.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw UsageError("cannot write the profile file \(path)")
            }
        }
        try manager.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: try encoder.encode(profile))
    }

    /// The token with all but its first four characters hidden.
    static func masked(_ token: String?) -> String? {
        token.map { String($0.prefix(4)) + String(repeating: "*", count: max(0, $0.count - 4)) }
    }
}
