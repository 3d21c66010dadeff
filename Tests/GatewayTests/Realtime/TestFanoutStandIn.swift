import Common
import Events
import Foundation
import Kafka
import TestSupport

/// Plays chat-fanout for these tests (the real tier is built separately): forwards every
/// `chat.message.v1` record, value and headers unchanged, to the gateway's delivery partition
/// keyed by the gateway id — the delivery contract of `gateway.delivery.v1`. `redeliverAll()`
/// forces a redelivery of everything forwarded so far, as Kafka's at-least-once may.
final class TestFanoutStandIn: Sendable {
    let gatewayId: String
    private let producer: KafkaProducer
    private let forwarded = Locked<[KafkaProducerMessage]>([])

    private init(gatewayId: String, producer: KafkaProducer) {
        self.gatewayId = gatewayId
        self.producer = producer
    }

    static func run<T: Sendable>(
        cluster: EmbeddedKafkaCluster, gatewayId: String, _ body: @escaping @Sendable (TestFanoutStandIn) async throws -> T
    ) async throws -> T {
        // Uncompressed, as chat-fanout produces deliveries.
        let producer = try TestKafka.producer(cluster) { $0.compression = "none" }
        let partitions = (0..<Topic.chatMessage.partitions).map {
            TopicPartitionOffset(topic: Topic.chatMessage.name, partition: Int32($0), offset: .beginning)
        }
        let consumer = try KafkaConsumer(
            configuration: KafkaConsumerConfiguration(
                client: KafkaClientConfiguration(bootstrapServers: cluster.bootstrapServers, clientId: "test-fanout"), mode: .assignment(partitions)
            ),
            logger: TestKafka.logger
        )
        let fanout = TestFanoutStandIn(gatewayId: gatewayId, producer: producer)
        let loop = Task {
            for try await message in consumer.messages {
                try await fanout.forward(message)
            }
        }
        defer { loop.cancel() }
        let result = try await body(fanout)
        loop.cancel()
        await consumer.close()
        return result
    }

    private func forward(_ message: KafkaConsumerMessage) async throws {
        let delivery = KafkaProducerMessage(
            topic: Topic.gatewayDelivery.name, key: gatewayId, value: message.value, headers: message.headers,
            partition: GatewayEvents.deliveryPartition(for: gatewayId)
        )
        forwarded.withLock { $0.append(delivery) }
        _ = try await producer.sendAndAwait(delivery)
    }

    var forwardedCount: Int { forwarded.value.count }

    func redeliverAll() async throws {
        for delivery in forwarded.value {
            _ = try await producer.sendAndAwait(delivery)
        }
    }
}
