import Events
import Kafka

extension Topic {
    /// How long the catalog's delete-policy topics keep records: the specifications set no
    /// `retention.ms`, so the broker's default applies (Kafka: 7 days). Inbox retention must exceed it.
    public static let retentionHours = 7 * 24

    /// The admin specification of a catalog topic.
    public var specification: KafkaTopicSpecification {
        KafkaTopicSpecification(name: name, partitions: partitions, config: ["cleanup.policy": cleanupPolicy.rawValue])
    }
}
