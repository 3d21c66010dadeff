import Common
import Database
import Events
import Foundation
import Hummingbird
import HummingbirdCore
import Kafka
import Logging
import Messaging
import PostgresNIO
import ServiceLifecycle

/// The pieces every executable shares, built in one place: Kafka (topics checked at start,
/// idempotent producer), optionally PostgreSQL (migrations, outbox relay), consumers that start
/// once the service is ready, health and metrics routes.
///
/// Start order (ServiceGroup): Postgres → producer → relay → consumers → HTTP. Shutdown runs in
/// reverse: HTTP drains, consumers stop (committing), the relay stops, the producer flushes,
/// Postgres closes.
///
/// `/health/ready` turns green only once every Kafka consumer made from `kafkaClient` caught up
/// (check `kafka-consumers`): it has its assignment and processed what its partitions held then,
/// so the read models are current when clients are let in (see `KafkaReadiness`).
public struct ServicePlatform: Sendable {
    public let settings: ServiceSettings
    public let logger: Logger
    public let startup = StartupGate()
    public let kafkaClient: KafkaClientConfiguration
    /// Every consumer made from `kafkaClient` registers here; readiness waits for all to catch up.
    public let kafkaReadiness: KafkaReadiness
    public let producer: KafkaProducer
    public let postgres: PostgresClient?
    public let relay: OutboxRelay?
    private let migrations: [Migration]
    private let database: DatabaseConfiguration?
    private var consumers: [any Service] = []
    private var prunesInbox = false
    private var extraServices: [any Service] = []
    private var extraChecks: [(name: String, check: HealthChecks.Check)] = []

    /// - Parameter migrations: the service's own migrations (versions ≥ 100); pass nil for a
    ///   service without a database. The platform's outbox and inbox tables come first.
    public static func make(settings: ServiceSettings, migrations: [Migration]?, logger: Logger) async throws -> ServicePlatform {
        // Settings first: a malformed value is reported before any slow network check.
        let database = migrations == nil ? nil : try settings.requiredDatabase()
        let brokers = try settings.kafkaBrokers
        _ = try settings.kafkaLingerMilliseconds
        _ = try settings.kafkaFetchWaitMilliseconds
        if migrations != nil {
            // Process-wide; every service of a process reads the same setting.
            Outbox.maxEventBytes = try settings.outboxMaxEventBytes
            _ = try settings.inboxRetention
            _ = try settings.inboxPruneInterval
        }
        var kafkaClient = KafkaClientConfiguration(bootstrapServers: brokers, clientId: settings.instanceId)
        let kafkaReadiness = KafkaReadiness()
        kafkaClient.readiness = kafkaReadiness
        do {
            try await KafkaAdmin.ensureTopics(
                Topic.catalog.map(\.specification), client: kafkaClient, timeout: try settings.kafkaStartupTimeout, logger: logger
            )
        } catch let error as StartupError {
            throw error
        } catch {
            throw StartupError("Kafka at \(brokers) is not usable: \(error)")
        }
        var producerConfiguration = KafkaProducerConfiguration(client: kafkaClient)
        producerConfiguration.lingerMilliseconds = try settings.kafkaLingerMilliseconds
        let producer = try KafkaProducer(configuration: producerConfiguration, logger: logger)
        var postgres: PostgresClient?
        var relay: OutboxRelay?
        if let database {
            let client = database.makeClient(logger: logger)
            postgres = client
            relay = OutboxRelay(postgres: client, producer: producer, logger: logger)
        }
        return ServicePlatform(
            settings: settings, logger: logger, kafkaClient: kafkaClient, kafkaReadiness: kafkaReadiness, producer: producer, postgres: postgres,
            relay: relay, migrations: migrations.map { PlatformMigrations.all + $0 } ?? [], database: database
        )
    }

