import CRdKafka
import Logging

/// librdkafka's mock cluster: real Kafka protocol over TCP on 127.0.0.1, in memory, hosted in this
/// process. The broker for the dev stack and tests. It does not answer CreateTopics and has no
/// compaction, so the catalog's topics are created here with the right partition counts.
///
/// `@unchecked Sendable`: the cluster pointer is immutable, and every `rd_kafka_mock_*` function
/// used here posts an operation to the mock cluster's own thread and waits for it (librdkafka
/// serialises them), so calls from several threads are safe. The cluster is destroyed once, in
/// `deinit`, before the owning client handle.
public final class EmbeddedKafkaCluster: @unchecked Sendable {
    private let host: RdKafkaClient
    private let cluster: OpaquePointer
    public let bootstrapServers: String
    public let brokerCount: Int

    public init(brokers: Int = 3, logger: Logger = Logger(label: "embedded-kafka")) throws {
        host = try RdKafkaClient(kind: .producer, properties: ["client.id": "embedded-kafka-host", "log_level": "3"], logger: logger)
        guard let cluster = rd_kafka_mock_cluster_new(host.pointer, Int32(brokers)) else {
            throw KafkaError.configuration("cannot start the embedded Kafka cluster")
        }
        self.cluster = cluster
        self.brokerCount = brokers
        self.bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
    }

    deinit {
        rd_kafka_mock_cluster_destroy(cluster)
    }

    public func createTopic(_ name: String, partitions: Int) throws {
        let err = rd_kafka_mock_topic_create(cluster, name, Int32(partitions), Int32(min(3, brokerCount)))
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR || err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS else {
            throw KafkaError(err, "mock topic \(name)")
        }
    }

    public func createTopics(_ specs: [KafkaTopicSpecification]) throws {
        for spec in specs { try createTopic(spec.name, partitions: spec.partitions) }
    }

    /// Takes every broker down (connections closed, new ones refused) to simulate an outage.
    public func setAllBrokersDown() {
        for id in 1...brokerCount { rd_kafka_mock_broker_set_down(cluster, Int32(id)) }
    }

    /// Makes the next `count` Produce requests (to any broker) fail with the broker error `code`,
    /// e.g. 10 (`MSG_SIZE_TOO_LARGE`) as a broker with a smaller `message.max.bytes` answers.
    public func failNextProduceRequests(_ count: Int, code: Int32) {
        let errors = [rd_kafka_resp_err_t](repeating: rd_kafka_resp_err_t(rawValue: code), count: count)
        errors.withUnsafeBufferPointer { rd_kafka_mock_push_request_errors_array(cluster, 0 /* ProduceRequest */, count, $0.baseAddress) }
    }

    public func setAllBrokersUp() {
        for id in 1...brokerCount { rd_kafka_mock_broker_set_up(cluster, Int32(id)) }
    }
}
