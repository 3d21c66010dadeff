import Database
import Foundation
import Kafka

/// The platform's settings, read and validated once when the platform is made (each key is
/// described on its `ServiceSettings` getter and in docs/configuration.md).
public struct PlatformSettings: Sendable {
    public var httpHost: String
    public var httpPort: Int
    /// A stable id for this replica (consumer client ids, gateway ids).
    public var instanceId: String
    /// Comma-separated bootstrap servers.
    public var kafkaBrokers: String
    public var kafkaLingerMilliseconds: Double
    /// The producers' compression codec.
    public var kafkaCompression: String
    public var kafkaFetchWaitMilliseconds: Int
    /// chat-fanout's message consumer and the gateway's delivery consumer.
    public var kafkaDeliveryFetchWaitMilliseconds: Int
    public var kafkaDeliveryFetchMinBytes: Int
    public var kafkaDeliveryFetchBatchMilliseconds: Int
    /// The gateway's delivery consumer: `KafkaPartitionReader` (true) or librdkafka.
    public var kafkaDeliveryReaderIsNative: Bool
    /// chat-fanout's delivery producer: `KafkaRecordWriter` (true) or librdkafka.
    public var kafkaDeliveryWriterIsNative: Bool
    /// chat-fanout's message consumer: its poll thread fetching itself (true) or librdkafka.
    public var kafkaFanoutReaderIsNative: Bool
    /// The inbox consumers: their poll threads fetching themselves (true) or librdkafka.
    public var kafkaInboxReaderIsNative: Bool
    public var kafkaStartupTimeout: Duration
    /// TLS / SASL towards the brokers. Holds the SASL password: log its `description` only.
    public var kafkaSecurity: KafkaSecurity
    /// `events.schema-base-url`: the base of every event's `dataschema`.
    public var eventsSchemaBaseURL: String
    /// `memory.trim-interval-seconds` (nil: 0, never).
    public var memoryTrimInterval: Duration?
    /// `memory.trim-after-growth-mib` in bytes (nil: 0, no burst watch).
    public var memoryTrimAfterGrowthBytes: Int?

    /// Throws `StartupError` naming the first malformed key.
    public init(_ settings: ServiceSettings) throws {
        kafkaBrokers = try settings.kafkaBrokers
        kafkaLingerMilliseconds = try settings.kafkaLingerMilliseconds
        kafkaCompression = try settings.kafkaCompression
        kafkaFetchWaitMilliseconds = try settings.kafkaFetchWaitMilliseconds
        kafkaDeliveryFetchWaitMilliseconds = try settings.kafkaDeliveryFetchWaitMilliseconds
        kafkaDeliveryFetchMinBytes = try settings.kafkaDeliveryFetchMinBytes
        kafkaDeliveryFetchBatchMilliseconds = try settings.kafkaDeliveryFetchBatchMilliseconds
        kafkaDeliveryReaderIsNative = try settings.kafkaDeliveryReaderIsNative
        kafkaDeliveryWriterIsNative = try settings.kafkaDeliveryWriterIsNative
        kafkaFanoutReaderIsNative = try settings.kafkaFanoutReaderIsNative
        kafkaInboxReaderIsNative = try settings.kafkaInboxReaderIsNative
        kafkaStartupTimeout = try settings.kafkaStartupTimeout
        kafkaSecurity = try settings.kafkaSecurity
        httpHost = try settings.httpHost
        httpPort = try settings.httpPort
        instanceId = settings.instanceId
        eventsSchemaBaseURL = try settings.eventsSchemaBaseURL
        memoryTrimInterval = try settings.memoryTrimInterval
        memoryTrimAfterGrowthBytes = try settings.memoryTrimAfterGrowthBytes
    }
}

/// The settings of a service's own database: where it is, and how the outbox and inbox behave.
public struct DatabaseSettings: Sendable {
    public var database: DatabaseConfiguration
    public var startupTimeout: Duration
    public var outboxMaxEventBytes: Int
    public var inboxRetention: Duration
    public var inboxPruneInterval: Duration

    /// Throws `StartupError` when `DATABASE_URL` is missing or a key is malformed.
    public init(_ settings: ServiceSettings) throws {
        database = try settings.requiredDatabase()
        startupTimeout = try settings.databaseStartupTimeout
        outboxMaxEventBytes = try settings.outboxMaxEventBytes
        inboxRetention = try settings.inboxRetention
        inboxPruneInterval = try settings.inboxPruneInterval
    }
}
