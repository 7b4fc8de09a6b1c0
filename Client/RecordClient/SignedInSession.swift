import Foundation
#if canImport(Security)
import Security
#endif
import RecordModel

/// A signed-in user's session, as a container keeps it (``Container/Credentials/session(_:)``):
/// the session token, saved in a ``SessionTokenStore`` so the next launch starts signed in, and
/// the app's way of signing in again, which runs when the server refuses the token (it expired,
/// or was revoked by a password change elsewhere): once, for every request refused meanwhile,
/// and the requests are sent again with the new token.
public final class SignedInSession: @unchecked Sendable, Hashable {
    private let lock = NSLock()
    private var current: String
    private let store: (any SessionTokenStore)?
    private let signIn: @Sendable () async throws -> String
    /// The renewal under way, which every refused request waits for.
    private var renewal: Task<String, any Error>?

    /// A session holding `token` (saved in `store`), renewed by `signIn`, which answers a new
    /// session token (``Container/Authentication/signIn(email:password:deviceName:)``'s, say; it
    /// may ask the user).
    public init(token: String, store: (any SessionTokenStore)? = nil, signIn: @escaping @Sendable () async throws -> String) throws {
        current = token
        self.store = store
        self.signIn = signIn
        try store?.save(token)
    }

    /// The session of the token `store` kept, or, when it kept none, of a new sign-in.
    public static func restored(from store: any SessionTokenStore, signIn: @escaping @Sendable () async throws -> String) async throws -> SignedInSession {
        if let kept = try store.load() { return try SignedInSession(token: kept, store: store, signIn: signIn) }
        return try SignedInSession(token: try await signIn(), store: store, signIn: signIn)
    }

    /// The token requests carry now.
    public var token: String { lock.withLock { current } }

    /// Signs in again after the server refused `refused`, unless that was done meanwhile (the
    /// token is no longer `refused`); answers the token to use.
    @discardableResult
    func renew(refused: String) async throws -> String {
        enum Step { case renewed(String), wait(Task<String, any Error>) }
        let step: Step = lock.withLock {
            if current != refused { return .renewed(current) }
            if let renewal { return .wait(renewal) }
            // One sign-in for every refused request: unstructured so that a request cancelled
            // while waiting does not cancel it for the others; it is held in `renewal` and
            // awaited by each of them, and ends with the app's closure.
            let signIn = self.signIn
            let task = Task { try await signIn() }
            renewal = task
            return .wait(task)
        }
        let task: Task<String, any Error>
        switch step {
        case .renewed(let token): return token
        case .wait(let waiting): task = waiting
        }
        // Awaited by every request it renews for; the session ends with its last one.
        let result = await task.result
        return try lock.withLock {
            if renewal == task { renewal = nil }
            let token = try result.get()
            if current == refused {
                current = token
                try store?.save(token)
            }
            return current
        }
    }

    /// Forgets the token, in memory and in the store (after signing out).
    func forget() throws {
        try lock.withLock {
            current = ""
            try store?.save(nil)
        }
    }

    public static func == (left: SignedInSession, right: SignedInSession) -> Bool { left === right }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// Where a ``SignedInSession`` keeps its token between launches.
public protocol SessionTokenStore: Sendable {
    /// The kept token, or `nil`.
    func load() throws -> String?
    /// Keeps `token`; `nil` removes it.
    func save(_ token: String?) throws
}

/// A session token in a file only its owner can read or write (mode 0600, written whole or not
/// at all): the store on Linux.
public struct FileSessionTokenStore: SessionTokenStore {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    public func load() throws -> String? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let token = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return token.isEmpty ? nil : token
    }

    public func save(_ token: String?) throws {
        guard let token else {
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
            return
        }
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        // Made 0600 before the token is written, then moved over the old file.
        let staging = path + ".partial-\(UUID().uuidString)"
        guard FileManager.default.createFile(atPath: staging, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw RecordSyncError(.internalError, "the session token file \(staging) could not be made")
        }
        do {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: staging))
            try handle.write(contentsOf: Data((token + "\n").utf8))
            try handle.synchronize()
            try handle.close()
            guard rename(staging, path) == 0 else { throw RecordSyncError(.internalError, "the session token file \(path) could not be written (errno \(errno))") }
        } catch {
            try? FileManager.default.removeItem(atPath: staging)
            throw error
        }
    }
}

#if canImport(Security)
/// A session token in the keychain (a generic password, this device only, readable after the
/// first unlock): the store on Apple platforms.
public struct KeychainSessionTokenStore: SessionTokenStore {
    /// The item's service and account.
    public let service: String
    public let account: String

    public init(service: String, account: String = "session") {
        self.service = service
        self.account = account
    }

    private var query: [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: account]
    }

    public func load() throws -> String? {
        var query = self.query
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = item as? Data else { throw RecordSyncError(.internalError, "the keychain answered \(status)") }
        return String(decoding: data, as: UTF8.self)
    }

    public func save(_ token: String?) throws {
        let deleted = SecItemDelete(query as CFDictionary)
        guard deleted == errSecSuccess || deleted == errSecItemNotFound else { throw RecordSyncError(.internalError, "the keychain answered \(deleted)") }
        guard let token else { return }
        var item = query
        item[kSecValueData as String] = Data(token.utf8)
        item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        let added = SecItemAdd(item as CFDictionary, nil)
        guard added == errSecSuccess else { throw RecordSyncError(.internalError, "the keychain answered \(added)") }
    }
}
#endif
