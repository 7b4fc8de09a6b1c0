import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import RecordModel
import RecordRules

/// Where the server's mails (sign-up and reset codes) go (docs/deploying.md, "Mail").
public enum MailSettings: Sendable, Hashable {
    /// An SMTP server: `smtp://[USER[:PASSWORD]@]HOST[:PORT]` (port 587 by default; STARTTLS
    /// when the server offers it) or `smtps://…` (TLS from the start, port 465 by default).
    case smtp(SMTPSettings)
    /// Development only: each mail a file in this directory, nothing sent.
    case directory(String)
}

/// An SMTP server the server sends through.
public struct SMTPSettings: Sendable, Hashable {
    public var host: String
    public var port: Int
    /// TLS from the start (`smtps://`), else STARTTLS when the server offers it.
    public var implicitTLS: Bool
    public var username: String?
    public var password: String?
    /// The trust roots of the server's certificate (a PEM file); `nil`: the system's.
    public var certificateAuthority: String?

    /// Reads `smtp://…` or `smtps://…`.
    public init(url: String, password: String? = nil, certificateAuthority: String? = nil) throws {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(), ["smtp", "smtps"].contains(scheme),
              let host = components.host, !host.isEmpty, components.path.isEmpty || components.path == "/" else {
            throw RecordSyncError(.badRequest, "the SMTP server must be given as smtp://[USER[:PASSWORD]@]HOST[:PORT] or smtps://…")
        }
        self.host = host
        implicitTLS = scheme == "smtps"
        port = components.port ?? (implicitTLS ? 465 : 587)
        username = components.user?.removingPercentEncoding
        self.password = password ?? components.password?.removingPercentEncoding
        self.certificateAuthority = certificateAuthority
    }
}

/// Sends the mails of ``Accounts``.
struct Mailer: Sendable {
    let settings: MailSettings
    /// The sender's address.
    let from: String

    /// Sends `mail`, or answers `TRY_AGAIN_LATER` naming why it could not (the reason names the
    /// server's answer, never its credentials).
    func send(_ mail: AccountMail) async throws {
        let message = Self.message(mail, from: from)
        switch settings {
        case .directory(let path):
            let name = "\(Int64(Date().timeIntervalSince1970 * 1000))-\(UUID().uuidString).eml"
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
                try Data(message.utf8).write(to: URL(fileURLWithPath: path).appendingPathComponent(name), options: .atomic)
            } catch {
                throw RecordSyncError(.tryAgainLater, "the mail could not be written to \(path): \(error)")
            }
        case .smtp(let smtp):
            do {
                try await SMTPClient(settings: smtp).send(from: from, to: mail.to, message: message)
            } catch let error as SMTPClient.Failure {
                throw RecordSyncError(.tryAgainLater, "the mail could not be sent: \(error.reason)")
            } catch {
                throw RecordSyncError(.tryAgainLater, "the mail could not be sent: \(smtp.host):\(smtp.port): \(error)")
            }
        }
    }

    /// The message as RFC 5322 text (CRLF line ends). Addresses and subjects never hold a line
    /// break: ``Accounts`` checked the addresses, and writes the subjects itself.
    static func message(_ mail: AccountMail, from: String) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss Z"
        let date = formatter.string(from: Date())
        let host = from.split(separator: "@").last.map(String.init) ?? "localhost"
        let lines = [
            "From: \(from)",
            "To: \(mail.to)",
            "Subject: \(mail.subject)",
            "Date: \(date)",
            "Message-ID: <\(UUID().uuidString.lowercased())@\(host)>",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: 8bit",
            "",
        ] + mail.body.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        return lines.joined(separator: "\r\n")
    }
}

/// A small SMTP client (RFC 5321): EHLO, STARTTLS when offered (or TLS from the start), AUTH
/// PLAIN over TLS or to a loopback host, one message.
struct SMTPClient {
    struct Failure: Error { var reason: String }

    let settings: SMTPSettings

