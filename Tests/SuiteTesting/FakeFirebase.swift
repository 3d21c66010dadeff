import CryptoExtras
import FirebaseAuth
import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import NIOCore
import Synchronization
import Testing

/// A fake of Google's secure-token key set: the keys it serves can change, and it counts fetches.
public final class FakeKeySet: Sendable {
    public struct Key: Sendable {
        public let kid: String
        public let signer: JWTKeyCollection
        /// The public half as a JWK (`{kty, alg, use, kid, n, e}`).
        public let jwk: [String: String]
    }

    private let state = Mutex<(keys: [[String: String]], fetches: Int, failing: Bool)>(([], 0, false))

    public init() {}

    public var fetches: Int { state.withLock { $0.fetches } }

    public func serve(_ keys: [Key]) { state.withLock { $0.keys = keys.map(\.jwk) } }
    public func fail(_ failing: Bool) { state.withLock { $0.failing = failing } }

    /// A fresh RSA key named `kid`, able to sign tokens.
    public static func key(_ kid: String) async throws -> Key {
        let backing = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let signer = JWTKeyCollection()
        await signer.add(rsa: try Insecure.RSA.PrivateKey(backing: backing), digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid))
        let (modulus, exponent) = try Insecure.RSA.PublicKey(backing: backing.publicKey).getKeyPrimitives()
        return Key(
            kid: kid, signer: signer,
            jwk: ["kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid, "n": modulus.base64URL, "e": exponent.base64URL])
    }

    /// Runs the key set on a local port for `body`, which gets its URL.
    public func run(_ body: @escaping @Sendable (String) async throws -> Void) async throws {
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
    public var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}

extension FakeKeySet.Key {
    /// A Firebase ID token for `uid` in `project`, signed by this key.
    public func token(uid: String, project: String, issuedAt: Date = Date(), ttl: TimeInterval = 3600) async throws -> String {
        try await signer.sign(
            FirebaseIDToken(project: project, uid: uid, issuedAt: issuedAt, ttl: ttl, phoneNumber: "+821012345678"), kid: JWKIdentifier(string: kid))
    }
}
