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
    /// Per partition, the offset after the last record applied to `table`.
    private let applied = Mutex<[Int32: Int64]>([:])
    private let consumer = Mutex<KafkaConsumer?>(nil)
    private let endsQueries = Mutex(EndsQueries())
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

    /// Waits until every record the topic held when this was called has been applied, or until
    /// `deadline`; true when it was. A resume on a gateway that just started (or whose reader
    /// lags under load) so sees the checkpoint its old gateway wrote before the client came back.
    func readToEnd(before deadline: ContinuousClock.Instant) async -> Bool {
        let start = ContinuousClock.now
        var ends: [Int32: Int64]?
        while ContinuousClock.now < deadline {
            if ends == nil, let consumer = consumer.withLock({ $0 }), !consumer.assignment.isEmpty {
                ends = await self.ends(askedSince: start, of: consumer, before: deadline)
            }
            if let ends {
                let applied = applied.withLock { $0 }
                if ends.allSatisfy({ applied[$0.key, default: 0] >= $0.value }) { return true }
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// The questions of the topic's ends asked of the broker: the one in flight, shared by every
    /// resume that may take its answer.
    private struct EndsQueries {
        var inFlight: (number: Int, asked: ContinuousClock.Instant, answer: Task<[Int32: Int64]?, Never>)?
        /// Questions asked so far.
        var asked = 0
    }

    /// How many times the broker was asked for the topic's ends.
    var endsQueriesAsked: Int { endsQueries.withLock { $0.asked } }

    /// The topic's ends as the broker reported them after `start`. Resumes asking together
    /// share one question: a question asked after a resume came in answers it (the topic then
    /// held at least what it held at the resume); one asked before may miss records written
    /// since, so that resume waits for it to end and asks again, with every other resume that
    /// came in meanwhile. A reconnect storm after a restart so costs a few round trips per
    /// partition, not a round trip per partition per resume.
    private func ends(askedSince start: ContinuousClock.Instant, of consumer: KafkaConsumer, before deadline: ContinuousClock.Instant) async
        -> [Int32: Int64]?
    {
        while ContinuousClock.now < deadline {
            let query = endsQueries.withLock { queries in
                if let current = queries.inFlight { return current }
                queries.asked += 1
                let query = (number: queries.asked, asked: ContinuousClock.now, answer: Task { await Self.ends(of: consumer, before: deadline) })
                queries.inFlight = query
                return query
            }
            let answer = await query.answer.value
            endsQueries.withLock { queries in
                if queries.inFlight?.number == query.number { queries.inFlight = nil }
            }
            if query.asked >= start { return answer }
        }
        return nil
    }

    /// Each assigned partition's end (the offset after its last record, as the broker reports
    /// it); a partition holding nothing is left out. Nil when the broker could not say.
    private static func ends(of consumer: KafkaConsumer, before deadline: ContinuousClock.Instant) async -> [Int32: Int64]? {
        var ends: [Int32: Int64] = [:]
        for partition in consumer.assignment {
            let timeout = min(.seconds(5), ContinuousClock.now.duration(to: deadline))
            guard timeout > .zero, let (low, high) = try? await consumer.watermarks(topic: partition.topic, partition: partition.partition, timeout: timeout)
            else { return nil }
            if high > low { ends[partition.partition] = high }
        }
        return ends
    }

    func run() async throws {
        try await KafkaConsumer.consume(configuration, logger: logger, started: { consumer in self.consumer.withLock { $0 = consumer } }) { message in
            self.apply(message)
            self.applied.withLock { $0[message.partition] = message.offset + 1 }
        }
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
