import AsyncHTTPClient
import CryptoExtras
import FirebaseAuth
import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import Logging
import NIOCore
import Synchronization
import Testing

/// A fake of Google's secure-token key set: the keys it serves can change, and it counts fetches.
final class FakeKeySet: Sendable {
    struct Key: Sendable {
        let kid: String
        let signer: JWTKeyCollection
        /// The public half as a JWK (`{kty, alg, use, kid, n, e}`).
        let jwk: [String: String]
    }

    private let state = Mutex<(keys: [[String: String]], fetches: Int, failing: Bool)>(([], 0, false))

    var fetches: Int { state.withLock { $0.fetches } }

    func serve(_ keys: [Key]) { state.withLock { $0.keys = keys.map(\.jwk) } }
    func fail(_ failing: Bool) { state.withLock { $0.failing = failing } }

    /// A fresh RSA key named `kid`, able to sign tokens.
    static func key(_ kid: String) async throws -> Key {
        let backing = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let signer = JWTKeyCollection()
        await signer.add(rsa: try Insecure.RSA.PrivateKey(backing: backing), digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid))
        let (modulus, exponent) = try Insecure.RSA.PublicKey(backing: backing.publicKey).getKeyPrimitives()
        return Key(
            kid: kid, signer: signer,
            jwk: ["kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid, "n": modulus.base64URL, "e": exponent.base64URL])
    }

    /// Runs the key set on a local port for `body`, which gets its URL.
    func run(_ body: @escaping @Sendable (String) async throws -> Void) async throws {
        let router = Router()
        router.get("keys") { _, _ -> Response in
            let (keys, failing) = self.state.withLock { state -> ([[String: String]], Bool) in
                state.fetches += 1
                return (state.keys, state.failing)
            }
            guard !failing else { return Response(status: .internalServerError) }
            let json = try JSONSerialization.data(withJSONObject: ["keys": keys])
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: json)))
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            try await body("http://127.0.0.1:\(try #require(client.port))/keys")
        }
    }
}

extension Data {
    var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}

@Suite("Firebase ID tokens against a key set over HTTP")
struct FirebaseTokenVerifierTests {
    static let project = "sesac-study-test"

    static func verifier(_ url: String, refetch: Duration = .seconds(60)) -> FirebaseTokenVerifier {
        FirebaseTokenVerifier(
            projectId: project, keySetURL: url, client: HTTPClient.shared, logger: Logger(label: "test.firebase"), minimumRefetchInterval: refetch)
    }

    static func token(_ key: FakeKeySet.Key, _ claims: FirebaseIDToken) async throws -> String {
        try await key.signer.sign(claims, kid: JWKIdentifier(string: key.kid))
    }

    static func claims(
        uid: String = "firebase-uid-1", project: String = project, issuedAt: Date = Date(), ttl: TimeInterval = 3600, authTime: Date? = nil
    ) -> FirebaseIDToken {
        FirebaseIDToken(project: project, uid: uid, issuedAt: issuedAt, ttl: ttl, authTime: authTime, phoneNumber: "+821012345678")
    }

    @Test("a token signed by a key of the set names its uid; the set is fetched once and cached by kid")
    func valid() async throws {
        let keys = FakeKeySet()
        let key = try await FakeKeySet.key("k1")
        keys.serve([key])
        try await keys.run { url in
            let verifier = Self.verifier(url)
            let signedIn = Date().addingTimeInterval(-120)
            let identity = try await verifier.verify(try await Self.token(key, Self.claims(authTime: signedIn)))
            #expect(identity.uid == "firebase-uid-1" && identity.phoneNumber == "+821012345678")
            #expect(abs(identity.authTime.timeIntervalSince(signedIn)) < 1)
            for uid in ["a", "b", "c"] {
                #expect(try await verifier.verify(try await Self.token(key, Self.claims(uid: uid))).uid == uid)
            }
            #expect(keys.fetches == 1)
        }
    }

