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
/// idempotent producer), consumers that start once the service is ready, health and metrics
/// routes, and — for a `ServicePlatform<ServiceDatabase>` — PostgreSQL (migrations, outbox
/// relay, inbox consumers).
///
/// Whether a service has a database is its type: `ServicePlatform.make(settings:logger:)` gives a
/// `ServicePlatform<NoDatabase>` (gateway, chat-fanout, presence);
/// `ServicePlatform.make(settings:migrations:logger:)` a `ServicePlatform<ServiceDatabase>`, whose
/// `postgres` and `relay` always exist.
///
/// Start order (ServiceGroup): Postgres → producer → relay → consumers → HTTP. Shutdown runs in
/// reverse: HTTP drains, consumers stop (committing), the relay stops, the producer flushes,
/// Postgres closes.
///
/// `/health/ready` turns green only once every Kafka consumer made from `kafkaClient` caught up
/// (check `kafka-consumers`): it has its assignment and processed what its partitions held then,
/// so the read models are current when clients are let in (see `KafkaReadiness`).
public struct ServicePlatform<Storage: Sendable>: Sendable {
    /// The service's settings, for the keys of its own (the platform's are in `platformSettings`).
    public let settings: ServiceSettings
    public let platformSettings: PlatformSettings
    public let logger: Logger
    public let startup: StartupGate
    public let kafkaClient: KafkaClientConfiguration
    /// Every consumer made from `kafkaClient` registers here; readiness waits for all to catch up.
    public let kafkaReadiness: KafkaReadiness
    public let producer: KafkaProducer
    /// `NoDatabase`, or the service's `ServiceDatabase`.
    public let storage: Storage
    private let storageParts: StorageParts
    private var consumers: [any Service] = []
    private var extraServices: [any Service] = []
    /// The OpenTelemetry exporters, if this process's bootstrap made any (the first platform of
    /// the process runs them).
    private let exporters = Observability.takeBackgroundServices()
    private var extraChecks: [(name: String, check: HealthChecks.Check)] = []
    /// Whether the inbox pruner was added (by the first inbox consumer).
    private var prunesInbox = false

    /// What the storage adds to the platform, so that the rest of it needs no knowledge of `Storage`.
    fileprivate struct StorageParts: Sendable {
        /// Started before the producer (the database client).
        var first: [any Service] = []
        /// Started after the producer (the relay).
        var afterProducer: [any Service] = []
        var checks: [(name: String, check: HealthChecks.Check)] = []
        /// Runs before the startup gate opens (connect, migrate).
        var prepare: @Sendable () async throws -> Void = {}
    }

    /// The Kafka side every platform has.
    fileprivate struct KafkaParts {
        let client: KafkaClientConfiguration
        let readiness: KafkaReadiness
        let producer: KafkaProducer
    }

    fileprivate init(
        settings: ServiceSettings, platformSettings: PlatformSettings, logger: Logger, startup: StartupGate, kafka: KafkaParts, storage: Storage,
        storageParts: StorageParts
    ) {
        self.settings = settings
        self.platformSettings = platformSettings
        self.logger = logger
        self.startup = startup
        self.kafkaClient = kafka.client
        self.kafkaReadiness = kafka.readiness
        self.producer = kafka.producer
        self.storage = storage
        self.storageParts = storageParts
    }