    private init(
        settings: ServiceSettings, logger: Logger, kafkaClient: KafkaClientConfiguration, kafkaReadiness: KafkaReadiness, producer: KafkaProducer,
        postgres: PostgresClient?, relay: OutboxRelay?, migrations: [Migration], database: DatabaseConfiguration?
    ) {
        self.settings = settings
        self.logger = logger
        self.kafkaClient = kafkaClient
        self.kafkaReadiness = kafkaReadiness
        self.producer = producer
        self.postgres = postgres
        self.relay = relay
        self.migrations = migrations
        self.database = database
    }

    /// Adds a consumer-group consumer whose events are applied through the inbox (needs the
    /// database). It joins the group only once the service is ready. The first one also starts
    /// the inbox pruner (`inbox.retention-hours`, `inbox.prune-interval-seconds`).
    public mutating func addInboxConsumer(group: String, topics: [Topic], router: EventRouter) throws {
        guard let postgres else { throw StartupError("an inbox consumer needs DATABASE_URL") }
        var config = KafkaConsumerConfiguration(client: kafkaClient, mode: .group(id: group, topics: topics.map(\.name)))
        config.client.clientId = "\(settings.instanceId)-\(group)"
        config.fetchWaitMaxMilliseconds = try settings.kafkaFetchWaitMilliseconds
        let logger = self.logger
        let consumerConfig = config
        consumers.append(GatedService(gate: startup, hold: kafkaReadiness.hold(group)) {
            let consumer = try KafkaConsumer(configuration: consumerConfig, logger: logger)
            return InboxEventConsumer(name: group, consumer: consumer, postgres: postgres, router: router, logger: logger)
        })
        if !prunesInbox {
            // One pruner per database, whatever the number of inbox consumers writing to it.
            prunesInbox = true
            var pruning = InboxPruner.Configuration()
            pruning.retention = try settings.inboxRetention
            pruning.interval = try settings.inboxPruneInterval
            let configuration = pruning
            consumers.append(GatedService(gate: startup) { InboxPruner(postgres: postgres, logger: logger, configuration: configuration) })
        }
    }

    /// Adds a service that runs from the start (before HTTP) and stops after HTTP drained,
    /// e.g. an HTTP client to shut down.
    public mutating func addService(_ service: any Service) {
        extraServices.append(service)
    }

    /// Adds any service that should start only once the service is ready. Readiness waits until
    /// `make` ran: a consumer it creates (or announces with `announceForReadiness()`, when the
    /// service creates it later) counts for readiness.
    public mutating func addGatedService(_ make: @escaping @Sendable () throws -> any Service) {
        consumers.append(GatedService(gate: startup, hold: kafkaReadiness.hold("gated service \(consumers.count + 1)"), make: make))
    }

    public mutating func addReadinessCheck(_ name: String, _ check: @escaping HealthChecks.Check) {
        extraChecks.append((name, check))
    }

    /// A router with the suite's middleware (error mapping, metrics) and the health routes.
    public func makeRouter() -> Router<SuiteRequestContext> {
        makeRouter(context: SuiteRequestContext.self)
    }

    public func makeRouter<Context: RequestContext>(context: Context.Type) -> Router<Context> {
        let router = Router(context: Context.self)
        router.middlewares.add(MetricsMiddleware())
        router.middlewares.add(ErrorMiddleware())
        health.addRoutes(to: router)
        return router
    }

    public var health: HealthChecks {
        var checks: [(name: String, check: HealthChecks.Check)] = []
        let producer = self.producer
        checks.append(("kafka", { _ = try await producer.metadata(timeout: .seconds(2)) }))
        if let postgres {
            checks.append(("database", { _ = try await postgres.query("SELECT 1") }))
        }
        let readiness = kafkaReadiness
        checks.append(("kafka-consumers", {
            let pending = readiness.pending
            guard pending.isEmpty else { throw ConsumersNotCaughtUp(pending: pending) }
        }))
        return HealthChecks(startup: startup, checks: checks + extraChecks)
    }

