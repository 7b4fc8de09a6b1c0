// Targets over the HTTP layer's and the rules' parsers: Range headers, multipart uploads, signed
// asset URLs, server-to-server signatures, and whole records/modify bodies through the rules
// against a real SQLite store in a directory of the run's own.
import Crypto
import Foundation
import NIOCore
import RecordModel
@testable import RecordRules
@testable import RecordServer
import RecordSQLiteEngine

// MARK: Range

func fuzzRange(_ data: Data) {
    // The first 8 bytes are the body's size, the rest the header.
    guard data.count >= 8 else { return }
    let size = Int64(abs(data.prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) } % (1 << 40)))
    let header = String(decoding: data.dropFirst(8), as: UTF8.self)
    switch ByteRange.parse(header, size: size) {
    case .whole, .unsatisfiable:
        break
    case .range(let range):
        guard range.lowerBound >= 0, range.upperBound <= size, !range.isEmpty else {
            fatalError("range \(range) for \(NameRules.quoted(header)) is not a non-empty part of a body of \(size) bytes")
        }
    }
}

// MARK: Multipart

/// The file bytes `MultipartFile` takes out of `body` fed in pieces of the given sizes (cycled),
/// or the error it refused the body with; `nil` for a body that is not multipart.
func multipartFile(contentType: String, body: [UInt8], pieces: [Int]) -> Result<[UInt8], RecordSyncError>? {
    do {
        guard var multipart = try MultipartFile(contentType: contentType) else { return nil }
        var out: [UInt8] = []
        var offset = 0, index = 0
        while offset < body.count {
            let size = min(body.count - offset, pieces.isEmpty ? body.count : pieces[index % pieces.count])
            index += 1
            for piece in try multipart.take(ByteBuffer(bytes: body[offset..<(offset + size)])) { out += piece.readableBytesView }
            offset += size
        }
        for piece in try multipart.finish() { out += piece.readableBytesView }
        return .success(out)
    } catch let error as RecordSyncError {
        return .failure(error)
    } catch {
        fatalError("multipart threw \(error), not a RecordSyncError")
    }
}

func fuzzMultipart(_ data: Data) {
    // The first line is the Content-Type, its first byte the pieces' sizes' seed; the rest is
    // the body.
    let bytes = [UInt8](data)
    guard let newline = bytes.firstIndex(of: 10), newline > 0 else { return }
    let contentType = String(decoding: bytes[1..<newline], as: UTF8.self)
    let body = Array(bytes[(newline + 1)...])
    // Past 64 KiB without a boundary or a part's header end the body is refused, and whether
    // that shows before the end depends on where the pieces fall.
    guard body.count <= 64 * 1024 else { return }
    var seed = UInt64(bytes[0]) | 1
    let pieces = (0..<8).map { _ in
        seed = seed &* 6364136223846793005 &+ 1442695040888963407
        return 1 + Int(seed >> 58)
    }
    let whole = multipartFile(contentType: contentType, body: body, pieces: [])
    let split = multipartFile(contentType: contentType, body: body, pieces: pieces)
    switch (whole, split) {
    case (nil, nil):
        break
    case (.success(let a)?, .success(let b)?):
        if a != b { fatalError("the file part differs when the body comes in pieces of \(pieces): \(a.count) bytes whole, \(b.count) split") }
        if a.count > body.count { fatalError("the file part is longer than the body") }
    case (.failure?, .failure?):
        // The reason may differ (a part's headers too long shows at another point), not the
        // refusal.
        break
    default:
        fatalError("whole and split bodies answered differently: \(String(describing: whole)) against \(String(describing: split)), pieces \(pieces)")
    }
}

// MARK: A store of the run's own

/// A SQLite store in a fresh directory, with a user and a registered server-to-server key.
struct FuzzStore: Sendable {
    let store: RecordStore
    let user: User
    let key: P256.Signing.PrivateKey
    let keyID: String

    static let shared: FuzzStore = blocking {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recordfuzz-\(getpid())").path
        try? FileManager.default.removeItem(atPath: directory)
        try! FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: FileManager.default.temporaryDirectory.appendingPathComponent("recordfuzz-\(getpid())")) }
        var limits = StoreLimits()
        limits.quota = Quota(records: 1 << 40, bytes: 1 << 50)
        let store = RecordStore(engine: try! SQLiteEngine(path: directory + "/records.sqlite"), limits: limits)
        let user = try! await store.createUser(named: "fuzz", tokenHash: Credentials.hash(Credentials.newToken()))
        let key = P256.Signing.PrivateKey()
        let keyID = try! await store.addServerKey(forUserNamed: "fuzz", publicKeyPEM: key.publicKey.pemRepresentation)
        return FuzzStore(store: store, user: user, key: key, keyID: keyID)
    }
}

