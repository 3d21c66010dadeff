import Events
import Foundation
import Kafka
import Logging
import ServiceLifecycle

/// Publishes the gateway's own events — `gateway.interest.v1` (interest per conversation) and
/// `gateway.session.v1` (sessions opened and closed) — straight to Kafka with the platform's
/// producer (the gateway has no database, hence no outbox). Events are queued without waiting
/// and sent in order by one loop, so an interest withdrawal never overtakes its announcement.
final class GatewayEventPublisher: Service, Sendable {
    private let producer: KafkaProducer
    private let source: String
    /// This process's run of the gateway, named in its sessions and liveness announcements.
    let instanceId: String
    private let logger: Logger
    private let stream: AsyncStream<KafkaProducerMessage>
    private let continuation: AsyncStream<KafkaProducerMessage>.Continuation

    init(producer: KafkaProducer, gatewayId: String, logger: Logger) {
        self.producer = producer
        self.source = "chatsuite/gateway/\(gatewayId)"
        self.instanceId = UUIDv7.generate().lowercased
        self.logger = logger
        (stream, continuation) = AsyncStream.makeStream(of: KafkaProducerMessage.self)
    }

    func publish<P: EventPayload>(_ payload: P) {
        let event = CloudEvent(source: source, data: payload)
        do {
            let value = try EventCoding.encode(event)
            continuation.yield(
                KafkaProducerMessage(
                    topic: P.topic.name, key: payload.subject, value: value,
                    headers: [
                        KafkaHeader(key: CloudEventKafkaHeader.id, string: event.id.lowercased),
                        KafkaHeader(key: CloudEventKafkaHeader.type, string: P.eventType),
                        KafkaHeader(key: CloudEventKafkaHeader.contentType, string: CloudEventKafkaHeader.contentTypeValue),
                    ]
                ))
        } catch {
            logger.error("gateway event not encoded", metadata: ["event.type": "\(P.eventType)", "error": "\(error)"])
        }
    }

    /// Deletes `payload`'s key from its compacted topic (after `payload` itself, which is
    /// published first): compaction then drops every record of the key, so the topic — and what
    /// every reader loads at start — holds only live sessions and interest, not their history.
    func publishFinal<P: EventPayload>(_ payload: P) {
        publish(payload)
        continuation.yield(KafkaProducerMessage(topic: P.topic.name, key: payload.subject, value: nil, headers: []))
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            for await message in self.stream {
                do {
                    try await self.producer.send(message)
                } catch {
                    self.logger.warning("gateway event not sent", metadata: ["kafka.topic": "\(message.topic)", "kafka.error": "\(error)"])
                }
            }
        }
        continuation.finish()
        // What was queued before shutdown still goes out (the producer flushes after us).
        for await message in stream {
            try? await producer.send(message)
        }
    }
}
