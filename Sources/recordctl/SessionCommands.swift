import ArgumentParser
import Foundation
import RecordClient
import RecordModel

/// `recordctl login`: signs in (an identity provider's ID token, an account's password, or a
/// sign-up's mailed code) and keeps the session token in the profile file.
struct LoginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Sign in with an identity provider's ID token, or an account's email address and password (or the code mailed at sign-up); the session token, with the server, container and environment in effect, is kept in the profile file (readable by its owner only).",
        discussion: "The password is read from RECORDCTL_PASSWORD, or else the first line of standard input."
    )
    @Option(help: "The ID token (a JWT) the identity provider gave (env RECORDCTL_ID_TOKEN).") var idToken: String?
    @Option(help: "The server's name for the identity provider; default: the one whose issuer the token names.") var provider: String?
    @Option(help: "The nonce given to the identity provider, if one was.") var nonce: String?
    @Option(help: "The account's email address (its password from RECORDCTL_PASSWORD or standard input).") var email: String?
    @Option(help: "With --email: the code mailed at sign-up ('recordctl signup'), which makes the account; no password is read.") var code: String?
    @Option(help: "The session token's name (default: this machine's host name); signing in again under it replaces that token.") var deviceName: String?
    @OptionGroup var connection: ConnectionOptions

    func run() async throws {
        try await reportingErrors {
            let (settings, authentication) = try connection.authentication()
            let device = deviceName ?? ProcessInfo.processInfo.hostName
            let answer: SignInResponse
            if let email {
                if let code {
                    answer = try await authentication.verifySignUp(email: email, code: code, deviceName: device)
                } else {
                    answer = try await authentication.signIn(email: email, password: try Self.password(), deviceName: device)
                }
            } else {
                guard let idToken = idToken ?? ProcessInfo.processInfo.environment["RECORDCTL_ID_TOKEN"].flatMap({ $0.isEmpty ? nil : $0 }) else {
                    throw UsageError("nothing to sign in with: give --email, or --id-token (or RECORDCTL_ID_TOKEN)")
                }
                answer = try await authentication.signIn(idToken: idToken, provider: provider, nonce: nonce, deviceName: device)
            }
            try Settings.keep(token: answer.ckWebAuthToken, server: authentication.serverURL.absoluteString, container: authentication.identifier,
                              environment: authentication.environment.rawValue, in: settings.profilePath)
            if connection.json {
                print(#"{"created":\#(answer.created),"expires":\#(answer.expires),"tokenName":"\#(answer.tokenName)","userRecordName":"\#(answer.userRecordName)"}"#)
            } else {
                let expires = Date(timeIntervalSince1970: Double(answer.expires) / 1000).formatted(.iso8601)
                print("signed in as \(answer.userRecordName)\(answer.created ? " (a new user)" : ""); token \"\(answer.tokenName)\" kept in \(settings.profilePath) until \(expires)")
            }
        }
    }

    /// `RECORDCTL_PASSWORD`, or the first line of standard input.
    static func password() throws -> String {
        if let given = ProcessInfo.processInfo.environment["RECORDCTL_PASSWORD"], !given.isEmpty { return given }
        guard let line = readLine(strippingNewline: true), !line.isEmpty else {
            throw UsageError("no password: give it in RECORDCTL_PASSWORD or on standard input")
        }
        return line
    }
}

/// `recordctl signup`: asks for an account; the server mails the address a code, which
/// `recordctl login --email E --code C` takes.
struct SignUpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signup",
        abstract: "Sign up for an account with an email address and a password (RECORDCTL_PASSWORD, or standard input's first line); the server mails a code, which 'recordctl login --email E --code C' takes.",
        discussion: "The answer is the same whether the address has an account or not: the mail says which."
    )
    @Option(help: "The email address.") var email: String
    @Option(help: "The operator's invitation code, where signing up needs one.") var invitation: String?
    @OptionGroup var connection: ConnectionOptions

    func run() async throws {
        try await reportingErrors {
            let (settings, authentication) = try connection.authentication()
            try await authentication.signUp(email: email, password: try LoginCommand.password(), invitation: invitation)
            // The connection is kept for `login`, which then needs no flags but the code.
            try Settings.keep(token: settings.token.source == "profile" ? settings.token.value : nil, server: authentication.serverURL.absoluteString,
                              container: authentication.identifier, environment: authentication.environment.rawValue, in: settings.profilePath)
            print("a code is on its way to \(email): sign in with it, 'recordctl login --email \(email) --code CODE'")
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

extension ConnectionOptions {
    /// The settings in effect and the `Authentication` of the server, container and environment
    /// they name. A profile named but not there yet is made first (empty), for `login` to keep
    /// the token in.
    func authentication() throws -> (settings: Settings, authentication: Container.Authentication) {
        if let path = profile, !FileManager.default.fileExists(atPath: path) { try Settings.keep(token: nil, in: path) }
        let settings = try resolvedSettings()
        let (url, environment) = try serverAndEnvironment(settings)
        return (settings, Container.Authentication(serverURL: url, identifier: settings.container.value ?? Self.defaultContainer, environment: environment,
                                                   certificateAuthority: try certificateAuthority()))
    }
}
