import Events
import Kafka

extension Topic {
    /// The admin specification of a catalog topic.
    public var specification: KafkaTopicSpecification {
        KafkaTopicSpecification(name: name, partitions: partitions, config: ["cleanup.policy": cleanupPolicy.rawValue])
    }
}
