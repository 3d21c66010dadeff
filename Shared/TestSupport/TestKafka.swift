import Common
import Events
import ServiceKit
import Foundation
import Kafka
import Logging
import Messaging

/// Helpers for tests that talk real Kafka protocol to an in-process embedded cluster.
public enum TestKafka {
    public static let logger: Logger = {
        var l = Logger(label: "test.kafka")
        l.logLevel = ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        return l
    }()

    /// A fresh embedded cluster: `CHATSUITE_EMBEDDED_KAFKA`'s engine (the Swift broker unless set)
    /// unless one is named; `brokers` is the mock's broker count.
    public static func cluster(brokers: Int = 3, engine: EmbeddedKafkaEngine = .fromEnvironment) throws -> EmbeddedKafkaCluster {
        try EmbeddedKafkaCluster(brokers: brokers, engine: engine, logger: logger)
    }

    /// A fresh cluster holding the suite's topic catalog, as `chatsuite dev` hosts it.
    public static func catalogCluster(brokers: Int = 3) throws -> EmbeddedKafkaCluster {
        let cluster = try self.cluster(brokers: brokers)
        try cluster.createTopics(Topic.catalog.map(\.specification))
        return cluster
    }

    /// A unique topic name so tests sharing a cluster never see each other's records.
    public static func uniqueTopic(_ prefix: String = "test") -> String {
        "\(prefix).\(UUID().uuidString.prefix(8).lowercased())"
    }

    public static func producer(_ cluster: EmbeddedKafkaCluster, configure: (inout KafkaProducerConfiguration) -> Void = { _ in }) throws -> KafkaProducer {
        var config = KafkaProducerConfiguration(client: KafkaClientConfiguration(bootstrapServers: cluster.bootstrapServers, clientId: "test-producer"))
        configure(&config)
        return try KafkaProducer(configuration: config, logger: logger)
    }

    public static func groupConsumer(
        _ cluster: EmbeddedKafkaCluster, group: String, topics: [String], clientId: String = "test-consumer",
        configure: (inout KafkaConsumerConfiguration) -> Void = { _ in }
    ) throws -> KafkaConsumer {
        var config = KafkaConsumerConfiguration(
            client: KafkaClientConfiguration(bootstrapServers: cluster.bootstrapServers, clientId: clientId),
            mode: .group(id: group, topics: topics)
        )
        config.sessionTimeoutMilliseconds = 6_000
        if let debug = ProcessInfo.processInfo.environment["TEST_RDKAFKA_DEBUG"] { config.properties["debug"] = debug }
        configure(&config)
        return try KafkaConsumer(configuration: config, logger: logger)
    }
}
