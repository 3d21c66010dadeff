import AccessTokens
import Database
import Events
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import PostgresNIO
import ServiceKit
import Uploads

/// `/v1/users/...` and `/v1/auth/refresh` (client contract §1.2, §1.10).
struct AccountRoutes: Sendable {
    let postgres: PostgresClient
    let store: UserStore
    let tokens: Tokens
    let hasher: PasswordHasher
    let logger: Logger
    /// A valid hash to verify against when the email is unknown, so a failed login takes the same
    /// time whether or not the account exists (no user enumeration by timing).
    let dummyHash: String
    let apple: AppleSignIn
    let kakao: KakaoSignIn
    let images: ImageDirectory

    static let source = "auth"

    func add(to router: some RouterMethods<SuiteRequestContext>) {
        router.addRoutes(publicRoutes, atPath: "v1/users")
        router.group("v1/users", context: AuthenticatedContext.self).addRoutes(accountRoutes)
        // Refresh carries an expired token on purpose: it is verified here, not at the edge.
        router.get("v1/auth/refresh") { request, _ in try await refresh(request) }
        router.get("v1/static/profiles/:file") { _, context -> Response in
            try await images.response(named: context.parameters.get("file") ?? "", context: context)
        }
    }

    /// Sign-up, logins and public profiles: no identity needed.
    var publicRoutes: RouteCollection<SuiteRequestContext> {
        let routes = RouteCollection(context: SuiteRequestContext.self)
        routes.post("validation/email") { request, context -> HTTPResponse.Status in
            let body = try await request.decodeBody(as: EmailBody.self, context: context)
            let email = try Validation.email(body.email)
            if try await store.emailExists(email) { throw APIError.duplicate("email") }
            return .ok
        }
        routes.post("join") { request, context -> UserResponse in UserResponse.authResult(try await join(request, context)) }
        routes.post("login") { request, context -> UserResponse in UserResponse.authResult(try await login(request, context)) }
        routes.post("login/apple") { request, context -> UserResponse in UserResponse.authResult(try await appleLogin(request, context)) }
        routes.post("login/kakao") { request, context -> UserResponse in UserResponse.authResult(try await kakaoLogin(request, context)) }
        routes.get(":userId") { _, context -> UserResponse in
            guard let id = context.parameters.get("userId").flatMap(UserID.init), let user = try await store.find(id: id) else {
                throw APIError.unknownAccount
            }
            return .member(user)
        }
        return routes
    }