// MARK: Signed asset URLs

func fuzzSignedURL(_ data: Data) {
    let fuzz = FuzzStore.shared
    // Odd first byte: the rest is a payload the store signs, so that grants' JSON is reached;
    // even: the rest is a token as a URL carries it.
    let signs = data.first.map { $0 & 1 == 1 } ?? false
    let rest = Data(data.dropFirst())
    blocking {
        let token: String
        if signs {
            let key = try! await fuzz.store.assetSigner.signingKey()
            token = AssetSigner.sign(rest, with: key)
            guard try! await fuzz.store.assetSigner.verify(token) == rest else { fatalError("a token the store signed did not verify to its payload") }
        } else {
            token = String(decoding: rest, as: UTF8.self)
        }
        for read in [{ _ = try await fuzz.store.uploadGrant(token) }, { _ = try await fuzz.store.downloadGrant(token) }] as [@Sendable () async throws -> Void] {
            do {
                try await read()
            } catch let error as RecordSyncError {
                if error.code == .internalError { fatalError("INTERNAL_ERROR for a signed URL: \(error)") }
            } catch {
                fatalError("a signed URL threw \(error), not a RecordSyncError")
            }
        }
    }
}

// MARK: Server-to-server signatures

func fuzzSignature(_ data: Data) {
    let fuzz = FuzzStore.shared
    // The first byte's bits: 1 the registered key's ID, 2 the current date, 4 signed by the
    // harness with the registered key, 8 sent twice; the high four pick which of the forms a
    // signature may take the harness signs. Then lines: key ID, date, signature, path (with a
    // query after `?`, if any); the rest is the body.
    guard let flags = data.first else { return }
    var lines = Data(data.dropFirst()).split(separator: 10, maxSplits: 4, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    while lines.count < 5 { lines.append("") }
    let date = flags & 2 != 0 ? ISO8601DateFormatter().string(from: Date()) : lines[1]
    let path = lines[3].split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
    var request = SignedRequest(keyID: flags & 1 != 0 ? fuzz.keyID : lines[0], date: date, signature: lines[2], body: Data(lines[4].utf8),
                                subpath: String(path[0]), query: path.count > 1 ? String(path[1]) : nil)
    let signed = flags & 4 != 0
    if signed {
        let messages = request.messages
        request.signature = try! fuzz.key.signature(for: messages[Int(flags >> 4) % messages.count]).derRepresentation.base64EncodedString()
    }
    // Only a signature made with the key can verify; one made with it over the current date
    // must, once.
    let mayVerify = signed && request.keyID == fuzz.keyID
    let mustVerify = signed && flags & 3 == 3
    let sent = request
    blocking {
        for attempt in 0..<(flags & 8 != 0 ? 2 : 1) {
            do {
                let user = try await fuzz.store.verify(sent)
                if !mayVerify { fatalError("a request the harness did not sign with the key verified: \(sent)") }
                if attempt == 1 { fatalError("a replayed signature verified") }
                if user != fuzz.user { fatalError("the signature verified as another user") }
            } catch let error as RecordSyncError {
                if error.code != .authenticationFailed { fatalError("a signature check answered \(error), not AUTHENTICATION_FAILED") }
                if mustVerify && attempt == 0 { fatalError("a request signed with the registered key, dated now, was refused: \(error)") }
            } catch {
                fatalError("a signature check threw \(error), not a RecordSyncError")
            }
        }
    }
}

// MARK: records/modify through the rules

func fuzzRules(_ data: Data) {
    let fuzz = FuzzStore.shared
    // A body starting with `P` goes to the public database (without the `P`), any other to the
    // user's private one.
    let isPublic = data.first == UInt8(ascii: "P")
    let body = isPublic ? Data(data.dropFirst()) : data
    let scope = DatabaseScope(container: "iCloud.fuzz", environment: "development", kind: isPublic ? .public : .private, user: fuzz.user)
    blocking {
        do {
            let request = try JSONBody.decode(ModifyRecordsRequest.self, from: body)
            let answer = try await fuzz.store.modifyRecords(request, in: scope)
            for result in answer.records {
                if case .failure(let error) = result, error.code == .internalError { fatalError("INTERNAL_ERROR for a record: \(error)") }
            }
            _ = try JSONBody.response(answer, numbersAsStrings: request.numbersAsStrings == true)
        } catch let error as RecordSyncError {
            if error.code == .internalError { fatalError("INTERNAL_ERROR for a records/modify body: \(error)") }
        } catch {
            fatalError("records/modify threw \(error), not a RecordSyncError")
        }
    }
}

// MARK: Sharing

/// A store where user `owner` shares zone `Shared` (read-write) with user `participant`, who
/// accepted, and in zone `Tree` record `root` (not `hidden`) by share `treeshare`, accepted too;
/// the zone share's short GUID.
struct FuzzSharing: Sendable {
    let store: RecordStore
    let owner: User
    let participant: User
    let shortGUID: String
    static let container = "iCloud.fuzz"

    static let shared: FuzzSharing = blocking {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recordfuzz-sharing-\(getpid())").path
        try? FileManager.default.removeItem(atPath: directory)
        try! FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: FileManager.default.temporaryDirectory.appendingPathComponent("recordfuzz-sharing-\(getpid())")) }
        let store = RecordStore(engine: try! SQLiteEngine(path: directory + "/records.sqlite"))
        let owner = try! await store.createUser(named: "owner", tokenHash: Credentials.hash(Credentials.newToken()))
        let participant = try! await store.createUser(named: "participant", tokenHash: Credentials.hash(Credentials.newToken()))
        let scope = DatabaseScope(container: container, environment: "development", kind: .private, user: owner)
        _ = try! await store.modifyZones(ModifyZonesRequest(operations: [.init(.create, ZoneID(zoneName: "Shared"))]), in: scope)
        let share = RecordPayload(recordName: ShareInfo.zoneShareName, recordType: ShareInfo.recordType, fields: [:],
                                  share: ShareEdit(participants: [ShareParticipant(userIdentity: ShareParticipantIdentity(lookupInfo: UserLookupInfo(userRecordName: participant.userRecordName)),
                                                                                   permission: .readWrite)]))
        let saved = try! await store.modifyRecords(ModifyRecordsRequest(operations: [RecordOperation(.create, share)], zoneID: ZoneID(zoneName: "Shared")), in: scope)
        let guid = saved.records.first!.record!.shareInfo!.shortGUID
        let participantScope = DatabaseScope(container: container, environment: "development", kind: .public, user: participant)
        _ = try! await store.shareMetadata(ShareMetadataRequest(shortGUIDs: [.init(value: guid)]), accept: true, in: participantScope)
        _ = try! await store.modifyZones(ModifyZonesRequest(operations: [.init(.create, ZoneID(zoneName: "Tree"))]), in: scope)
        var treeShare = share
        treeShare.recordName = "treeshare"
        treeShare.share?.forRecord = "root"
        let tree = try! await store.modifyRecords(ModifyRecordsRequest(operations: [
            RecordOperation(.create, RecordPayload(recordName: "root", recordType: "Note", fields: [:])),
            RecordOperation(.create, RecordPayload(recordName: "hidden", recordType: "Note", fields: [:])),
            RecordOperation(.create, treeShare),
        ], zoneID: ZoneID(zoneName: "Tree")), in: scope)
        let treeGUID = tree.records[2].record!.shareInfo!.shortGUID
        _ = try! await store.shareMetadata(ShareMetadataRequest(shortGUIDs: [.init(value: treeGUID)]), accept: true, in: participantScope)
        return FuzzSharing(store: store, owner: owner, participant: participant, shortGUID: guid)
    }
}

