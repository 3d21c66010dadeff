import Events
import Kafka

extension Topic {
    /// How long the catalog's delete-policy topics keep records: the specifications set no
    /// `retention.ms`, so the broker's default applies (Kafka: 7 days). Inbox retention must exceed it.
    public static let retentionHours = 7 * 24

    /// The admin specification of a catalog topic.
    public var specification: KafkaTopicSpecification {
        var config = ["cleanup.policy": cleanupPolicy.rawValue]
        if cleanupPolicy == .compact {
            // Compaction that keeps up with short-lived keys (sessions, interest): segments roll
            // hourly so the cleaner can reach them, tombstones are kept an hour for readers that
            // are behind, then dropped — so a reader loading the whole topic at start reads live
            // keys, not history.
            config["segment.ms"] = "3600000"
            config["delete.retention.ms"] = "3600000"
            config["min.cleanable.dirty.ratio"] = "0.1"
        }
        return KafkaTopicSpecification(name: name, partitions: partitions, config: config)
    }
}
