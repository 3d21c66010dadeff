import Database
import Events
import Foundation
import HTTPTypes
import Hummingbird
import ServiceKit

/// Gen A of the SeSAC workspace API (Lilac, client contract §1.9, docs/generation-a.md): the same
/// accounts under `/gena/v1/users/...` (the gateway maps Gen A requests there), answered with
/// integer ids (the user's alias), `vendor` instead of `provider`, and Gen A's login shapes.
/// `/v2/users/login` is Gen B's login at the path other clients of the same server call.
extension AccountRoutes {
    func addGenerationA(to router: some RouterMethods<SuiteRequestContext>) {
        router.post("v2/users/login") { request, context -> UserResponse in UserResponse.authResult(try await login(request, context)) }
        let open = router.group("gena/v1/users")
        open.post("join") { request, context in GenerationAProfile.withToken(try await join(request, context)) }
        // Email login is flat in Gen A: `{userId, nickname, accessToken, refreshToken}`.
        open.post("login") { request, context in GenerationALogin(try await login(request, context)) }
        open.post("login/kakao") { request, context in GenerationAProfile.withToken(try await kakaoLogin(request, context)) }
        open.post("login/apple") { request, context in GenerationAProfile.withToken(try await appleLogin(request, context)) }
        let mine = router.group("gena/v1/users", context: AuthenticatedContext.self)
        mine.get("my") { _, context -> GenerationAProfile in
            let id = context.identity
            guard let user = try await store.find(id: id) else { throw APIError.unknownAccount }
            return .mine(user, coins: try await store.coinBalance(id: id))
        }
        // Lilac updates with POST, other clients with PUT.
        for method in [HTTPRequest.Method.post, .put] {
            mine.on("my", method: method) { request, context -> GenerationAProfile in
                let user = try await editProfile(request, context)
                return .mine(user, coins: try await store.coinBalance(id: user.id))
            }
            mine.on("my/image", method: method) { request, context -> GenerationAProfile in
                let user = try await editImage(request, context)
                return .mine(user, coins: try await store.coinBalance(id: user.id))
            }
            mine.on("deviceToken", method: method) { request, context in try await saveDeviceToken(request, context) }
        }
        for method in [HTTPRequest.Method.get, .post] {
            mine.on("logout", method: method) { _, context in try await logout(context) }
        }
        mine.get(":user") { _, context -> GenerationAProfile in
            guard let alias = context.parameters.get("user").flatMap(IntegerAlias.parse), let user = try await store.find(alias: alias) else {
                throw APIError.unknownAccount
            }
            return .member(user)
        }
    }
}

/// Gen A's user shapes (Lilac's `ProfileWithToken`, `MyProfile` and `UserProfile`): `user_id` is
/// the user's integer alias; `vendor` is `email`, `kakao` or `apple`. Nil fields are omitted.
struct GenerationAProfile: ResponseEncodable, Sendable {
    var user_id: Int64
    var email: String
    var nickname: String
    var profileImage: String?
    var phone: String?
    var vendor: String?
    var sesacCoin: Int?
    var createdAt: Date
    var token: TokenPair?

    private init(_ user: UserRecord, details: Bool) {
        user_id = user.alias
        email = user.email
        nickname = user.nickname
        profileImage = user.profileImage
        createdAt = user.createdAt
        if details {
            phone = user.phone
            vendor = user.provider ?? "email"
        }
    }

    /// Join, Kakao and Apple login.
    static func withToken(_ signedIn: SignedIn) -> Self {
        var profile = Self(signedIn.user, details: true)
        profile.token = signedIn.token
        return profile
    }

    /// `GET/POST/PUT /users/my`: with the coin balance.
    static func mine(_ user: UserRecord, coins: Int) -> Self {
        var profile = Self(user, details: true)
        profile.sesacCoin = coins
        return profile
    }

    /// `GET /users/{id}`: no phone, vendor or coins.
    static func member(_ user: UserRecord) -> Self { Self(user, details: false) }
}

/// Gen A's email login answer.
struct GenerationALogin: ResponseEncodable, Sendable {
    var user_id: Int64
    var nickname: String
    var accessToken: String
    var refreshToken: String

    init(_ signedIn: SignedIn) {
        user_id = signedIn.user.alias
        nickname = signedIn.user.nickname
        accessToken = signedIn.token.accessToken
        refreshToken = signedIn.token.refreshToken
    }
}
