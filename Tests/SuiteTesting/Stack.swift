import AccessTokens
import AuthApp
import ChatApp
import Configuration
import Common
import Database
import AsyncHTTPClient
import Foundation
import GatewayApp
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Kafka
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import PaymentApp
import PostgresNIO
import ServiceCatalog
import ServiceKit
import StudyApp
import Testing
import TestSupport
import WorkspaceApp

/// A service the harness starts in-process: its catalog entry (database, files, keys, the URL
/// setting the gateway reads), its defaults, environment overrides, and how to build it. The
/// suite's services have shorthands (`.auth`, `.chat(env: […])`); a new service's tests make
/// their own with `StackService(.presence, defaults: PresenceService.defaults) { … }`.
public struct StackService: Sendable {
    public let entry: ServiceEntry
    public let defaults: [AbsoluteConfigKey: ConfigValue]
    public var environment: [String: String]
    let build: @Sendable (ServiceSettings, Logger) async throws -> any ApplicationProtocol

    public init(
        _ entry: ServiceEntry, defaults: [AbsoluteConfigKey: ConfigValue], environment: [String: String] = [:],
        build: @escaping @Sendable (ServiceSettings, Logger) async throws -> any ApplicationProtocol
    ) {
        self.entry = entry
        self.defaults = defaults
        self.environment = environment
        self.build = build
    }

    public static var auth: StackService { auth(env: [:]) }
    public static func auth(env: [String: String]) -> StackService {
        StackService(.auth, defaults: AuthService.defaults, environment: env) { try await AuthApp.buildApplication(settings: $0, logger: $1) }
    }

    public static var workspace: StackService { workspace(env: [:]) }
    public static func workspace(env: [String: String]) -> StackService {
        StackService(.workspace, defaults: WorkspaceService.defaults, environment: env) { try await WorkspaceApp.buildApplication(settings: $0, logger: $1) }
    }

    public static var chat: StackService { chat(env: [:]) }
    public static func chat(env: [String: String]) -> StackService {
        StackService(.chat, defaults: ChatService.defaults, environment: env) { try await ChatApp.buildApplication(settings: $0, logger: $1) }
    }

    /// The study service; `env` names its Firebase project and key set (`STUDY_FIREBASE_…`).
    public static func study(env: [String: String]) -> StackService {
        StackService(.study, defaults: StudyService.defaults, environment: env) { try await StudyApp.buildApplication(settings: $0, logger: $1) }
    }

    public static var payment: StackService { payment(env: [:]) }
    public static func payment(env: [String: String]) -> StackService {
        StackService(.payment, defaults: PaymentService.defaults, environment: env) { try await PaymentApp.buildApplication(settings: $0, logger: $1) }
    }
}

/// The suite's services in-process on real sockets, the gateway in front, with a fresh database
/// per service and an embedded Kafka cluster: the path a client request really takes (client →
/// gateway → service → PostgreSQL / Kafka → other services). What each service gets comes from
/// its catalog entry, as under `chatsuite dev`.
public struct Stack: Sendable {
    /// The gateway, as clients reach it; every answer is checked against docs/openapi.yaml.
    public internal(set) var client: any TestClientProtocol
    /// Each started service directly (its own port: health, metrics, `/routes`), by catalog name.
    public let services: [String: any TestClientProtocol]
    public let keys: (privateKey: String, publicKey: String)
    public let cluster: EmbeddedKafkaCluster
    /// A running client for each started service's database, by catalog name.
    public let databases: [String: PostgresClient]
    /// Where each started service that stores files keeps them, by catalog name.
    public let filesDirectories: [String: String]
    /// The gateway's environment (upstream URLs, JWT key, Kafka): to start more gateways.
    public let gatewayEnvironment: [String: String]
    /// The gateway's admin listener (`/health/*`, `/metrics`).
    public let gatewayAdminPort: Int
    public static let appKey = "test-app-key"
    /// Also accepted; Gen A's when a test sets `SESAC_GENERATION_A_KEYS` to it (LilacFlowTests).
    public static let generationAKey = "lilac-app-key"

    /// The workspace service's database (nil when it is not running).
    public var workspaceDatabase: PostgresClient? { databases[ServiceEntry.workspace.name] }
    /// The chat service's database (nil when it is not running).
    public var chatDatabase: PostgresClient? { databases[ServiceEntry.chat.name] }
    /// The payment service's database (nil when it is not running).
    public var paymentDatabase: PostgresClient? { databases[ServiceEntry.payment.name] }
    /// Where chat stores attachments in this stack (nil without chat).
    public var chatFilesDirectory: String? { filesDirectories[ServiceEntry.chat.name] }

