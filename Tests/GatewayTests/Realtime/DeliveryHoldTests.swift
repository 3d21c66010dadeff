import AccessTokens
import AsyncHTTPClient
import Events
import Foundation
import Kafka
import Logging
import NIOPosix
import SuiteTesting
import Synchronization
import Testing
import TestSupport

@testable import GatewayApp

/// The delivery consumer hands a poll's events to the hub with every event loop's write batcher
/// held, so what the poll queues reaches each loop in one drain, not one wake-up per event
/// (docs/benchmarks.md, part 9). A subscriber of the real consumer, reading from an embedded
/// broker, notes whether the batcher was held when each event reached it.
@Suite("Delivery consumer holds the write batchers")
struct DeliveryHoldTests {
    /// Notes, for each delivery, whether `batcher` was held at that moment.
    final class Probe: LiveSubscriber {
        let batcher: EventLoopWriteBatcher
        let seen = Mutex<[(id: UUID, held: Bool)]>([])

        init(batcher: EventLoopWriteBatcher) {
            self.batcher = batcher
        }

        func deliver(_ delivery: LiveDelivery, for follow: LiveFollow) {
            guard case .channelMessage(let message) = delivery.event else { return }
            let held = batcher.isHeld
            seen.withLock { $0.append((message.messageId.uuid, held)) }
        }

        func revoked(_ follow: LiveFollow) {}

        var presenceUpdates: PresenceUpdates { .none }
    }

    /// How the deliveries are read: the suite's own reader, librdkafka, or the own reader
    /// meeting compressed batches and handing the partition to librdkafka.
    enum Reader: String, CaseIterable, CustomTestStringConvertible {
        case native, librdkafka, nativeThenLibrdkafka
        var testDescription: String { rawValue }
    }

    @Test(
        "every event of the delivery stream reaches its subscribers while the batchers are held, and none is held after",
        arguments: Reader.allCases)
    func eventsArriveHeld(reader: Reader) async throws {
        let cluster = try TestKafka.catalogCluster(brokers: 1)
        let gatewayId = "gw-hold-\(UUID().uuidString.prefix(8))"
        let client = KafkaClientConfiguration(bootstrapServers: cluster.bootstrapServers, clientId: "test-gateway")
        let producer = try TestKafka.producer(cluster) { $0.compression = reader == .nativeThenLibrdkafka ? "gzip" : "none" }
        let verifier = try await AccessTokenVerifier(publicKey: .ed25519PEM(try JWTKeyPEM.newEd25519().publicKey), audience: "test", issuer: "test")
        let publisher = GatewayEventPublisher(producer: producer, gatewayId: gatewayId, logger: TestKafka.logger)
        let hub = RealtimeHub(
            settings: RealtimeSettings(gatewayId: gatewayId), events: publisher, interest: GatewayInterest(announce: { _, _ in }),
            access: ConversationAccess(client: HTTPClient.shared, chatURL: "http://127.0.0.1:1", logger: TestKafka.logger), verifier: verifier,
            admission: RealtimeAdmission(handshakesPerSecond: 100, handshakeBurst: 100, joinsPerSecond: 100, joinBurst: 100, maxNamespacesPerSession: 10)
        )
        // A real loop: the consumer's thread holds and releases its batcher, and the test resumes
        // on other threads after each await (an embedded loop is for the thread that made it).
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let probe = Probe(batcher: hub.writeBatchers.batcher(for: loop))
        let channel = ChannelID.generate()
        hub.follow(probe, LiveFollow(id: channel.uuid, kind: .channel, workspaceId: nil, userId: nil))

        let consumer = DeliveryConsumer(hub: hub, client: client, fetchWaitMilliseconds: 5, nativeReader: reader != .librdkafka, logger: TestKafka.logger)
        let running = Task { try await consumer.run() }
        defer { running.cancel() }

        /// Produces `count` channel messages to this gateway's delivery partition in one go.
        @Sendable func deliver(_ count: Int) async throws -> [UUID] {
            var ids: [UUID] = []
            var records: [KafkaProducerMessage] = []
            for _ in 0..<count {
                let sender = ChatEvents.Sender(userId: .generate(), email: "a@example.com", nickname: "a", profileImage: nil)
                let message = ChatEvents.ChannelMessageCreated(
                    messageId: .generate(), workspaceId: .generate(), channelId: channel, channelName: "general", sender: sender, content: "hi",
                    files: [], createdAt: Date())
                let event = CloudEvent(source: "test-chat", data: message)
                ids.append(message.messageId.uuid)
                records.append(
                    KafkaProducerMessage(
                        topic: Topic.gatewayDelivery.name, key: gatewayId, value: try EventCoding.encode(event),
                        headers: [KafkaHeader(key: CloudEventKafkaHeader.type, string: event.type)],
                        partition: GatewayEvents.deliveryPartition(for: gatewayId)))
            }
            for result in await producer.sendAllAndAwait(records) { _ = try result.get() }
            return ids
        }

        // The consumer reads from the partition's end once it runs: send until it hears one.
        try await eventually("the consumer reads the delivery partition", timeout: .seconds(30)) {
            _ = try await deliver(1)
            try await Task.sleep(for: .milliseconds(200))
            return !probe.seen.withLock { $0.isEmpty }
        }
        let batch = try await deliver(20)
        try await eventually("the 20 events are delivered") {
            let seen = Set(probe.seen.withLock { $0.map(\.id) })
            return batch.allSatisfy(seen.contains)
        }
        let seen = probe.seen.withLock { $0 }
        #expect(seen.count >= 21)
        let unheld = seen.filter { !$0.held }.count
        #expect(unheld == 0, "\(unheld) of \(seen.count) events were delivered without a hold")
        #expect(!probe.batcher.isHeld)
        let byLibrdkafka = consumer.readsWithLibrdkafka.load(ordering: .relaxed)
        #expect(byLibrdkafka == (reader != .native), "read by librdkafka: \(byLibrdkafka)")
    }
}
