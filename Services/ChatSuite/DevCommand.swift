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
import ServiceCatalog
import ServiceKit

/// `chatsuite dev`: the whole suite on this machine — PostgreSQL (created under the data folder
/// when none is given), the embedded Kafka cluster (1 broker by default, real protocol), one database per
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

    @Option(help: "Gateway port; the other services use the next ports (their catalog offsets).")
    var port: Int = 8080

    /// One by default: each broker of librdkafka's mock is one more connection, thread and fetch
    /// loop in every client, for no durability (docs/benchmarks.md, "The embedded broker").
    @Option(help: "Brokers in librdkafka's mock cluster (--embedded-engine mock, without --brokers); the Swift broker is one.")
    var embeddedBrokers: Int = 1

    @Option(
        help:
            "The embedded Kafka cluster: swift (EmbeddedKafkaBroker, one broker) or mock (librdkafka's mock cluster); default CHATSUITE_EMBEDDED_KAFKA, else swift."
    )
    var embeddedEngine: EmbeddedKafkaEngine = .fromEnvironment

    @Option(help: "\(BootstrapServers.help), of a Kafka to use instead of the embedded cluster (e.g. a `chatsuite broker`).", transform: BootstrapServers.parse)
    var brokers: String?

    @Option(help: "Client app key the gateway accepts (SesacKey header).")
    var sesacKey: String = "dev-key"

    @Option(help: "Log level of the services (trace, debug, info, notice, warning, error).")
    var logLevel: String = "info"

    @Option(help: "Seconds to wait for every service to report ready.")
    var readyTimeout: Int = 120

    @Option(
        help:
            "PortOne REST API base for payment (e.g. a local fake); the key and secret come from PAYMENT_PORTONE_API_KEY / PAYMENT_PORTONE_API_SECRET (unset: pay validation answers E99)."
    )
    var portoneUrl: String?

    func run() async throws {
        let started = ContinuousClock.now
        var logger = Logger(label: "chatsuite.dev")
        logger.logLevel = .info
        let console = ConsoleWriter()
        let binDir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for service in ServiceEntry.all where !FileManager.default.isExecutableFile(atPath: binDir.appendingPathComponent(service.name).path) {
            throw DevError("\(binDir.path)/\(service.name) is missing: build the suite first (swift build)")
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
        if let brokers, !brokers.isEmpty {
            bootstrap = brokers
            console.write("Kafka: \(bootstrap)  postgres: \(admin.with(database: "postgres"))")
        } else {
            let embedded = try EmbeddedKafkaCluster(brokers: embeddedBrokers, engine: embeddedEngine, logger: logger)
            try embedded.createTopics(Topic.catalog.map(\.specification))
            cluster = embedded
            bootstrap = embedded.bootstrapServers
            console.write("embedded Kafka: \(bootstrap)  postgres: \(admin.with(database: "postgres"))")
        }

        // 3. Services
        let (stream, events) = AsyncStream<DevEvent>.makeStream()
        let signals = SignalWatcher(signals: [SIGINT, SIGTERM]) { events.yield(.signal($0)) }
        let colors = [36, 32, 33, 35, 34, 96, 92]
        let files = URL(fileURLWithPath: dataDir).standardizedFileURL.appendingPathComponent("files")
        var services: [DevService] = []
        for (index, service) in ServiceEntry.all.enumerated() {
            var env = ProcessInfo.processInfo.environment
            env["HTTP_HOST"] = "127.0.0.1"
            env["HTTP_PORT"] = String(devPort(service))
            env["KAFKA_BROKERS"] = bootstrap
            // librdkafka's mock holds every fetch for the full wait even when data is there
            // (real Kafka and the Swift broker answer at once), so on it a short wait is what
            // bounds latency. Elsewhere the wait only bounds idle polling: the default stays.
            if env["KAFKA_FETCH_WAIT_MS"] == nil, cluster?.engine == .mock { env["KAFKA_FETCH_WAIT_MS"] = "5" }
            if env["KAFKA_COMPRESSION"] == nil { env["KAFKA_COMPRESSION"] = "none" }
            env["LOG_LEVEL"] = logLevel
            env["INSTANCE_ID"] = "\(service.name)-dev"
            // Every event's `dataschema` names this suite's gateway (GET /v1/schemas/<type>.json).
            if env["EVENTS_SCHEMA_BASE_URL"] == nil { env["EVENTS_SCHEMA_BASE_URL"] = "http://127.0.0.1:\(port)/v1/schemas" }
            env["CHATSUITE_PARENT_PID"] = String(getpid())
            env.removeValue(forKey: "DATABASE_URL")
            if let db = service.database { env["DATABASE_URL"] = admin.with(database: db.devName).url }
            if service.storesFiles {
                env[ServiceEntry.environmentVariable(service.filesDirectorySetting)] = files.appendingPathComponent(service.name).path
            }
            switch service.tokenKey {
            case .signing?: env["JWT_PRIVATE_KEY_FILE"] = keys.privateKey.path
            case .verifying?: env["JWT_PUBLIC_KEY_FILE"] = keys.publicKey.path
            case nil: break
            }
            if service.isEdge {
                env["SESAC_KEYS"] = sesacKey
                for upstream in ServiceEntry.upstreams {
                    env[ServiceEntry.environmentVariable(upstream.urlSetting)] = "http://127.0.0.1:\(devPort(upstream))"
                }
            }
            if service == .payment, let portoneUrl {
                env["PAYMENT_PORTONE_URL"] = portoneUrl
            }
            services.append(
                DevService(
                    name: service.name, executable: binDir.appendingPathComponent(service.name), port: devPort(service),
                    healthPort: service.healthPort(httpPort: devPort(service)),
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
            console.write(
                String(
                    format: "\u{1B}[1mchatsuite is ready in %.1f s — gateway: http://127.0.0.1:%d  SesacKey: %@\u{1B}[0m (Ctrl-C stops everything)", seconds,
                    port, sesacKey))
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
            for db in ServiceEntry.all.compactMap({ $0.database?.devName }) {
                var exists = false
                for try await _ in try await client.query("SELECT 1 FROM pg_database WHERE datname = \(db)") { exists = true }
                if !exists {
                    // The names are the catalog's constants, never input.
                    _ = try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(db)"))
                }
            }
        }
    }

    /// A service's port: the gateway on `--port`, the others at their catalog offset from it.
    private func devPort(_ service: ServiceEntry) -> Int {
        port + service.port - ServiceEntry.gatewayPort
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

extension EmbeddedKafkaEngine: ExpressibleByArgument {}
