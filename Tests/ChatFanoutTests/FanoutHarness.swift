import ChatFanoutApp
import Common
import Configuration
import Events
import Foundation
import HTTPTypes
import HummingbirdTesting
import Kafka
import Logging
import ServiceKit
import SuiteTesting
import TestSupport

/// An embedded Kafka cluster with the catalog's topics, a producer standing in for the gateways
/// (interest) and for `chat` (messages), and `chat-fanout` replicas running in-process on it.
struct FanoutHarness: Sendable {
    let cluster: EmbeddedKafkaCluster
    let producer: KafkaProducer

    /// `compression`: how the stand-in for chat compresses its records (lz4, the suite's default;
    /// `none`, the dev stack's, which chat-fanout's poll thread fetches itself, not librdkafka).
    init(compression: String = "lz4") throws {
        // One broker: these tests exercise the fan-out, not broker failover (KafkaTests do).
        cluster = try TestKafka.catalogCluster(brokers: 1)
        producer = try TestKafka.producer(cluster) { $0.compression = compression }
    }

    /// Starts a replica and waits until it reports ready (interest table caught up); `writer` is
    /// its `kafka.delivery-writer`, `reader` its `kafka.fanout-reader`.
    func startReplica(_ name: String, writer: String = "native", reader: String = "native") async throws -> RunningService {
        let environment = [
            "HTTP_PORT": "0", "KAFKA_BROKERS": cluster.bootstrapServers, "LOG_LEVEL": "warning", "KAFKA_FETCH_WAIT_MS": "5",
            "INSTANCE_ID": name, "KAFKA_DELIVERY_WRITER": writer, "KAFKA_FANOUT_READER": reader,
        ]
        let settings = ServiceSettings(
            serviceName: ChatFanoutService.name, defaults: ChatFanoutService.defaults, environment: environment, arguments: [ChatFanoutService.name]
        )
        let replica = try await RunningService.start { try await buildApplication(settings: settings, logger: TestKafka.logger) }
        try await eventually("\(name) ready", timeout: .seconds(30)) {
            try await replica.client.execute(uri: "/health/ready", method: .get).status == .ok
        }
        return replica
    }

    /// Publishes a gateway's interest as a gateway does (keyed `<gateway>/<conversation>`), or
    /// into `partition` when given; answers the partition it landed in.
    @discardableResult
    func setInterest(_ gateway: String, _ conversation: UUID, _ interested: Bool, partition: Int32? = nil) async throws -> Int32 {
        try await setInterests([(gateway, conversation, interested)], partition: partition)[0]
    }

    /// `setInterest` for many entries at once, in order; answers their partitions.
    @discardableResult
    func setInterests(_ entries: [(gateway: String, conversation: UUID, interested: Bool)], partition: Int32? = nil) async throws -> [Int32] {
        let records = try entries.map { entry in
            let event = CloudEvent(
                source: "test-gateway",
                data: GatewayEvents.InterestChanged(gatewayId: entry.gateway, conversationId: entry.conversation, interested: entry.interested)
            )
            return KafkaProducerMessage(topic: Topic.gatewayInterest.name, key: event.subject, value: try EventCoding.encode(event), partition: partition)
        }
        return try await producer.sendAllAndAwait(records).map { try $0.get().partition }
    }

    /// Publishes one `chat.message.v1` record per conversation, in order, as `chat`'s relay does
    /// (keyed by the conversation id, CloudEvents headers), or all into `partition` when given.
    func sendMessages(_ conversations: [UUID], partition: Int32? = nil) async throws -> [SentMessage] {
        let sent = try conversations.map { try SentMessage(conversation: $0) }
        let results = await producer.sendAllAndAwait(sent.map { $0.record(partition: partition) })
        for result in results { _ = try result.get() }
        return sent
    }
}

/// A `chat.message.v1` record the test produced.
struct SentMessage: Sendable {
    let id: UUID
    let conversation: UUID
    let value: [UInt8]
    let headers: [KafkaHeader]

    init(conversation: UUID) throws {
        let sender = ChatEvents.Sender(userId: .generate(), email: "a@example.com", nickname: "a", profileImage: nil)
        let event = CloudEvent(
            source: "test-chat",
            data: ChatEvents.ChannelMessageCreated(
                messageId: .generate(), workspaceId: .generate(), channelId: ChannelID(conversation), channelName: "general", sender: sender,
                content: "hello", files: [], createdAt: Date()
            ))
        self.id = event.id
        self.conversation = conversation
        self.value = try EventCoding.encode(event)
        self.headers = [
            KafkaHeader(key: CloudEventKafkaHeader.id, string: event.id.lowercased),
            KafkaHeader(key: CloudEventKafkaHeader.type, string: event.type),
        ]
    }

    func record(partition: Int32?) -> KafkaProducerMessage {
        KafkaProducerMessage(topic: Topic.chatMessage.name, key: conversation.lowercased, value: value, headers: headers, partition: partition)
    }
}

/// A gateway's side of `gateway.delivery.v1`: reads the one partition its id maps to and keeps
/// the records keyed by its id, as the real gateway does.
final class SimulatedGateway: Sendable {
    struct Delivery: Sendable {
        let eventId: UUID
        let key: String?
        let partition: Int32
        let value: [UInt8]
        let headers: [KafkaHeader]
    }

    let id: String
    private let consumer: KafkaConsumer
    private let log = Locked<[Delivery]>([])
    private let reader = Locked<Task<Void, Never>?>(nil)

    private init(id: String, consumer: KafkaConsumer) {
        self.id = id
        self.consumer = consumer
    }

    static func start(_ id: String, on harness: FanoutHarness) throws -> SimulatedGateway {
        let partition = TopicPartitionOffset(topic: Topic.gatewayDelivery.name, partition: GatewayEvents.deliveryPartition(for: id))
        var config = KafkaConsumerConfiguration(
            client: KafkaClientConfiguration(bootstrapServers: harness.cluster.bootstrapServers, clientId: "test-\(id)"), mode: .assignment([partition])
        )
        config.fetchWaitMaxMilliseconds = 5
        let gateway = SimulatedGateway(id: id, consumer: try KafkaConsumer(configuration: config, logger: TestKafka.logger))
        gateway.reader.withLock { $0 = Task { await gateway.read() } }
        return gateway
    }

    private func read() async {
        do {
            for try await message in consumer.messages where message.keyString == id {
                let header = try EventCoding.header(from: message.value ?? [])
                log.withLock {
                    $0.append(
                        Delivery(eventId: header.id, key: message.keyString, partition: message.partition, value: message.value ?? [], headers: message.headers)
                    )
                }
            }
        } catch {
            TestKafka.logger.error("simulated gateway stopped reading", metadata: ["error": "\(error)"])
        }
    }

    var deliveries: [Delivery] { log.value }
    /// Event ids in arrival order, redeliveries included.
    var eventIds: [UUID] { log.value.map(\.eventId) }

    /// Waits until every id in `ids` has arrived at least once.
    func waitFor(_ ids: some Sequence<UUID>, timeout: Duration = .seconds(60)) async throws {
        let wanted = Set(ids)
        try await eventually("\(id) received \(wanted.count) events", timeout: timeout) {
            wanted.isSubset(of: Set(eventIds))
        }
    }

    func stop() async {
        reader.value?.cancel()
        await reader.value?.value
        await consumer.close()
    }
}
