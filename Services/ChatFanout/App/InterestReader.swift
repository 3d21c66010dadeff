import Common
import Events
import Foundation
import Kafka
import Logging
import Messaging
import ServiceKit
import ServiceLifecycle

/// Reads `gateway.interest.v1` whole — every partition from the beginning, manual assignment, no
/// consumer group, so every replica holds the full table — and keeps following it. The embedded
/// broker does not compact, so records are applied in order and the last one per key wins.
///
/// `isCaughtUp` turns true once every partition was read up to the high watermark it had when
/// the reader started; the fan-out consumer joins its group only after that, so a replica never
/// drops a message for a gateway whose interest was published before the replica started.
final class InterestReader: Service, Sendable {
    private let consumer: KafkaConsumer
    private let table: InterestTable
    private let logger: Logger
    private let caughtUp = Latch()
    private static let topic = Topic.gatewayInterest

    init(client: KafkaClientConfiguration, fetchWaitMilliseconds: Int, table: InterestTable, logger: Logger) throws {
        var config = KafkaConsumerConfiguration.wholeTopic(Self.topic, client: client, role: "interest", fetchWaitMilliseconds: fetchWaitMilliseconds)
        config.reportEndOfPartition = true
        self.consumer = try KafkaConsumer(configuration: config, logger: logger)
        self.table = table
        self.logger = logger
    }

    var isCaughtUp: Bool { caughtUp.isOpen }

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                try await self.follow()
            }
        } catch is CancellationError {
            // Shut down while catching up or retrying: nothing to finish.
        } catch {
            await consumer.close()
            throw error
        }
        await consumer.close()
    }

    private func follow() async throws {
        // Partitions with records to read before the table is complete, and where they end.
        var behind = try await highWatermarks()
        markCaughtUpIfDone(behind)
        for try await event in consumer.events {
            switch event {
            case .message(let message):
                apply(message)
                if let end = behind[message.partition], message.offset + 1 >= end { behind[message.partition] = nil }
            case .endOfPartition(let partition, let offset):
                if let end = behind[partition.partition], offset >= end { behind[partition.partition] = nil }
            }
            if !caughtUp.isOpen { markCaughtUpIfDone(behind) }
        }
    }

    private func markCaughtUpIfDone(_ behind: [Int32: Int64]) {
        guard behind.isEmpty, !caughtUp.isOpen else { return }
        caughtUp.open()
        logger.info("gateway interest caught up", metadata: [LogKey.count: "\(table.entryCount)"])
    }

    /// The high watermark of every non-empty partition, retried until the brokers answer.
    private func highWatermarks() async throws -> [Int32: Int64] {
        var backoff = Duration.milliseconds(100)
        while true {
            do {
                var ends: [Int32: Int64] = [:]
                for partition in 0..<Int32(Self.topic.partitions) {
                    let marks = try await consumer.watermarks(topic: Self.topic.name, partition: partition)
                    if marks.high > marks.low { ends[partition] = marks.high }
                }
                return ends
            } catch {
                logger.warning(
                    "gateway interest watermarks unavailable; retrying",
                    metadata: [
                        LogKey.kafkaTopic: "\(Self.topic.name)", LogKey.error: "\(error)",
                    ])
                try await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(5))
            }
        }
    }

    private func apply(_ message: KafkaConsumerMessage) {
        guard let value = message.value else {
            // A tombstone (the key was deleted): no gateway is interested any more.
            guard let key = message.keyString.flatMap(InterestKey.init) else {
                return skip(message, reason: "tombstone with an unreadable key")
            }
            table.apply(gatewayId: key.gatewayId, conversationId: key.conversationId, interested: false)
            return
        }
        let event: CloudEvent<GatewayEvents.InterestChanged>
        do {
            event = try EventCoding.decode(GatewayEvents.InterestChanged.self, from: value)
        } catch {
            return skip(message, reason: "not an interest event")
        }
        let interest = event.data
        if table.apply(gatewayId: interest.gatewayId, conversationId: interest.conversationId, interested: interest.interested) {
            logger.debug(
                interest.interested ? "gateway interest added" : "gateway interest withdrawn",
                metadata: [
                    LogKey.gatewayId: "\(interest.gatewayId)", LogKey.conversationId: "\(interest.conversationId.lowercased)",
                ])
        }
    }

    private func skip(_ message: KafkaConsumerMessage, reason: String) {
        logger.error(
            "skipping an unreadable gateway interest record",
            metadata: [
                LogKey.error: "\(reason)", LogKey.kafkaTopic: "\(message.topic)", LogKey.kafkaPartition: "\(message.partition)",
                LogKey.kafkaOffset: "\(message.offset)",
            ])
    }
}
