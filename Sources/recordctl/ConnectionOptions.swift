import ArgumentParser
import Foundation
import RecordClient

/// Connection flags shared by every command that talks to a server.
struct ConnectionOptions: ParsableArguments {
    @Option(help: "Server URL (env RECORDCTL_SERVER), e.g. http://127.0.0.1:8080.")
    var server: String?

    // `.unconditional`: a token may begin with "-" (older tokens are plain base64url).
    @Option(parsing: .unconditional, help: "Bearer token from 'recordserver user add' (env RECORDCTL_TOKEN).")
    var token: String?

    @Option(help: "Container identifier (env RECORDCTL_CONTAINER).")
    var container: String?

    @Option(help: "Database: private, public or shared (env RECORDCTL_DATABASE; default private).")
    var database: String?

    @Option(help: "Environment: development or production (default development).")
    var environment: String?

    @Option(help: "Profile file (JSON with server, token, container, database, environment).")
    var profile: String?

    @Option(help: ArgumentHelp("A PEM file of certificate authorities to trust besides the system's, for an https server with a certificate of its own authority (env RECORDCTL_CA_CERT).", valueName: "file"))
    var caCert: String?

    @Flag(help: "Print exact JSON instead of a table.")
    var json = false

    /// The settings in effect, and where each came from.
    func resolvedSettings() throws -> Settings {
        try Settings.resolve(flags: self, environment: ProcessInfo.processInfo.environment)
    }

    /// The container identifier used when none is given.
    static let defaultContainer = "iCloud.recordctl"

    /// The server URL and environment the settings name.
    func serverAndEnvironment(_ settings: Settings) throws -> (URL, Container.Environment) {
        guard let server = settings.server.value else {
            throw UsageError("no server: give --server, RECORDCTL_SERVER or a profile")
        }
        guard let url = URL(string: server), ["http", "https"].contains(url.scheme?.lowercased()), url.host?.isEmpty == false else {
            throw UsageError("server '\(server)' (\(settings.server.source)) is not an http:// or https:// URL with a host, e.g. http://127.0.0.1:8080")
        }
        guard let environment = Container.Environment(rawValue: settings.environment.value ?? "development") else {
            throw UsageError("environment must be development or production")
        }
        return (url, environment)
    }

    /// The certificate authority file given (`--ca-cert`, `RECORDCTL_CA_CERT`), checked readable.
    func certificateAuthority() throws -> String? {
        guard let authority = caCert ?? ProcessInfo.processInfo.environment["RECORDCTL_CA_CERT"].flatMap({ $0.isEmpty ? nil : $0 }) else { return nil }
        guard FileManager.default.isReadableFile(atPath: authority) else { throw UsageError("cannot read the certificate authority file '\(authority)'") }
        return authority
    }

    /// The container the settings name, signed in with their token.
    func makeContainer() throws -> Container {
        let settings = try resolvedSettings()
        let (url, environment) = try serverAndEnvironment(settings)
        guard let token = settings.token.value else {
            throw UsageError("no token: give --token, RECORDCTL_TOKEN or a profile, or sign in ('recordctl login')")
        }
        var container = Container(serverURL: url, identifier: settings.container.value ?? Self.defaultContainer,
                                  environment: environment, credentials: .bearerToken(token))
        container.certificateAuthority = try certificateAuthority()
        return container
    }

    /// The database the settings name.
    func makeDatabase() throws -> Database {
        let container = try makeContainer()
        switch try resolvedSettings().database.value ?? "private" {
        case "private": return container.privateCloudDatabase
        case "public": return container.publicCloudDatabase
        case "shared": return container.sharedCloudDatabase
        case let other: throw UsageError("database must be private, public or shared, not '\(other)'")
        }
    }
}

/// The zone flag.
struct ZoneOption: ParsableArguments {
    @Option(help: "The zone.")
    var zone: String = ZoneID.defaultZoneName

    @Option(help: "The zone's owner (a user record name): needed in the shared database.")
    var owner: String?

    var zoneID: ZoneID { ZoneID(zoneName: zone, ownerRecordName: owner) }
}