    @Test("claims: another project's audience or issuer, expired, issued or signed in in the future, an empty or over-long uid")
    func claims() async throws {
        let keys = FakeKeySet()
        let key = try await FakeKeySet.key("k1")
        keys.serve([key])
        try await keys.run { url in
            let verifier = Self.verifier(url)
            var otherIssuer = Self.claims()
            otherIssuer.iss = IssuerClaim(value: "https://securetoken.google.com/another-project")
            let cases: [(FirebaseIDToken, String)] = [
                (Self.claims(project: "another-project"), "aud"),
                (otherIssuer, "iss"),
                (Self.claims(issuedAt: Date().addingTimeInterval(-7200), ttl: 3600), "exp"),
                (Self.claims(issuedAt: Date().addingTimeInterval(600)), "iat"),
                (Self.claims(authTime: Date().addingTimeInterval(600)), "auth_time"),
                (Self.claims(uid: ""), "sub"),
                (Self.claims(uid: String(repeating: "u", count: 129)), "sub"),
            ]
            for (claims, reason) in cases {
                await #expect(throws: FirebaseTokenError.invalidClaims(reason)) {
                    try await verifier.verify(try await Self.token(key, claims))
                }
            }
            // 128 characters is a uid.
            let longest = try await Self.token(key, Self.claims(uid: String(repeating: "u", count: 128)))
            let identity = try await verifier.verify(longest)
            #expect(identity.uid.count == 128)
        }
    }

    @Test("algorithm and signature: HS256 or none, garbage, a kid signed by another key, a body changed after signing")
    func forged() async throws {
        let keys = FakeKeySet()
        let key = try await FakeKeySet.key("k1")
        keys.serve([key])
        try await keys.run { url in
            let verifier = Self.verifier(url)
            let hmac = JWTKeyCollection()
            await hmac.add(hmac: HMACKey(from: String(repeating: "s", count: 64)), digestAlgorithm: .sha256, kid: "k1")
            let hs256 = try await hmac.sign(Self.claims(), kid: "k1")
            await #expect(throws: FirebaseTokenError.malformed) { try await verifier.verify(hs256) }
            let none = "eyJhbGciOiJub25lIiwia2lkIjoiazEifQ." + (hs256.split(separator: ".")[1]) + "."
            await #expect(throws: FirebaseTokenError.malformed) { try await verifier.verify(none) }
            for garbage in ["", "a.b", "not a token", String(repeating: "x", count: 10_000)] {
                await #expect(throws: FirebaseTokenError.malformed) { try await verifier.verify(garbage) }
            }
            let impostor = try await FakeKeySet.key("k1")
            await #expect(throws: FirebaseTokenError.badSignature) { try await verifier.verify(try await Self.token(impostor, Self.claims())) }
            let genuine = try await Self.token(key, Self.claims()).split(separator: ".")
            let changed = try await Self.token(key, Self.claims(uid: "someone-else")).split(separator: ".")
            await #expect(throws: FirebaseTokenError.badSignature) {
                try await verifier.verify([genuine[0], changed[1], genuine[2]].joined(separator: "."))
            }
        }
    }

    @Test("an unknown kid fetches the set again, at most once per interval; rotated keys are found; concurrent callers share one fetch")
    func rotation() async throws {
        let keys = FakeKeySet()
        let (old, new) = (try await FakeKeySet.key("old"), try await FakeKeySet.key("new"))
        keys.serve([old])
        try await keys.run { url in
            let verifier = Self.verifier(url, refetch: .milliseconds(500))
            #expect(try await verifier.verify(try await Self.token(old, Self.claims())).uid == "firebase-uid-1")
            #expect(keys.fetches == 1)
            // Within the interval an unknown kid is refused without a fetch.
            await #expect(throws: FirebaseTokenError.unknownKey) { try await verifier.verify(try await Self.token(new, Self.claims())) }
            #expect(keys.fetches == 1)
            // Google rotates: after the interval the new key is fetched, once for many callers.
            keys.serve([old, new])
            try await Task.sleep(for: .milliseconds(600))
            let token = try await Self.token(new, Self.claims())
            try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<20 { group.addTask { try await verifier.verify(token).uid } }
                for try await uid in group { #expect(uid == "firebase-uid-1") }
            }
            #expect(keys.fetches == 2)
            // A key dropped from the set stops verifying once the set is fetched again.
            keys.serve([new])
            try await Task.sleep(for: .milliseconds(600))
            await #expect(throws: FirebaseTokenError.unknownKey) {
                try await verifier.verify(try await Self.token(try await FakeKeySet.key("unknown"), Self.claims()))
            }
            await #expect(throws: FirebaseTokenError.unknownKey) { try await verifier.verify(try await Self.token(old, Self.claims())) }
            #expect(try await verifier.verify(token).uid == "firebase-uid-1")
        }
    }

    @Test("a key set that cannot be fetched refuses tokens (and is asked again only after the interval)")
    func unavailable() async throws {
        let keys = FakeKeySet()
        let key = try await FakeKeySet.key("k1")
        keys.serve([key])
        keys.fail(true)
        try await keys.run { url in
            let verifier = Self.verifier(url, refetch: .milliseconds(300))
            await #expect(throws: FirebaseTokenError.self) { try await verifier.verify(try await Self.token(key, Self.claims())) }
            await #expect(throws: FirebaseTokenError.unknownKey) { try await verifier.verify(try await Self.token(key, Self.claims())) }
            #expect(keys.fetches == 1)
            keys.fail(false)
            try await Task.sleep(for: .milliseconds(400))
            #expect(try await verifier.verify(try await Self.token(key, Self.claims())).uid == "firebase-uid-1")
        }
        // Nothing listens: refused, not hung.
        let verifier = Self.verifier("http://127.0.0.1:1/keys")
        await #expect(throws: FirebaseTokenError.self) { try await verifier.verify(try await Self.token(key, Self.claims())) }
    }
}
