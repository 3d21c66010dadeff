import ClientContract
import Events
import Foundation
import Kafka
import Logging
import Messaging
import Metrics
import NIOCore
import ServiceKit
import ServiceLifecycle
import Synchronization

/// Reads this gateway's deliveries — `chat.message.v1` and `gateway.typing.v1` records that
/// chat-fanout re-produced to `gateway.delivery.v1` keyed by the gateway id, in partition
/// `deliveryPartition(for:)` — and emits them to the local Socket.IO namespaces and native
/// sessions.
///
/// The partition is read by manual assignment from its end when the gateway starts (a socket
/// only receives what is sent while it is connected; clients fetch history over REST first, and
/// native sessions resume from history). Deliveries are at-least-once; a memory of recent message
/// and event ids passes each one on at most once. Edits, deletions and reactions have no event in
/// either protocol yet and are skipped; typing goes to native sessions only.
final class DeliveryConsumer: Service, Sendable {
    private let server: SocketIOServer
    private let native: NativeGateway
    private let recent: Mutex<RecentIds>
    private let configuration: KafkaConsumerConfiguration
    private let gatewayId: String
    private let logger: Logger
    private let emitted = Counter(label: "socketio_emits_total")
    private let duplicates = Counter(label: "socketio_duplicate_deliveries_total")

    init(
        server: SocketIOServer, native: NativeGateway, client: KafkaClientConfiguration, gatewayId: String, fetchWaitMilliseconds: Int, logger: Logger
    ) {
        self.server = server
        self.native = native
        recent = Mutex(RecentIds(capacity: server.settings.dedupeWindow))
        self.gatewayId = gatewayId
        self.logger = logger
        let partition = GatewayEvents.deliveryPartition(for: gatewayId)
        var configuration = KafkaConsumerConfiguration(
            client: client, mode: .assignment([TopicPartitionOffset(topic: Topic.gatewayDelivery.name, partition: partition, offset: .end)])
        )
        configuration.client.clientId = "\(client.clientId)-delivery"
        configuration.fetchWaitMaxMilliseconds = fetchWaitMilliseconds
        configuration.announceForReadiness()  // the consumer is created when the service runs
        self.configuration = configuration
    }

    func run() async throws {
        try await KafkaConsumer.consume(configuration, logger: logger) { message in
            guard message.keyString == self.gatewayId else { return }
            // The last span of a message's trace: its delivery to this gateway's sockets.
            KafkaTracing.withConsumerSpan("gateway deliver", message: message) { _ in self.process(message) }
        }
    }

    /// An ephemeral event (typing, presence), or nil when its id was delivered already.
    private func firstDelivery<P: EventPayload>(of type: P.Type, _ value: [UInt8]) throws -> P? {
        let event = try EventCoding.decode(P.self, from: value)
        guard recent.withLock({ $0.insert(event.id) }) else {
            duplicates.increment()
            return nil
        }
        return event.data
    }

    func process(_ message: KafkaConsumerMessage) {
        guard let value = message.value else { return }
        let type = message.cloudEventType
        do {
            switch type {
            case ChatEvents.ChannelMessageCreated.eventType:
                let event = try EventCoding.decode(ChatEvents.ChannelMessageCreated.self, from: value).data
                emit(event, messageId: event.messageId.uuid, createdAt: event.createdAt, to: .channel(event.channelId.uuid))
            case ChatEvents.DirectMessageCreated.eventType:
                let event = try EventCoding.decode(ChatEvents.DirectMessageCreated.self, from: value).data
                emit(event, messageId: event.messageId.uuid, createdAt: event.createdAt, to: .dm(event.roomId.uuid))
            case GatewayEvents.TypingStarted.eventType:
                if let typing = try firstDelivery(of: GatewayEvents.TypingStarted.self, value) { native.deliverTyping(typing) }
            case PresenceEvents.StatusChanged.eventType:
                if let change = try firstDelivery(of: PresenceEvents.StatusChanged.self, value) { native.deliverPresence(change) }
            default:
                return
            }
        } catch {
            logger.error(
                "skipping an undecodable delivery",
                metadata: [
                    "event.type": "\(type ?? "-")", "kafka.partition": "\(message.partition)", "kafka.offset": "\(message.offset)", "error": "\(error)",
                ])
        }
    }

    private func emit(_ payload: some JSONWritable, messageId: UUID, createdAt: Date, to namespace: ConversationNamespace) {
        guard recent.withLock({ $0.insert(messageId) }) else {
            duplicates.increment()
            return
        }
        // Encoded once: every socket's queue shares these bytes.
        let json = payload.jsonBuffer
        let sessions = server.registry.recipients(in: namespace)
        if !sessions.isEmpty {
            let packet = OutboundText(ByteBuffer(string: SocketIOEncoder.event(namespace.name, name: namespace.eventName, json: String(buffer: json))))
            for session in sessions where !session.send(packet) {
                server.close(session, reason: "send queue full")
            }
            emitted.increment(by: sessions.count)
        }
        native.deliver(
            type: namespace.eventName == "channel" ? "channel.message" : "dm.message", conversation: namespace.conversationId,
            messageId: messageId, createdAt: createdAt, json: json
        )
    }
}
