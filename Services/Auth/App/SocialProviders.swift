import AsyncHTTPClient
import Foundation
import JWTKit
import Logging
import NIOCore
import NIOHTTP1
import ServiceKit

/// Who a provider says the user is.
struct SocialIdentity: Sendable, Equatable {
    var provider: String
    var subject: String
    var email: String?
    var nickname: String?
}

/// Claims of a Sign in with Apple identity token that the login needs.
struct AppleIdentityClaims: JWTPayload {
    var iss: IssuerClaim
    var aud: AudienceClaim
    var exp: ExpirationClaim
    var sub: SubjectClaim
    var email: String?

    /// Checked by `AppleSignIn` (it knows the expected audience and issuer).
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Verifies Apple identity tokens against Apple's published keys (a JWKS, fetched from a
/// configurable URL and cached; refetched at most once a minute when a token names an unknown key).
actor AppleSignIn {
    let jwksURL: String
    let audience: String
    let issuer: String
    let client: HTTPClient
    private var keys: JWTKeyCollection?
    private var fetchedAt: ContinuousClock.Instant?

    init(jwksURL: String, audience: String, issuer: String, client: HTTPClient) {
        self.jwksURL = jwksURL
        self.audience = audience
        self.issuer = issuer
        self.client = client
    }

    /// The identity in `idToken`, or E03 when it is not a valid token for this app.
    func verify(_ idToken: String) async throws -> SocialIdentity {
        guard !audience.isEmpty else { throw APIError.loginFailed("Sign in with Apple is not configured (apple.audience)") }
        // Key-server failures (E99) propagate; only a token the current keys reject is retried,
        // once, with refreshed keys (Apple rotates them), at most once a minute.
        let keys = try await currentKeys(refresh: false)
        var claims = try? await keys.verify(idToken, as: AppleIdentityClaims.self)
        if claims == nil, fetchedAt.map({ ContinuousClock.now - $0 > .seconds(60) }) ?? true {
            let refreshed = try await currentKeys(refresh: true)
            claims = try? await refreshed.verify(idToken, as: AppleIdentityClaims.self)
        }
        guard let claims else { throw APIError.loginFailed("invalid Apple identity token") }
        guard claims.aud.value.contains(audience), claims.iss.value == issuer, claims.exp.value > Date() else {
            throw APIError.loginFailed("Apple identity token for another app, issuer, or expired")
        }
        return SocialIdentity(provider: "apple", subject: claims.sub.value, email: claims.email, nickname: nil)
    }

    private func currentKeys(refresh: Bool) async throws -> JWTKeyCollection {
        if let keys, !refresh { return keys }
        let request = HTTPClientRequest(url: jwksURL)
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: .seconds(10))
        } catch {
            throw APIError.dependencyUnavailable("Apple JWKS unreachable: \(error)")
        }
        guard response.status == .ok else {
            throw APIError.dependencyUnavailable("Apple JWKS answered HTTP \(response.status.code)")
        }
        let body = try await response.body.collect(upTo: 1 << 20)
        let collection = JWTKeyCollection()
        do {
            try await collection.add(jwksJSON: String(buffer: body))
        } catch {
            throw APIError.dependencyUnavailable("Apple JWKS unreadable: \(error)")
        }
        keys = collection
        fetchedAt = .now
        return collection
    }
}

/// Checks a Kakao access token by asking Kakao who it belongs to (`GET /v2/user/me`).
struct KakaoSignIn: Sendable {
    let baseURL: String
    let client: HTTPClient

    struct Me: Decodable {
        struct Account: Decodable {
            struct Profile: Decodable {
                var nickname: String?
            }
            var email: String?
            var profile: Profile?
        }
        var id: Int64
        var kakao_account: Account?
    }

    func verify(_ oauthToken: String) async throws -> SocialIdentity {
        // A token is visible ASCII; anything else cannot go into a header (and is no token).
        guard oauthToken.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw APIError.badRequest("Kakao token with non-token bytes") }
        var request = HTTPClientRequest(url: baseURL + "/v2/user/me")
        request.headers.add(name: "Authorization", value: "Bearer \(oauthToken)")
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: .seconds(10))
        } catch {
            throw APIError.dependencyUnavailable("Kakao API unreachable: \(error)")
        }
        let body = try await response.body.collect(upTo: 1 << 20)
        switch response.status.code {
        case 200:
            guard let me = try? JSONDecoder().decode(Me.self, from: Data(String(buffer: body).utf8)) else {
                throw APIError.dependencyUnavailable("Kakao API answered an unreadable profile")
            }
            return SocialIdentity(provider: "kakao", subject: String(me.id), email: me.kakao_account?.email, nickname: me.kakao_account?.profile?.nickname)
        case 400, 401:
            throw APIError.loginFailed("Kakao rejected the token")
        default:
            throw APIError.dependencyUnavailable("Kakao API answered HTTP \(response.status.code)")
        }
    }
}
