import Common
import CryptoExtras
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOFoundationCompat
import JWTKit
import SuiteTesting

/// A fake of Google's OAuth2 token endpoint and FCM HTTP v1, over a real socket: the token
/// endpoint checks the JWT bearer grant (RS256 signature with the service account's key, issuer,
/// audience, scope, lifetime); the send endpoint checks the access token and records each
/// message. Tokens in `unregistered` answer 404 `UNREGISTERED`; tokens in `flaky` answer 503
/// with `Retry-After: 1` the first time.
final class FakeFCM: Sendable {
    struct Sent: Sendable {
        let token: String
        let title: String
        let body: String
        let badge: Int
        let data: [String: String]
        let collapseKey: String
    }

    let project = "chatsuite-test"
    let clientEmail = "push@chatsuite-test.iam.gserviceaccount.com"
    let privateKeyPEM: String
    let publicKeyPEM: String
    let unregistered: Set<String>
    let flaky: Set<String>
    /// How long each send takes to answer (a slow provider keeps sends in flight).
    let delay: Duration
    let accepted = Locked<[Sent]>([])
    let refused = Locked<[String]>([])  // tokens answered with an error
    let grants = Locked(0)
    private let failedOnce = Locked<Set<String>>([])
    private let server = Locked<RunningService?>(nil)

    init(unregistered: Set<String> = [], flaky: Set<String> = [], delay: Duration = .zero) async throws {
        self.delay = delay
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        privateKeyPEM = key.pemRepresentation
        publicKeyPEM = key.publicKey.pemRepresentation
        self.unregistered = unregistered
        self.flaky = flaky
    }

    var baseURL: String { "http://127.0.0.1:\(server.value?.client.port ?? 0)" }

    func start() async throws {
        let keys = JWTKeyCollection()
        await keys.add(rsa: try Insecure.RSA.PublicKey(pem: publicKeyPEM), digestAlgorithm: .sha256)
        let router = Router()
        router.post("token") { request, context -> Response in
            let form = String(buffer: try await request.body.collect(upTo: 1 << 16))
            let fields = Dictionary(
                form.split(separator: "&").map { pair -> (String, String) in
                    let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
                    return (parts[0], parts.count > 1 ? parts[1] : "")
                }, uniquingKeysWith: { $1 })
            guard fields["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer", let assertion = fields["assertion"],
                let claims = try? await keys.verify(assertion, as: Grant.self),
                claims.iss == self.clientEmail, claims.scope == "https://www.googleapis.com/auth/firebase.messaging",
                claims.aud == "\(self.baseURL)/token", claims.exp - claims.iat <= 3_600
            else { return Response(status: .badRequest, body: .init(byteBuffer: ByteBuffer(string: #"{"error":"invalid_grant"}"#))) }
            let n = self.grants.withLock { value -> Int in
                value += 1
                return value
            }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"access_token":"fake-access-\#(n)","expires_in":3599,"token_type":"Bearer"}"#)))
        }
        router.post("v1/projects/:project/messages:send") { request, context -> Response in
            guard context.parameters.get("project") == self.project, request.headers[.authorization]?.hasPrefix("Bearer fake-access-") == true else {
                return Response(status: .unauthorized)
            }
            let body = try await request.body.collect(upTo: 1 << 20)
            if self.delay > .zero { try await Task.sleep(for: self.delay) }
            guard let message = try? JSONDecoder().decode(Envelope.self, from: Data(buffer: body)).message else { return Response(status: .badRequest) }
            if self.unregistered.contains(message.token) {
                self.refused.withLock { $0.append(message.token) }
                return Response(
                    status: .notFound,
                    body: .init(
                        byteBuffer: ByteBuffer(
                            string:
                                #"{"error":{"code":404,"status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#
                        )))
            }
            if self.flaky.contains(message.token), self.failedOnce.withLock({ $0.insert(message.token).inserted }) {
                self.refused.withLock { $0.append(message.token) }
                return Response(status: .serviceUnavailable, headers: [.retryAfter: "1"])
            }
            self.accepted.withLock {
                $0.append(
                    Sent(
                        token: message.token, title: message.notification.title, body: message.notification.body,
                        badge: message.apns.payload.aps.badge, data: message.data, collapseKey: message.android.collapse_key))
            }
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: #"{"name":"projects/\#(self.project)/messages/1"}"#)))
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        let running = try await RunningService.start { app }
        server.withLock { $0 = running }
    }

    func stop() async throws { try await server.value?.stop() }

    /// The service-account JSON key file the push service reads.
    func credentialsFile() throws -> String {
        let account: [String: String] = [
            "type": "service_account", "project_id": project, "private_key_id": "key-1", "private_key": privateKeyPEM,
            "client_email": clientEmail, "token_uri": "\(baseURL)/token",
        ]
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fcm-\(UUID().uuidString).json").path
        try JSONSerialization.data(withJSONObject: account).write(to: URL(fileURLWithPath: path))
        return path
    }

    func sent(to token: String) -> [Sent] { accepted.value.filter { $0.token == token } }

    struct Grant: JWTPayload {
        var iss: String
        var scope: String
        var aud: String
        var iat: Double
        var exp: Double
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    struct Envelope: Decodable {
        struct Message: Decodable {
            struct Notification: Decodable {
                var title: String
                var body: String
            }
            struct Android: Decodable { var collapse_key: String }
            struct APNS: Decodable {
                struct Payload: Decodable {
                    struct APS: Decodable { var badge: Int }
                    var aps: APS
                }
                var payload: Payload
            }
            var token: String
            var notification: Notification
            var data: [String: String]
            var android: Android
            var apns: APNS
        }
        var message: Message
    }
}
