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
        /// Decodes the record as `P` and applies it to the table.
        func apply<P: EventPayload>(_: P.Type, _ change: (inout SessionTable, P) -> Void) throws {
            let event = try EventCoding.decode(P.self, from: value).data
            table.withLock { change(&$0, event) }
        }
        do {
            switch message.cloudEventType {
            case GatewayEvents.SessionOpened.eventType: try apply(GatewayEvents.SessionOpened.self) { $0.opened($1) }
            case GatewayEvents.SessionCheckpoint.eventType: try apply(GatewayEvents.SessionCheckpoint.self) { $0.checkpointed($1) }
            case GatewayEvents.SessionClosed.eventType: try apply(GatewayEvents.SessionClosed.self) { $0.closed($1) }
            case GatewayEvents.GatewayAlive.eventType: try apply(GatewayEvents.GatewayAlive.self) { $0.alive($1) }
            case GatewayEvents.GatewayStopped.eventType: try apply(GatewayEvents.GatewayStopped.self) { $0.stopped($1) }
            default: return  // a type presence has no use for
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
