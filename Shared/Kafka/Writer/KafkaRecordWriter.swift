import CRdKafka
import Foundation
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A producer that a thread which may block hands a batch to and waits on: one outcome per
/// record, in order (`KafkaBlockingProducer` through librdkafka, `KafkaRecordWriter` without it).
public protocol KafkaBlockingSender: Sendable {
    /// Sends `messages` and blocks until each has its outcome; order within a partition is kept.
    /// Never call it from the cooperative pool.
    func sendAll(_ messages: [KafkaProducerMessage]) -> [Result<KafkaDeliveryReport, any Error>]
}

extension KafkaBlockingProducer: KafkaBlockingSender {}

/// Writes records to the partitions they name over the Kafka protocol, on the calling thread,
/// without librdkafka: per call, one Produce request per leader carrying each partition's records
/// as one uncompressed batch (more requests, one after another, for records that exceed a
/// batch's `message.max.bytes`), acknowledged by all in-sync replicas (acks=-1). The caller's thread
/// sends the requests on blocking sockets and sleeps until the answers are in: no broker thread to
/// hand the records to, no delivery reports to wake the caller with. For the hot producer of the
/// real-time path (chat-fanout's deliveries, produced and awaited on its consumer's poll thread),
/// where librdkafka's thread hand-offs cost more than the work itself (docs/benchmarks.md, part 18).
///
/// What it is not: a partitioner (each record names its partition), an idempotent or
/// transactional producer, a compressor, or a TLS/SASL client — `canWrite(_:)` tells whether a
/// configuration is one it serves. It does not retry: a record's failure is its outcome, and the
/// caller sends it again. Order within a partition holds because the caller waits for each call's
/// outcomes, and sends the failed records again, before its next call (as chat-fanout does); a
/// record whose acknowledgement was lost may then be written twice (at least once, like any
/// producer without idempotence). It finds leaders with Metadata, keeps one connection per broker,
/// and forgets a partition's leader (asking again next time) when a request for it fails. Calls
/// from several threads are served one after another.
public final class KafkaRecordWriter: Service, KafkaBlockingSender, Sendable {
    public let configuration: KafkaProducerConfiguration
    private let bootstrap: [KafkaBrokerAddress]
    private let state: Mutex<State>
    private let logger: Logger
    /// The largest record batch sent: `message.max.bytes` from the configuration's properties, or
    /// librdkafka's (and Kafka's) default of about 1 MB. A broker refuses a larger one.
    let maxBatchBytes: Int

    private struct State: ~Copyable {
        var leaders: [TopicPartition: KafkaBrokerAddress] = [:]
        var connections: [KafkaBrokerAddress: BlockingKafkaConnection] = [:]
        var closed = false
    }

    /// The writer has been stopped (its service's graceful shutdown).
    public struct Stopped: Error, CustomStringConvertible {
        public var description: String { "the record writer has stopped" }
    }

    /// Whether `configuration` is one this writer serves: a plaintext client with a bootstrap list.
    public static func canWrite(_ configuration: KafkaProducerConfiguration) -> Bool {
        configuration.client.security == .plaintext && KafkaBrokerAddress.parseList(configuration.client.bootstrapServers) != nil
    }

    /// Throws for a configuration `canWrite` refuses. `configuration.messageTimeoutMilliseconds`
    /// bounds each request at the broker; a call, metadata and connecting included, returns at
    /// most 5 s after it.
    public init(configuration: KafkaProducerConfiguration, logger: Logger) throws {
        guard Self.canWrite(configuration), let bootstrap = KafkaBrokerAddress.parseList(configuration.client.bootstrapServers) else {
            throw KafkaError(code: RD_KAFKA_RESP_ERR__INVALID_ARG.rawValue, message: "a record writer needs a plaintext client")
        }
        self.configuration = configuration
        self.bootstrap = bootstrap
        self.logger = logger
        let limit = configuration.properties["message.max.bytes"] ?? configuration.client.properties["message.max.bytes"]
        maxBatchBytes = limit.flatMap { Int($0) }.map { max($0, 1_000) } ?? 1_000_000
        state = Mutex(State())
    }

    /// Writes `messages` (each with its `partition` set), blocking the calling thread until every
    /// record has its outcome, in order: a record's error is its outcome.
    public func sendAll(_ messages: [KafkaProducerMessage]) -> [Result<KafkaDeliveryReport, any Error>] {
        state.withLock { state in write(messages, &state) }
    }

