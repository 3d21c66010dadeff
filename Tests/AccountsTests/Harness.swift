import AuthApp
import Common
import Database
import Foundation
import GatewayApp
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Kafka
import Logging
import NIOCore
import NIOFoundationCompat
import ServiceKit
import Testing
import TestSupport

/// auth and the gateway, both in-process on real sockets, in front of a fresh database and an
/// embedded Kafka cluster — the path a client request really takes.
struct Stack: Sendable {
    let client: any TestClientProtocol
    let keys: (privateKey: String, publicKey: String)
    let cluster: EmbeddedKafkaCluster
    static let appKey = "test-app-key"

    static func run(
        gatewayEnvironment: [String: String] = [:], authEnvironment: [String: String] = [:],
        _ body: @escaping @Sendable (Stack) async throws -> Void
    ) async throws {
        let db = try await TestDatabase.create(prefix: "auth")
        let cluster = try TestKafka.catalogCluster()
        let keys = try JWTKeyPEM.newEd25519()
        let logger = TestDatabase.logger
        let common = ["HTTP_PORT": "0", "KAFKA_BROKERS": cluster.bootstrapServers, "LOG_LEVEL": "warning", "KAFKA_FETCH_WAIT_MS": "5"]
        let authSettings = ServiceSettings(
            serviceName: "auth", defaults: AuthService.defaults,
            environment: common.merging([
                "DATABASE_URL": db.configuration.url, "JWT_PRIVATE_KEY": keys.privateKey,
                "AUTH_FILES_DIRECTORY": FileManager.default.temporaryDirectory.appendingPathComponent("auth-files-\(db.name)").path,
            ]) { $1 }
                .merging(authEnvironment) { $1 },
            arguments: ["auth"]
        )
        let auth = try await AuthApp.buildApplication(settings: authSettings, logger: logger)
        try await auth.test(.live) { authClient in
            let port = try #require(authClient.port)
            var env = common.merging(["JWT_PUBLIC_KEY": keys.publicKey, "SESAC_KEYS": "other-key, \(appKey)", "AUTH_URL": "http://127.0.0.1:\(port)"]) { $1 }
            for (k, v) in gatewayEnvironment { env[k] = v }
            let gateway = try await GatewayApp.buildApplication(
                settings: ServiceSettings(serviceName: "gateway", defaults: GatewayService.defaults, environment: env, arguments: ["gateway"]),
                logger: logger
            )
            try await gateway.test(.live) { client in
                try await body(Stack(client: client, keys: keys, cluster: cluster))
            }
        }
        try await db.drop()
    }

    // MARK: requests

    static let sesacKeyHeader = HTTPField.Name("SesacKey")!
    static let refreshHeader = HTTPField.Name("RefreshToken")!

    func headers(token: String? = nil, appKey: String? = Stack.appKey, contentType: String? = "application/json") -> HTTPFields {
        var h = HTTPFields()
        if let appKey { h[Self.sesacKeyHeader] = appKey }
        if let token { h[.authorization] = token }
        if let contentType { h[.contentType] = contentType }
        return h
    }

    @discardableResult
    func request(_ method: HTTPRequest.Method, _ uri: String, token: String? = nil, json: String? = nil, headers: HTTPFields? = nil) async throws -> TestResponse {
        try await client.execute(uri: uri, method: method, headers: headers ?? self.headers(token: token), body: json.map { ByteBuffer(string: $0) })
    }

    func form(_ uri: String, _ body: String) async throws -> TestResponse {
        try await client.execute(uri: uri, method: .post, headers: headers(contentType: "application/x-www-form-urlencoded"), body: ByteBuffer(string: body))
    }

    /// Joins a new user and returns its auth result.
    func join(email: String = "user\(UUID().uuidString.prefix(8))@example.com", password: String = "correct horse 1",
              nickname: String = "새싹이") async throws -> AuthResultBody {
        let response = try await request(.post, "/v1/users/join", json: #"{"email":"\#(email)","password":"\#(password)","nickname":"\#(nickname)","phone":"010-1234-5678"}"#)
        #expect(response.status == .ok, "join: \(String(buffer: response.body))")
        return try decode(AuthResultBody.self, response)
    }

    /// An access token signed with the real key but issued in the past (so already expired).
    func expiredToken(for userId: String) async throws -> String {
        let signer = try await AccessTokenSigner(ed25519PrivateKeyPEM: keys.privateKey, audience: "chatsuite", issuer: "chatsuite-auth")
        return try await signer.sign(userId: userId, ttl: 60, now: Date().addingTimeInterval(-3600))
    }
}

struct AuthResultBody: Decodable {
    struct Token: Decodable { var accessToken: String; var refreshToken: String }
    var user_id: String
    var email: String
    var nickname: String
    var createdAt: String
    var token: Token
}

func decode<T: Decodable>(_ type: T.Type, _ response: TestResponse) throws -> T {
    try JSONDecoder().decode(T.self, from: Data(buffer: response.body))
}

func errorCode(_ response: TestResponse) -> String? {
    (try? JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])?["errorCode"] as? String
}

/// Every string value that looks like a date must be in the contract's format.
func expectContractDates(_ response: TestResponse, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let object = try JSONSerialization.jsonObject(with: Data(buffer: response.body))
    func walk(_ value: Any, _ key: String) {
        if let dict = value as? [String: Any] { dict.forEach { walk($0.value, $0.key) } }
        else if let array = value as? [Any] { array.forEach { walk($0, key) } }
        else if let text = value as? String, key.lowercased().hasSuffix("at") || key == "createdAt" || key == "paidAt" {
            #expect(text.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "\(key)=\(text)", sourceLocation: sourceLocation)
        }
    }
    walk(object, "")
}

func jsonObject(_ response: TestResponse) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any]
}
