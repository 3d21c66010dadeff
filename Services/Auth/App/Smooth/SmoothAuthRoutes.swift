import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ServiceKit

/// Smooth's `/auth-server` (client contract §2.1, docs/smooth-api.md): the gateway maps it onto
/// `/smooth/auth`, verifies the token and forwards the user. Every answer is Smooth's envelope
/// (`SmoothErrorMiddleware`); ids are integer aliases. The account, friendship and image rules
/// are the suite's own (`AccountRoutes`, `FriendBook`), shared with `/v1`.
struct SmoothAuthRoutes: Sendable {
    let account: AccountRoutes
    let friends: FriendBook
    let codes: EmailCodes
    let mailer: SMTPClient
    /// Smooth's sign-in access token lifetime (`auth.smooth.access-ttl-seconds`).
    let accessTokenTTL: TimeInterval
    /// Wrong verification codes per client address (checks by code alone).
    let codeGuesses: FailureThrottle

    var logger: Logger { account.logger }

    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!

    func add(to router: some RouterMethods<SuiteRequestContext>) {
        let group = router.group("smooth/auth").add(middleware: SmoothErrorMiddleware<SuiteRequestContext>(surface: .authAndChat))
        addSignRoutes(to: group)
        addEmailRoutes(to: group)
        addImageRoute(to: group)
        let signedIn = group.group("auth", context: AuthenticatedContext.self)
        addProfileRoutes(to: signedIn)
        addFriendRoutes(to: signedIn)
        // Anything else under the prefix is refused in Smooth's envelope, not the suite's.
        for method in [HTTPRequest.Method.get, .post, .put, .patch, .delete] {
            group.on("**", method: method) { _, _ -> Response in throw APIError.unknownRoute }
        }
    }

    /// The gateway's URL as the client reached it (`X-Chatsuite-Public-URL`).
    static func publicURL(of request: Request) -> String { request.smoothPublicURL }

    /// A stored profile image (`/static/profiles/<file>`) as the absolute URL Smooth's app loads
    /// (its images were public S3 URLs): served without a token under the auth prefix.
    func imageURL(_ path: String?, _ request: Request) -> String? { SmoothURL.profileImage(path, request) }

    func account(_ user: UserRecord, _ request: Request) -> SmoothAccount {
        SmoothAccount(
            id: user.alias, email: user.email, name: user.nickname, code: user.code, profileImage: imageURL(user.profileImage, request), bio: user.bio)
    }

    /// The suite's error behind `error` (transactions wrap what their body throws).
    static func apiError(_ error: any Error) -> APIError? {
        if error is SmoothError { return nil }
        let mapped = ErrorMiddleware<SuiteRequestContext>.map(error)
        return mapped.status == .internalServerError || mapped.status == .serviceUnavailable ? nil : mapped
    }
}
