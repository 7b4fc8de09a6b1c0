import Foundation
import Hummingbird
import RecordClient
import RecordModel
import RecordRules
import RecordServer
import TestSupport
import Testing

/// Built-in accounts over HTTP (docs/protocol.md, "Accounts"), on both engines, with the
/// codes mailed through a real SMTP server of the tests' own (aiosmtpd).
@Suite struct AccountTests {
    static let container = "iCloud.test.Gallery"
    static let auth = "/auth/1/\(container)/development"

    /// A server signing users up, its mail going to `mail`; scrypt's N kept small (the hashing
    /// is not what these tests look at).
    static func configure(_ mail: TestMailServer, signUp: SignUpMode = .open, _ more: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in })
        -> @Sendable (inout ServerConfiguration) -> Void {
        let url = mail.url
        return { configuration in
            configuration.accounts.signUp = signUp
            configuration.accounts.hashing = PasswordHashing(rounds: 1 << 10)
            configuration.mail = .smtp(try! SMTPSettings(url: url))
            configuration.mailFrom = "accounts@gallery.test"
            more(&configuration)
        }
    }

    @Test func signUpVerifySignInAndSignOutThroughHTTP() async throws {
        try await withMailServer { mail in
            try await withServer(configure: Self.configure(mail)) { server in
                let email = "ada-\(server.backend)@example.com"
                let carol = try await server.user("carol")
                let signUp = try await Self.post(server, "signup", SignUpRequest(email: email, password: "correct horse"))
                #expect(signUp.status == 200, "\(signUp.reason)")
                #expect(signUp.json == .object([:]))
                let message = try await mail.nextMessage(to: email)
                #expect(message.contains("From: accounts@gallery.test") && message.contains("Subject: Your sign-up code"), "\(message)")
                let code = try #require(Self.code(in: message))

                // Unverified: nobody finds the address, and it signs no one in.
                #expect(try await Self.lookUp(email, as: carol).isEmpty)
                let early = try await Self.post(server, "signin/password", PasswordSignInRequest(email: email, password: "correct horse"))
                #expect(early.code == "AUTHENTICATION_FAILED")
                #expect(try await server.store.users().count == 1)

                // A wrong code makes nothing.
                let wrong = try await Self.post(server, "signup/verify", SignUpVerifyRequest(email: email, code: code == "AAAA-AAAA" ? "BBBB-BBBB" : "AAAA-AAAA"))
                #expect(wrong.code == "AUTHENTICATION_FAILED")
                #expect(try await server.store.users().count == 1)

                // The code (typed in lower case, without its dash) makes the account and signs in.
                let verified = try await Self.post(server, "signup/verify", SignUpVerifyRequest(email: email.uppercased(), code: code.lowercased().replacingOccurrences(of: "-", with: ""),
                                                                                               deviceName: "Ada's Mac", givenName: "Ada", familyName: "Lovelace"))
                #expect(verified.status == 200, "\(verified.reason)")
                let session = try verified.decode(SignInResponse.self)
                #expect(session.created && session.tokenName == "Ada's Mac")
                let ada = Session(client: server.client, token: session.ckWebAuthToken, container: Self.container, userRecordName: session.userRecordName)
                let saved = try await ada.save([Record(recordName: "note", recordType: "Note", fields: ["text": .string("hello")])])
                #expect(saved.first?.created?.userRecordName == session.userRecordName)
                // Verified: found by the address, with the names given.
                #expect(try await Self.lookUp(email, as: carol) == [session.userRecordName])
                // The code works once.
                #expect(try await Self.post(server, "signup/verify", SignUpVerifyRequest(email: email, code: code)).code == "AUTHENTICATION_FAILED")

                // Signing in with the password: the same user, another token.
                let signIn = try await Self.post(server, "signin/password", PasswordSignInRequest(email: email, password: "correct horse", deviceName: "Ada's iPhone"))
                #expect(signIn.status == 200, "\(signIn.reason)")
                let second = try signIn.decode(SignInResponse.self)
                #expect(!second.created && second.userRecordName == session.userRecordName && second.tokenName == "Ada's iPhone")

                // Signing out revokes that token alone.
                let out = try await server.send(.post, "\(Self.auth)/signout", headers: [.authorization: "Bearer \(second.ckWebAuthToken)"], body: "{}")
                #expect(out.status == 200, "\(out.reason)")
                try await Self.expectRefused(server, second.ckWebAuthToken)
                #expect(try await ada.post("users/caller", "{}", database: "public").status == 200)

                if server.backend.description == Backend.sqlite.description {
                    let listed = try await ChildProcess.run("recordserver", ["user", "list", "--data", server.directory])
                    #expect(listed.output.contains("\(email.lowercased())\t\(session.userRecordName)\t") && listed.output.contains("\tpassword\n"), "\(listed.output)")
                }
            }
        }
    }

    @Test func answersAreTheSameForKnownAndUnknownAddresses() async throws {
        try await withMailServer { mail in
            try await withServer(configure: Self.configure(mail)) { server in
                let known = "known-\(server.backend)@example.com"
                let unknown = "unknown-\(server.backend)@example.com"
                _ = try await Self.signUp(server, mail, known, "first password")

                // Signing up with a taken address answers as with a free one; the mail differs.
                let taken = try await Self.post(server, "signup", SignUpRequest(email: known, password: "another password"))
                let free = try await Self.post(server, "signup", SignUpRequest(email: unknown, password: "another password"))
                #expect(taken.status == 200 && free.status == 200)
                #expect(taken.data == free.data)
                #expect(try await mail.nextMessage(to: known).contains("Subject: You already have an account"))
                #expect(try await mail.nextMessage(to: unknown).contains("Subject: Your sign-up code"))
                // The taken address's password is unchanged.
                #expect(try await Self.post(server, "signin/password", PasswordSignInRequest(email: known, password: "first password")).status == 200)

                // A wrong password and an unknown address: the same answer.
                let wrongPassword = try await Self.post(server, "signin/password", PasswordSignInRequest(email: known, password: "not the password"))
                let noAccount = try await Self.post(server, "signin/password", PasswordSignInRequest(email: "nobody-\(server.backend)@example.com", password: "not the password"))
                #expect(wrongPassword.status == 401 && noAccount.status == 401)
                #expect(wrongPassword.code == "AUTHENTICATION_FAILED" && noAccount.code == "AUTHENTICATION_FAILED")
                #expect(wrongPassword.reason == noAccount.reason)

                // A reset of a known and an unknown address: the same answer.
                let resetKnown = try await Self.post(server, "reset", ResetRequest(email: known))
                let resetUnknown = try await Self.post(server, "reset", ResetRequest(email: "nobody-\(server.backend)@example.com"))
                #expect(resetKnown.status == 200 && resetKnown.data == resetUnknown.data)
                #expect(try await mail.nextMessage(to: known).contains("Subject: Your password reset code"))
                #expect(try await mail.nextMessage(to: "nobody-\(server.backend)@example.com").contains("has no account there"))
            }
        }
    }

    /// The key is derived for an unknown address too, so it answers in the same time class as a
    /// wrong password (without it, it would answer in about a millisecond).
    @Test func anUnknownAddressTakesAsLongAsAWrongPassword() async throws {
        try await withMailServer { mail in
            try await withServer(configure: Self.configure(mail) { $0.accounts.hashing = PasswordHashing(rounds: 1 << 15) }) { server in
                guard server.backend.description == Backend.sqlite.description else { return }
                let known = "timed@example.com"
                _ = try await Self.signUp(server, mail, known, "first password")
                func median(_ email: String) async throws -> Double {
                    var times: [Double] = []
                    for _ in 0..<3 {
                        let start = ContinuousClock.now
                        #expect(try await Self.post(server, "signin/password", PasswordSignInRequest(email: email, password: "wrong password")).status == 401)
                        let elapsed = ContinuousClock.now - start
                        times.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
                    }
                    return times.sorted()[1]
                }
                let wrong = try await median(known)
                let unknown = try await median("nobody@example.com")
                #expect(unknown > wrong / 2, "unknown address \(unknown) s, wrong password \(wrong) s")
            }
        }
    }

    @Test func passwordChangeRevokesOtherSessionsAndResetSetsANewOne() async throws {
        try await withMailServer { mail in
            try await withServer(configure: Self.configure(mail)) { server in
                let email = "grace-\(server.backend)@example.com"
                let laptop = try await Self.signUp(server, mail, email, "first password")
                let phone = try await Self.post(server, "signin/password", PasswordSignInRequest(email: email, password: "first password", deviceName: "phone"))
                    .decode(SignInResponse.self)

                // A wrong present password changes nothing.
                let refused = try await Self.post(server, "password", PasswordChangeRequest(password: "wrong password", newPassword: "second password"), token: laptop.ckWebAuthToken)
                #expect(refused.code == "AUTHENTICATION_FAILED")
                #expect(try await Self.post(server, "password", PasswordChangeRequest(password: "first password", newPassword: "short")).code == "AUTHENTICATION_REQUIRED")
                #expect(try await Self.post(server, "password", PasswordChangeRequest(password: "first password", newPassword: "short"), token: laptop.ckWebAuthToken).code == "BAD_REQUEST")

                let changed = try await Self.post(server, "password", PasswordChangeRequest(password: "first password", newPassword: "second password"), token: laptop.ckWebAuthToken)
                #expect(changed.status == 200, "\(changed.reason)")
                #expect(try changed.decode(PasswordChangeResponse.self).revokedTokens == 1)
                try await Self.expectRefused(server, phone.ckWebAuthToken)
                #expect(try await Self.caller(server, laptop.ckWebAuthToken).status == 200)
                #expect(try await Self.post(server, "signin/password", PasswordSignInRequest(email: email, password: "first password")).code == "AUTHENTICATION_FAILED")
                #expect(try await Self.post(server, "signin/password", PasswordSignInRequest(email: email, password: "second password")).status == 200)

                // A reset: the code by mail sets a new password and revokes every token.
                #expect(try await Self.post(server, "reset", ResetRequest(email: email)).status == 200)
                let code = try #require(Self.code(in: try await mail.nextMessage(to: email)))
                #expect(try await Self.post(server, "reset/complete", ResetCompleteRequest(email: email, code: "AAAA-BBBB", newPassword: "third password")).code
                    == "AUTHENTICATION_FAILED")
                let reset = try await Self.post(server, "reset/complete", ResetCompleteRequest(email: email, code: code, newPassword: "third password", deviceName: "laptop"))
                #expect(reset.status == 200, "\(reset.reason)")
                let afterReset = try reset.decode(SignInResponse.self)
                #expect(afterReset.userRecordName == laptop.userRecordName && !afterReset.created)
                try await Self.expectRefused(server, laptop.ckWebAuthToken)
                #expect(try await Self.caller(server, afterReset.ckWebAuthToken).status == 200)
                #expect(try await Self.post(server, "signin/password", PasswordSignInRequest(email: email, password: "second password")).code == "AUTHENTICATION_FAILED")
                #expect(try await Self.post(server, "signin/password", PasswordSignInRequest(email: email, password: "third password")).status == 200)
                // The code works once.
                #expect(try await Self.post(server, "reset/complete", ResetCompleteRequest(email: email, code: code, newPassword: "fourth password")).code
                    == "AUTHENTICATION_FAILED")
            }
        }
    }

    @Test func usersDeleteTheirOwnAccount() async throws {
        try await withMailServer { mail in
            try await withServer(configure: Self.configure(mail)) { server in
                let email = "leaving-\(server.backend)@example.com"
                let session = try await Self.signUp(server, mail, email, "first password")
                let user = Session(client: server.client, token: session.ckWebAuthToken, container: Self.container, userRecordName: session.userRecordName)
                _ = try await user.save([Record(recordName: "note", recordType: "Note", fields: ["text": .string("mine")])])

                #expect(try await Self.post(server, "account/delete", AccountDeleteRequest(), token: session.ckWebAuthToken).code == "AUTHENTICATION_FAILED")
                #expect(try await Self.post(server, "account/delete", AccountDeleteRequest(password: "wrong password"), token: session.ckWebAuthToken).code
                    == "AUTHENTICATION_FAILED")
                let deleted = try await Self.post(server, "account/delete", AccountDeleteRequest(password: "first password"), token: session.ckWebAuthToken)
                #expect(deleted.status == 200, "\(deleted.reason)")
                #expect(try await server.store.users().contains { $0.user.userRecordName == session.userRecordName } == false)
                try await Self.expectRefused(server, session.ckWebAuthToken)
                #expect(try await Self.post(server, "signin/password", PasswordSignInRequest(email: email, password: "first password")).code == "AUTHENTICATION_FAILED")

                // The address is free again: a new sign-up makes a new user.
                let again = try await Self.signUp(server, mail, email, "new password")
                #expect(again.userRecordName != session.userRecordName)
            }
        }
    }

    @Test func failedSignInsAreThrottledPerAddressAndPerClient() async throws {
        try await withMailServer { mail in
            let configure = Self.configure(mail) { configuration in
                configuration.accounts.throttle.failuresPerAddress = 8
                configuration.trustedProxies = try! TrustedProxies(["127.0.0.0/8"])
            }
            try await withServer(configure: configure) { server in
                let email = "mallory-\(server.backend)@example.com"
                _ = try await Self.signUp(server, mail, email, "first password")
                for _ in 0..<5 {
                    #expect(try await Self.post(server, "signin/password", PasswordSignInRequest(email: email, password: "guess"), from: "203.0.113.1").code
                        == "AUTHENTICATION_FAILED")
                }
                // The address is throttled: the right password too, from any client.
                let throttled = try await Self.post(server, "signin/password", PasswordSignInRequest(email: email, password: "first password"), from: "203.0.113.2")
                #expect(throttled.code == "THROTTLED", "\(throttled.reason)")
                let retryAfter: Double = try #require(throttled.json["retryAfter"].flatMap {
                    switch $0 { case .double(let value): value; case .int(let value): Double(value); default: nil }
                })
                #expect(retryAfter > 0 && retryAfter <= 15 * 60)
                // Another address is not.
                let other = "other-\(server.backend)@example.com"
                _ = try await Self.signUp(server, mail, other, "other password", from: "203.0.113.3")
                #expect(try await Self.post(server, "signin/password", PasswordSignInRequest(email: other, password: "other password"), from: "203.0.113.1").status == 200)

                // One client guessing at many addresses: throttled after 8 failures in all (5 above).
                for index in 0..<3 {
                    #expect(try await Self.post(server, "signin/password", PasswordSignInRequest(email: "x\(index)@example.com", password: "guess"), from: "203.0.113.1").code
                        == "AUTHENTICATION_FAILED")
                }
                #expect(try await Self.post(server, "signin/password", PasswordSignInRequest(email: other, password: "other password"), from: "203.0.113.1").code == "THROTTLED")
                // Another client (behind the trusted proxy) is not.
                #expect(try await Self.post(server, "signin/password", PasswordSignInRequest(email: other, password: "other password"), from: "203.0.113.9").status == 200)
            }
            // Without a trusted proxy, X-Forwarded-For is not believed: every request is the peer's.
            try await withServer(configure: Self.configure(mail) { $0.accounts.throttle.failuresPerAddress = 3 }) { server in
                for index in 0..<3 {
                    _ = try await Self.post(server, "signin/password", PasswordSignInRequest(email: "y\(index)@example.com", password: "guess"), from: "198.51.100.\(index)")
                }
                #expect(try await Self.post(server, "signin/password", PasswordSignInRequest(email: "z@example.com", password: "guess"), from: "198.51.100.77").code == "THROTTLED")
            }
        }
    }

    @Test func invitationsAndClosedSignUp() async throws {
        try await withMailServer { mail in
            try await withServer(configure: Self.configure(mail, signUp: .invitation)) { server in
                let accounts = Accounts(store: server.store, settings: AccountSettings())
                let email = "invited-\(server.backend)@example.com"
                let forOne = try await accounts.invite(email: email, lifetime: .seconds(3600))
                #expect(try await Self.post(server, "signup", SignUpRequest(email: email, password: "a password")).code == "ACCESS_DENIED")
                #expect(try await Self.post(server, "signup", SignUpRequest(email: email, password: "a password", invitation: "NOPE-NOPE-NOPE-NOPE")).code == "ACCESS_DENIED")
                #expect(try await Self.post(server, "signup", SignUpRequest(email: "someone-else@example.com", password: "a password", invitation: forOne)).code
                    == "ACCESS_DENIED")
                #expect(mail.messages(to: "someone-else@example.com").isEmpty)
                let session = try await Self.signUp(server, mail, email, "a password", invitation: forOne)
                #expect(session.created)
                // Used: it admits no one else.
                let anyone = "another-\(server.backend)@example.com"
                #expect(try await Self.post(server, "signup", SignUpRequest(email: anyone, password: "a password", invitation: forOne)).code == "ACCESS_DENIED")
                // An invitation for any address, and an expired one.
                let open = try await accounts.invite(email: nil, lifetime: .seconds(3600))
                _ = try await Self.signUp(server, mail, anyone, "a password", invitation: open)
                let expired = try await accounts.invite(email: nil, lifetime: .seconds(0))
                #expect(try await Self.post(server, "signup", SignUpRequest(email: "late@example.com", password: "a password", invitation: expired)).code == "ACCESS_DENIED")
            }
            try await withServer(configure: Self.configure(mail, signUp: .closed)) { server in
                let closed = try await Self.post(server, "signup", SignUpRequest(email: "closed@example.com", password: "a password"))
                #expect(closed.code == "ACCESS_DENIED" && closed.reason.contains("closed"), "\(closed.reason)")
            }
        }
    }

    @Test func theOperatorInvitesAndVerifiesFromTheCommandLine() async throws {
        try await withMailServer { mail in
            try await withServer(configure: Self.configure(mail, signUp: .invitation)) { server in
                guard server.backend.description == Backend.sqlite.description else { return }
                let invited = try await ChildProcess.run("recordserver", ["account", "invite", "--email", "cli@example.com", "--data", server.directory])
                #expect(invited.status == 0)
                let code = invited.output.trimmingCharacters(in: .whitespacesAndNewlines)
                #expect(code.range(of: #"^[A-Z2-9]{4}(-[A-Z2-9]{4}){3}$"#, options: .regularExpression) != nil, "\(invited.output)")
                #expect(try await Self.post(server, "signup", SignUpRequest(email: "cli@example.com", password: "a password", invitation: code)).status == 200)
                let verified = try await ChildProcess.run("recordserver", ["account", "verify", "cli@example.com", "--data", server.directory])
                #expect(verified.status == 0 && verified.output == "cli@example.com\n", "\(verified.output)")
                #expect(try await Self.post(server, "signin/password", PasswordSignInRequest(email: "cli@example.com", password: "a password")).status == 200)
                let again = try await ChildProcess.run("recordserver", ["account", "verify", "nobody@example.com", "--data", server.directory], mergeErrors: true)
                #expect(again.status != 0 && again.output.contains("no sign-up"), "\(again.output)")
            }
        }
    }

    /// The client library: signing up, in and out; a session kept in a 0600 file that signs in
    /// again, once, when its token is refused (here: revoked by a password change elsewhere).
    @Test func theClientSignsUpKeepsItsTokenAndSignsInAgainWhenRefused() async throws {
        try await withMailServer { mail in
            try await withTemporaryDirectory { directory in
                try await withLiveServer(directory: directory, configure: Self.configure(mail)) { server in
                    let email = "client@example.com"
                    let auth = Container.Authentication(serverURL: server.url, identifier: Self.container)
                    try await auth.signUp(email: email, password: "first password")
                    let code = try #require(Self.code(in: try await mail.nextMessage(to: email)))
                    let first = try await auth.verifySignUp(email: email, code: code, deviceName: "laptop")
                    #expect(first.created)

                    let signIns = LockedCount()
                    let password = LockedValue("first password")
                    let tokenFile = "\(directory)/session/token"
                    let kept = try SignedInSession(token: first.ckWebAuthToken, store: FileSessionTokenStore(path: tokenFile)) {
                        signIns.add()
                        return try await auth.signIn(email: email, password: password.value, deviceName: "laptop").ckWebAuthToken
                    }
                    let attributes = try FileManager.default.attributesOfItem(atPath: tokenFile)
                    #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
                    #expect(try FileSessionTokenStore(path: tokenFile).load() == first.ckWebAuthToken)
                    let container = auth.container(session: kept)
                    _ = try await container.privateCloudDatabase.save(Record(recordType: "Note", recordID: Record.ID(recordName: "one")))

                    // Another device changes the password: the laptop's token is revoked.
                    let phone = auth.container(try await auth.signIn(email: email, password: "first password", deviceName: "phone"))
                    #expect(try await phone.changePassword(from: "first password", to: "second password") == 1)
                    password.value = "second password"
                    // The next requests sign in again, once, and go through.
                    try await Task.sleep(for: .milliseconds(1200))
                    async let a = container.privateCloudDatabase.save(Record(recordType: "Note", recordID: Record.ID(recordName: "two")))
                    async let b = container.privateCloudDatabase.save(Record(recordType: "Note", recordID: Record.ID(recordName: "three")))
                    _ = try await (a, b)
                    #expect(signIns.value == 1)
                    #expect(kept.token != first.ckWebAuthToken)
                    #expect(try FileSessionTokenStore(path: tokenFile).load() == kept.token)
                    // Restored from the file at the next launch: no sign-in.
                    let restored = try await SignedInSession.restored(from: FileSessionTokenStore(path: tokenFile)) {
                        Issue.record("signed in although a token was kept")
                        return ""
                    }
                    #expect(restored.token == kept.token)
                    // A wrong password when changing it is refused, and renews nothing.
                    await #expect { try await container.changePassword(from: "wrong password", to: "third password") } throws: {
                        ($0 as? RecordSyncError)?.code == .authenticationFailed
                    }
                    #expect(signIns.value == 1)

                    // Signing out revokes the token and empties the file.
                    try await container.signOut()
                    #expect(try FileSessionTokenStore(path: tokenFile).load() == nil)
                    // Deleting the account (with its password).
                    try await phone.deleteAccount(password: "second password")
                    await #expect { _ = try await auth.signIn(email: email, password: "second password") } throws: {
                        ($0 as? RecordSyncError)?.code == .authenticationFailed
                    }
                }
            }
        }
    }

    @Test func recordctlSignsUpAndLogsIn() async throws {
        try await withMailServer { mail in
            try await withTemporaryDirectory { directory in
                try await withLiveServer(directory: directory, configure: Self.configure(mail)) { server in
                    let profile = directory + "/config/profile.json"
                    let connection = ["--server", server.url.absoluteString, "--container", Self.container, "--profile", profile]
                    func recordctl(_ arguments: [String], password: String? = nil, flags: Bool = true) async throws -> (status: Int32, output: String) {
                        let child = try ChildProcess("recordctl", arguments + (flags ? connection : ["--profile", profile]),
                                                     environment: password.map { ["RECORDCTL_PASSWORD": $0] } ?? [:])
                        let result = await child.wait()
                        return (result.status, result.output)
                    }
                    let signUp = try await recordctl(["signup", "--email", "cli@example.com"], password: "cli password")
                    #expect(signUp.status == 0 && signUp.output.contains("a code is on its way"), "\(signUp.output)")
                    let code = try #require(Self.code(in: try await mail.nextMessage(to: "cli@example.com")))
                    // Sign-up kept the connection in the profile: the code is all login needs.
                    let verified = try await recordctl(["login", "--email", "cli@example.com", "--code", code, "--device-name", "ci"], flags: false)
                    #expect(verified.status == 0 && verified.output.contains("a new user"), "\(verified.output)")
                    #expect(try await recordctl(["zones", "list"]).status == 0)
                    #expect(try await recordctl(["logout"]).status == 0)
                    let wrong = try await recordctl(["login", "--email", "cli@example.com"], password: "wrong password")
                    #expect(wrong.status == 1 && wrong.output.contains("AUTHENTICATION_FAILED"), "\(wrong.output)")
                    let again = try await recordctl(["login", "--email", "cli@example.com", "--json"], password: "cli password")
                    #expect(again.status == 0 && again.output.contains(#""created":false"#), "\(again.output)")
                    #expect(try await recordctl(["zones", "list"]).status == 0)
                }
            }
        }
    }

    /// Two ways of signing in (an account, an identity provider's identity) become one user only
    /// when the operator links them.
    @Test func theOperatorLinksTwoUsers() async throws {
        let provider = try await TestIdentityProvider.make(issuer: "https://link.test.example")
        try await withMailServer { mail in
            try await withKeyHost(provider.jwks()) { host in
                try await withServer(configure: Self.configure(mail) { $0.identityProviders = [provider.settings(keys: host.url)] }) { server in
                    let email = "linked-\(server.backend)@example.com"
                    let account = try await Self.signUp(server, mail, email, "a password")
                    // The same address from the provider makes another user: never joined by address.
                    let viaProvider = try await IdentityProviderTests.signIn(server, try await provider.token(provider.claims(sub: "p-1", email: email, verified: .bool(true))))
                        .decode(SignInResponse.self)
                    #expect(viaProvider.created && viaProvider.userRecordName != account.userRecordName)
                    let users = try await server.store.users()
                    let accountUser = try #require(users.first { $0.user.userRecordName == account.userRecordName }?.user)
                    let providerUser = try #require(users.first { $0.user.userRecordName == viaProvider.userRecordName }?.user)

                    await #expect { _ = try await server.store.linkUser(named: providerUser.name, into: providerUser.name) } throws: {
                        ($0 as? RecordSyncError)?.code == .badRequest
                    }
                    let moved = try await server.store.linkUser(named: providerUser.name, into: accountUser.name)
                    #expect(moved.identities == 1 && !moved.account)
                    try await Self.expectRefused(server, viaProvider.ckWebAuthToken)
                    let again = try await IdentityProviderTests.signIn(server, try await provider.token(provider.claims(sub: "p-1"))).decode(SignInResponse.self)
                    #expect(!again.created && again.userRecordName == account.userRecordName)
                    #expect(try await server.store.signInMethods(of: accountUser) == ["password", "test"])
                    #expect(try await server.store.signInMethods(of: providerUser).isEmpty)
                }
            }
        }
    }

    /// An SMTP server offering STARTTLS (and taking no mail before it): the mail goes through
    /// when its certificate's authority is the one given, and not with another authority.
    @Test func mailGoesOverSTARTTLSToAServerTheGivenAuthorityVouchesFor() async throws {
        try await withTemporaryDirectory { directory in
            try FileManager.default.createDirectory(atPath: "\(directory)/other", withIntermediateDirectories: true)
            try await TLSTests.makeCertificates(in: directory)
            try await TLSTests.makeCertificates(in: "\(directory)/other")
            let mail = try await TestMailServer.start(in: directory, tls: ("\(directory)/server.crt", "\(directory)/server.key"))
            defer { Task { await mail.stop() } }
            for (authority, delivered) in [("\(directory)/other/ca.crt", false), ("\(directory)/ca.crt", true)] {
                try await withServer(configure: Self.configure(mail) { $0.mail = .smtp(try! SMTPSettings(url: mail.url, certificateAuthority: authority)) }) { server in
                    let email = "tls-\(server.backend)-\(delivered)@example.com"
                    let reply = try await Self.post(server, "signup", SignUpRequest(email: email, password: "a password"))
                    if delivered {
                        #expect(reply.status == 200, "\(reply.reason)")
                        #expect(Self.code(in: try await mail.nextMessage(to: email)) != nil)
                    } else {
                        #expect(reply.code == "TRY_AGAIN_LATER", "\(reply.reason)")
                        #expect(mail.messages(to: email).isEmpty)
                    }
                }
            }
        }
    }

    // MARK: - Helpers

    static func post<T: Encodable>(_ server: TestServer, _ path: String, _ body: T, token: String? = nil, from client: String? = nil) async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let token { headers[.authorization] = "Bearer \(token)" }
        if let client { headers[.init("X-Forwarded-For")!] = client }
        return try await server.send(.post, "\(auth)/\(path)", headers: headers, body: String(decoding: try JSONEncoder().encode(body), as: UTF8.self))
    }

    /// Signs up and verifies with the mailed code.
    static func signUp(_ server: TestServer, _ mail: TestMailServer, _ email: String, _ password: String, invitation: String? = nil,
                       from client: String? = nil) async throws -> SignInResponse {
        let asked = try await post(server, "signup", SignUpRequest(email: email, password: password, invitation: invitation), from: client)
        #expect(asked.status == 200, "\(asked.reason)")
        let code = try #require(Self.code(in: try await mail.nextMessage(to: email)))
        let verified = try await post(server, "signup/verify", SignUpVerifyRequest(email: email, code: code), from: client)
        #expect(verified.status == 200, "\(verified.reason)")
        return try verified.decode(SignInResponse.self)
    }

    /// The code a mail carries (`XXXX-XXXX`).
    static func code(in message: String) -> String? {
        message.range(of: #"(?m)^    [A-Z2-9]{4}-[A-Z2-9]{4}$"#, options: .regularExpression).map { message[$0].trimmingCharacters(in: .whitespaces) }
    }

    static func caller(_ server: TestServer, _ token: String) async throws -> Reply {
        try await server.send(.post, "/database/1/\(container)/development/public/users/caller", headers: [.authorization: "Bearer \(token)"], body: "{}")
    }

    /// Waits (up to 3 seconds: revocations reach every server within about one) for `token` to
    /// be refused.
    static func expectRefused(_ server: TestServer, _ token: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let deadline = ContinuousClock.now + .seconds(3)
        var last = 0
        while ContinuousClock.now < deadline {
            last = try await caller(server, token).status
            if last == 401 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("the token was still accepted (HTTP \(last))", sourceLocation: sourceLocation)
    }

    static func lookUp(_ email: String, as session: Session) async throws -> [String] {
        let found = try await session.post("users/lookup/email", #"{"users": [{"emailAddress": "\#(email)"}]}"#, database: "public")
        return found.json["users"]?.arrayValue?.compactMap { $0["userRecordName"]?.stringValue } ?? []
    }
}

final class LockedCount: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func add() { lock.withLock { count += 1 } }
}

final class LockedValue<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
