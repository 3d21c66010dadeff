import CRdKafka
import Foundation
import Logging

/// Which in-process broker `EmbeddedKafkaCluster` runs.
public enum EmbeddedKafkaEngine: String, Sendable, CaseIterable {
    /// `EmbeddedKafkaBroker`: one broker written for the suite (indexed logs, fetches answered
    /// when data arrives).
    case swift
    /// librdkafka's mock cluster (one or more brokers).
    case mock

    /// `CHATSUITE_EMBEDDED_KAFKA` (`swift` or `mock`), else the Swift broker: at 1 000 msgs/s it
    /// takes half the mock's CPU or less and answers a fetch when data arrives (docs/benchmarks.md,
    /// part 13).
    public static var fromEnvironment: EmbeddedKafkaEngine {
        ProcessInfo.processInfo.environment["CHATSUITE_EMBEDDED_KAFKA"].flatMap(EmbeddedKafkaEngine.init(rawValue:)) ?? .swift
    }
}

/// An in-memory Kafka cluster hosted in this process, speaking the real Kafka protocol over TCP
/// on 127.0.0.1: the broker for the dev stack and tests. Either librdkafka's mock cluster or
/// `EmbeddedKafkaBroker` (see `EmbeddedKafkaEngine`). Neither answers CreateTopics nor compacts,
/// so the catalog's topics are created here with the right partition counts.
///
/// `@unchecked Sendable`: every stored property is immutable; with the mock, every
/// `rd_kafka_mock_*` function used here posts an operation to the mock cluster's own thread and
/// waits for it (librdkafka serialises them), so calls from several threads are safe; the mock is
/// destroyed once, in `deinit`, before the owning client handle. `EmbeddedKafkaBroker` is Sendable.
public final class EmbeddedKafkaCluster: @unchecked Sendable {
    private enum Backend {
        case mock(host: RdKafkaClient, cluster: OpaquePointer)
        case swift(EmbeddedKafkaBroker)
    }

    private let backend: Backend
    public let bootstrapServers: String
    public let brokerCount: Int
    public let engine: EmbeddedKafkaEngine

    /// - Parameter brokers: brokers of the mock cluster (the Swift broker is always one).
    public init(brokers: Int = 3, engine: EmbeddedKafkaEngine = .fromEnvironment, logger: Logger = Logger(label: "embedded-kafka")) throws {
        self.engine = engine
        switch engine {
        case .swift:
            let broker = try EmbeddedKafkaBroker(logger: logger)
            backend = .swift(broker)
            brokerCount = 1
            bootstrapServers = broker.bootstrapServers
        case .mock:
            let host = try RdKafkaClient(kind: .producer, properties: ["client.id": "embedded-kafka-host", "log_level": "3"], logger: logger)
            guard let cluster = rd_kafka_mock_cluster_new(host.pointer, Int32(brokers)) else {
                throw KafkaError.configuration("cannot start the embedded Kafka cluster")
            }
            backend = .mock(host: host, cluster: cluster)
            brokerCount = brokers
            bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
        }
    }

    deinit {
        if case .mock(let host, let cluster) = backend {
            rd_kafka_mock_cluster_destroy(cluster)
            withExtendedLifetime(host) {}
        }
    }

    public func createTopic(_ name: String, partitions: Int) throws {
        switch backend {
        case .swift(let broker):
            try broker.createTopic(name, partitions: partitions)
        case .mock(_, let cluster):
            let err = rd_kafka_mock_topic_create(cluster, name, Int32(partitions), Int32(min(3, brokerCount)))
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR || err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS else {
                throw KafkaError(err, "mock topic \(name)")
            }
        }
    }

    public func createTopics(_ specs: [KafkaTopicSpecification]) throws {
        for spec in specs { try createTopic(spec.name, partitions: spec.partitions) }
    }

    /// Takes every broker down (connections closed, new ones refused) to simulate an outage.
    public func setAllBrokersDown() {
        switch backend {
        case .swift(let broker): broker.setDown(true)
        case .mock(_, let cluster): for id in 1...brokerCount { rd_kafka_mock_broker_set_down(cluster, Int32(id)) }
        }
    }

    /// Makes the next `count` Produce requests (to any broker) fail with the broker error `code`,
    /// e.g. 10 (`MSG_SIZE_TOO_LARGE`) as a broker with a smaller `message.max.bytes` answers.
    public func failNextProduceRequests(_ count: Int, code: Int32) {
        switch backend {
        case .swift(let broker):
            broker.failNextProduceRequests(count, code: Int16(truncatingIfNeeded: code))
        case .mock(_, let cluster):
            let errors = [rd_kafka_resp_err_t](repeating: rd_kafka_resp_err_t(rawValue: code), count: count)
            errors.withUnsafeBufferPointer { rd_kafka_mock_push_request_errors_array(cluster, 0 /* ProduceRequest */, count, $0.baseAddress) }
        }
    }

    /// Makes the next `count` Produce requests' records for `topic` fail with the broker error
    /// `code`, other topics served (the Swift broker only: librdkafka's mock cannot target a topic).
    public func failNextProduceRequests(to topic: String, count: Int, code: Int16) throws {
        guard case .swift(let broker) = backend else { throw KafkaError.configuration("the mock cluster cannot fail one topic's produce requests") }
        broker.failNextProduceRequests(count, code: code, topic: topic)
    }

    /// The largest record batch the broker takes (the Swift broker only; librdkafka's mock has no
    /// such limit).
    public func setMaxBatchBytes(_ bytes: Int) throws {
        guard case .swift(let broker) = backend else { throw KafkaError.configuration("the mock cluster has no batch size limit") }
        broker.setMaxBatchBytes(bytes)
    }

    /// Injected Produce faults not yet used (the Swift broker; nil on the mock).
    public var pendingProduceFaults: Int? {
        guard case .swift(let broker) = backend else { return nil }
        return broker.pendingProduceFaults
    }

    public func setAllBrokersUp() {
        switch backend {
        case .swift(let broker): broker.setDown(false)
        case .mock(_, let cluster): for id in 1...brokerCount { rd_kafka_mock_broker_set_up(cluster, Int32(id)) }
        }
    }
}