    /// Checks (and creates) the catalog's topics, then makes the producer.
    fileprivate static func connectKafka(_ platform: PlatformSettings, logger: Logger) async throws -> KafkaParts {
        var client = KafkaClientConfiguration(bootstrapServers: platform.kafkaBrokers, clientId: platform.instanceId)
        client.security = platform.kafkaSecurity
        let readiness = KafkaReadiness()
        client.readiness = readiness
        do {
            try await KafkaAdmin.ensureTopics(Topic.catalog.map(\.specification), client: client, timeout: platform.kafkaStartupTimeout, logger: logger)
        } catch let error as StartupError {
            throw error
        } catch {
            // TLS / SASL named too (never the password): a wrong mechanism looks like an outage.
            let security = platform.kafkaSecurity == .plaintext ? "" : " (\(platform.kafkaSecurity))"
            throw StartupError("Kafka at \(platform.kafkaBrokers)\(security) is not usable: \(error)")
        }
        var producerConfiguration = KafkaProducerConfiguration(client: client)
        producerConfiguration.lingerMilliseconds = platform.kafkaLingerMilliseconds
        producerConfiguration.compression = platform.kafkaCompression
        let producer = try KafkaProducer(configuration: producerConfiguration, logger: logger)
        return KafkaParts(client: client, readiness: readiness, producer: producer)
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

    /// A service's router: the suite's middleware (error mapping, metrics, the forwarded
    /// identity), the health routes and `GET /routes` (what the service registered:
    /// `ServiceRouter`). Services are reached only through the gateway, which forwards `/v1/...`.
    public func makeRouter() -> ServiceRouter<SuiteRequestContext> {
        let router = makeRouter(context: SuiteRequestContext.self)
        router.addRouteListing()
        return router.add(middleware: ForwardedIdentityMiddleware())
    }

    /// - Parameter routeLabel: the `route` label of the request metrics (default: the router's
    ///   matched path pattern).
    public func makeRouter<Context: RequestContext>(
        context: Context.Type, routeLabel: RequestMetricsMiddleware<Context>.RouteLabel? = nil
    ) -> ServiceRouter<Context> {
        let router = Router(context: Context.self)
        // A server span per request, continuing the caller's `traceparent` (no-op without tracing).
        router.middlewares.add(RequestTracingMiddleware())
        router.middlewares.add(RequestMetricsMiddleware(routeLabel: routeLabel))
        router.middlewares.add(ErrorMiddleware())
        health.addRoutes(to: router)
        return ServiceRouter(router)
    }

    /// The router of a service whose own port is public (the gateway): health and metrics are
    /// not served there but on the admin listener (`admin.host`, `admin.port`), which this adds
    /// to the platform's services.
    public mutating func makePublicRouter<Context: RequestContext>(
        context: Context.Type, routeLabel: RequestMetricsMiddleware<Context>.RouteLabel? = nil
    ) throws -> ServiceRouter<Context> {
        let admin = try AdminServer(host: settings.adminHost, port: settings.adminPort, health: health, logger: logger)
        addService(admin)
        let router = Router(context: Context.self)
        // A server span per request, continuing the caller's `traceparent` (no-op without tracing).
        router.middlewares.add(RequestTracingMiddleware())
        router.middlewares.add(RequestMetricsMiddleware(routeLabel: routeLabel))
        router.middlewares.add(ErrorMiddleware())
        return ServiceRouter(router)
    }

    public var health: HealthChecks {
        var checks: [(name: String, check: HealthChecks.Check)] = []
        let producer = self.producer
        checks.append(("kafka", { _ = try await producer.metadata(timeout: .seconds(2)) }))
        checks.append(contentsOf: storageParts.checks)
        let readiness = kafkaReadiness
        checks.append(
            (
                "kafka-consumers",
                {
                    let pending = readiness.pending
                    guard pending.isEmpty else { throw ConsumersNotCaughtUp(pending: pending) }
                }
            ))
        return HealthChecks(startup: startup, checks: checks + extraChecks)
    }

    /// Everything to run beside the HTTP server, in start order.
    /// Each reports by name when it is slow to stop (`StopWatch`).
    public var services: [any Service] {
        (exporters + storageParts.first + [producer] + storageParts.afterProducer + extraServices
            + [
                ParentWatchdog(),
                MemoryTrim(
                    interval: platformSettings.memoryTrimInterval, afterGrowthBytes: platformSettings.memoryTrimAfterGrowthBytes, logger: logger),
            ] + consumers)
            .map { StopWatch($0, logger: logger) }
    }

    /// Runs before the server accepts requests: waits for the database (bounded) and migrates it,
    /// if there is one, then opens the startup gate (consumers start, readiness turns green).
    public func prepare() async throws {
        try await storageParts.prepare()
        startup.open()
    }

    /// The Hummingbird application with the platform's services and startup step.
    /// - Parameter server: the HTTP server's channel (e.g. HTTP/1 with WebSocket upgrades).
    public func makeApplication<Responder: HTTPResponder>(responder: Responder, server: HTTPServerBuilder = .http1()) -> Application<Responder>
    where Responder.Context: InitializableFromSource<ApplicationRequestContextSource> {
        let configuration = ApplicationConfiguration(address: .hostname(platformSettings.httpHost, port: platformSettings.httpPort), serverName: nil)
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

/// The storage of a service without a database of its own (gateway, chat-fanout, presence).
public struct NoDatabase: Sendable {}

extension ServicePlatform where Storage == NoDatabase {
    /// The platform of a service without a database.
    public static func make(settings: ServiceSettings, logger: Logger) async throws -> Self {
        // Settings first: a malformed value is reported before any slow network check.
        let platformSettings = try PlatformSettings(settings)
        // Process-wide, before any event is made; every service of a process reads the same setting.
        EventSchemaLocation.baseURL = platformSettings.eventsSchemaBaseURL
        let kafka = try await connectKafka(platformSettings, logger: logger)
        return ServicePlatform(
            settings: settings, platformSettings: platformSettings, logger: logger, startup: StartupGate(), kafka: kafka, storage: NoDatabase(),
            storageParts: StorageParts()
        )
    }
}

/// A service's own PostgreSQL database: the client and the relay publishing its outbox.
public struct ServiceDatabase: Sendable {
    public let postgres: PostgresClient
    public let relay: OutboxRelay
    public let settings: DatabaseSettings
}

extension ServicePlatform where Storage == ServiceDatabase {
    /// The platform of a service with a database (`DATABASE_URL`, required).
    /// - Parameter migrations: the service's own migrations (versions ≥ 100). The platform's
    ///   outbox and inbox tables come first.
    public static func make(settings: ServiceSettings, migrations: [Migration], logger: Logger) async throws -> Self {
        // Settings first: a malformed value is reported before any slow network check.
        let databaseSettings = try DatabaseSettings(settings)
        let platformSettings = try PlatformSettings(settings)
        // Process-wide; every service of a process reads the same setting.
        Outbox.maxEventBytes = databaseSettings.outboxMaxEventBytes
        EventSchemaLocation.baseURL = platformSettings.eventsSchemaBaseURL
        let kafka = try await connectKafka(platformSettings, logger: logger)
        let database = databaseSettings.database
        let postgres = database.makeClient(logger: logger)
        let relay = OutboxRelay(postgres: postgres, producer: kafka.producer, logger: logger)
        let startup = StartupGate()
        let migrations = PlatformMigrations.all + migrations
        let parts = StorageParts(
            first: [postgres],
            afterProducer: [GatedService(gate: startup) { relay }],
            checks: [("database", { _ = try await postgres.liveQuery("SELECT 1", logger: logger) })],
            prepare: {
                do {
                    try await withTimeout(databaseSettings.startupTimeout, "connecting to \(database)") {
                        _ = try await postgres.liveQuery("SELECT 1", logger: logger)
                    }
                } catch {
                    throw StartupError("database \(database) is not reachable: \(describe(error))")
                }
                let applied = try await Migrator(migrations).migrate(client: postgres, logger: logger)
                if !applied.isEmpty { logger.info("migrations applied", metadata: ["db.versions": "\(applied)"]) }
            }
        )
        return ServicePlatform(
            settings: settings, platformSettings: platformSettings, logger: logger, startup: startup, kafka: kafka,
            storage: ServiceDatabase(postgres: postgres, relay: relay, settings: databaseSettings), storageParts: parts
        )
    }

    public var postgres: PostgresClient { storage.postgres }
    public var relay: OutboxRelay { storage.relay }

    /// Adds a consumer-group consumer whose events are applied through the inbox. It joins the
    /// group only once the service is ready. The first one also starts the inbox pruner
    /// (`inbox.retention-hours`, `inbox.prune-interval-seconds`).
    /// - Parameter batchLingerMilliseconds: how long a batch may wait for more records after its
    ///   first, for a router with batch handlers (`KafkaConsumerConfiguration.withInboxLinger`).
    public mutating func addInboxConsumer(group: String, topics: [Topic], router: EventRouter, batchLingerMilliseconds: Int = 0) {
        var config = KafkaConsumerConfiguration(client: kafkaClient, mode: .group(id: group, topics: topics.map(\.name)))
        config.client.clientId = "\(platformSettings.instanceId)-\(group)"
        config.fetchWaitMaxMilliseconds = platformSettings.kafkaFetchWaitMilliseconds
        let logger = self.logger
        let postgres = self.postgres
        let fetchesItself = platformSettings.kafkaInboxReaderIsNative
        let consumerConfig = config.withInboxLinger(milliseconds: batchLingerMilliseconds, fetchesItself: fetchesItself)
        consumers.append(
            GatedService(gate: startup, hold: kafkaReadiness.hold(group)) {
                let consumer = try KafkaConsumer(configuration: consumerConfig, logger: logger)
                return InboxEventConsumer(
                    name: group, consumer: consumer, postgres: postgres, router: router, logger: logger, fetchesItself: fetchesItself)
            })
        if !prunesInbox {
            // One pruner per database, whatever the number of inbox consumers writing to it.
            prunesInbox = true
            var pruning = InboxPruner.Configuration()
            pruning.retention = storage.settings.inboxRetention
            pruning.interval = storage.settings.inboxPruneInterval
            let configuration = pruning
            consumers.append(GatedService(gate: startup) { InboxPruner(postgres: postgres, logger: logger, configuration: configuration) })
        }
    }
}

extension KafkaConsumerConfiguration {
    /// This configuration with a linger of `lingerMilliseconds`: how long a batch may wait for more records
    /// after its first. When the consumer fetches itself (`kafka.inbox-reader` native, and a
    /// configuration `KafkaConsumer.canFetchItself` takes), the broker gathers the batch: under load
    /// a fetch waits that long for more (`fetchBatchWaitMilliseconds`), so a consumer sees one answer
    /// and one wake-up per linger instead of one per record, and a record waits no longer than with
    /// the linger (a lone record after a quiet spell is answered at once). librdkafka's consumer
    /// ignores that setting, so it keeps the linger (`batchLingerMilliseconds`): the records are
    /// fetched one by one and held in the process.
    public func withInboxLinger(milliseconds lingerMilliseconds: Int, fetchesItself: Bool) -> KafkaConsumerConfiguration {
        var config = self
        if lingerMilliseconds > 0, fetchesItself, KafkaConsumer.canFetchItself(config) {
            config.fetchBatchWaitMilliseconds = lingerMilliseconds
        } else {
            config.batchLingerMilliseconds = lingerMilliseconds
        }
        return config
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
