import ClientContract
import Events
import Foundation
import Kafka
import Logging
import Messaging
import Metrics
import NIOCore
import NIOPosix
import ServiceKit
import ServiceLifecycle
import Synchronization

/// Reads this gateway's deliveries — the `chat.message.v1`, `chat.read.v1`, `presence.v1`,
/// `gateway.typing.v1` and `study.v1` (study chat) records that chat-fanout re-produced to `gateway.delivery.v1` keyed by the
/// gateway id, in partition `deliveryPartition(for:)` — decodes each into a `LiveEvent` and hands
/// it to the `RealtimeHub` once, which routes it to every protocol's subscribers.
///
/// The partition is read by manual assignment from its end when the gateway starts (a socket
/// only receives what is sent while it is connected; clients fetch history over REST first, and
/// native sessions resume from history). Deliveries are at-least-once; the hub passes each event
/// id on at most once.
///
/// A plaintext cluster's deliveries are read by `KafkaPartitionReader` on one of the server's
/// event loops (`kafka.delivery-reader` native, the default): a fetch's records reach the hub
/// there, without librdkafka's broker and poll threads. A batch it cannot read (compressed:
/// chat-fanout produces deliveries uncompressed) hands the partition to librdkafka from that
/// offset, for the rest of the process's life, as does TLS or SASL from the start.
final class DeliveryConsumer: Service, Sendable {
    private let hub: RealtimeHub
    private let configuration: KafkaConsumerConfiguration
    private let gatewayId: String
    private let nativeReader: Bool
    private let logger: Logger
    /// The deliveries are read by librdkafka (by configuration, or since a batch only it reads).
    let readsWithLibrdkafka = Atomic<Bool>(false)

    init(
        hub: RealtimeHub, client: KafkaClientConfiguration, fetchWaitMilliseconds: Int, fetchMinBytes: Int = 1, fetchBatchMilliseconds: Int = 0,
        nativeReader: Bool = true,
        logger: Logger
    ) {
        self.hub = hub
        self.nativeReader = nativeReader
        self.gatewayId = hub.settings.gatewayId
        self.logger = logger
        let partition = GatewayEvents.deliveryPartition(for: gatewayId)
        var configuration = KafkaConsumerConfiguration(
            client: client, mode: .assignment([TopicPartitionOffset(topic: Topic.gatewayDelivery.name, partition: partition, offset: .end)])
        )
        configuration.client.clientId = "\(client.clientId)-delivery"
        configuration.fetchWaitMaxMilliseconds = fetchWaitMilliseconds
        configuration.properties["fetch.min.bytes"] = String(fetchMinBytes)
        configuration.fetchBatchWaitMilliseconds = fetchBatchMilliseconds
        configuration.announceForReadiness()  // the consumer is created when the service runs
        self.configuration = configuration
    }

    func run() async throws {
        guard nativeReader, KafkaPartitionReader.canRead(configuration) else { return try await runWithLibrdkafka(configuration) }
        let reader = try KafkaPartitionReader(configuration: configuration, eventLoop: MultiThreadedEventLoopGroup.singleton.next(), logger: logger)
        do {
            // Decoding and routing never wait, so they run on the reader's event loop.
            try await cancelWhenGracefulShutdown { try await reader.run { self.deliver($0) } }
        } catch let unreadable as KafkaPartitionReader.UnreadableBatch {
            logger.warning(
                "a delivery batch only librdkafka reads (is chat-fanout's delivery producer compressing?); reading on with librdkafka",
                metadata: ["error": "\(unreadable)"])
            // The same partition, from the batch the reader could not read.
            var rest = configuration
            if case .assignment(let partitions) = configuration.mode {
                rest.mode = .assignment(partitions.map { TopicPartitionOffset(topic: $0.topic, partition: $0.partition, offset: .exact(unreadable.offset)) })
            }
            try await runWithLibrdkafka(rest)
        }
    }

    private func runWithLibrdkafka(_ configuration: KafkaConsumerConfiguration) async throws {
        readsWithLibrdkafka.store(true, ordering: .relaxed)
        let consumer = try KafkaConsumer(configuration: configuration, logger: logger)
        try await cancelWhenGracefulShutdown {
            // Decoding and routing never wait, so they run on the consumer's poll thread: a poll's
            // records reach the event loops without a hop through the cooperative pool.
            try await consumer.consumeOnPollThread { batch, _ in
                self.deliver(batch.compactMap(\.message))
            }
        }
        await consumer.close()
    }

