import ArgumentParser
import Database
import Events
import Foundation
import Kafka
import Logging
import Messaging
import PostgresNIO
import ServiceCatalog

/// What a self-contained service benchmark runs on: an embedded Kafka broker holding the
/// catalog's topics, a fresh database on the given PostgreSQL server, and the built executable of
/// the service under test, started beside this one.
struct BenchBackbone {
    let cluster: EmbeddedKafkaCluster
    let admin: DatabaseConfiguration
    /// The fresh database's name: a constant prefix and a random suffix.
    let database: String
    let logger: Logger

    init(databaseURL: String, prefix: String, logger: Logger) async throws {
        cluster = try EmbeddedKafkaCluster(brokers: 1, logger: logger)
        try cluster.createTopics(Topic.catalog.map(\.specification))
        admin = try DatabaseConfiguration(url: databaseURL)
        database = "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
        self.logger = logger
        let name = database
        try await Self.withClient(admin.with(database: "postgres"), logger) { c in
            _ = try await c.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))  // a constant prefix and a UUID
        }
    }

    var databaseURL: String { admin.with(database: database).url }

    /// Runs `body` with a client of the bench's database.
    func withDatabase(_ body: @escaping @Sendable (PostgresClient) async throws -> Void) async throws {
        try await Self.withClient(admin.with(database: database), logger, body)
    }

    /// Starts the built executable of `service` (beside this one) on `port` with the bench's Kafka
    /// and database plus `environment`, and waits until it is ready; terminate it when done.
    func start(_ service: ServiceEntry, port: Int, environment: [String: String]) async throws -> Process {
        let binDir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let process = Process()
        process.executableURL = binDir.appendingPathComponent(service.name)
        process.environment = ProcessInfo.processInfo.environment.merging(
            ["HTTP_PORT": "\(port)", "KAFKA_BROKERS": cluster.bootstrapServers, "DATABASE_URL": databaseURL, "LOG_LEVEL": "warning"].merging(
                environment
            ) { $1 }
        ) { $1 }
        try process.run()
        let readyBy = ContinuousClock.now + .seconds(120)
        while await !DevService.isReady(port: port) {
            guard ContinuousClock.now < readyBy, process.isRunning else {
                if process.isRunning { process.terminate() }
                throw ValidationError("\(service.name) did not become ready")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        return process
    }

    /// Drops the bench's database (its clients are disconnected).
    func dropDatabase() async throws {
        let name = database
        try await Self.withClient(admin.with(database: "postgres"), logger) { c in
            _ = try await c.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
        }
    }

    static func withClient(_ configuration: DatabaseConfiguration, _ logger: Logger, _ body: @escaping @Sendable (PostgresClient) async throws -> Void)
        async throws
    {
        let client = configuration.makeClient(logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await body(client)
        }
    }
}
