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
    private let stream: AsyncStream<Queued>
    private let continuation: AsyncStream<Queued>.Continuation

    /// A record to send, and what to call once the broker acknowledged it (or refused it).
    private struct Queued: Sendable {
        let message: KafkaProducerMessage
        let delivered: (@Sendable () -> Void)?
    }

    init(producer: KafkaProducer, gatewayId: String, logger: Logger) {
        self.producer = producer
        self.source = "chatsuite/gateway/\(gatewayId)"
        self.instanceId = UUIDv7.generate().lowercased
        self.logger = logger
        (stream, continuation) = AsyncStream.makeStream(of: Queued.self)
    }

    /// Queues `payload`; `delivered` runs once the broker acknowledged it, or it failed, or the
    /// gateway stopped before sending it.
    func publish<P: EventPayload>(_ payload: P, delivered: (@Sendable () -> Void)? = nil) {
        let event = CloudEvent(source: source, data: payload)
        do {
            let value = try EventCoding.encode(event)
            let message = KafkaProducerMessage(
                topic: P.topic.name, key: payload.subject, value: value,
                headers: [
                    KafkaHeader(key: CloudEventKafkaHeader.id, string: event.id.lowercased),
                    KafkaHeader(key: CloudEventKafkaHeader.type, string: P.eventType),
                    KafkaHeader(key: CloudEventKafkaHeader.contentType, string: CloudEventKafkaHeader.contentTypeValue),
                ]
            )
            if case .terminated = continuation.yield(Queued(message: message, delivered: delivered)) { delivered?() }
        } catch {
            delivered?()
            logger.error("gateway event not encoded", metadata: ["event.type": "\(P.eventType)", "error": "\(error)"])
        }
    }

    /// Deletes `payload`'s key from its compacted topic (after `payload` itself, which is
    /// published first): compaction then drops every record of the key, so the topic — and what
    /// every reader loads at start — holds only live sessions and interest, not their history.
    func publishFinal<P: EventPayload>(_ payload: P) {
        publish(payload)
        continuation.yield(Queued(message: KafkaProducerMessage(topic: P.topic.name, key: payload.subject, value: nil, headers: []), delivered: nil))
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            for await queued in self.stream {
                do {
                    try await self.send(queued)
                } catch {
                    queued.delivered?()
                    self.logger.warning("gateway event not sent", metadata: ["kafka.topic": "\(queued.message.topic)", "kafka.error": "\(error)"])
                }
            }
        }
        continuation.finish()
        // What was queued before shutdown still goes out (the producer flushes after us).
        for await queued in stream {
            do { try await send(queued) } catch { queued.delivered?() }
        }
    }

    private func send(_ queued: Queued) async throws {
        if let delivered = queued.delivered {
            try await producer.send(queued.message) { _ in delivered() }
        } else {
            try await producer.send(queued.message)
        }
    }
}
