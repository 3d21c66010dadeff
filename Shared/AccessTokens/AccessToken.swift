import Synchronization
import Common
import Foundation
import JWTKit

/// Claims of the suite's access tokens (issued by `auth`, verified at the gateway).
public struct AccessTokenClaims: JWTPayload, Equatable {
    public var sub: SubjectClaim
    public var aud: AudienceClaim
    public var iss: IssuerClaim
    public var exp: ExpirationClaim
    public var nbf: NotBeforeClaim
    public var iat: IssuedAtClaim
    public var jti: IDClaim
    /// The user's integer alias for legacy clients (Smooth's `user-id` on STOMP CONNECT); absent
    /// in tokens issued before aliases existed.
    public var alias: Int64?

    public init(
        userId: String, audience: String, issuer: String, issuedAt: Date, ttl: TimeInterval, tokenId: String = UUID().uuidString,
        alias: Int64? = nil
    ) {
        self.alias = alias
        sub = SubjectClaim(value: userId)
        aud = AudienceClaim(value: [audience])
        iss = IssuerClaim(value: issuer)
        iat = IssuedAtClaim(value: issuedAt)
        nbf = NotBeforeClaim(value: issuedAt)
        exp = ExpirationClaim(value: issuedAt.addingTimeInterval(ttl))
        jti = IDClaim(value: tokenId)
    }

    public var userId: String { sub.value }

    /// Claim checks happen in `AccessTokenVerifier` (which knows the expected audience and the
    /// clock); the signature was already verified when this runs.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}

public enum AccessTokenError: Error, Equatable, Sendable {
    /// Authentic but past `exp` → the client should refresh (E05).
    case expired
    /// Anything else: bad signature, wrong algorithm, wrong audience or issuer, not yet valid,
    /// malformed (E02).
    case invalid(String)
}

/// Verifies access tokens against the auth service's public key (EdDSA/Ed25519 or ES256 PEM).
/// Only the configured key's algorithm is accepted: `alg: none`, HMAC-with-public-key and other
/// algorithm confusions fail signature verification.
public struct AccessTokenVerifier: Sendable {
    public enum Key: Sendable {
        case ed25519PEM(String)
        case es256PEM(String)
    }

    private let keys: JWTKeyCollection
    public let audience: String
    public let issuer: String
    /// Tolerated clock skew for `nbf` and `exp`.
    public let leeway: TimeInterval
    /// Tokens whose signature already verified: a client sends the same token with every request
    /// until it expires, and the signature check (on the key collection's actor) was the largest
    /// part of the gateway's own time per request. The claims are still checked every time.
    private let verified = VerifiedTokens(capacity: 20_000)

    public init(publicKey: Key, audience: String, issuer: String, leeway: TimeInterval = 5) async throws {
        let keys = JWTKeyCollection()
        switch publicKey {
        case .ed25519PEM(let pem):
            await keys.add(eddsa: try EdDSA.PublicKey(pem: pem))
        case .es256PEM(let pem):
            await keys.add(ecdsa: try ES256PublicKey(pem: pem))
        }
        self.keys = keys
        self.audience = audience
        self.issuer = issuer
        self.leeway = leeway
    }

    /// - Parameter allowExpired: accept an authentic token past `exp` (the refresh endpoint
    ///   reads the expired token's subject).
    public func verify(_ token: String, now: Date = Date(), allowExpired: Bool = false) async throws -> AccessTokenClaims {
        let claims: AccessTokenClaims
        if let known = verified.claims(of: token) {
            claims = known
        } else {
            do {
                claims = try await keys.verify(token, as: AccessTokenClaims.self)
            } catch {
                throw AccessTokenError.invalid("\(error)")
            }
            verified.insert(token, claims)
        }
        guard claims.aud.value.contains(audience) else { throw AccessTokenError.invalid("wrong audience") }
        guard claims.iss.value == issuer else { throw AccessTokenError.invalid("wrong issuer") }
        guard claims.nbf.value.timeIntervalSince(now) <= leeway else { throw AccessTokenError.invalid("not yet valid") }
        if !allowExpired, now.timeIntervalSince(claims.exp.value) > leeway { throw AccessTokenError.expired }
        return claims
    }
}

/// Issues access tokens (used by `auth`; tests use it to make tokens for other services).
public struct AccessTokenSigner: Sendable {
    private let keys: JWTKeyCollection
    public let audience: String
    public let issuer: String

    public init(ed25519PrivateKeyPEM pem: String, audience: String, issuer: String) async throws {
        let keys = JWTKeyCollection()
        await keys.add(eddsa: try EdDSA.PrivateKey(pem: pem))
        self.keys = keys
        self.audience = audience
        self.issuer = issuer
    }

    /// - Parameter alias: the user's integer alias, carried as the `alias` claim (legacy clients).
    public func sign(userId: String, ttl: TimeInterval, now: Date = Date(), alias: Int64? = nil) async throws -> String {
        try await keys.sign(AccessTokenClaims(userId: userId, audience: audience, issuer: issuer, issuedAt: now, ttl: ttl, alias: alias))
    }
}

/// PEM helpers for the suite's Ed25519 token keys.
public enum JWTKeyPEM {
    public static func publicKey(fromEd25519PrivateKeyPEM pem: String) throws -> String {
        try EdDSA.PrivateKey(pem: pem).publicKey.pemRepresentation
    }

    /// A new Ed25519 key pair as PEM (the dev launcher and tests make one per data folder/run).
    public static func newEd25519() throws -> (privateKey: String, publicKey: String) {
        let key = try EdDSA.PrivateKey(curve: .ed25519)
        return (key.pemRepresentation, key.publicKey.pemRepresentation)
    }
}

/// The raw `Authorization` header as the contract's clients send it: a bare JWT, possibly with a
/// leading space (SGS) or a `Bearer ` prefix.
public func bareToken(fromAuthorizationHeader value: String?) -> String? {
    guard var token = value?.trimmingHTTPWhitespace(), !token.isEmpty else { return nil }
    if token.utf8.count > 7, token.utf8.prefix(7).elementsEqual("bearer ".utf8, by: { (65...90).contains($0) ? $0 | 0x20 == $1 : $0 == $1 }) {
        token = token.dropFirst(7).trimmingHTTPWhitespace()
    }
    return token.isEmpty ? nil : token
}

/// Byte-identical tokens that verified once → their claims. Only the signature and parsing are
/// skipped on a hit (the same bytes verify the same way); audience, issuer and times are checked
/// by the caller on every use. Bounded: emptied when full (a miss only costs a verification).
final class VerifiedTokens: Sendable {
    private let entries = Mutex<[String: AccessTokenClaims]>([:])
    private let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    func claims(of token: String) -> AccessTokenClaims? {
        entries.withLock { $0[token] }
    }

    func insert(_ token: String, _ claims: AccessTokenClaims) {
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[token] = claims
        }
    }
}
