import Events
import Kafka
import Logging
import ServiceLifecycle

extension KafkaConsumerMessage {
    /// The CloudEvents `type` of the record: its `ce_type` header, else read from the JSON value.
    public var cloudEventType: String? {
        if let header = header(CloudEventKafkaHeader.type) { return String(decoding: header, as: UTF8.self) }
        return value.flatMap { try? EventCoding.header(from: $0) }?.type
    }
}

extension KafkaConsumer {
    /// Consumes with `configuration`, handing each record to `apply` in order, until graceful
    /// shutdown; then closes the consumer. For readers that apply records one by one (tables,
    /// watchers) and keep no offsets of their own. `started` gets the consumer before the first
    /// record (to ask it for watermarks or its assignment).
    public static func consume(
        _ configuration: KafkaConsumerConfiguration, logger: Logger, started: (KafkaConsumer) -> Void = { _ in },
        _ apply: @escaping @Sendable (KafkaConsumerMessage) -> Void
    ) async throws {
        let consumer = try KafkaConsumer(configuration: configuration, logger: logger)
        started(consumer)
        try await cancelWhenGracefulShutdown {
            for try await message in consumer.messages {
                apply(message)
            }
        }
        await consumer.close()
    }
}
