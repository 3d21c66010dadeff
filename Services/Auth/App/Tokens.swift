import AccessTokens
import Crypto
import Events
import Foundation
import ServiceKit

/// Issues access tokens (EdDSA JWTs) and opaque refresh tokens (stored only as SHA-256 hashes).
struct Tokens: Sendable {
    let signer: AccessTokenSigner
    let verifier: AccessTokenVerifier
    let settings: AuthSettings
    let store: UserStore

    init(settings: AuthSettings, store: UserStore) async throws {
        signer = try await AccessTokenSigner(ed25519PrivateKeyPEM: settings.jwtPrivateKeyPEM, audience: settings.audience, issuer: settings.issuer)
        let publicPEM = try JWTKeyPEM.publicKey(fromEd25519PrivateKeyPEM: settings.jwtPrivateKeyPEM)
        verifier = try await AccessTokenVerifier(publicKey: .ed25519PEM(publicPEM), audience: settings.audience, issuer: settings.issuer)
        self.settings = settings
        self.store = store
    }

    /// - Parameter ttl: the lifetime; `auth.access-ttl-seconds` when nil.
    /// - Parameter alias: the user's integer alias, for the token's `alias` claim.
    func accessToken(for user: UserID, ttl: TimeInterval? = nil, alias: Int64? = nil) async throws -> String {
        try await signer.sign(userId: user.description, ttl: ttl ?? settings.accessTokenTTL, alias: alias)
    }

    /// A new token pair; the refresh token is recorded (hashed) for `user`.
    /// - Parameter accessTTL: the access token's lifetime; `auth.access-ttl-seconds` when nil.
    func issuePair(for user: UserID, accessTTL: TimeInterval? = nil, alias: Int64? = nil) async throws -> TokenPair {
        var bytes = [UInt8](repeating: 0, count: 32)
        var rng = SystemRandomNumberGenerator()
        for i in bytes.indices { bytes[i] = rng.next() }
        let refresh = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        try await store.storeRefreshToken(hash: Self.hash(refresh), userId: user, expiresAt: Date().addingTimeInterval(settings.refreshTokenTTL))
        return TokenPair(accessToken: try await accessToken(for: user, ttl: accessTTL, alias: alias), refreshToken: refresh)
    }

    static func hash(_ token: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(token.utf8)))
    }
}
