import AsyncHTTPClient
import FirebaseAuth
import Foundation
import JWTKit
import Logging
import Synchronization
import SuiteTesting
import Testing

@Suite("Firebase ID tokens against a key set over HTTP")
struct FirebaseTokenVerifierTests {
    static let project = "sesac-study-test"

    /// A clock the tests move by hand: the refetch interval passes when they say so.
    final class ManualClock: Sendable {
        private let elapsed = Mutex(Duration.zero)
        var now: Duration { elapsed.withLock { $0 } }
        func advance(_ by: Duration) { elapsed.withLock { $0 += by } }
    }

    static func verifier(_ url: String, clock: ManualClock = ManualClock()) -> FirebaseTokenVerifier {
        FirebaseTokenVerifier(
            projectId: project, keySetURL: url, client: HTTPClient.shared, logger: Logger(label: "test.firebase"),
            minimumRefetchInterval: .seconds(60), uptime: { clock.now })
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
            let clock = ManualClock()
            let verifier = Self.verifier(url, clock: clock)
            #expect(try await verifier.verify(try await Self.token(old, Self.claims())).uid == "firebase-uid-1")
            #expect(keys.fetches == 1)
            // Within the interval an unknown kid is refused without a fetch.
            await #expect(throws: FirebaseTokenError.unknownKey) { try await verifier.verify(try await Self.token(new, Self.claims())) }
            #expect(keys.fetches == 1)
            // Google rotates: after the interval the new key is fetched, once for many callers.
            keys.serve([old, new])
            clock.advance(.seconds(61))
            let token = try await Self.token(new, Self.claims())
            try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<20 { group.addTask { try await verifier.verify(token).uid } }
                for try await uid in group { #expect(uid == "firebase-uid-1") }
            }
            #expect(keys.fetches == 2)
            // A key dropped from the set stops verifying once the set is fetched again.
            keys.serve([new])
            clock.advance(.seconds(61))
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
            let clock = ManualClock()
            let verifier = Self.verifier(url, clock: clock)
            await #expect(throws: FirebaseTokenError.self) { try await verifier.verify(try await Self.token(key, Self.claims())) }
            await #expect(throws: FirebaseTokenError.unknownKey) { try await verifier.verify(try await Self.token(key, Self.claims())) }
            #expect(keys.fetches == 1)
            keys.fail(false)
            clock.advance(.seconds(61))
            let token = try await Self.token(key, Self.claims())
            #expect(try await verifier.verify(token).uid == "firebase-uid-1")
        }
        // Nothing listens: refused, not hung.
        let verifier = Self.verifier("http://127.0.0.1:1/keys")
        await #expect(throws: FirebaseTokenError.self) { try await verifier.verify(try await Self.token(key, Self.claims())) }
    }
}
