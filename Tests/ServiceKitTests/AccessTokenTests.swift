import AccessTokens
import Common
import Foundation
import JWTKit
import ServiceKit
import Testing

@Suite("Access token verification")
struct AccessTokenTests {
    static let audience = "chatsuite"
    static let issuer = "chatsuite-auth"

    struct Keys {
        let signer: AccessTokenSigner
        let verifier: AccessTokenVerifier
        let publicPEM: String
    }

    static func keys() async throws -> Keys {
        let key = try EdDSA.PrivateKey(curve: .ed25519)
        let signer = try await AccessTokenSigner(ed25519PrivateKeyPEM: key.pemRepresentation, audience: audience, issuer: issuer)
        let verifier = try await AccessTokenVerifier(publicKey: .ed25519PEM(key.publicKey.pemRepresentation), audience: audience, issuer: issuer)
        return Keys(signer: signer, verifier: verifier, publicPEM: key.publicKey.pemRepresentation)
    }

    @Test("the Authorization header's token: bare, after a space (SGS), or after `Bearer ` in any case; spaces and tabs around it dropped")
    func bareTokens() {
        #expect(bareToken(fromAuthorizationHeader: "abc.def.ghi") == "abc.def.ghi")
        #expect(bareToken(fromAuthorizationHeader: " abc.def.ghi") == "abc.def.ghi")
        #expect(bareToken(fromAuthorizationHeader: "Bearer abc") == "abc")
        #expect(bareToken(fromAuthorizationHeader: "bEaReR \tabc\t ") == "abc")
        #expect(bareToken(fromAuthorizationHeader: "\t Bearer  abc") == "abc")
        // Not the prefix: "Bearer" alone, a different word, a prefix with no space after it.
        #expect(bareToken(fromAuthorizationHeader: "Bearer ") == "Bearer")
        #expect(bareToken(fromAuthorizationHeader: "Bearerabc") == "Bearerabc")
        #expect(bareToken(fromAuthorizationHeader: "Basic abc") == "Basic abc")
        for empty in [nil, "", " ", "\t \t"] as [String?] { #expect(bareToken(fromAuthorizationHeader: empty) == nil) }
        // Other whitespace is the token's own (and fails verification), not trimmed.
        #expect(bareToken(fromAuthorizationHeader: "\u{00A0}abc\n") == "\u{00A0}abc\n")
    }

    @Test("HTTP whitespace trimming: spaces and tabs at both ends only, any text between kept")
    func httpWhitespace() {
        #expect("  a b\t".trimmingHTTPWhitespace() == "a b")
        #expect("\t한글 키 ".trimmingHTTPWhitespace() == "한글 키")
        #expect("é".trimmingHTTPWhitespace() == "é")
        // A combining mark right after the trimmed space stays (no crash on a non-grapheme start).
        #expect(" \u{301}a\t".trimmingHTTPWhitespace().unicodeScalars.map(\.value) == [0x301, 0x61])
        #expect(" \t ".trimmingHTTPWhitespace() == "")
        #expect("".trimmingHTTPWhitespace() == "")
        #expect("x, y ,z".split(separator: ",").map { $0.trimmingHTTPWhitespace() } == ["x", "y", "z"])
    }

    @Test func acceptsAValidToken() async throws {
        let k = try await Self.keys()
        let token = try await k.signer.sign(userId: "u-1", ttl: 600)
        let claims = try await k.verifier.verify(token)
        #expect(claims.userId == "u-1")
    }

    @Test func expiredIsDistinguishedFromInvalid() async throws {
        let k = try await Self.keys()
        let token = try await k.signer.sign(userId: "u-1", ttl: 60, now: Date().addingTimeInterval(-3600))
        await #expect(throws: AccessTokenError.expired) { try await k.verifier.verify(token) }
        // The refresh endpoint may read an expired token's subject.
        #expect(try await k.verifier.verify(token, allowExpired: true).userId == "u-1")
    }

    @Test func rejectsATamperedPayload() async throws {
        let k = try await Self.keys()
        let token = try await k.signer.sign(userId: "u-1", ttl: 600)
        var parts = token.split(separator: ".").map(String.init)
        let forged = #"{"sub":"u-2","aud":["chatsuite"],"iss":"chatsuite-auth","exp":4102444800,"nbf":0,"iat":0,"jti":"x"}"#
        parts[1] = Data(forged.utf8).base64URLEncodedString()
        await #expect(throws: AccessTokenError.self) { try await k.verifier.verify(parts.joined(separator: ".")) }
    }

    @Test func rejectsAlgNone() async throws {
        let k = try await Self.keys()
        let header = Data(#"{"alg":"none","typ":"JWT"}"#.utf8).base64URLEncodedString()
        let payload = Data(#"{"sub":"u-1","aud":["chatsuite"],"iss":"chatsuite-auth","exp":4102444800,"nbf":0,"iat":0,"jti":"x"}"#.utf8)
            .base64URLEncodedString()
        for token in ["\(header).\(payload).", "\(header).\(payload)"] {
            await #expect(throws: AccessTokenError.self) { try await k.verifier.verify(token) }
        }
    }

    @Test func rejectsHMACSignedWithThePublicKey() async throws {
        // Algorithm confusion: HS256 keyed with the (public) verification key's PEM text.
        let k = try await Self.keys()
        let attacker = JWTKeyCollection()
        await attacker.add(hmac: HMACKey(from: k.publicPEM), digestAlgorithm: .sha256)
        let claims = AccessTokenClaims(userId: "u-1", audience: Self.audience, issuer: Self.issuer, issuedAt: Date(), ttl: 600)
        let token = try await attacker.sign(claims)
        await #expect(throws: AccessTokenError.self) { try await k.verifier.verify(token) }
    }

    @Test func rejectsWrongAudienceIssuerAndNotYetValid() async throws {
        let k = try await Self.keys()
        let key = try EdDSA.PrivateKey(curve: .ed25519)
        let verifier = try await AccessTokenVerifier(publicKey: .ed25519PEM(key.publicKey.pemRepresentation), audience: Self.audience, issuer: Self.issuer)
        let otherAudience = try await AccessTokenSigner(ed25519PrivateKeyPEM: key.pemRepresentation, audience: "someone-else", issuer: Self.issuer)
        await #expect(throws: AccessTokenError.invalid("wrong audience")) { try await verifier.verify(try await otherAudience.sign(userId: "u", ttl: 600)) }
        let otherIssuer = try await AccessTokenSigner(ed25519PrivateKeyPEM: key.pemRepresentation, audience: Self.audience, issuer: "evil")
        await #expect(throws: AccessTokenError.invalid("wrong issuer")) { try await verifier.verify(try await otherIssuer.sign(userId: "u", ttl: 600)) }
        let right = try await AccessTokenSigner(ed25519PrivateKeyPEM: key.pemRepresentation, audience: Self.audience, issuer: Self.issuer)
        let future = try await right.sign(userId: "u", ttl: 600, now: Date().addingTimeInterval(3600))
        await #expect(throws: AccessTokenError.invalid("not yet valid")) { try await verifier.verify(future) }
        // A token signed by a different key fails.
        await #expect(throws: AccessTokenError.self) { try await k.verifier.verify(try await right.sign(userId: "u", ttl: 600)) }
    }

    @Test func verifiesES256() async throws {
        let key = ES256PrivateKey()
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: key)
        let token = try await keys.sign(AccessTokenClaims(userId: "u-9", audience: Self.audience, issuer: Self.issuer, issuedAt: Date(), ttl: 600))
        let verifier = try await AccessTokenVerifier(publicKey: .es256PEM(key.publicKey.pemRepresentation), audience: Self.audience, issuer: Self.issuer)
        #expect(try await verifier.verify(token).userId == "u-9")
    }
}

extension Data {
    func base64URLEncodedString() -> String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
