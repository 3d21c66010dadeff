import Events
import Foundation
import Kafka
import Logging
import Messaging
import ServiceKit
import ServiceLifecycle
import Synchronization

/// Every gateway's table of resumable native sessions: the latest `SessionCheckpoint` per
/// session from the compacted `gateway.session.v1`, read whole from its beginning (manual
/// assignment of every partition, no consumer group), minus sessions whose `SessionClosed`
/// followed. So a session resumes on any gateway, and after its own gateway restarted.
final class SessionCheckpoints: Service, Sendable {
    private struct Entry: Sendable {
        var checkpoint: GatewayEvents.SessionCheckpoint
        var received: ContinuousClock.Instant
    }

    private let table = Mutex<[String: Entry]>([:])
    private let configuration: KafkaConsumerConfiguration
    private let retention: Duration
    private let logger: Logger

    init(client: KafkaClientConfiguration, fetchWaitMilliseconds: Int, retention: Duration, logger: Logger) {
        configuration = .wholeTopic(Topic.gatewaySession, client: client, role: "sessions", fetchWaitMilliseconds: fetchWaitMilliseconds)
        configuration.announceForReadiness()  // the consumer is created when the service runs
        self.retention = retention
        self.logger = logger
    }

    func checkpoint(_ sessionId: String) -> GatewayEvents.SessionCheckpoint? {
        table.withLock { $0[sessionId]?.checkpoint }
    }

    func run() async throws {
        try await KafkaConsumer.consume(configuration, logger: logger) { self.apply($0) }
    }

    private func apply(_ message: KafkaConsumerMessage) {
        guard let value = message.value, let key = message.keyString else {
            if let key = message.keyString { table.withLock { _ = $0.removeValue(forKey: key) } }  // a tombstone
            return
        }
        let type = message.cloudEventType
        let now = ContinuousClock.now
        switch type {
        case GatewayEvents.SessionCheckpoint.eventType:
            guard let checkpoint = try? EventCoding.decode(GatewayEvents.SessionCheckpoint.self, from: value).data else { return }
            table.withLock { table in
                table[key] = Entry(checkpoint: checkpoint, received: now)
                // Forget what can no longer resume (bounded memory without compaction).
                if table.count % 1024 == 0 { table = table.filter { now - $0.value.received < retention } }
            }
        case GatewayEvents.SessionClosed.eventType:
            guard let closed = try? EventCoding.decode(GatewayEvents.SessionClosed.self, from: value).data else { return }
            // Only the gateway that last held the session ends it (a resume elsewhere took it over).
            table.withLock { table in
                if table[key]?.checkpoint.gatewayId == closed.gatewayId { table[key] = nil }
            }
        default:
            return
        }
    }
}
