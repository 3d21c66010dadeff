import AccessTokens
import AuthApp
import ChatApp
import Configuration
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
import PaymentApp
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
    /// A running client for the chat service's database (nil without chat).
    public let chatDatabase: PostgresClient?
    /// Where chat stores attachments in this stack (nil without chat).
    public let chatFilesDirectory: String?
    /// A running client for the payment service's database (nil without payment).
    public var paymentDatabase: PostgresClient? = nil
    /// The gateway's environment (upstream URLs, JWT key, Kafka): to start more gateways.
    public var gatewayEnvironment: [String: String] = [:]
    public static let appKey = "test-app-key"

    /// A service started behind the gateway (auth always runs).
    private struct Backend: Sendable {
        let urlVariable: String
        let database: TestDatabase
        let make: @Sendable () async throws -> any ApplicationProtocol
    }

    public static func run(
        workspace: Bool = false, chat: Bool = false, payment: Bool = false,
        gatewayEnvironment: [String: String] = [:], authEnvironment: [String: String] = [:],
        workspaceEnvironment: [String: String] = [:], chatEnvironment: [String: String] = [:], paymentEnvironment: [String: String] = [:],
        _ body: @escaping @Sendable (Stack) async throws -> Void
    ) async throws {
        // One broker: the stacks test services, not broker failover (KafkaTests and DatabaseTests
        // cover that with three), and many stacks run at once on two cores.
        let cluster = try TestKafka.catalogCluster(brokers: 1)
        let keys = try JWTKeyPEM.newEd25519()
        let logger = TestDatabase.logger
        let common = ["HTTP_PORT": "0", "KAFKA_BROKERS": cluster.bootstrapServers, "LOG_LEVEL": "warning", "KAFKA_FETCH_WAIT_MS": "5"]
        let files = FileManager.default.temporaryDirectory
        func settings(_ name: String, _ defaults: [AbsoluteConfigKey: ConfigValue], _ db: TestDatabase, _ env: [String: String]) -> ServiceSettings {
            ServiceSettings(
                serviceName: name, defaults: defaults,
                environment: common.merging(["DATABASE_URL": db.configuration.url]) { $1 }.merging(env) { $1 }, arguments: [name]
            )
        }

        var backends: [Backend] = []
        let authDB = try await TestDatabase.create(prefix: "auth")
        let authSettings = settings("auth", AuthService.defaults, authDB, [
            "JWT_PRIVATE_KEY": keys.privateKey, "AUTH_FILES_DIRECTORY": files.appendingPathComponent("auth-files-\(authDB.name)").path,
        ].merging(authEnvironment) { $1 })
        backends.append(Backend(urlVariable: "AUTH_URL", database: authDB) { try await AuthApp.buildApplication(settings: authSettings, logger: logger) })
        var workspaceDB: TestDatabase?
        if workspace {
            let db = try await TestDatabase.create(prefix: "ws")
            workspaceDB = db
            let s = settings("workspace", WorkspaceService.defaults, db, [
                "WORKSPACE_FILES_DIRECTORY": files.appendingPathComponent("workspace-files-\(db.name)").path,
            ].merging(workspaceEnvironment) { $1 })
            backends.append(Backend(urlVariable: "WORKSPACE_URL", database: db) { try await WorkspaceApp.buildApplication(settings: s, logger: logger) })
        }
        var chatDB: TestDatabase?
        var chatFiles: String?
        if chat {
            let db = try await TestDatabase.create(prefix: "chat")
            chatDB = db
            chatFiles = files.appendingPathComponent("chat-files-\(db.name)").path
            let s = settings("chat", ChatService.defaults, db, [
                "CHAT_FILES_DIRECTORY": files.appendingPathComponent("chat-files-\(db.name)").path,
            ].merging(chatEnvironment) { $1 })
            backends.append(Backend(urlVariable: "CHAT_URL", database: db) { try await ChatApp.buildApplication(settings: s, logger: logger) })
        }
        var paymentDB: TestDatabase?
        if payment {
            let db = try await TestDatabase.create(prefix: "pay")
            paymentDB = db
            let s = settings("payment", PaymentService.defaults, db, paymentEnvironment)
            backends.append(Backend(urlVariable: "PAYMENT_URL", database: db) { try await PaymentApp.buildApplication(settings: s, logger: logger) })
        }
        let started = backends
        let failure = Locked<(any Error)?>(nil)
        let paymentDatabase = paymentDB
        let (workspaceDatabase, chatDatabase, chatFilesDirectory) = (workspaceDB, chatDB, chatFiles)

        @Sendable func runGateway(upstreams: [String: String], backends: [any TestClientProtocol]) async throws {
            var env = common.merging(["JWT_PUBLIC_KEY": keys.publicKey, "SESAC_KEYS": "other-key, \(appKey)"]) { $1 }
            env.merge(upstreams) { $1 }
            env.merge(gatewayEnvironment) { $1 }
            let finalEnvironment = env
            let gateway = try await GatewayApp.buildApplication(
                settings: ServiceSettings(serviceName: "gateway", defaults: GatewayService.defaults, environment: env, arguments: ["gateway"]),
                logger: logger
            )
            try await withOptionalClient(workspaceDatabase) { workspaceClient in
                try await withOptionalClient(chatDatabase) { chatClient in
                    try await withOptionalClient(paymentDatabase) { paymentClient in
                        try await gateway.test(.live) { client in
                            // The body's error is carried out of the stack rather than thrown
                            // through it: a throwing test closure makes HummingbirdTesting cancel
                            // the nested live applications instead of shutting them down
                            // gracefully, and a cancelled service group waits forever on a
                            // Postgres lease made after its client stopped (the hang the last
                            // session found). Graceful shutdown first, then the failure.
                            do {
                                // As `chatsuite dev` does: the body starts once every service is
                                // ready, i.e. its consumers caught up (read models current).
                                try await waitUntilReady(backends + [client])
                                var stack = Stack(client: client, keys: keys, cluster: cluster, workspaceDatabase: workspaceClient,
                                                  chatDatabase: chatClient, chatFilesDirectory: chatFilesDirectory)
                                stack.paymentDatabase = paymentClient
                                stack.gatewayEnvironment = finalEnvironment
                                try await body(stack)
                            } catch {
                                failure.withLock { $0 = error }
                            }
                        }
                    }
                }
            }
        }

        /// Starts backends[index...] one inside the other (each on a real port), then the gateway.
        @Sendable func start(_ index: Int, _ upstreams: [String: String], _ clients: [any TestClientProtocol]) async throws {
            guard index < started.count else { return try await runGateway(upstreams: upstreams, backends: clients) }
            let backend = started[index]
            let app = try await backend.make()
            try await app.test(.live) { client in
                let url = "http://127.0.0.1:\(try #require(client.port))"
                try await start(index + 1, upstreams.merging([backend.urlVariable: url]) { $1 }, clients + [client])
            }
        }

        try await start(0, [:], [])
        for backend in started { try await backend.database.drop() }
        if let error = failure.value { throw error }
    }

    /// Polls `/health/ready` of each service until it answers 200 (60 s at most, then the last
    /// answer is the error). They start together, so waiting one after the other costs nothing.
    public static func waitUntilReady(_ clients: [any TestClientProtocol], timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        for client in clients {
            while true {
                let response = try await client.execute(uri: "/health/ready", method: .get, headers: [:], body: nil)
                if response.status == .ok { break }
                guard ContinuousClock.now < deadline else {
                    throw TimeoutError(what: "service on port \(client.port ?? 0) ready: \(String(buffer: response.body))")
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    private static func withOptionalClient(_ db: TestDatabase?, _ body: @escaping @Sendable (PostgresClient?) async throws -> Void) async throws {
        guard let db else { return try await body(nil) }
        try await db.withClient { try await body($0) }
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
        try await waitForProfile(user.user_id)
        return user
    }

    /// Waits until the workspace and chat projections (those running) have the user (10 s at most).
    public func waitForProfile(_ userId: String, nickname: String? = nil) async throws {
        guard let id = UUID(uuidString: userId) else { return }
        for db in [workspaceDatabase, chatDatabase].compactMap({ $0 }) {
            try await eventually("the profile of \(userId)", timeout: .seconds(30)) {
                for try await name in try await db.query("SELECT nickname FROM user_profiles WHERE user_id = \(id)").decode(String.self) {
                    return nickname == nil || name == nickname
                }
                return false
            }
        }
    }

    /// Waits until chat's read model has `userId` in the channel (or not, with `present: false`).
    public func waitForChatMember(_ userId: String, channel: String, present: Bool = true) async throws {
        guard let db = chatDatabase, let user = UUID(uuidString: userId), let channel = UUID(uuidString: channel) else { return }
        try await eventually("chat sees \(userId) \(present ? "in" : "out of") \(channel)", timeout: .seconds(30)) {
            for try await _ in try await db.query("SELECT 1 FROM channel_members WHERE channel_id = \(channel) AND user_id = \(user)") {
                return present
            }
            return !present
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
