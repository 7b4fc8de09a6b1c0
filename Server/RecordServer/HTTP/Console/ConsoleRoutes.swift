import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import RecordModel
import RecordRules

/// The web console (docs/console.md): `GET /console` is the sign-in form, or, for a browser
/// holding a session, the console's page, whose script (``ConsoleScript``) does everything
/// through the server's documented APIs (`/admin/1/…`, `/database/1/…`) with the session
/// (``ConsoleSessions``). `POST /console/signin` and `POST /console/signout` begin and end a
/// session; `GET /console/assets/…` serves the script and the style sheet.
struct ConsoleRoutes: Sendable {
    let sessions: ConsoleSessions
    let accounts: Accounts

    func register(on router: Router<RequestContextWithAddress>) {
        ConsoleHTML.registerAssets(on: router)
        router.get("/console") { request, context in
            let peer = context.remoteAddress?.ipAddress
            let secure = sessions.isSecure(request, peer: peer)
            if let cookie = sessions.cookie(of: request, peer: peer),
               let found = try? await sessions.store.consoleOperator(tokenHash: Credentials.hash(cookie), limits: sessions.limits) {
                return ConsoleHTML.response(title: "RecordSync console", body: ConsoleHTML.shell(operator: found, csrf: ConsoleSessions.csrfToken(cookie)),
                                            bodyClass: "console")
            }
            return signInForm(request, secure: secure, problem: nil)
        }
        router.post("/console/signin") { request, context in
            let peer = context.remoteAddress?.ipAddress
            let client = sessions.trustedProxies.client(of: request, peer: context.remoteAddress)
            let secure = sessions.isSecure(request, peer: peer)
            do {
                try await accounts.checkThrottle(client: client)
                let fields = SignInPage.formFields(String(buffer: try await request.body.collect(upTo: 16 * 1024)))
                guard let form = SignInPage.cookie(formCookieName(secure: secure), in: request), let given = fields["csrf"],
                      IdentityProvider.constantTimeEqual(given, ConsoleSessions.csrfToken(form)) else {
                    try await accounts.countFailure(client: client)
                    return signInForm(request, secure: secure, status: .forbidden,
                                      problem: "This form was not sent from this console's page (it expired, came from another site, or this browser blocks the site's cookies). Send it again from this page.")
                }
                let name = fields["name"] ?? "", secret = fields["secret"] ?? ""
                guard !name.isEmpty, !secret.isEmpty else {
                    return signInForm(request, secure: secure, status: .badRequest, problem: "Give the operator's name and its secret.")
                }
                guard Credentials.isOperatorSecret(secret) else {
                    try await accounts.countFailure(client: client)
                    return signInForm(request, secure: secure, status: .unauthorized,
                                      problem: "The console takes an operator's secret (it begins rsop_), never a user's token. 'recordserver operator add NAME --scope …' makes an operator.",
                                      name: name)
                }
                let token = Credentials.newToken()
                guard try await sessions.store.openConsoleSession(operatorName: name, secretHash: Credentials.hash(secret), tokenHash: Credentials.hash(token),
                                                                  limits: sessions.limits) != nil else {
                    try await accounts.countFailure(client: client)
                    return signInForm(request, secure: secure, status: .unauthorized,
                                      problem: "No operator of that name holds that secret. Check both (a revoked operator's secret no longer works), or ask for a new one.",
                                      name: name)
                }
                return Response(status: .seeOther, headers: [.location: "/console", .cacheControl: "no-store",
                                                             .setCookie: sessions.setCookie(token, secure: secure)])
            } catch let error as RecordSyncError where error.code == .throttled {
                return signInForm(request, secure: secure, status: .tooManyRequests, problem: SignInPage.words(error) + " Wait, then try again.")
            }
        }
        router.post("/console/signout") { request, context in
            let peer = context.remoteAddress?.ipAddress
            let secure = sessions.isSecure(request, peer: peer)
            let fields = SignInPage.formFields(String(buffer: try await request.body.collect(upTo: 16 * 1024)))
            guard let cookie = sessions.cookie(of: request, peer: peer), let given = fields["csrf"],
                  IdentityProvider.constantTimeEqual(given, ConsoleSessions.csrfToken(cookie)) else {
                return ConsoleHTML.error(.forbidden, title: "Not signed out",
                                         "This request did not come from the console's page (or the session had ended already).",
                                         todo: "Open /console and use its Sign out button.")
            }
            try await sessions.store.closeConsoleSession(tokenHash: Credentials.hash(cookie))
            return Response(status: .seeOther, headers: [.location: "/console", .cacheControl: "no-store",
                                                         .setCookie: sessions.setCookie(nil, secure: secure)])
        }
    }

    /// The sign-in form's cookie, which its CSRF field is the SHA-256 of.
    func formCookieName(secure: Bool) -> String {
        secure ? "__Host-recordsync_console_form" : "recordsync_console_form"
    }

    /// The sign-in form, saying what went wrong (`problem`), with the form cookie set when the
    /// browser holds none.
    func signInForm(_ request: Request, secure: Bool, status: HTTPResponse.Status = .ok, problem: String?, name: String = "") -> Response {
        var form = SignInPage.cookie(formCookieName(secure: secure), in: request) ?? ""
        var headers: HTTPFields = [:]
        if form.count < 32 {
            form = OIDCClient.randomValue()
            headers.append(HTTPField(name: .setCookie, value: "\(formCookieName(secure: secure))=\(form); Path=\(secure ? "/; Secure" : "/console"); HttpOnly; SameSite=Strict"))
        }
        return ConsoleHTML.response(status, title: "Sign in · RecordSync console",
                                    body: ConsoleHTML.signIn(csrf: ConsoleSessions.csrfToken(form), problem: problem, name: name), extraHeaders: headers)
    }
}
