import Foundation
import Hummingbird

/// The page an `AUTHENTICATION_REQUIRED` answer's `redirectURL` names
/// (`GET /signin/1/{container}/{environment}`): what CloudKit JS opens from its sign-in button.
/// It says how this server signs users in: the operator issues each user a token
/// (`recordserver user add`), which the app passes as `ckWebAuthToken`.
enum SignInPage {
    /// The page's URL for a container and environment, under `base` (`scheme://host`).
    static func url(base: String, container: String, environment: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove("/")
        let container = container.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
        let environment = environment.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
        return "\(base)/signin/1/\(container)/\(environment)"
    }

    static func register(on router: Router<RequestContextWithAddress>) {
        router.get("/signin/1/:container/:environment") { _, context in
            let container = escaped(context.parameters.get("container") ?? "")
            let environment = escaped(context.parameters.get("environment") ?? "")
            let html = """
                <!doctype html>
                <html lang="en">
                <head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
                <title>Sign in to \(container)</title></head>
                <body>
                <h1>Sign in to \(container) (\(environment))</h1>
                <p>This RecordSync server does not sign people in on the web yet. Its operator gives each user a token
                (<code>recordserver user add NAME</code>), which an app sends as <code>ckWebAuthToken</code> or
                <code>Authorization: Bearer TOKEN</code>.</p>
                <p>Without signing in, you can read the app's public data.</p>
                </body>
                </html>

                """
            return Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
                            body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
        }
    }

    /// `text` with HTML's special characters escaped.
    static func escaped(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
