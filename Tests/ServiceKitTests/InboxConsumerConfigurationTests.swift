import Kafka
import ServiceKit
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
}
