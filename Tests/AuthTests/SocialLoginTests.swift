import Crypto
import CryptoExtras
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import NIOCore
import SuiteTesting
import Testing

/// The claims Apple puts in an identity token (what the fake Apple signs).
struct FakeAppleClaims: JWTPayload {
    var iss: IssuerClaim
    var aud: AudienceClaim
    var exp: ExpirationClaim
    var iat: IssuedAtClaim
    var sub: SubjectClaim
    var email: String?
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Local stand-ins for Apple's key endpoint and Kakao's user API: real HTTP, real RS256 signatures.
struct FakeProviders: Sendable {
    static let kid = "fake-apple-key"
    static let bundleId = "com.example.workspace"
    let appleKey: _RSA.Signing.PrivateKey
    let otherKey: _RSA.Signing.PrivateKey

    init() throws {
        appleKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        otherKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
    }

    func app() throws -> some ApplicationProtocol {
        let primitives = try appleKey.publicKey.getKeyPrimitives()
        let jwks =
            #"{"keys":[{"kty":"RSA","kid":"\#(Self.kid)","use":"sig","alg":"RS256","n":"\#(base64url(primitives.modulus))","e":"\#(base64url(primitives.publicExponent))"}]}"#
        let router = Router()
        router.get("/auth/keys") { _, _ in Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: jwks)))
        }
        router.get("/v2/user/me") { request, _ -> Response in
            let json: String
            switch request.headers[.authorization] {
            case "Bearer kakao-good": json = #"{"id":4242,"kakao_account":{"email":"kakao@example.com","profile":{"nickname":"카카오"}}}"#
            case "Bearer kakao-noemail": json = #"{"id":5151,"kakao_account":{"profile":{"nickname":"무메일"}}}"#
            case "Bearer kakao-down": return Response(status: .internalServerError)
            default:
                return Response(status: .unauthorized, body: .init(byteBuffer: ByteBuffer(string: #"{"msg":"this access token does not exist","code":-401}"#)))
            }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: json)))
        }
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    }

    func appleToken(sub: String, email: String?, audience: String = bundleId, expiresIn: TimeInterval = 600, signedBy key: _RSA.Signing.PrivateKey? = nil)
        async throws -> String
    {
        let keys = JWTKeyCollection()
        await keys.add(rsa: try Insecure.RSA.PrivateKey(backing: key ?? appleKey), digestAlgorithm: .sha256, kid: JWKIdentifier(string: Self.kid))
        let now = Date()
        return try await keys.sign(
            FakeAppleClaims(
                iss: "https://appleid.apple.com", aud: AudienceClaim(value: [audience]), exp: ExpirationClaim(value: now.addingTimeInterval(expiresIn)),
                iat: IssuedAtClaim(value: now.addingTimeInterval(-60)), sub: SubjectClaim(value: sub), email: email
            ), kid: JWKIdentifier(string: Self.kid))
    }

    /// Runs the accounts stack with auth pointed at these fakes.
    func run(_ body: @escaping @Sendable (Stack, FakeProviders) async throws -> Void) async throws {
        try await app().test(.live) { fake in
            let port = try #require(fake.port)
            try await Stack.run(services: [
                .auth(env: [
                    "APPLE_JWKS_URL": "http://127.0.0.1:\(port)/auth/keys", "APPLE_AUDIENCE": Self.bundleId, "KAKAO_API_URL": "http://127.0.0.1:\(port)",
                ])
            ]) { stack in try await body(stack, self) }
        }
    }
}

func base64url(_ data: Data) -> String {
    data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

@Suite("Social login against fake Apple and Kakao servers", .serialized)
struct SocialLoginTests {
    @Test("Apple: first login creates the account, later logins find it; invalid tokens are E03")
    func apple() async throws {
        try await FakeProviders().run { s, fake in
            let token = try await fake.appleToken(sub: "apple-sub-1", email: "apple@example.com")
            let first = try await s.request(.post, "/v1/users/login/apple", json: #"{"idToken":"\#(token)","nickname":"애플","deviceToken":"d"}"#)
            #expect(first.status == .ok, "\(String(buffer: first.body))")
            try expectContractDates(first)
            let firstObject = try #require(jsonObject(first))
            #expect(firstObject["provider"] as? String == "apple" && firstObject["email"] as? String == "apple@example.com")
            #expect(firstObject["nickname"] as? String == "애플")
            // Apple sends the email only on the first login; the subject finds the account.
            let again = try await s.request(
                .post, "/v1/users/login/apple", json: #"{"idToken":"\#(try await fake.appleToken(sub: "apple-sub-1", email: nil))"}"#)
            #expect(jsonObject(again)?["user_id"] as? String == firstObject["user_id"] as? String)

            for bad in [
                try await fake.appleToken(sub: "x", email: "x@example.com", audience: "com.someone.else"),
                try await fake.appleToken(sub: "x", email: "x@example.com", expiresIn: -120),
                try await fake.appleToken(sub: "x", email: "x@example.com", signedBy: fake.otherKey),
                "not.a.token",
            ] {
                let r = try await s.request(.post, "/v1/users/login/apple", json: #"{"idToken":"\#(bad)"}"#)
                #expect(r.status == .badRequest && errorCode(r) == "E03")
            }
            #expect(errorCode(try await s.request(.post, "/v1/users/login/apple", json: #"{}"#)) == "E11")
        }
    }

    @Test("Apple: an email already joined by email login is E12")
    func appleEmailTaken() async throws {
        try await FakeProviders().run { s, fake in
            _ = try await s.join(email: "both@example.com")
            let token = try await fake.appleToken(sub: "apple-sub-2", email: "both@example.com")
            let r = try await s.request(.post, "/v1/users/login/apple", json: #"{"idToken":"\#(token)"}"#)
            #expect(r.status == .badRequest && errorCode(r) == "E12")
        }
    }

    @Test("Kakao: token checked with Kakao's API; unknown token E03; Kakao down E99 (503); no email still works")
    func kakao() async throws {
        try await FakeProviders().run { s, _ in
            let first = try await s.request(.post, "/v1/users/login/kakao", json: #"{"oauthToken":"kakao-good","deviceToken":"fcm"}"#)
            #expect(first.status == .ok, "\(String(buffer: first.body))")
            let object = try #require(jsonObject(first))
            #expect(object["provider"] as? String == "kakao" && object["nickname"] as? String == "카카오")
            let again = try await s.form("/v1/users/login/kakao", "oauthToken=kakao-good&deviceToken=fcm")
            #expect(jsonObject(again)?["user_id"] as? String == object["user_id"] as? String)
            let rejected = try await s.request(.post, "/v1/users/login/kakao", json: #"{"oauthToken":"stolen"}"#)
            #expect(rejected.status == .badRequest && errorCode(rejected) == "E03")
            let down = try await s.request(.post, "/v1/users/login/kakao", json: #"{"oauthToken":"kakao-down"}"#)
            #expect(down.status == .serviceUnavailable && errorCode(down) == "E99")
            let noEmail = try await s.request(.post, "/v1/users/login/kakao", json: #"{"oauthToken":"kakao-noemail"}"#)
            #expect(noEmail.status == .ok && jsonObject(noEmail)?["nickname"] as? String == "무메일")
            #expect(errorCode(try await s.request(.post, "/v1/users/login/kakao", json: #"{"deviceToken":"x"}"#)) == "E11")
        }
    }
}
