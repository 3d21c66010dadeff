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

    func accessToken(for user: UserID) async throws -> String {
        try await signer.sign(userId: user.description, ttl: settings.accessTokenTTL)
    }

    /// A new token pair; the refresh token is recorded (hashed) for `user`.
    func issuePair(for user: UserID) async throws -> TokenPair {
        var bytes = [UInt8](repeating: 0, count: 32)
        var rng = SystemRandomNumberGenerator()
        for i in bytes.indices { bytes[i] = rng.next() }
        let refresh = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        try await store.storeRefreshToken(hash: Self.hash(refresh), userId: user, expiresAt: Date().addingTimeInterval(settings.refreshTokenTTL))
        return TokenPair(accessToken: try await accessToken(for: user), refreshToken: refresh)
    }

    static func hash(_ token: String) -> [UInt8] {
        Array(SHA256.hash(data: Data(token.utf8)))
    }
}