func fuzzSharing(_ data: Data) {
    let fuzz = FuzzSharing.shared
    let body = Data(data.dropFirst())
    @Sendable func scope(_ kind: DatabaseKind, _ user: User) -> DatabaseScope {
        DatabaseScope(container: FuzzSharing.container, environment: "development", kind: kind, user: user)
    }
    blocking {
        do {
            switch data.first {
            case UInt8(ascii: "R")?, UInt8(ascii: "A")?:
                // The harness's own short GUID, wherever the body says `GUID`.
                let text = String(decoding: body, as: UTF8.self).replacingOccurrences(of: "GUID", with: fuzz.shortGUID)
                let request = try JSONBody.decode(ShareMetadataRequest.self, from: Data(text.utf8))
                let answer = try await fuzz.store.shareMetadata(request, accept: data.first == UInt8(ascii: "A"), in: scope(.public, fuzz.participant))
                for case .failure(let error) in answer.results where error.code == .internalError { fatalError("INTERNAL_ERROR for a short GUID: \(error)") }
                _ = try JSONBody.response(answer)
            default:
                let shared = data.first == UInt8(ascii: "S")
                var request = try JSONBody.decode(ModifyRecordsRequest.self, from: shared ? body : data)
                if shared, request.zoneID?.ownerRecordName == "OWNER" { request.zoneID?.ownerRecordName = fuzz.owner.userRecordName }
                let answer = try await fuzz.store.modifyRecords(request, in: shared ? scope(.shared, fuzz.participant) : scope(.private, fuzz.owner))
                for result in answer.records {
                    if case .failure(let error) = result, error.code == .internalError { fatalError("INTERNAL_ERROR for a record: \(error)") }
                }
                _ = try JSONBody.response(answer, numbersAsStrings: request.numbersAsStrings == true)
            }
        } catch let error as RecordSyncError {
            if error.code == .internalError { fatalError("INTERNAL_ERROR for a sharing body: \(error)") }
        } catch {
            fatalError("a sharing body threw \(error), not a RecordSyncError")
        }
    }
}

