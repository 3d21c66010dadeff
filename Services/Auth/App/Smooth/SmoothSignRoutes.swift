import AccessTokens
import ClientContract
import Database
import Events
import Foundation
import HTTPTypes
import Hummingbird
import PostgresNIO
import ServiceKit

/// `POST /sign-up`, `POST /sign-in` and `POST /refresh`.
extension SmoothAuthRoutes {
    func addSignRoutes(to group: RouterGroup<SuiteRequestContext>) {
        group.post("sign-up") { request, context -> SmoothResponse<SmoothAccount> in
            let body = try await request.decodeBody(as: SmoothSignUpBody.self, context: context)
            let user = try await signUp(
                email: try SmoothAuthValidation.email(body.email), password: try SmoothAuthValidation.newPassword(body.password),
                name: try SmoothAuthValidation.name(body.name))
            return SmoothResponse(account(user, request))
        }
        group.post("sign-in") { request, context -> SmoothResponse<SmoothSignIn> in
            let body = try await request.decodeBody(as: SmoothSignInBody.self, context: context)
            return SmoothResponse(try await signIn(body, url: Self.publicURL(of: request)))
        }
        group.post("refresh") { request, _ -> SmoothResponse<SmoothSignIn> in
            SmoothResponse(try await refresh(request))
        }
    }

    /// `POST /refresh` (headers `AUTHORIZATION`: the access token, expired or not, bare or
    /// `Bearer`; `REFRESH-TOKEN`): a new access token for the user the old one names, if the
    /// refresh token is that user's and unexpired, as a sign-in result (the refresh token is not
    /// rotated; `deviceToken` and `type` null). 2101 no access token, 2102 one that does not verify
    /// (forged, malformed, another issuer), 2104 a refresh token missing, expired, revoked or
    /// someone else's, 2111 the account is gone.
    func refresh(_ request: Request) async throws -> SmoothSignIn {
        guard let header = request.headers[.authorization], !header.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw SmoothError.emptyToken
        }
        guard let token = bareToken(fromAuthorizationHeader: header),
            let claims = try? await account.tokens.verifier.verify(token, allowExpired: true), let userId = UserID(claims.userId)
        else { throw SmoothError.invalidToken }
        guard let refresh = request.headers[Self.refreshTokenHeader]?.trimmingCharacters(in: .whitespaces), !refresh.isEmpty, refresh.utf8.count <= 512,
            try await account.store.refreshTokenIsValid(hash: Tokens.hash(refresh), userId: userId)
        else { throw SmoothError.loginRequired }
        guard let user = try await account.store.find(id: userId) else { throw SmoothError.accountNotFound }
        return SmoothSignIn(
            id: user.alias, name: user.nickname, code: user.code, email: user.email,
            accessToken: try await account.tokens.accessToken(for: user.id, ttl: accessTokenTTL, alias: user.alias), refreshToken: refresh,
            deviceToken: nil, type: nil, url: Self.publicURL(of: request))
    }

    /// Smooth's refresh header (HTTP field names are case-insensitive).
    static let refreshTokenHeader = HTTPField.Name("REFRESH-TOKEN")!

    /// A new account: 2210 when the email is registered, 2211 when the name has no free
    /// `name#code` tag left. Whether the address was verified is not asked (as Smooth's server:
    /// its app verifies before it signs up).
    func signUp(email: String, password: String, name: String) async throws -> UserRecord {
        let store = account.store
        if try await store.emailExists(email) { throw SmoothError.duplicateEmail }
        guard let code = try await store.freeCode(for: name) else { throw SmoothError.duplicateName }
        let hash = try await account.hasher.hash(password)
        let created = try await account.postgres.withLiveTransaction(logger: logger) { connection -> UserRecord? in
            guard
                let user = try await store.insert(
                    id: .generate(), email: email, passwordHash: hash, nickname: name, phone: nil, provider: nil, code: code, on: connection)
            else { return nil }
            try await Outbox.append(CloudEvent(source: AccountRoutes.source, data: user.registeredEvent), on: connection, logger: logger)
            return user
        }
        // The insert lost a race for the email (its unique index decides).
        guard let created else { throw SmoothError.duplicateEmail }
        try? await codes.clear(email.lowercased())
        return created
    }

    /// Email and password; a wrong password and an unknown email are both 2213 and take the same
    /// time (no account enumeration). The device token is registered as the suite's logins do.
    func signIn(_ body: SmoothSignInBody, url: String) async throws -> SmoothSignIn {
        guard let email = body.email?.trimmingCharacters(in: .whitespacesAndNewlines), !email.isEmpty, EmailAddress.limit.allows(email),
            let password = body.password, !password.isEmpty, Validation.passwordLimit.allows(password)
        else { throw SmoothError.invalidInput }
        let type = try SmoothAuthValidation.type(body.type)
        let deviceToken: String?
        do { deviceToken = try Validation.deviceToken(body.deviceToken) } catch { throw SmoothError.invalidInput }
        let user = try await account.store.find(email: email)
        let matches = try await account.hasher.verify(password, hash: user?.passwordHash ?? account.dummyHash)
        guard let user, user.passwordHash != nil, matches else { throw SmoothError.loginFailed }
        if let deviceToken { try await account.registerDeviceToken(deviceToken, for: user.id) }
        let pair = try await account.tokens.issuePair(for: user.id, accessTTL: accessTokenTTL, alias: user.alias)
        return SmoothSignIn(
            id: user.alias, name: user.nickname, code: user.code, email: user.email, accessToken: pair.accessToken, refreshToken: pair.refreshToken,
            deviceToken: deviceToken, type: type, url: url)
    }
}