    /// The caller's own account.
    var accountRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("me") { _, context -> UserResponse in
            let id = context.identity
            guard let user = try await store.find(id: id) else { throw APIError.unknownAccount }
            return .myProfile(user, coins: try await store.coinBalance(id: id))
        }
        routes.put("me") { request, context -> UserResponse in .editedProfile(try await editProfile(request, context)) }
        routes.put("me/image") { request, context -> UserResponse in .editedProfile(try await editImage(request, context)) }
        for method in [HTTPRequest.Method.put, .post] {
            routes.on("deviceToken", method: method) { request, context in try await saveDeviceToken(request, context) }
        }
        for method in [HTTPRequest.Method.post, .get] {
            routes.on("logout", method: method) { _, context in try await logout(context) }
        }
        return routes
    }

    func saveDeviceToken(_ request: Request, _ context: AuthenticatedContext) async throws -> HTTPResponse.Status {
        let body = try await request.decodeBody(as: DeviceTokenBody.self, context: context)
        guard let token = try Validation.deviceToken(body.deviceToken) else { throw APIError.badRequest("deviceToken is required") }
        try await registerDeviceToken(token, for: context.identity)
        return .ok
    }

    /// Revokes the caller's refresh tokens and forgets their device tokens.
    func logout(_ context: AuthenticatedContext) async throws -> HTTPResponse.Status {
        try await store.revokeRefreshTokens(for: context.identity)
        try await removeDeviceTokens(of: context.identity)
        return .ok
    }

    func join(_ request: Request, _ context: SuiteRequestContext) async throws -> SignedIn {
        let body = try await request.decodeBody(as: JoinBody.self, context: context)
        let email = try Validation.email(body.email)
        let password = try Validation.password(body.password)
        let nickname = try Validation.nickname(body.nickname)
        let phone = try Validation.phone(body.phone)
        let deviceToken = try Validation.deviceToken(body.deviceToken)
        let hash = try await hasher.hash(password)
        let id = UserID.generate()
        let user = try await postgres.withLiveTransaction(logger: logger) { connection -> UserRecord in
            guard
                let user = try await store.insert(
                    id: id, email: email, passwordHash: hash, nickname: nickname, phone: phone, provider: nil, on: connection
                )
            else { throw APIError.duplicate("email") }
            try await Outbox.append(CloudEvent(source: Self.source, data: user.registeredEvent), on: connection, logger: logger)
            return user
        }
        if let deviceToken { try await registerDeviceToken(deviceToken, for: user.id) }
        return SignedIn(user: user, token: try await tokens.issuePair(for: user.id, alias: user.alias))
    }

    func login(_ request: Request, _ context: SuiteRequestContext) async throws -> SignedIn {
        let body = try await request.decodeBody(as: LoginBody.self, context: context)
        guard let email = body.email?.trimmingCharacters(in: .whitespacesAndNewlines), !email.isEmpty,
            let password = body.password, !password.isEmpty
        else { throw APIError.badRequest("email and password are required") }
        let deviceToken = try Validation.deviceToken(body.deviceToken)
        let user = try await store.find(email: email)
        let matches = try await hasher.verify(password, hash: user?.passwordHash ?? dummyHash)
        guard let user, user.passwordHash != nil, matches else { throw APIError.unknownAccount }
        if let deviceToken { try await registerDeviceToken(deviceToken, for: user.id) }
        return SignedIn(user: user, token: try await tokens.issuePair(for: user.id, alias: user.alias))
    }

    func appleLogin(_ request: Request, _ context: SuiteRequestContext) async throws -> SignedIn {
        let body = try await request.decodeBody(as: AppleLoginBody.self, context: context)
        guard let token = body.idToken?.trimmingCharacters(in: .whitespaces), !token.isEmpty else { throw APIError.badRequest("idToken is required") }
        var identity = try await apple.verify(token)
        identity.nickname = try body.nickname.flatMap { $0.isEmpty ? nil : try Validation.nickname($0) }
        return try await socialLogin(identity, deviceToken: try Validation.deviceToken(body.deviceToken))
    }

    func kakaoLogin(_ request: Request, _ context: SuiteRequestContext) async throws -> SignedIn {
        let body = try await request.decodeBody(as: KakaoLoginBody.self, context: context)
        guard let token = body.oauthToken?.trimmingCharacters(in: .whitespaces), !token.isEmpty else { throw APIError.badRequest("oauthToken is required") }
        return try await socialLogin(try await kakao.verify(token), deviceToken: try Validation.deviceToken(body.deviceToken))
    }

    /// Logs in the user linked to a provider identity, creating the account on first login.
    /// An email already registered by another account is E12 (the contract's "already joined").
    private func socialLogin(_ identity: SocialIdentity, deviceToken: String?) async throws -> SignedIn {
        var user = try await store.find(provider: identity.provider, subject: identity.subject)
        if user == nil {
            // Providers may withhold the email (Kakao without consent): a unique, undeliverable one.
            let email =
                identity.email.flatMap { Validation.isValidEmail($0) ? $0 : nil }
                ?? "\(identity.provider)-\(identity.subject)@users.\(identity.provider).invalid"
            let nickname = try Validation.nickname(identity.nickname ?? String(email.prefix { $0 != "@" }).prefix(30).description)
            do {
                user = try await postgres.withLiveTransaction(logger: logger) { connection -> UserRecord in
                    guard
                        let created = try await store.insert(
                            id: .generate(), email: email, passwordHash: nil, nickname: nickname, phone: nil, provider: identity.provider, on: connection
                        )
                    else { throw APIError.duplicate("email already registered") }
                    guard try await store.link(provider: identity.provider, subject: identity.subject, to: created.id, on: connection) else {
                        throw APIError.duplicate("identity linked concurrently")
                    }
                    try await Outbox.append(CloudEvent(source: Self.source, data: created.registeredEvent), on: connection, logger: logger)
                    return created
                }
            } catch {
                // A concurrent first login of the same identity won the race: log in as that user.
                guard let existing = try await store.find(provider: identity.provider, subject: identity.subject) else { throw error }
                user = existing
            }
        }
        guard let user else { throw APIError.unknownAccount }
        if let deviceToken { try await registerDeviceToken(deviceToken, for: user.id) }
        return SignedIn(user: user, token: try await tokens.issuePair(for: user.id, alias: user.alias))
    }

    /// The old (normally expired) access token names the user; the refresh token must be that
    /// user's, unrevoked and unexpired. Refresh tokens are not rotated (clients keep theirs).
    /// Lilac's newest client sends the refresh token alone (no `Authorization`): then the refresh
    /// token names its user.
    private func refresh(_ request: Request) async throws -> AccessTokenResponse {
        let refreshToken = request.headers[HTTPField.Name("RefreshToken")!]?.trimmingCharacters(in: .whitespaces) ?? ""
        guard let token = bareToken(fromAuthorizationHeader: request.headers[.authorization]) else {
            guard !refreshToken.isEmpty else { throw APIError.authenticationFailed }
            guard let userId = try await store.refreshTokenOwner(hash: Tokens.hash(refreshToken)) else { throw APIError.refreshTokenExpired }
            return AccessTokenResponse(accessToken: try await tokens.accessToken(for: userId))
        }
        let claims: AccessTokenClaims
        do {
            claims = try await tokens.verifier.verify(token, allowExpired: true)
        } catch {
            throw APIError.authenticationFailed
        }
        if (try? await tokens.verifier.verify(token)) != nil { throw APIError.accessTokenStillValid }
        guard let userId = UserID(claims.userId),
            !refreshToken.isEmpty, try await store.refreshTokenIsValid(hash: Tokens.hash(refreshToken), userId: userId)
        else { throw APIError.refreshTokenExpired }
        return AccessTokenResponse(accessToken: try await tokens.accessToken(for: userId))
    }

    func editImage(_ request: Request, _ context: AuthenticatedContext) async throws -> UserRecord {
        guard request.isMultipart else { throw APIError.badRequest("multipart/form-data with an 'image' part is required") }
        let parts = try await request.multipartParts(limit: images.multipartLimit)
        guard let part = parts.first(where: { $0.name == "image" }) else { throw APIError.badRequest("multipart part 'image' is required") }
        return try await replaceImage(of: context.identity, with: part)
    }

    /// Stores `part` as the user's profile image (validated by its bytes; E11 when it is not an
    /// image or too large), announces the profile, then deletes the previous image file.
    func replaceImage(of id: UserID, with part: FormPart) async throws -> UserRecord {
        let path = try images.store(part)
        let result: (UserRecord, String?)
        do {
            result = try await postgres.withLiveTransaction(logger: logger) { connection -> (UserRecord, String?) in
                guard let updated = try await store.updateImage(id: id, path: path, on: connection) else { throw APIError.notFound("user") }
                try await Outbox.append(CloudEvent(source: Self.source, data: updated.0.profileUpdatedEvent), on: connection, logger: logger)
                return updated
            }
        } catch {
            images.remove(path)  // nothing refers to it
            throw error
        }
        images.remove(result.1)
        return result.0
    }

    func editProfile(_ request: Request, _ context: AuthenticatedContext) async throws -> UserRecord {
        let id = context.identity
        let body = try await request.decodeBody(as: ProfileBody.self, context: context)
        let nickname = try Validation.nickname(body.nickname)
        let phone = try Validation.phone(body.phone)
        let user = try await postgres.withLiveTransaction(logger: logger) { connection -> UserRecord in
            guard let user = try await store.updateProfile(id: id, nickname: nickname, phone: phone, on: connection) else {
                throw APIError.notFound("user")
            }
            try await Outbox.append(CloudEvent(source: Self.source, data: user.profileUpdatedEvent), on: connection, logger: logger)
            return user
        }
        return user
    }
}
