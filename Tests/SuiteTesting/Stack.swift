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
import PostgresNIO
import ServiceKit
import Testing
import TestSupport
import WorkspaceApp

/// The suite's services in-process on real sockets — auth, optionally workspace, and the gateway
/// in front — with a fresh database per service and an embedded Kafka cluster: the path a client
/// request really takes (client → gateway → service → PostgreSQL / Kafka → other services).
public struct Stack: Sendable {
    public let client: any TestClientProtocol
    public let keys: (privateKey: String, publicKey: String)
    public let cluster: EmbeddedKafkaCluster
    /// A running client for the workspace service's database (nil without workspace).
    public let workspaceDatabase: PostgresClient?
    public static let appKey = "test-app-key"

    public static func run(
        workspace: Bool = false,
        gatewayEnvironment: [String: String] = [:], authEnvironment: [String: String] = [:], workspaceEnvironment: [String: String] = [:],
        _ body: @escaping @Sendable (Stack) async throws -> Void
    ) async throws {
        let authDB = try await TestDatabase.create(prefix: "auth")
        let workspaceDB = workspace ? try await TestDatabase.create(prefix: "ws") : nil
        let cluster = try TestKafka.catalogCluster()
        let keys = try JWTKeyPEM.newEd25519()
        let logger = TestDatabase.logger
        let common = ["HTTP_PORT": "0", "KAFKA_BROKERS": cluster.bootstrapServers, "LOG_LEVEL": "warning", "KAFKA_FETCH_WAIT_MS": "5"]
        let files = FileManager.default.temporaryDirectory
        let authSettings = ServiceSettings(
            serviceName: "auth", defaults: AuthService.defaults,
            environment: common.merging([
                "DATABASE_URL": authDB.configuration.url, "JWT_PRIVATE_KEY": keys.privateKey,
                "AUTH_FILES_DIRECTORY": files.appendingPathComponent("auth-files-\(authDB.name)").path,
            ]) { $1 }
                .merging(authEnvironment) { $1 },
            arguments: ["auth"]
        )

        @Sendable func runGateway(upstreams: [String: String], workspaceClient: PostgresClient?) async throws {
            var env = common.merging(["JWT_PUBLIC_KEY": keys.publicKey, "SESAC_KEYS": "other-key, \(appKey)"]) { $1 }
            env.merge(upstreams) { $1 }
            env.merge(gatewayEnvironment) { $1 }
            let gateway = try await GatewayApp.buildApplication(
                settings: ServiceSettings(serviceName: "gateway", defaults: GatewayService.defaults, environment: env, arguments: ["gateway"]),
                logger: logger
            )
            try await gateway.test(.live) { client in
                try await body(Stack(client: client, keys: keys, cluster: cluster, workspaceDatabase: workspaceClient))
            }
        }

        let auth = try await AuthApp.buildApplication(settings: authSettings, logger: logger)
        try await auth.test(.live) { authClient in
            let authURL = "http://127.0.0.1:\(try #require(authClient.port))"
            guard let workspaceDB else {
                try await runGateway(upstreams: ["AUTH_URL": authURL], workspaceClient: nil)
                return
            }
            let settings = ServiceSettings(
                serviceName: "workspace", defaults: WorkspaceService.defaults,
                environment: common.merging([
                    "DATABASE_URL": workspaceDB.configuration.url,
                    "WORKSPACE_FILES_DIRECTORY": files.appendingPathComponent("workspace-files-\(workspaceDB.name)").path,
                ]) { $1 }
                    .merging(workspaceEnvironment) { $1 },
                arguments: ["workspace"]
            )
            let workspaceApp = try await WorkspaceApp.buildApplication(settings: settings, logger: logger)
            try await workspaceApp.test(.live) { workspaceClient in
                let workspaceURL = "http://127.0.0.1:\(try #require(workspaceClient.port))"
                try await workspaceDB.withClient { db in
                    try await runGateway(upstreams: ["AUTH_URL": authURL, "WORKSPACE_URL": workspaceURL], workspaceClient: db)
                }
            }
        }
        try await authDB.drop()
        try await workspaceDB?.drop()
    }

    // MARK: requests

    public static let sesacKeyHeader = HTTPField.Name("SesacKey")!
    public static let refreshHeader = HTTPField.Name("RefreshToken")!

    public func headers(token: String? = nil, appKey: String? = Stack.appKey, contentType: String? = "application/json") -> HTTPFields {
        var h = HTTPFields()
        if let appKey { h[Self.sesacKeyHeader] = appKey }
        if let token { h[.authorization] = token }
        if let contentType { h[.contentType] = contentType }
        return h
    }

    @discardableResult
    public func request(_ method: HTTPRequest.Method, _ uri: String, token: String? = nil, json: String? = nil, headers: HTTPFields? = nil) async throws -> TestResponse {
        try await client.execute(uri: uri, method: method, headers: headers ?? self.headers(token: token), body: json.map { ByteBuffer(string: $0) })
    }

    public func form(_ uri: String, _ body: String) async throws -> TestResponse {
        try await client.execute(uri: uri, method: .post, headers: headers(contentType: "application/x-www-form-urlencoded"), body: ByteBuffer(string: body))
    }

    /// Joins a new user and returns its auth result. With workspace running, it also waits until
    /// the workspace service has the user's profile (its `auth.user.v1` projection).
    public func join(email: String = "user\(UUID().uuidString.prefix(8))@example.com", password: String = "correct horse 1",
                     nickname: String = "새싹이") async throws -> AuthResultBody {
        let response = try await request(.post, "/v1/users/join", json: #"{"email":"\#(email)","password":"\#(password)","nickname":"\#(nickname)","phone":"010-1234-5678"}"#)
        #expect(response.status == .ok, "join: \(String(buffer: response.body))")
        let user = try decode(AuthResultBody.self, response)
        if workspaceDatabase != nil { try await waitForProfile(user.user_id) }
        return user
    }

    /// Waits until the workspace projection has the user (10 s at most).
    public func waitForProfile(_ userId: String, nickname: String? = nil) async throws {
        guard let db = workspaceDatabase, let id = UUID(uuidString: userId) else { return }
        try await eventually("workspace has the profile of \(userId)") {
            for try await name in try await db.query("SELECT nickname FROM user_profiles WHERE user_id = \(id)").decode(String.self) {
                return nickname == nil || name == nickname
            }
            return false
        }
    }

    /// An access token signed with the real key but issued in the past (so already expired).
    public func expiredToken(for userId: String) async throws -> String {
        let signer = try await AccessTokenSigner(ed25519PrivateKeyPEM: keys.privateKey, audience: "chatsuite", issuer: "chatsuite-auth")
        return try await signer.sign(userId: userId, ttl: 60, now: Date().addingTimeInterval(-3600))
    }
}

/// Polls `condition` every 20 ms until it holds; fails after `timeout`.
public func eventually(_ what: String, timeout: Duration = .seconds(10), _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    throw TimeoutError(what: what)
}
