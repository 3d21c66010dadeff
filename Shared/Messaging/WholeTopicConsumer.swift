import Events
import Kafka

extension KafkaConsumerConfiguration {
    /// Reads every partition of `topic` from its beginning by manual assignment (no consumer
    /// group): how a process keeps a whole compacted topic as a table (chat-fanout's interest
    /// table, the gateway's session checkpoints).
    public static func wholeTopic(_ topic: Topic, client: KafkaClientConfiguration, role: String, fetchWaitMilliseconds: Int) -> KafkaConsumerConfiguration {
        let partitions = (0..<topic.partitions).map { TopicPartitionOffset(topic: topic.name, partition: Int32($0), offset: .beginning) }
        var configuration = KafkaConsumerConfiguration(client: client, mode: .assignment(partitions))
        configuration.client.clientId = "\(client.clientId)-\(role)"
        configuration.metricsName = role
        configuration.fetchWaitMaxMilliseconds = fetchWaitMilliseconds
        // A table is applied as fast as it arrives: 4 MiB of prefetch instead of librdkafka's
        // 64 MiB default (heaptrack: a gateway reading a long session topic held ~90 MiB of it).
        configuration.properties["queued.max.messages.kbytes"] = "4096"
        return configuration
    }
}
