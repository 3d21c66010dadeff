import Foundation
import ServiceKit

/// Settings of `auth` beyond the platform's (docs/configuration.md).
struct AuthSettings: Sendable {
    /// Ed25519 private key (PEM) signing access tokens. Secret.
    var jwtPrivateKeyPEM: String
    var audience: String
    var issuer: String
    var accessTokenTTL: TimeInterval
    var refreshTokenTTL: TimeInterval
    /// bcrypt work factor, at least 10.
    var bcryptCost: Int
    /// Most hashes waiting or running at once; past it logins and joins are shed with E98.
    var bcryptMaxPending: Int
    /// Longest a hash may wait for a bcrypt thread before its request is shed with E98.
    var bcryptMaxWait: Duration
    /// Sign in with Apple: where Apple's keys are, and the app's bundle id (empty = disabled).
    var appleJWKSURL: String
    var appleAudience: String
    var appleIssuer: String
    /// Kakao's API base URL.
    var kakaoAPIURL: String
    /// Smooth's sign-in: the access token's lifetime (its app never refreshes).
    var smoothAccessTokenTTL: TimeInterval
    /// Where email verification codes are sent from (an empty host: send-mail refuses).
    var smtp: SMTPSettings

    init(_ settings: ServiceSettings) throws {
        jwtPrivateKeyPEM = try settings.secretText("jwt.private-key")
        audience = try settings.string("jwt.audience")
        issuer = try settings.string("jwt.issuer")
        accessTokenTTL = TimeInterval(try settings.int("auth.access-ttl-seconds"))
        refreshTokenTTL = TimeInterval(try settings.int("auth.refresh-ttl-seconds"))
        bcryptCost = try settings.int("auth.bcrypt-cost")
        bcryptMaxPending = try settings.int("auth.bcrypt-max-pending")
        let maxWaitMilliseconds = try settings.int("auth.bcrypt-max-wait-ms")
        bcryptMaxWait = .milliseconds(maxWaitMilliseconds)
        appleJWKSURL = try settings.string("apple.jwks-url")
        appleAudience = try settings.string("apple.audience")
        appleIssuer = try settings.string("apple.issuer")
        kakaoAPIURL = try settings.string("kakao.api-url").trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        smoothAccessTokenTTL = TimeInterval(try settings.int("auth.smooth.access-ttl-seconds"))
        guard smoothAccessTokenTTL >= 10 else { throw StartupError("auth.smooth.access-ttl-seconds must be ≥ 10 (got \(Int(smoothAccessTokenTTL)))") }
        smtp = try SMTPSettings(settings)
        guard (10...16).contains(bcryptCost) else { throw StartupError("auth.bcrypt-cost must be between 10 and 16 (got \(bcryptCost))") }
        guard bcryptMaxPending >= 1 else { throw StartupError("auth.bcrypt-max-pending must be at least 1 (got \(bcryptMaxPending))") }
        guard maxWaitMilliseconds >= 1 else { throw StartupError("auth.bcrypt-max-wait-ms must be at least 1 (got \(maxWaitMilliseconds))") }
        guard accessTokenTTL >= 10, refreshTokenTTL > accessTokenTTL else {
            throw StartupError("auth.access-ttl-seconds must be ≥ 10 and shorter than auth.refresh-ttl-seconds")
        }
    }
}
