import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RecordModel

/// A container on a RecordSync server: the app's namespace, holding a public database and the
/// signed-in user's private database (CloudKit's `CKContainer`).
public struct Container: Sendable {
    /// How a container signs in.
    public enum Credentials: Sendable, Hashable {
        /// A user's bearer token, as printed by `recordserver user add NAME`, or a sign-in's.
        case bearerToken(String)
        /// A signed-in session: its token kept (the keychain, a file), renewed by signing in
        /// again when the server refuses it.
        case session(SignedInSession)

        /// The token requests carry now.
        var token: String {
            switch self {
            case .bearerToken(let token): token
            case .session(let session): session.token
            }
        }
    }

    /// Which data set of the container: `development` or `production`.
    public enum Environment: String, Sendable, Hashable, Codable {
        case development
        case production
    }

    /// The server's base URL, such as `http://127.0.0.1:8080`.
    public let serverURL: URL
    /// The container identifier, such as `iCloud.com.example.Gallery`.
    public let identifier: String
    /// The environment.
    public let environment: Environment
    let credentials: Credentials
    /// The session requests go through: the app's, or on Apple platforms the library's own;
    /// `nil` on Linux without one, where they go through AsyncHTTPClient (``HTTPTransport``).
    let session: URLSession?
    /// Where fetched assets are downloaded (``Database/fetchAsset(_:)``), by checksum: a
    /// folder of the system's caches unless set (a `RecordCache` sets its own).
    public var assetDirectory: URL
    /// The most bytes of downloaded assets kept in ``assetDirectory``; the least recently used
    /// go first when a download passes it.
    public var maximumAssetBytes: Int64 = 1 << 30
    /// A PEM file of certificate authorities to trust besides the system's: for a server
    /// serving HTTPS with a certificate of the deployment's own authority. Used by requests
    /// that go through AsyncHTTPClient (Linux without a session); a session given to
    /// ``init(serverURL:identifier:environment:credentials:session:)`` decides trust itself.
    public var certificateAuthority: String?
    /// What the library learned of the server's extensions, shared by every copy of this
    /// handle and every database of it.
    let learned = LearnedExtensions()

    /// Creates a container handle. Nothing is sent until a database is used.
    ///
    /// - Parameter session: the URL session requests go through. If omitted, requests go
    ///   through the library's own session on Apple platforms and through AsyncHTTPClient on
    ///   Linux, where FoundationNetworking's `URLSession` is slower.
    public init(serverURL: URL, identifier: String, environment: Environment = .development, credentials: Credentials, session: URLSession? = nil) {
        self.serverURL = serverURL
        self.identifier = identifier
        self.environment = environment
        self.credentials = credentials
        self.assetDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("recordsync-assets")
            .appendingPathComponent(identifier.replacingOccurrences(of: "/", with: "_"))
        #if canImport(FoundationNetworking)
        self.session = session
        #else
        self.session = session ?? URLSession(configuration: Self.sessionConfiguration())
        #endif
    }

    /// The configuration of the sessions the library makes: ephemeral, without a URL cache.
    /// Nothing it asks for may be answered from a cache (every request is a `POST` or a stream),
    /// and on Linux a session with a cache can trap when a request is cancelled (a Swift task
    /// cancelled while its request is under way, an app stopping sync, say): FoundationNetworking
    /// looks in the cache on another queue, and a cancellation landing then reaches a task its
    /// registry has already dropped ("Trying to access a behaviour for a task that in not in the
    /// registry", swift-corelibs-foundation issue 3296).
    static func sessionConfiguration() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return configuration
    }

    /// The signed-in user's private database.
    public var privateCloudDatabase: Database { Database(container: self, scope: .private) }

    /// The container's public database.
    public var publicCloudDatabase: Database { Database(container: self, scope: .public) }

    /// The signed-in user's shared database: the zones others shared with them (a zone share's
    /// zone, or the part of a zone a record share reaches), each zone ID naming its owner.
    public var sharedCloudDatabase: Database { Database(container: self, scope: .shared) }

    /// The signed-in user's record name (`users/current`).
    public func userRecordID() async throws -> Record.ID {
        Record.ID(recordName: try await currentUser().userRecordName)
    }

    /// The signed-in user (`users/current`): its record name and the name it was created with.
    func currentUser() async throws -> UserIdentity {
        try await privateCloudDatabase.transport.post("users/current", EmptyBody(), as: UserIdentity.self)
    }

    var token: String { credentials.token }
}

/// What a client learned of the server's RecordSync extensions: one it refused (a server that
/// does not know it and refuses keys it does not know) is not asked for again, and one it
/// answered is not doubted again.
final class LearnedExtensions: @unchecked Sendable {
    /// What the server did with `records/changes` pages asked for in the compact form
    /// (`recordSyncCompact`).
    enum Answer { case unknown, answered, refused }

    private let lock = NSLock()
    private var compact = Answer.unknown

    var compactChanges: Answer {
        get { lock.withLock { compact } }
        set { lock.withLock { compact = newValue } }
    }
}