    /// Everything to run beside the HTTP server, in start order.
    public var services: [any Service] {
        var list: [any Service] = []
        if let postgres { list.append(postgres) }
        list.append(producer)
        if let relay { list.append(GatedService(gate: startup) { relay }) }
        list.append(contentsOf: extraServices)
        list.append(ParentWatchdog())
        list.append(contentsOf: consumers)
        return list
    }

    /// Runs before the server accepts requests: waits for the database (bounded), migrates,
    /// then opens the startup gate (consumers start, readiness turns green).
    public func prepare() async throws {
        if let postgres, let database {
            let logger = self.logger
            do {
                try await withTimeout(try settings.databaseStartupTimeout, "connecting to \(database)") {
                    _ = try await postgres.query("SELECT 1", logger: logger)
                }
            } catch {
                throw StartupError("database \(database) is not reachable: \(describe(error))")
            }
            let applied = try await Migrator(migrations).migrate(client: postgres, logger: logger)
            if !applied.isEmpty { logger.info("migrations applied", metadata: ["db.versions": "\(applied)"]) }
        }
        startup.open()
    }

    /// The Hummingbird application with the platform's services and startup step.
    /// - Parameter server: the HTTP server's channel (e.g. HTTP/1 with WebSocket upgrades).
    public func makeApplication<Responder: HTTPResponder>(responder: Responder, server: HTTPServerBuilder = .http1()) throws -> Application<Responder>
    where Responder.Context: InitializableFromSource<ApplicationRequestContextSource> {
        let configuration = ApplicationConfiguration(address: .hostname(try settings.httpHost, port: try settings.httpPort), serverName: nil)
        var app = Application(
            responder: responder,
            server: server,
            configuration: configuration,
            services: services,
            logger: logger
        )
        app.beforeServerStarts { try await self.prepare() }
        return app
    }
}

/// A service built and run only after the startup gate opens; gives up quietly on shutdown.
/// Its readiness hold (if any) is released once it was built (its consumers exist or are announced).
struct GatedService: Service {
    let gate: StartupGate
    var hold: KafkaReadiness.Hold? = nil
    let make: @Sendable () throws -> any Service

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown { try await gate.waitUnlessCancelled() }
        } catch {
            return  // shut down before the service was ready
        }
        guard !Task.isCancelled else { return }
        let service = try make()
        hold?.release()
        try await service.run()
    }
}

/// Readiness: consumers that have no assignment yet or have not processed their backlog.
struct ConsumersNotCaughtUp: Error, CustomStringConvertible {
    let pending: [String]
    var description: String { "not caught up: " + pending.joined(separator: "; ") }
}

/// Exits the process (gracefully, via SIGTERM to itself, forced after 10 s) when the launcher
/// that started it is gone, so a crashed or killed `chatsuite dev` never leaves services behind.
struct ParentWatchdog: Service {
    func run() async throws {
        guard let value = ProcessInfo.processInfo.environment["CHATSUITE_PARENT_PID"], let parent = Int32(value) else {
            try? await gracefulShutdown()
            return
        }
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                if getppid() != parent {
                    // The launcher is gone, and so is the reader of our log pipe: a full pipe
                    // would block every log call (and with it shutdown). Log to /dev/null, shut
                    // down gracefully, and exit regardless after a grace period.
                    let devNull = open("/dev/null", O_WRONLY)
                    if devNull >= 0 {
                        dup2(devNull, STDOUT_FILENO)
                        dup2(devNull, STDERR_FILENO)
                    }
                    Thread.detachNewThread {
                        sleep(10)
                        _exit(1)
                    }
                    kill(getpid(), SIGTERM)
                    return
                }
                try await Task.sleep(for: .milliseconds(500))
            }
        }
    }
}

/// One line describing an error for operators (PostgresNIO hides details from `description`).
public func describe(_ error: any Error) -> String {
    let text: String
    switch error {
    case let error as PSQLError:
        if let underlying = error.underlying { text = "\(underlying)" } else { text = "\(error.code)" }
    case let error as StartupError: text = error.description
    default: text = "\(error)"
    }
    return text.split(whereSeparator: \.isNewline).joined(separator: " ")
}