// MARK: Sign-in

/// An identity provider of the harness's own: a P-256 key, its key set, its tokens.
struct FuzzIdentity: Sendable {
    static let shared = FuzzIdentity()
    static let issuer = "https://fuzz.example"
    let key = P256.Signing.PrivateKey()
    let provider: IdentityProvider

    init() {
        let point = key.publicKey.rawRepresentation
        let jwks = """
            {"keys":[{"kty":"EC","alg":"ES256","kid":"fuzz","crv":"P-256","x":"\(Self.base64URL(point.prefix(32)))","y":"\(Self.base64URL(point.suffix(32)))"}]}
            """
        provider = try! IdentityProvider(IdentityProviderSettings(name: "fuzz", issuer: Self.issuer, audiences: ["fuzz.app"], jwksFile: "-"),
                                         loadKeys: { jwks })
    }

    /// `claims` (JSON text, as it is) signed with the provider's key.
    func token(claims: Data) -> String {
        let signed = Self.base64URL(Data(#"{"alg":"ES256","kid":"fuzz","typ":"JWT"}"#.utf8)) + "." + Self.base64URL(claims)
        let signature = try! key.signature(for: Data(signed.utf8))
        return signed + "." + Self.base64URL(signature.rawRepresentation)
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

func fuzzSignIn(_ data: Data) {
    // The first byte chooses: 0, the rest is a sign-in body; 1, the rest is a token's claims,
    // signed by the harness; any other, the rest is an ID token as it is.
    guard let first = data.first else { return }
    let rest = Data(data.dropFirst())
    let fuzz = FuzzIdentity.shared
    var token: String, nonce: String?
    switch first {
    case 0:
        guard let request = try? JSONBody.decode(IDTokenSignInRequest.self, from: rest) else { return }
        guard let written = try? JSONValueEncoder().encode(request), (try? JSONBody.decode(IDTokenSignInRequest.self, from: written)) == request else {
            fatalError("a sign-in body does not read back as itself: \(request)")
        }
        (token, nonce) = (request.idToken, request.nonce)
    case 1:
        token = fuzz.token(claims: rest)
        nonce = rest.count % 2 == 0 ? "n" : nil
    default:
        token = String(decoding: rest, as: UTF8.self)
    }
    _ = IdentityProvider.claimedIssuer(of: token)
    blocking { [token, nonce] in
        do {
            let identity = try await fuzz.provider.verify(token, nonce: nonce)
            guard identity.issuer == FuzzIdentity.issuer, !identity.subject.isEmpty else {
                fatalError("an ID token passed with issuer \(identity.issuer) and subject \(identity.subject)")
            }
        } catch let error as RecordSyncError {
            if error.code != .authenticationFailed { fatalError("an ID token was refused with \(error.code.rawValue), not AUTHENTICATION_FAILED: \(error)") }
        } catch {
            fatalError("verifying an ID token threw \(error), not a RecordSyncError")
        }
    }
}

// MARK: Built-in accounts

/// The first byte chooses the body the rest is read as.
func fuzzAccounts(_ data: Data) {
    guard let first = data.first else { return }
    let rest = Data(data.dropFirst())
    /// Decodes the rest as a `Body`; it must write back as itself.
    func body<Body: Codable & Equatable>(_ type: Body.Type) -> Body? {
        guard let body = try? JSONBody.decode(Body.self, from: rest) else { return nil }
        guard let written = try? JSONEncoder().encode(body), (try? JSONBody.decode(Body.self, from: written)) == body else {
            fatalError("an account body does not read back as itself: \(body)")
        }
        return body
    }
    var settings = AccountSettings()
    settings.signUp = first & 0x80 == 0 ? .open : .invitation
    settings.hashing = PasswordHashing(rounds: 1 << 10)
    settings.throttle.failuresPerAccount = 1 << 20
    settings.throttle.failuresPerAddress = 1 << 20
    settings.throttle.mailsPerAccount = 1 << 20
    let accounts = Accounts(store: FuzzStore.shared.store, settings: settings)
    let user = FuzzStore.shared.user
    let hash = Credentials.hash(Credentials.newToken())
    typealias Work = @Sendable () async throws -> Void
    var work: Work?
    switch first & 0x7F {
    case 0:
        if let request = body(SignUpRequest.self) {
            work = { _ = try await accounts.signUp(email: request.email, password: request.password, invitation: request.invitation, client: "192.0.2.1") }
        }
    case 1:
        if let request = body(SignUpVerifyRequest.self) {
            work = {
                _ = try await accounts.verify(email: request.email, code: request.code, deviceName: request.deviceName, givenName: request.givenName,
                                              familyName: request.familyName, tokenHash: hash, lifetime: .seconds(60), client: "192.0.2.1")
            }
        }
    case 2:
        if let request = body(PasswordSignInRequest.self) {
            work = {
                _ = try await accounts.signIn(email: request.email, password: request.password, deviceName: request.deviceName, tokenHash: hash,
                                              lifetime: .seconds(60), client: "192.0.2.1")
            }
        }
    case 3:
        if let request = body(PasswordChangeRequest.self) {
            work = { _ = try await accounts.changePassword(of: user, password: request.password, newPassword: request.newPassword, keeping: nil, client: nil) }
        }
    case 4:
        if let request = body(ResetRequest.self) {
            work = { _ = try await accounts.requestReset(email: request.email, client: nil) }
        }
    case 5:
        if let request = body(ResetCompleteRequest.self) {
            work = {
                _ = try await accounts.completeReset(email: request.email, code: request.code, newPassword: request.newPassword, deviceName: request.deviceName,
                                                     tokenHash: hash, lifetime: .seconds(60), client: nil)
            }
        }
    default:
        // The fuzz user has no password: the body is only read.
        if body(AccountDeleteRequest.self) != nil {
            work = { _ = try await accounts.store.signInMethods(of: user) }
        }
    }
    guard let work else { return }
    blocking {
        do {
            try await work()
        } catch let error as RecordSyncError {
            guard [.badRequest, .authenticationFailed, .accessDenied, .throttled, .conflict].contains(error.code) else {
                fatalError("an account body was answered \(error)")
            }
        } catch {
            fatalError("an account body threw \(error), not a RecordSyncError")
        }
    }
}

// MARK: The web sign-in page

/// The first byte chooses what the rest is read as.
func fuzzWebSignIn(_ data: Data) {
    guard let first = data.first else { return }
    let text = String(decoding: data.dropFirst(), as: UTF8.self)
    switch first % 3 {
    case 0:
        let fields = SignInPage.formFields(text)
        let written = fields.sorted { $0.key < $1.key }.map { "\(OIDCClient.formEncoded($0.key))=\(OIDCClient.formEncoded($0.value))" }.joined(separator: "&")
        guard SignInPage.formFields(written) == fields else { fatalError("form fields do not read back as themselves: \(fields)") }
    case 1:
        let names = SignInPage.appleUserNames(text)
        for name in [names.given, names.family].compactMap({ $0 }) where name.isEmpty || name.utf8.count > 255 {
            fatalError("a name Apple's user field gave is empty or over 255 bytes")
        }
    default:
        guard (try? RecordStore.checkCallback(text)) != nil else { return }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(), components.fragment == nil,
              scheme == "https" || (scheme == "http" && ["localhost", "127.0.0.1", "[::1]", "::1"].contains(components.host?.lowercased() ?? "")) else {
            fatalError("a sign-in callback was accepted that is not https (or http to this machine) without a fragment: \(text)")
        }
    }
}
