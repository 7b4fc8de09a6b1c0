import ArgumentParser
import Foundation
import RecordClient

/// `recordctl login`: signs in with an identity provider's ID token and keeps the session token
/// in the profile file.
struct LoginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Sign in with an identity provider's ID token; the session token, with the server, container and environment in effect, is kept in the profile file (readable by its owner only)."
    )
    @Option(help: "The ID token (a JWT) the identity provider gave (env RECORDCTL_ID_TOKEN).") var idToken: String?
    @Option(help: "The server's name for the identity provider; default: the one whose issuer the token names.") var provider: String?
    @Option(help: "The nonce given to the identity provider, if one was.") var nonce: String?
    @Option(help: "The session token's name (default: this machine's host name); signing in again under it replaces that token.") var deviceName: String?
    @OptionGroup var connection: ConnectionOptions

    func run() async throws {
        try await reportingErrors {
            // A profile named but not there yet is the one to keep the token in.
            if let path = connection.profile, !FileManager.default.fileExists(atPath: path) { try Settings.keep(token: nil, in: path) }
            let settings = try connection.resolvedSettings()
            guard let idToken = idToken ?? ProcessInfo.processInfo.environment["RECORDCTL_ID_TOKEN"].flatMap({ $0.isEmpty ? nil : $0 }) else {
                throw UsageError("no ID token: give --id-token or RECORDCTL_ID_TOKEN")
            }
            let (url, environment) = try connection.serverAndEnvironment(settings)
            let identifier = settings.container.value ?? ConnectionOptions.defaultContainer
            let (_, answer) = try await Container.signIn(serverURL: url, identifier: identifier, environment: environment, idToken: idToken,
                                                         provider: provider, nonce: nonce, deviceName: deviceName ?? ProcessInfo.processInfo.hostName,
                                                         certificateAuthority: try connection.certificateAuthority())
            try Settings.keep(token: answer.ckWebAuthToken, server: url.absoluteString, container: identifier, environment: environment.rawValue,
                              in: settings.profilePath)
            if connection.json {
                print(#"{"created":\#(answer.created),"expires":\#(answer.expires),"tokenName":"\#(answer.tokenName)","userRecordName":"\#(answer.userRecordName)"}"#)
            } else {
                let expires = Date(timeIntervalSince1970: Double(answer.expires) / 1000).formatted(.iso8601)
                print("signed in as \(answer.userRecordName)\(answer.created ? " (a new user)" : ""); token \(answer.tokenName) kept in \(settings.profilePath) until \(expires)")
            }
        }
    }
}

/// `recordctl logout`: revokes the session token in effect and removes it from the profile file.
struct LogoutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Sign out: the server revokes the token in effect, and the profile file forgets its token."
    )
    @OptionGroup var connection: ConnectionOptions

    func run() async throws {
        try await reportingErrors {
            let settings = try connection.resolvedSettings()
            try await connection.makeContainer().signOut()
            if settings.token.source == "profile" { try Settings.keep(token: nil, in: settings.profilePath) }
            print("signed out")
        }
    }
}