    /// A started service: its database and how to build it.
    private struct Backend: Sendable {
        let entry: ServiceEntry
        let database: TestDatabase?
        let make: @Sendable () async throws -> any ApplicationProtocol
    }

    /// Runs `services` (in this order, each on a real port) and the gateway in front, waits until
    /// all are ready, runs `body`, then stops everything and drops the databases.
    /// - Parameter gateway: environment overrides of the gateway.
    public static func run(
        services: [StackService] = [.auth], gateway gatewayOverrides: [String: String] = [:],
        _ body: @escaping @Sendable (Stack) async throws -> Void
    ) async throws {
        // One broker: the stacks test services, not broker failover (KafkaTests and DatabaseTests
        // cover that with three), and many stacks run at once on two cores.
        let cluster = try TestKafka.catalogCluster(brokers: 1)
        let keys = try JWTKeyPEM.newEd25519()
        let logger = TestDatabase.logger
        // As `chatsuite dev` runs them on the embedded broker: a short fetch wait, no compression
        // (the services' default, lz4, runs in the harnesses that start single services).
        let common = [
            "HTTP_PORT": "0", "KAFKA_BROKERS": cluster.bootstrapServers, "LOG_LEVEL": "warning", "KAFKA_FETCH_WAIT_MS": "5", "KAFKA_COMPRESSION": "none",
        ]
        let temporary = FileManager.default.temporaryDirectory

        /// What the catalog says an entry gets (as `chatsuite dev` gives it), then the overrides.
        @Sendable func environment(_ entry: ServiceEntry, database: TestDatabase?, files: String?, _ overrides: [String: String]) -> [String: String] {
            var env = common
            if let database { env["DATABASE_URL"] = database.configuration.url }
            if let files { env[ServiceEntry.environmentVariable(entry.filesDirectorySetting)] = files }
            switch entry.tokenKey {
            case .signing?: env["JWT_PRIVATE_KEY"] = keys.privateKey
            case .verifying?: env["JWT_PUBLIC_KEY"] = keys.publicKey
            case nil: break
            }
            if entry.isEdge { env["SESAC_KEYS"] = "other-key, \(appKey), \(generationAKey)" }
            return env.merging(overrides) { $1 }
        }

        var backends: [Backend] = []
        var filesDirectories: [String: String] = [:]
        for service in services {
            let entry = service.entry
            var database: TestDatabase?
            if let name = entry.database?.name { database = try await TestDatabase.create(prefix: String(name.prefix(4))) }
            let files = entry.storesFiles ? temporary.appendingPathComponent("\(entry.name)-files-\(database?.name ?? UUID().uuidString)").path : nil
            filesDirectories[entry.name] = files
            let settings = ServiceSettings(
                serviceName: entry.name, defaults: service.defaults,
                environment: environment(entry, database: database, files: files, service.environment), arguments: [entry.name]
            )
            backends.append(Backend(entry: entry, database: database) { try await service.build(settings, logger) })
        }
        let started = backends
        let files = filesDirectories
        let failure = Locked<(any Error)?>(nil)

        @Sendable func runGateway(upstreams: [String: String], backends: [any TestClientProtocol]) async throws {
            // Health and metrics are on the gateway's admin listener, not its public port.
            let adminPort = gatewayOverrides["ADMIN_PORT"].flatMap(Int.init) ?? freePortRange(count: 1)
            // `gatewayEnvironment` (for more replicas in a test) leaves it out: theirs derive from their ports.
            let env = environment(.gateway, database: nil, files: nil, upstreams).merging(gatewayOverrides) { $1 }.filter { $0.key != "ADMIN_PORT" }
            let gateway = try await GatewayApp.buildApplication(
                settings: ServiceSettings(
                    serviceName: ServiceEntry.gateway.name, defaults: GatewayService.defaults,
                    environment: env.merging(["ADMIN_PORT": String(adminPort)]) { $1 },
                    arguments: ["gateway"]),
                logger: logger
            )
            try await withClients(started.compactMap { backend in backend.database.map { (backend.entry.name, $0) } }[...], [:]) { databases in
                try await gateway.test(.live) { client in
                    // The body's error is carried out of the stack rather than thrown through it:
                    // a throwing test closure makes HummingbirdTesting cancel the nested live
                    // applications instead of shutting them down gracefully, and a cancelled
                    // service group waits forever on a Postgres lease made after its client
                    // stopped (the hang the last session found). Graceful shutdown first, then
                    // the failure.
                    do {
                        // As `chatsuite dev` does: the body starts once every service is ready,
                        // i.e. its consumers caught up (read models current).
                        try await waitUntilReady(backends)
                        try await waitUntilReady(adminPort: adminPort)
                        let stack = Stack(
                            client: ContractCheckedClient(client), services: Dictionary(uniqueKeysWithValues: zip(started.map(\.entry.name), backends)),
                            keys: keys, cluster: cluster, databases: databases, filesDirectories: files, gatewayEnvironment: env,
                            gatewayAdminPort: adminPort
                        )
                        try await body(stack)
                    } catch {
                        failure.withLock { $0 = error }
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
                let variable = ServiceEntry.environmentVariable(backend.entry.urlSetting)
                try await start(index + 1, upstreams.merging([variable: url]) { $1 }, clients + [client])
            }
        }

        // The files folders go whatever happens: thousands of stacks run per suite run, and CI
        // once ran out of disk space among what earlier runs had left in the temporary folder.
        @Sendable func removeFiles() { for path in files.values { try? FileManager.default.removeItem(atPath: path) } }
        do { try await start(0, [:], []) } catch {
            removeFiles()
            throw error
        }
        removeFiles()
        for backend in started { try await backend.database?.drop() }
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

    /// Polls `/health/ready` on an admin listener (the gateway's) until it answers 200.
    public static func waitUntilReady(adminPort: Int, timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            let response = try? await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(adminPort)/health/ready"), timeout: .seconds(5))
            if response?.status == .ok { return }
            guard ContinuousClock.now < deadline else { throw TimeoutError(what: "gateway admin port \(adminPort) ready: \(response?.status.code ?? 0)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Opens a running client for each database in turn, then calls `body` with all of them.
    private static func withClients(
        _ databases: ArraySlice<(String, TestDatabase)>, _ open: [String: PostgresClient],
        _ body: @escaping @Sendable ([String: PostgresClient]) async throws -> Void
    ) async throws {
        guard let (name, database) = databases.first else { return try await body(open) }
        try await database.withClient { client in
            try await withClients(databases.dropFirst(), open.merging([name: client]) { $1 }, body)
        }
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
    public func request(_ method: HTTPRequest.Method, _ uri: String, token: String? = nil, json: String? = nil, headers: HTTPFields? = nil) async throws
        -> TestResponse
    {
        try await client.execute(uri: uri, method: method, headers: headers ?? self.headers(token: token), body: json.map { ByteBuffer(string: $0) })
    }

    public func form(_ uri: String, _ body: String) async throws -> TestResponse {
        try await client.execute(uri: uri, method: .post, headers: headers(contentType: "application/x-www-form-urlencoded"), body: ByteBuffer(string: body))
    }

    /// Joins a new user and returns its auth result. With workspace running, it also waits until
    /// the workspace service has the user's profile (its `auth.user.v1` projection).
    public func join(
        email: String = "user\(UUID().uuidString.prefix(8))@example.com", password: String = "correct horse 1",
        nickname: String = "새싹이"
    ) async throws -> AuthResultBody {
        let response = try await request(
            .post, "/v1/users/join", json: #"{"email":"\#(email)","password":"\#(password)","nickname":"\#(nickname)","phone":"010-1234-5678"}"#)
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

    /// Waits until chat's read model has `userId` in the workspace (what joining by reading checks).
    public func waitForWorkspaceMemberInChat(_ userId: String, workspace: String) async throws {
        guard let db = chatDatabase, let user = UUID(uuidString: userId), let workspace = UUID(uuidString: workspace) else { return }
        try await eventually("chat sees \(userId) in workspace \(workspace)", timeout: .seconds(30)) {
            for try await _ in try await db.query("SELECT 1 FROM workspace_members WHERE workspace_id = \(workspace) AND user_id = \(user)") {
                return true
            }
            return false
        }
    }

    /// The same for a channel a legacy client names by its integer alias.
    public func waitForChatMember(_ userId: String, channelAlias: Int) async throws {
        guard let db = chatDatabase, let user = UUID(uuidString: userId) else { return }
        try await eventually("chat sees \(userId) in channel \(channelAlias)", timeout: .seconds(30)) {
            for try await _ in try await db.query(
                "SELECT 1 FROM channel_members m JOIN channels c ON c.id = m.channel_id WHERE c.alias = \(Int64(channelAlias)) AND m.user_id = \(user)")
            {
                return true
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
