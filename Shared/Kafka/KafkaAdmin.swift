import CRdKafka
import Logging

public struct KafkaTopicSpecification: Sendable, Hashable {
    public var name: String
    public var partitions: Int
    /// -1 uses the broker's default replication factor.
    public var replicationFactor: Int
    public var config: [String: String]

    public init(name: String, partitions: Int, replicationFactor: Int = -1, config: [String: String] = [:]) {
        self.name = name
        self.partitions = partitions
        self.replicationFactor = replicationFactor
        self.config = config
    }
}

/// Topic administration at startup.
public enum KafkaAdmin {
    /// Makes sure every topic exists. Existing topics are left alone (idempotent). Fails with a
    /// clear error when the brokers cannot be reached within `timeout`.
    ///
    /// librdkafka's mock cluster does not answer CreateTopics; when creation times out or is
    /// unsupported but the topic exists in metadata (created by whoever hosts the mock), that is
    /// success.
    public static func ensureTopics(
        _ topics: [KafkaTopicSpecification],
        client configuration: KafkaClientConfiguration,
        timeout: Duration = .seconds(10),
        logger: Logger
    ) async throws {
        let client = try RdKafkaClient(kind: .producer, properties: configuration.baseProperties, logger: logger)
        let ms = Int32(timeout.components.seconds * 1000)
        let existing: [String: Int]
        do {
            existing = try await runBlocking { try client.metadata(timeoutMilliseconds: ms) }
        } catch {
            throw KafkaError.timedOut("Kafka brokers \(configuration.bootstrapServers) unreachable: \(error)")
        }
        let missing = topics.filter { existing[$0.name] == nil }
        for topic in topics where existing[topic.name].map({ $0 < topic.partitions }) == true {
            logger.warning(
                "Kafka topic has fewer partitions than the catalog",
                metadata: [
                    "kafka.topic": "\(topic.name)", "kafka.partitions": "\(existing[topic.name] ?? 0)", "kafka.expected": "\(topic.partitions)",
                ])
        }
        guard !missing.isEmpty else { return }
        logger.info("creating Kafka topics", metadata: ["kafka.topics": "\(missing.map(\.name).joined(separator: ","))"])
        let createError: KafkaError? = try await runBlocking { createTopics(missing, client: client, timeoutMilliseconds: ms) }
        if let createError {
            let after = (try? await runBlocking { try client.metadata(timeoutMilliseconds: ms) }) ?? [:]
            let stillMissing = missing.filter { after[$0.name] == nil }
            if !stillMissing.isEmpty {
                throw KafkaError(code: createError.code, message: "cannot create Kafka topics \(stillMissing.map(\.name)): \(createError.message)")
            }
        }
    }

    /// Returns nil on success (or "already exists"), else the first error.
    private static func createTopics(_ topics: [KafkaTopicSpecification], client: RdKafkaClient, timeoutMilliseconds: Int32) -> KafkaError? {
        var errstr = [CChar](repeating: 0, count: 512)
        var newTopics: [OpaquePointer?] = []
        defer { newTopics.forEach { rd_kafka_NewTopic_destroy($0) } }
        for t in topics {
            guard let nt = rd_kafka_NewTopic_new(t.name, Int32(t.partitions), Int32(t.replicationFactor), &errstr, errstr.count) else {
                return KafkaError.configuration("invalid topic \(t.name): \(String(errorBuffer: errstr))")
            }
            for (k, v) in t.config { rd_kafka_NewTopic_set_config(nt, k, v) }
            newTopics.append(nt)
        }
        guard let options = rd_kafka_AdminOptions_new(client.pointer, RD_KAFKA_ADMIN_OP_CREATETOPICS) else {
            return KafkaError.configuration("cannot create admin options")
        }
        defer { rd_kafka_AdminOptions_destroy(options) }
        rd_kafka_AdminOptions_set_request_timeout(options, timeoutMilliseconds, &errstr, errstr.count)
        rd_kafka_AdminOptions_set_operation_timeout(options, timeoutMilliseconds, &errstr, errstr.count)
        guard let resultQueue = rd_kafka_queue_new(client.pointer) else { return KafkaError.configuration("cannot create queue") }
        defer { rd_kafka_queue_destroy(resultQueue) }
        newTopics.withUnsafeMutableBufferPointer { buffer in
            rd_kafka_CreateTopics(client.pointer, buffer.baseAddress, buffer.count, options, resultQueue)
        }
        guard let event = rd_kafka_queue_poll(resultQueue, timeoutMilliseconds + 1000) else {
            return KafkaError.timedOut("CreateTopics timed out")
        }
        defer { rd_kafka_event_destroy(event) }
        let eventErr = rd_kafka_event_error(event)
        if eventErr != RD_KAFKA_RESP_ERR_NO_ERROR { return KafkaError(eventErr, "CreateTopics") }
        guard let result = rd_kafka_event_CreateTopics_result(event) else { return KafkaError.configuration("unexpected admin result") }
        var count = 0
        guard let results = rd_kafka_CreateTopics_result_topics(result, &count) else { return nil }
        for i in 0..<count {
            let r = results[i]
            let err = rd_kafka_topic_result_error(r)
            if err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS {
                let name = String(cString: rd_kafka_topic_result_name(r))
                let text = rd_kafka_topic_result_error_string(r).map { String(cString: $0) } ?? ""
                return KafkaError(code: err.rawValue, message: "\(name): \(text)")
            }
        }
        return nil
    }
}

extension KafkaAdmin {
    /// Topics and their partition counts, as the cluster reports them.
    public static func partitionCounts(client configuration: KafkaClientConfiguration, timeout: Duration = .seconds(10), logger: Logger) async throws
        -> [String: Int]
    {
        let client = try RdKafkaClient(kind: .producer, properties: configuration.baseProperties, logger: logger)
        let ms = Int32(timeout.components.seconds * 1000)
        return try await runBlocking { try client.metadata(timeoutMilliseconds: ms) }
    }
}