    func send(from: String, to: String, message: String) async throws {
        let tls = try makeTLSContext()
        let serverHostname = settings.host.first?.isNumber == true || settings.host.contains(":") ? nil : settings.host
        let implicitTLS = settings.implicitTLS
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(10))
            .connect(host: settings.host, port: settings.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if implicitTLS {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverHostname))
                    }
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await channel.executeThenClose { inbound, outbound in
                    var session = Session(inbound: inbound.makeAsyncIterator(), outbound: outbound)
                    _ = try await session.expect(220, after: "connecting")
                    var offers = try await session.command("EHLO \(Self.heloName)", expect: 250)
                    var secure = implicitTLS
                    if !secure, offers.contains(where: { $0.uppercased().hasPrefix("STARTTLS") }) {
                        _ = try await session.command("STARTTLS", expect: 220)
                        // First in the pipeline: the bytes after the server's 220 are TLS.
                        try await channel.channel.eventLoop.submit {
                            try channel.channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverHostname), position: .first)
                        }.get()
                        secure = true
                        offers = try await session.command("EHLO \(Self.heloName)", expect: 250)
                    }
                    if let username = settings.username {
                        guard secure || Self.isLoopback(settings.host) else {
                            throw Failure(reason: "\(settings.host) offers no TLS, and the password is sent only over TLS (or to this machine)")
                        }
                        let credentials = Data(([0] + Array(username.utf8) + [0] + Array((settings.password ?? "").utf8))).base64EncodedString()
                        _ = try await session.command("AUTH PLAIN \(credentials)", expect: 235, shown: "AUTH PLAIN")
                    }
                    _ = try await session.command("MAIL FROM:<\(from)>", expect: 250)
                    _ = try await session.command("RCPT TO:<\(to)>", expect: 250)
                    _ = try await session.command("DATA", expect: 354)
                    // Dot-stuffing (RFC 5321 4.5.2), then the end of the data.
                    let body = message.components(separatedBy: "\r\n").map { $0.hasPrefix(".") ? "." + $0 : $0 }.joined(separator: "\r\n")
                    _ = try await session.command(body + "\r\n.", expect: 250, shown: "the message")
                    _ = try? await session.command("QUIT", expect: 221)
                }
            }
            group.addTask {
                try await Task.sleep(for: .seconds(30))
                throw Failure(reason: "\(settings.host):\(settings.port) took over 30 seconds")
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    static let heloName = "recordserver"

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    private func makeTLSContext() throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let path = settings.certificateAuthority {
            configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(path))
        }
        return try NIOSSLContext(configuration: configuration)
    }

    /// Replies read line by line.
    private struct Session {
        var inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
        let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
        var pending: [UInt8] = []

        /// Sends `line` and reads the reply: its lines' text when its code is `expect`.
        mutating func command(_ line: String, expect code: Int, shown: String? = nil) async throws -> [String] {
            try await outbound.write(ByteBuffer(string: line + "\r\n"))
            return try await expect(code, after: shown ?? line)
        }

        mutating func expect(_ code: Int, after what: String) async throws -> [String] {
            var lines: [String] = []
            while true {
                while !pending.contains(UInt8(ascii: "\n")) {
                    guard pending.count < 64 * 1024 else { throw Failure(reason: "the SMTP server sent a line of over 64 KB") }
                    guard var buffer = try await inbound.next() else { throw Failure(reason: "the SMTP server closed the connection after \(what)") }
                    pending += buffer.readBytes(length: buffer.readableBytes) ?? []
                }
                let end = pending.firstIndex(of: UInt8(ascii: "\n"))!
                let line = String(decoding: pending[..<end], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                pending.removeSubrange(...end)
                guard line.utf8.count >= 3, let got = Int(line.prefix(3)) else { throw Failure(reason: "the SMTP server answered \(what) with '\(line.prefix(200))'") }
                lines.append(String(line.dropFirst(4)))
                if line.utf8.count > 3, Array(line.utf8)[3] == UInt8(ascii: "-") { continue }
                guard got == code else { throw Failure(reason: "the SMTP server answered \(what) with '\(line.prefix(200))'") }
                return lines
            }
        }
    }
}
