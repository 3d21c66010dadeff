import Foundation
import JWTKit

/// The claims of a Firebase ID token (what the study app sends as `idtoken`). Every check is made
/// by `FirebaseTokenVerifier`, which knows the project and the clock; the signature is verified
/// before these are looked at.
public struct FirebaseIDToken: JWTPayload {
    public var iss: IssuerClaim
    public var aud: AudienceClaim
    public var sub: SubjectClaim
    public var exp: ExpirationClaim
    public var iat: IssuedAtClaim
    /// When the user signed in (Firebase's `auth_time`, seconds since 1970).
    public var auth_time: Double
    /// The phone number of a phone-auth sign-in, when Firebase put one in.
    public var phone_number: String?

    public init(project: String, uid: String, issuedAt: Date, ttl: TimeInterval = 3600, authTime: Date? = nil, phoneNumber: String? = nil) {
        iss = IssuerClaim(value: FirebaseTokenVerifier.issuer(of: project))
        aud = AudienceClaim(value: [project])
        sub = SubjectClaim(value: uid)
        iat = IssuedAtClaim(value: issuedAt)
        exp = ExpirationClaim(value: issuedAt.addingTimeInterval(ttl))
        auth_time = (authTime ?? issuedAt).timeIntervalSince1970
        phone_number = phoneNumber
    }

    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Who a verified Firebase ID token names.
public struct FirebaseIdentity: Sendable, Equatable {
    /// The Firebase user id (`sub`), 1–128 characters.
    public let uid: String
    public let phoneNumber: String?
    public let authTime: Date
}

public enum FirebaseTokenError: Error, Equatable, Sendable {
    /// Not a JWT, or not RS256 with a `kid`.
    case malformed
    /// No key of the key set has the token's `kid`, even after fetching it again (or it was
    /// fetched less than the minimum interval ago).
    case unknownKey
    /// The signature does not verify.
    case badSignature
    /// Wrong audience or issuer, expired, issued or signed in in the future, empty or too long `sub`.
    case invalidClaims(String)
    /// The key set could not be fetched or read.
    case keySetUnavailable(String)
}
