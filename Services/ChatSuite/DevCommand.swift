import ArgumentParser
import AsyncHTTPClient
import Database
import Events
import Foundation
import Kafka
import Logging
import Messaging
import NIOHTTP1
import PostgresNIO
import ServiceKit

/// `chatsuite dev`: the whole suite on this machine — PostgreSQL (created under the data folder
/// when none is given), the embedded Kafka cluster (3 brokers, real protocol), one database per
/// service, all seven executables; waits until every one is ready; restarts a service that
/// crashes (`DevSupervisor`); Ctrl-C stops everything.
struct DevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "dev", abstract: "Run the whole suite locally on the embedded defaults.")

    @Option(help: "Folder for the local PostgreSQL cluster and its password (ignored by git).")
    var dataDir: String = ".devdata"

    @Option(help: "Admin URL of an existing PostgreSQL server to use instead of a local one (secret).")
    var databaseUrl: String?

    @Option(help: "Port of the local PostgreSQL server the launcher creates.")
    var postgresPort: Int = 54329

    @Option(help: "Gateway port; the services use the next six ports.")
    var port: Int = 8080

    @Option(help: "Brokers in the embedded Kafka cluster.")
    var brokers: Int = 3

    @Option(help: "Bootstrap servers of a Kafka to use instead of the embedded cluster (e.g. a `chatsuite broker`).")
    var kafkaBrokers: String?

    @Option(help: "Client app key the gateway accepts (SesacKey header).")
    var sesacKey: String = "dev-key"

    @Option(help: "Log level of the services (trace, debug, info, notice, warning, error).")
    var logLevel: String = "info"

    @Option(help: "Seconds to wait for every service to report ready.")
    var readyTimeout: Int = 120

    @Option(help: "PortOne REST API base for payment (e.g. a local fake); the key and secret come from PAYMENT_PORTONE_API_KEY / PAYMENT_PORTONE_API_SECRET (unset: pay validation answers E99).")
    var portoneUrl: String?

    static let services: [(name: String, database: String?)] = [
        ("gateway", nil), ("auth", "chatsuite_auth"), ("workspace", "chatsuite_workspace"), ("chat", "chatsuite_chat"),
        ("chat-fanout", nil), ("presence", nil), ("payment", "chatsuite_payment"),
    ]

    func run() async throws {
        let started = ContinuousClock.now
        var logger = Logger(label: "chatsuite.dev")
        logger.logLevel = .info
        let console = ConsoleWriter()
        let binDir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for (name, _) in Self.services where !FileManager.default.isExecutableFile(atPath: binDir.appendingPathComponent(name).path) {
            throw DevError("\(binDir.path)/\(name) is missing: build the suite first (swift build)")
        }

        // 1. PostgreSQL
        var localPostgres: DevPostgres?
        let adminURL: String
        if let databaseUrl = databaseUrl ?? ProcessInfo.processInfo.environment["DATABASE_URL"], !databaseUrl.isEmpty {
            adminURL = databaseUrl
        } else {
            let root = URL(fileURLWithPath: dataDir, isDirectory: true).standardizedFileURL
            var pg = try DevPostgres.prepare(root: root, preferredPort: postgresPort, logger: logger)
            try pg.start(logger: logger)
            localPostgres = pg
            adminURL = pg.url
        }
        defer { localPostgres?.stop() }
        let admin = try DatabaseConfiguration(url: adminURL)
        try await createDatabases(admin: admin, logger: logger)

        // Token keys: auth signs, the gateway verifies (one pair per data folder).
        let keys = try JWTKeyFiles.ensure(in: URL(fileURLWithPath: dataDir, isDirectory: true).standardizedFileURL)

        // 2. Kafka
        var cluster: EmbeddedKafkaCluster?
        let bootstrap: String
        if let kafkaBrokers, !kafkaBrokers.isEmpty {
            bootstrap = kafkaBrokers
            console.write("Kafka: \(bootstrap)  postgres: \(admin.with(database: "postgres"))")
        } else {
            let embedded = try EmbeddedKafkaCluster(brokers: brokers, logger: logger)
            try embedded.createTopics(Topic.catalog.map(\.specification))
            cluster = embedded
            bootstrap = embedded.bootstrapServers
            console.write("embedded Kafka: \(bootstrap)  postgres: \(admin.with(database: "postgres"))")
        }

        // 3. Services
        let (stream, events) = AsyncStream<DevEvent>.makeStream()
        let signals = SignalWatcher(signals: [SIGINT, SIGTERM]) { events.yield(.signal($0)) }
        let colors = [36, 32, 33, 35, 34, 96, 92]
        let gatewayURLs = Dictionary(uniqueKeysWithValues: Self.services.enumerated().map { ($0.element.name, "http://127.0.0.1:\(port + $0.offset)") })
        var services: [DevService] = []
        for (index, service) in Self.services.enumerated() {
            var env = ProcessInfo.processInfo.environment
            env["HTTP_HOST"] = "127.0.0.1"
            env["HTTP_PORT"] = String(port + index)
            env["KAFKA_BROKERS"] = bootstrap
            // The mock broker holds every fetch for the full wait even when data is there
            // (real Kafka answers at once), so a short wait is what bounds latency here.
            if env["KAFKA_FETCH_WAIT_MS"] == nil { env["KAFKA_FETCH_WAIT_MS"] = "5" }
            env["LOG_LEVEL"] = logLevel
            env["INSTANCE_ID"] = "\(service.name)-dev"
            env["CHATSUITE_PARENT_PID"] = String(getpid())
            env.removeValue(forKey: "DATABASE_URL")
            if let db = service.database { env["DATABASE_URL"] = admin.with(database: db).url }
            if service.name == "auth" {
                env["JWT_PRIVATE_KEY_FILE"] = keys.privateKey.path
                env["AUTH_FILES_DIRECTORY"] = URL(fileURLWithPath: dataDir).standardizedFileURL.appendingPathComponent("files/auth").path
            }
            if service.name == "chat" {
                env["CHAT_FILES_DIRECTORY"] = URL(fileURLWithPath: dataDir).standardizedFileURL.appendingPathComponent("files/chat").path
            }
            if service.name == "workspace" {
                env["WORKSPACE_FILES_DIRECTORY"] = URL(fileURLWithPath: dataDir).standardizedFileURL.appendingPathComponent("files/workspace").path
            }
            if service.name == "payment", let portoneUrl {
                env["PAYMENT_PORTONE_URL"] = portoneUrl
            }
            if service.name == "gateway" {
                env["JWT_PUBLIC_KEY_FILE"] = keys.publicKey.path
                env["SESAC_KEYS"] = sesacKey
                for (name, url) in gatewayURLs where name != "gateway" {
                    env["\(name.uppercased().replacingOccurrences(of: "-", with: "_"))_URL"] = url
                }
            }
            services.append(DevService(
                name: service.name, executable: binDir.appendingPathComponent(service.name), port: port + index,
                environment: env, color: colors[index % colors.count]
            ))
        }
        var supervisor = DevSupervisor(services: services, console: console, events: events, readyTimeout: .seconds(readyTimeout))
        do {
            try supervisor.startAll()
        } catch {
            await supervisor.stopAll()
            throw error
        }
        console.write("started: " + supervisor.running.map { "\($0.name) (pid \($0.pid))" }.joined(separator: ", "))

        // 4. Wait until ready; supervise (restarts) until Ctrl-C or a failure.
        let readiness = Task { await waitUntilReady(services, events: events) }
        let failure = await supervisor.supervise(stream) {
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            console.write(String(format: "\u{1B}[1mchatsuite is ready in %.1f s — gateway: http://127.0.0.1:%d  SesacKey: %@\u{1B}[0m (Ctrl-C stops everything)", seconds, port, sesacKey))
        }
        readiness.cancel()
        signals.cancel()

        // 5. Stop everything: SIGTERM, grace period, then SIGKILL (nothing is restarted any more).
        console.write("stopping…")
        await supervisor.stopAll()
        withExtendedLifetime(cluster) {}
        if let failure {
            throw DevError(failure)
        }
        console.write("stopped")
    }

    private func createDatabases(admin: DatabaseConfiguration, logger: Logger) async throws {
        let client = admin.with(database: "postgres").makeClient(logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            for case let (_, db?) in Self.services {
                var exists = false
                for try await _ in try await client.query("SELECT 1 FROM pg_database WHERE datname = \(db)") { exists = true }
                if !exists {
                    // The names are the constants above, never input.
                    _ = try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(db)"))
                }
            }
        }
    }

    /// Reports each service as it answers `/health/ready`, then all ready, or the ones that were
    /// not ready within `--ready-timeout`.
    private func waitUntilReady(_ services: [DevService], events: AsyncStream<DevEvent>.Continuation) async {
        let timeout = Duration.seconds(readyTimeout)
        let late = await withTaskGroup(of: String?.self) { group in
            for service in services {
                group.addTask {
                    guard await service.waitUntilReady(timeout: timeout) else { return service.name }
                    events.yield(.ready(name: service.name))
                    return nil
                }
            }
            var late: [String] = []
            for await name in group { if let name { late.append(name) } }
            return late
        }
        guard !Task.isCancelled else { return }
        events.yield(late.isEmpty ? .allReady : .notReady("not ready after \(readyTimeout) s: \(late.sorted().joined(separator: ", "))"))
    }
}

/// Delivers SIGINT/SIGTERM to a handler instead of terminating the process.
final class SignalWatcher {
    private let sources: [any DispatchSourceSignal]

    init(signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) {
        sources = signals.map { sig in
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { handler(sig) }
            source.resume()
            return source
        }
    }

    func cancel() {
        sources.forEach { $0.cancel() }
    }
}