    /// Waits for graceful shutdown, then closes the connections; later calls fail with `Stopped`.
    public func run() async throws {
        try? await gracefulShutdown()
        state.withLock { state in
            state.closed = true
            for connection in state.connections.values { connection.close() }
            state.connections.removeAll()
        }
    }

    // MARK: - Under the lock

    private typealias Outcome = Result<KafkaDeliveryReport, any Error>

    private func write(_ messages: [KafkaProducerMessage], _ state: inout State) -> [Outcome] {
        guard !state.closed else { return messages.map { _ in .failure(Stopped()) } }
        // The whole call, metadata and connections included, ends 5 s after the request timeout.
        let timeout = Int32(clamping: configuration.messageTimeoutMilliseconds)
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout) + 5_000)
        var outcomes = [Outcome?](repeating: nil, count: messages.count)
        // Each partition's records, in the order of the call.
        var partitions: [TopicPartition] = []
        var records: [TopicPartition: [Int]] = [:]
        for (index, message) in messages.enumerated() {
            guard let partition = message.partition, partition >= 0 else {
                outcomes[index] = .failure(KafkaError(code: RD_KAFKA_RESP_ERR__INVALID_ARG.rawValue, message: "a record writer needs each record's partition"))
                continue
            }
            let key = TopicPartition(topic: message.topic, partition: partition)
            if records[key] == nil { partitions.append(key) }
            records[key, default: []].append(index)
        }
        var unknownTopics: [String] = []
        for partition in partitions where state.leaders[partition] == nil && !unknownTopics.contains(partition.topic) {
            unknownTopics.append(partition.topic)
        }
        let lookup: Result<KafkaClientMessages.ClusterMetadata, any Error>? =
            unknownTopics.isEmpty ? nil : refreshLeaders(of: unknownTopics, until: deadline, &state)

        // Each partition's records in batches no larger than the broker takes; a Produce request
        // carries one batch per partition, so round r sends every partition's r-th batch, and a
        // partition whose batch failed sends no later one (its records fail with it, in order).
        var batches: [(leader: KafkaBrokerAddress, partition: TopicPartition, batches: [[Int]])] = []
        for partition in partitions {
            let indices = records[partition] ?? []
            guard let leader = state.leaders[partition] else {
                let error: any Error =
                    switch lookup {
                    case .success(let metadata):
                        metadata.leader(of: partition.topic, partition: partition.partition).failure ?? KafkaErrorCode.leaderNotAvailable
                    case .failure(let error): error
                    case nil: KafkaErrorCode.leaderNotAvailable
                    }
                for index in indices { outcomes[index] = .failure(error) }
                continue
            }
            batches.append((leader, partition, RecordBatchEncoder.batches(indices, of: messages, maxBytes: maxBatchBytes)))
        }
        let timestamp = Int64((Date().timeIntervalSince1970 * 1000).rounded())
        var failed: [TopicPartition: any Error] = [:]
        for round in 0..<(batches.map(\.batches.count).max() ?? 0) {
            var byLeader: [(KafkaBrokerAddress, [(TopicPartition, [Int])])] = []
            for entry in batches where round < entry.batches.count {
                if let error = failed[entry.partition] {
                    for index in entry.batches[round] { outcomes[index] = .failure(error) }
                    continue
                }
                if let at = byLeader.firstIndex(where: { $0.0 == entry.leader }) {
                    byLeader[at].1.append((entry.partition, entry.batches[round]))
                } else {
                    byLeader.append((entry.leader, [(entry.partition, entry.batches[round])]))
                }
            }
            failed.merge(
                produce(byLeader, of: messages, timeout: timeout, timestamp: timestamp, until: deadline, &outcomes, &state)
            ) { first, _ in first }
        }
        return outcomes.map { $0 ?? .failure(KafkaErrorCode.leaderNotAvailable) }
    }

    /// One Produce request per leader, every request sent before any answer is awaited; fills the
    /// records' outcomes and returns the partitions that failed, with their error.
    private func produce(
        _ byLeader: [(KafkaBrokerAddress, [(TopicPartition, [Int])])], of messages: [KafkaProducerMessage], timeout: Int32, timestamp: Int64,
        until deadline: ContinuousClock.Instant, _ outcomes: inout [Outcome?], _ state: inout State
    ) -> [TopicPartition: any Error] {
        var failed: [TopicPartition: any Error] = [:]
        var waiting: [(BlockingKafkaConnection, [(TopicPartition, [Int])])] = []
        for (leader, leaderPartitions) in byLeader {
            do {
                let connection = try self.connection(to: leader, until: deadline, &state)
                let body = KafkaClientMessages.produceRequest(
                    leaderPartitions.map { partition, indices in (partition.topic, partition.partition, ArraySlice(indices.map { messages[$0] })) },
                    timeoutMilliseconds: timeout, timestampMilliseconds: timestamp)
                try connection.send(.produce, version: KafkaClientMessages.produceVersion, body: body, until: deadline)
                waiting.append((connection, leaderPartitions))
            } catch {
                fail(leaderPartitions, error, &outcomes, &state)
                for (partition, _) in leaderPartitions { failed[partition] = error }
            }
        }
        for (connection, leaderPartitions) in waiting {
            let produced: [TopicPartition: (error: Int16, baseOffset: Int64)]
            do {
                produced = try KafkaClientMessages.produced(in: connection.receive(until: deadline))
            } catch {
                if error is KafkaWireError { connection.close() }  // an answer that is not one
                fail(leaderPartitions, error, &outcomes, &state)
                for (partition, _) in leaderPartitions { failed[partition] = error }
                continue
            }
            for (partition, indices) in leaderPartitions {
                guard let (error, baseOffset) = produced[partition], error == 0 else {
                    // NOT_LEADER, UNKNOWN_TOPIC_OR_PARTITION and their kind: ask again next time.
                    state.leaders[partition] = nil
                    let failure: any Error =
                        produced[partition].map { KafkaErrorCode(rawValue: $0.error) } ?? KafkaWireError("a Produce answer without \(partition)")
                    for index in indices { outcomes[index] = .failure(failure) }
                    failed[partition] = failure
                    continue
                }
                for (delta, index) in indices.enumerated() {
                    outcomes[index] = .success(KafkaDeliveryReport(topic: partition.topic, partition: partition.partition, offset: baseOffset + Int64(delta)))
                }
            }
        }
        return failed
    }

    private func fail(_ partitions: [(TopicPartition, [Int])], _ error: any Error, _ outcomes: inout [Outcome?], _ state: inout State) {
        for (partition, indices) in partitions {
            state.leaders[partition] = nil
            for index in indices { outcomes[index] = .failure(error) }
        }
    }

    /// Asks the bootstrap brokers, in order, for `topics`' partitions and remembers their leaders;
    /// the answer, or the last broker's error.
    private func refreshLeaders(
        of topics: [String], until deadline: ContinuousClock.Instant, _ state: inout State
    ) -> Result<KafkaClientMessages.ClusterMetadata, any Error> {
        var lastError: any Error = KafkaConnectionClosed()
        for address in bootstrap {
            do {
                let connection = try connection(to: address, until: deadline, &state)
                try connection.send(
                    .metadata, version: KafkaClientMessages.metadataVersion, body: KafkaClientMessages.metadataRequest(topics: topics), until: deadline)
                let metadata = try KafkaClientMessages.ClusterMetadata(connection.receive(until: deadline))
                for (topic, entry) in metadata.topics {
                    for partition in entry.partitions.keys {
                        if case .success(let leader) = metadata.leader(of: topic, partition: partition) {
                            state.leaders[TopicPartition(topic: topic, partition: partition)] = leader
                        }
                    }
                }
                return .success(metadata)
            } catch {
                lastError = error
            }
        }
        return .failure(lastError)
    }

    /// The open connection to `address`, or a new one (a broken one, or one the broker closed while
    /// it was idle, is forgotten along with the leaders it served).
    private func connection(
        to address: KafkaBrokerAddress, until deadline: ContinuousClock.Instant, _ state: inout State
    ) throws -> BlockingKafkaConnection {
        if let connection = state.connections[address] {
            if connection.isUsable { return connection }
            state.connections[address] = nil
            state.leaders = state.leaders.filter { $0.value != address }
        }
        do {
            let connection = try BlockingKafkaConnection(
                to: address, clientId: configuration.client.clientId, timeout: min(.seconds(5), deadline - ContinuousClock.now))
            state.connections[address] = connection
            return connection
        } catch {
            logger.debug("Kafka record writer could not connect", metadata: ["kafka.broker": "\(address)", "error": "\(error)"])
            throw error
        }
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
