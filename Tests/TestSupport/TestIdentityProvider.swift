import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real OpenID Connect provider for the tests of the web sign-in page:
/// `Tests/Tools/oidc-provider.py` (Authlib's JOSE; `.ci/run` installs Debian's
/// python3-authlib) on a loopback port. Its issuer is `http://127.0.0.1:PORT`; it signs in one
/// person (`subject`, `email`) at once and checks client, redirect URI and PKCE verifier.
public final class TestOIDCProvider: @unchecked Sendable {
    public let port: Int
    public let clientID: String
    private let child: ChildProcess

    public var issuer: String { "http://127.0.0.1:\(port)" }
    public var authorizationEndpoint: String { "\(issuer)/authorize" }
    public var tokenEndpoint: String { "\(issuer)/token" }
    public var jwksURL: String { "\(issuer)/jwks" }

    private init(port: Int, clientID: String, child: ChildProcess) {
        self.port = port
        self.clientID = clientID
        self.child = child
    }

    /// Starts a provider for `clientID`, which authenticates with `clientSecret`, or with a
    /// JWT signed by the private half of `applePublicKey` (a PEM file) as Sign in with Apple's
    /// web flow asks.
    public static func start(clientID: String, clientSecret: String? = nil, applePublicKey: String? = nil,
                             subject: String = "person-1", email: String = "person-1@example.com") async throws -> TestOIDCProvider {
        let python = try await TestMailServer.python(with: "authlib")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tools/oidc-provider.py").path
        var secret: [String] = []
        if let clientSecret { secret = ["--client-secret", clientSecret] }
        if let applePublicKey { secret = ["--apple-public-key", applePublicKey] }
        for _ in 0..<5 {
            let port = try TestMailServer.freePort()
            let child = try ChildProcess(executable: python, [script, "--port", "\(port)", "--client-id", clientID, "--subject", subject, "--email", email] + secret)
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline, child.process.isRunning {
                if TestMailServer.accepts(port) { return TestOIDCProvider(port: port, clientID: clientID, child: child) }
                try await Task.sleep(for: .milliseconds(50))
            }
            _ = await child.stop(signal: SIGKILL)
        }
        throw TestMailServerError("the test OpenID Connect provider did not start")
    }

    /// Stops the provider (SIGKILL: see ``TestMailServer/stop()``).
    public func stop() async {
        _ = await child.stop(signal: SIGKILL)
    }
}