    /// How old a delivery is when read: from chat-fanout producing it (the record's timestamp) to
    /// now, on the wall clock (milliseconds; 0 when the clocks disagree).
    private let ageAtRead = Metrics.Timer(label: "gateway_delivery_age_at_read", preferredDisplayUnit: .seconds)

    /// One fetch's or poll's deliveries: each event loop gets them in one wake-up.
    private func deliver(_ messages: [KafkaConsumerMessage]) {
        let now = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
        hub.writeBatchers.holding {
            for message in messages where message.keyString == gatewayId {
                if let produced = message.timestampMilliseconds { ageAtRead.recordMilliseconds(max(0, now - produced)) }
                // The last span of a message's trace, its delivery to this gateway's sockets, for
                // a record that carries one (as chat-fanout's route span): a record without a
                // trace starts none, and skips the span machinery.
                if KafkaTracing.carriesTrace(message.headers) {
                    KafkaTracing.withConsumerSpan("gateway deliver", message: message) { _ in process(message) }
                } else {
                    process(message)
                }
            }
        }
    }

    func process(_ message: KafkaConsumerMessage) {
        guard let value = message.value else { return }
        let type = message.cloudEventType
        do {
            if type == ChatEvents.RoomChanged.eventType {
                // Who left a personal room (or all, when it is gone) stops receiving it.
                let change = try EventCoding.decode(ChatEvents.RoomChanged.self, from: value).data
                if change.change == .deleted {
                    hub.revoke(user: nil, conversations: [change.roomId.uuid], roomsIn: nil)
                } else {
                    for user in change.removed { hub.revoke(user: user, conversations: [change.roomId.uuid], roomsIn: nil) }
                }
                return
            }
            guard let (event, id) = try Self.decode(type: type, value) else { return }
            hub.deliver(event, id: id)
        } catch {
            logger.error(
                "skipping an undecodable delivery",
                metadata: [
                    "event.type": "\(type ?? "-")", "kafka.partition": "\(message.partition)", "kafka.offset": "\(message.offset)", "error": "\(error)",
                ])
        }
    }

    /// The live event of a delivery and its CloudEvents id; nil for a type no client sees.
    static func decode(type: String?, _ value: [UInt8]) throws -> (LiveEvent, UUID)? {
        func decoded<P: EventPayload>(_: P.Type, _ make: (P) -> LiveEvent) throws -> (LiveEvent, UUID) {
            let event = try EventCoding.decode(P.self, from: value)
            return (make(event.data), event.id)
        }
        switch type {
        case ChatEvents.ChannelMessageCreated.eventType: return try decoded(ChatEvents.ChannelMessageCreated.self, LiveEvent.channelMessage)
        case ChatEvents.DirectMessageCreated.eventType: return try decoded(ChatEvents.DirectMessageCreated.self, LiveEvent.directMessage)
        case ChatEvents.MessageEdited.eventType: return try decoded(ChatEvents.MessageEdited.self, LiveEvent.edited)
        case ChatEvents.MessageDeleted.eventType: return try decoded(ChatEvents.MessageDeleted.self, LiveEvent.deleted)
        case ChatEvents.ReactionsChanged.eventType: return try decoded(ChatEvents.ReactionsChanged.self, LiveEvent.reactions)
        case ChatEvents.ReadCursorMoved.eventType: return try decoded(ChatEvents.ReadCursorMoved.self, LiveEvent.readCursor)
        case GatewayEvents.TypingStarted.eventType: return try decoded(GatewayEvents.TypingStarted.self, LiveEvent.typing)
        case GatewayEvents.CommunitySignal.eventType: return try decoded(GatewayEvents.CommunitySignal.self, LiveEvent.signal)
        case PresenceEvents.StatusChanged.eventType: return try decoded(PresenceEvents.StatusChanged.self, LiveEvent.presence)
        case StudyEvents.ChatSent.eventType: return try decoded(StudyEvents.ChatSent.self, LiveEvent.studyChat)
        default: return nil
        }
    }
}
