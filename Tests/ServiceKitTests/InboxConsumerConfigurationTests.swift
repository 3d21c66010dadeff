import Foundation
import Kafka
import ServiceKit
import Synchronization
import TestSupport
import Testing

/// `KafkaConsumerConfiguration.withInboxLinger`: an inbox consumer's linger (push's planner) is
/// gathered at the broker when the consumer fetches itself, and held in the process otherwise
/// (docs/benchmarks.md, part 35).
@Suite("Inbox consumers: where a linger is gathered")
struct InboxConsumerConfigurationTests {
    static func group(reset: KafkaConsumerConfiguration.OffsetReset = .earliest)
        -> KafkaConsumerConfiguration
    {
        let client = KafkaClientConfiguration(bootstrapServers: "127.0.0.1:9092,127.0.0.1:9093", clientId: "test")
        var config = KafkaConsumerConfiguration(client: client, mode: .group(id: "push.messages", topics: ["chat.message.v1"]))
        config.autoOffsetReset = reset
        return config
    }

    @Test("fetching itself, a linger becomes the fetch's batch wait: the broker holds a loaded fetch for it, the process holds nothing")
    func nativeReaderBatchesAtTheBroker() {
        let config = Self.group().withInboxLinger(milliseconds: 20, fetchesItself: true)
        #expect(config.fetchBatchWaitMilliseconds == 20)
        #expect(config.batchLingerMilliseconds == 0)
    }

    @Test("through librdkafka, or a configuration the own fetcher does not take, the linger stays in the process")
    func otherReadersKeepTheLinger() {
        for (config, fetchesItself) in [(Self.group(), false), (Self.group(reset: .latest), true)] {
            let made = config.withInboxLinger(milliseconds: 20, fetchesItself: fetchesItself)
            #expect(made.batchLingerMilliseconds == 20, "\(fetchesItself)")
            #expect(made.fetchBatchWaitMilliseconds == 0, "\(fetchesItself)")
        }
    }

    @Test("without a linger nothing changes: records are fetched and handed out as they come")
    func noLinger() {
        let config = Self.group().withInboxLinger(milliseconds: 0, fetchesItself: true)
        #expect(config.fetchBatchWaitMilliseconds == 0)
        #expect(config.batchLingerMilliseconds == 0)
    }

    /// Against the embedded broker (the real Kafka protocol): with the linger at the broker, a lone
    /// record after a quiet spell is handed out at once (held in the process it would wait the
    /// whole linger), and records trickled in under load come in a few batches, each once, in order.
    @Test("through the embedded broker: a lone record is not held for the linger; a trickle comes in few batches, each record once and in order")
    func lingerAtTheBroker() async throws {
        let linger = 5_000
        let cluster = try TestKafka.cluster(brokers: 1, engine: .swift)
        let topic = TestKafka.uniqueTopic("inbox-linger")
        try cluster.createTopic(topic, partitions: 1)
        let consumer = try TestKafka.groupConsumer(cluster, group: "g-\(topic)", topics: [topic]) {
            $0 = $0.withInboxLinger(milliseconds: linger, fetchesItself: true)
        }
        let handled = Mutex<(values: [String], batches: [Int], last: ContinuousClock.Instant?)>(([], [], nil))
        let running = Task {
            try await consumer.consumeFetching { batch in
                handled.withLock {
                    $0.values += batch.map { String(decoding: $0.value ?? [], as: UTF8.self) }
                    $0.batches.append(batch.count)
                    $0.last = .now
                }
            }
        }
        let producer = try TestKafka.producer(cluster) { $0.compression = "none" }
        func send(_ value: String) async throws {
            try await producer.send(KafkaProducerMessage(topic: topic, key: "k", value: Array(value.utf8), partition: 0))
            try await producer.flush()
        }
        try await send("v0")
        try await Eventually.wait("the first record", timeout: .seconds(60)) { handled.withLock { $0.values.count } >= 1 }
        // Past any fetch still waiting the linger for more: the consumer is idle.
        try await Task.sleep(for: .milliseconds(linger + 1_000))
        let sent = ContinuousClock.now
        try await send("v1")
        try await Eventually.wait("the lone record", timeout: .seconds(30)) { handled.withLock { $0.values.count } >= 2 }
        let lone = handled.withLock { $0.last.map { sent.duration(to: $0) } } ?? .seconds(99)
        #expect(lone < .milliseconds(linger - 1_000), "a lone record is handed out at once, not after the \(linger) ms linger: \(lone)")

        let before = handled.withLock { $0.batches.count }
        for i in 2..<52 {
            try await send("v\(i)")
            try await Task.sleep(for: .milliseconds(3))
        }
        try await Eventually.wait("the trickle", timeout: .seconds(60)) { handled.withLock { $0.values.count } >= 52 }
        let (values, batches) = handled.withLock { ($0.values, $0.batches.count - before) }
        #expect(values == (0..<52).map { "v\($0)" }, "each record once, in order")
        #expect(batches <= 10, "\(batches) batches for 50 records ~3 ms apart")
        running.cancel()
        _ = await running.result
        await consumer.close()
    }
}
