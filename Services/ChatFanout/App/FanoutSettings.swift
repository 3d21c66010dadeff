import Kafka
import ServiceKit

/// chat-fanout's own keys (docs/configuration.md, "Chat-fanout keys"), read and checked at startup.
struct FanoutSettings: Sendable {
    /// `fanout.batch-size`: most records one poll hands to the fan-out.
    var batchSize: Int
    /// `fanout.fetch-batch-ms`: under load, how long the message consumer's next fetch waits at the
    /// broker for more (`ServiceSettings.fetchBatchMilliseconds(_:)`). Each fetch answer is one
    /// round of Produce requests, so it also sets how many answers each gateway's delivery
    /// reader gets: at 1 000 msgs/s, 2 ms takes chat-fanout's CPU down by a third and adds about
    /// 1.7 ms to p50 (docs/benchmarks.md, part 38).
    var fetchBatchMilliseconds: Int

    init(_ settings: ServiceSettings) throws {
        batchSize = try settings.int("fanout.batch-size")
        guard batchSize > 0 else { throw StartupError("fanout.batch-size (FANOUT_BATCH_SIZE, --fanout-batch-size) must be at least 1, not \(batchSize)") }
        fetchBatchMilliseconds = try settings.fetchBatchMilliseconds("fanout.fetch-batch-ms")
    }
}

extension FanoutConsumer {
    /// The group consumer's configuration from the platform's settings (the real-time path's
    /// fetch wait and min bytes) and chat-fanout's own (its batch wait and batch size).
    static func configuration(client: KafkaClientConfiguration, platform: PlatformSettings, fanout: FanoutSettings) -> KafkaConsumerConfiguration {
        configuration(
            client: client, fetchWaitMilliseconds: platform.kafkaDeliveryFetchWaitMilliseconds, fetchMinBytes: platform.kafkaDeliveryFetchMinBytes,
            fetchBatchMilliseconds: fanout.fetchBatchMilliseconds, batchSize: fanout.batchSize)
    }
}
