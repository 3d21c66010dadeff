import Events
import Foundation
import Kafka
import Logging
import Messaging
import ServiceKit
import ServiceLifecycle
import Synchronization

/// Reads `gateway.session.v1` whole — every partition from its beginning, no consumer group, so
/// every presence replica holds every session and rebuilds its state after a restart — and
/// keeps following it into the `SessionTable`.
final class SessionReader: Service, Sendable {
    private let consumer: KafkaConsumer
    private let table: Mutex<SessionTable>
    private let logger: Logger

    init(client: KafkaClientConfiguration, fetchWaitMilliseconds: Int, gatewayTimeout: TimeInterval, logger: Logger) throws {
        let configuration = KafkaConsumerConfiguration.wholeTopic(
            Topic.gatewaySession, client: client, role: "sessions", fetchWaitMilliseconds: fetchWaitMilliseconds)
        consumer = try KafkaConsumer(configuration: configuration, logger: logger)
        table = Mutex(SessionTable(gatewayTimeout: gatewayTimeout))
        self.logger = logger
    }

    /// Whether the table holds everything the topic held when the reader started.
    var isCaughtUp: Bool { consumer.isCaughtUp }

    func read<T>(_ body: (inout SessionTable) -> T) -> T { table.withLock { body(&$0) } }

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                for try await message in self.consumer.messages { self.apply(message) }
            }
        } catch is CancellationError {
            // Shut down while reading: nothing to finish.
        }
        await consumer.close()
    }

    func apply(_ message: KafkaConsumerMessage) {
        guard let key = message.keyString else { return }
        guard let value = message.value else {
            // A tombstone: a closed session's or a stopped gateway's key was deleted.
            if GatewayEvents.GatewayAlive.gatewayId(ofKey: key) == nil { table.withLock { $0.removed(sessionId: key, at: Date()) } }
            return
        }
        do {
            switch message.cloudEventType {
            case GatewayEvents.SessionOpened.eventType:
                let event = try EventCoding.decode(GatewayEvents.SessionOpened.self, from: value).data
                table.withLock { $0.opened(event) }
            case GatewayEvents.SessionCheckpoint.eventType:
                let event = try EventCoding.decode(GatewayEvents.SessionCheckpoint.self, from: value).data
                table.withLock { $0.checkpointed(event) }
            case GatewayEvents.SessionClosed.eventType:
                let event = try EventCoding.decode(GatewayEvents.SessionClosed.self, from: value).data
                table.withLock { $0.closed(event) }
            case GatewayEvents.GatewayAlive.eventType:
                let event = try EventCoding.decode(GatewayEvents.GatewayAlive.self, from: value).data
                table.withLock { $0.alive(event) }
            case GatewayEvents.GatewayStopped.eventType:
                let event = try EventCoding.decode(GatewayEvents.GatewayStopped.self, from: value).data
                table.withLock { $0.stopped(event) }
            default:
                return  // a type presence has no use for
            }
        } catch {
            logger.error(
                "skipping an unreadable gateway session record",
                metadata: [
                    LogKey.kafkaTopic: "\(message.topic)", LogKey.kafkaPartition: "\(message.partition)", LogKey.kafkaOffset: "\(message.offset)",
                    LogKey.error: "\(error)",
                ])
        }
    }
}
