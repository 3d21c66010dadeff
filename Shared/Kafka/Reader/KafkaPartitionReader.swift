import CRdKafka
import Logging
import Metrics
import NIOCore

/// Reads one partition, from a fixed assignment's offset, over the Kafka protocol on a NIO event
/// loop instead of through librdkafka: each fetch's answer is decoded and handed to the
/// application on that loop, and the next fetch goes out from there. No broker thread, no
/// consumer queue, no poll thread: for the hot single-partition readers (the gateway's
/// deliveries), where librdkafka's thread hops cost more than the work itself.
///
/// What it is not: a group member (no commits, no rebalances), a reader of batches compressed
/// other than with lz4 or of message formats before v2, or a TLS/SASL client — `canRead(_:)` tells whether a
/// configuration is one it serves, and a batch it cannot read ends `run` with
/// `UnreadableBatch`, its offset, for librdkafka to carry on from. It follows the partition's
/// leader (metadata on every reconnect), reconnects with back-off, and resolves an offset out
/// of range as librdkafka's `auto.offset.reset` would: to the earliest kept offset if it fell
/// behind the log, else to the end.
public final class KafkaPartitionReader: Sendable {
    /// A batch this reader cannot decode starts at `offset` (everything before it was handed on).
    public struct UnreadableBatch: Error, CustomStringConvertible {
        public let offset: Int64
        public var description: String { "a record batch compressed other than with lz4, or pre-v2, at offset \(offset)" }
    }

    public let configuration: KafkaConsumerConfiguration
    private let topic: String
    private let partition: Int32
    private let start: TopicPartitionOffset.Offset
    private let bootstrap: [KafkaBrokerAddress]
    private let eventLoop: any EventLoop
    private let catchUp = KafkaCatchUp()
    private let lag: Gauge
    private let logger: Logger
    /// Fetch bounds: the answer's bytes start at 1 MiB (librdkafka's `max.partition.fetch.bytes`)
    /// and double, up to this, for a batch larger than that.
    static let maxFetchBytes: Int32 = 64 << 20

    /// Whether `configuration` is one this reader serves: a plaintext client reading one
    /// partition by assignment, from the beginning, the end or an offset.
    public static func canRead(_ configuration: KafkaConsumerConfiguration) -> Bool {
        guard configuration.client.security == .plaintext, KafkaBrokerAddress.parseList(configuration.client.bootstrapServers) != nil,
            case .assignment(let partitions) = configuration.mode, partitions.count == 1, partitions[0].offset != .stored
        else { return false }
        return true
    }

    /// Registers with the configuration's readiness registry (caught up once a fetch reached the
    /// partition's end), as `KafkaConsumer` does, and records its lag (`kafka_consumer_lag`, the
    /// records between its position and the partition's end after each fetch) with `metrics`.
    /// Throws for a configuration `canRead` refuses.
    public init(
        configuration: KafkaConsumerConfiguration, eventLoop: any EventLoop, logger: Logger, metrics: any MetricsFactory = MetricsSystem.factory
    ) throws {
        guard Self.canRead(configuration), case .assignment(let partitions) = configuration.mode, let first = partitions.first,
            let bootstrap = KafkaBrokerAddress.parseList(configuration.client.bootstrapServers)
        else {
            throw KafkaError(code: RD_KAFKA_RESP_ERR__INVALID_ARG.rawValue, message: "a partition reader needs a plaintext client and one assigned partition")
        }
        self.configuration = configuration
        self.topic = first.topic
        self.partition = first.partition
        self.start = first.offset
        self.bootstrap = bootstrap
        self.eventLoop = eventLoop
        self.logger = logger
        self.lag = Gauge(label: "kafka_consumer_lag", dimensions: [("consumer", configuration.lagLabel), ("topic", first.topic)], factory: metrics)
        catchUp.assigned([TopicPartition(topic: first.topic, partition: first.partition)])
        configuration.client.readiness?.register(configuration, catchUp)
    }

    public var isCaughtUp: Bool { catchUp.isCaughtUp }

    /// Reads until the calling task is cancelled, handing each fetch's records (never empty, in
    /// offset order) to `handler` on the reader's event loop, synchronously: the next fetch
    /// goes out when it returns. Throws `UnreadableBatch` for a batch only librdkafka can read.
    public func run(_ handler: @escaping @Sendable ([KafkaConsumerMessage]) -> Void) async throws {
        var offset: Int64?
        if case .exact(let exact) = start { offset = exact }
        var backoff = Duration.milliseconds(100)
        var failures = 0
        do {
            while !Task.isCancelled {
                do {
                    let end = try await session(from: offset, handler)
                    offset = end.offset
                    if end.progressed {
                        backoff = .milliseconds(100)
                        failures = 0
                    }
                    switch end.reason {
                    case .unreadable(let at): throw UnreadableBatch(offset: at)
                    case .partition(let error) where error == .offsetOutOfRange:
                        logger.warning("Kafka reader's offset is out of range; resetting", metadata: metadata(["kafka.offset": "\(end.offset)"]))
                        offset = try await resetOffset(end.offset)
                        continue
                    case .partition(let error):
                        throw error
                    case .failed(let error):
                        throw error
                    }
                } catch let error as UnreadableBatch {
                    throw error
                } catch {
                    if Task.isCancelled { break }
                    failures += 1
                    // The first failure in a row, then every tenth: a broker down for a while logs little.
                    if failures == 1 || failures % 10 == 0 {
                        logger.warning(
                            "Kafka reader lost its partition; reconnecting", metadata: metadata(["error": "\(error)", "kafka.failures": "\(failures)"]))
                    }
                    try await Task.sleep(for: backoff)
                    backoff = min(backoff * 2, .seconds(5))
                }
            }
        } catch let error as UnreadableBatch {
            throw error
        } catch is CancellationError {
        }
        catchUp.markClosed()
    }

    private func metadata(_ extra: Logger.Metadata) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["kafka.partition": "\(topic)[\(partition)]", "kafka.client": "\(configuration.client.clientId)"]
        metadata.merge(extra) { $1 }
        return metadata
    }

    /// Why a connection's fetches ended, at which offset, and whether any fetch was answered.
    struct SessionEnd {
        enum Reason {
            case unreadable(Int64)
            case partition(KafkaErrorCode)
            case failed(any Error)
        }
        var reason: Reason
        var offset: Int64
        var progressed: Bool
    }

    /// One connection to the partition's leader: finds it, resolves the start offset if it is not
    /// known yet, and fetches until something ends it (or the task is cancelled).
    private func session(from known: Int64?, _ handler: @escaping @Sendable ([KafkaConsumerMessage]) -> Void) async throws -> SessionEnd {
        let leader = try await findLeader()
        let connection = try await KafkaClientConnection.connect(
            to: leader, clientId: configuration.client.clientId, on: eventLoop, timeout: .seconds(5))
        return try await withTaskCancellationHandler {
            defer { connection.close() }
            let offset: Int64
            if let known {
                offset = known
            } else {
                offset = try await listOffset(on: connection, timestamp: start == .beginning ? KafkaClientMessages.earliest : KafkaClientMessages.latest)
            }
            let promise = eventLoop.makePromise(of: SessionEnd.self)
            let fetches = FetchLoop(
                connection: connection, topic: topic, partition: partition, offset: offset, configuration: configuration,
                catchUp: catchUp, lag: lag, handler: handler, end: promise)
            eventLoop.execute { fetches.fetch() }
            return try await promise.futureResult.get()
        } onCancel: {
            connection.close()
        }
    }

    private func findLeader() async throws -> KafkaBrokerAddress {
        var lastError: any Error = KafkaConnectionClosed()
        for address in bootstrap {
            do {
                let connection = try await KafkaClientConnection.connect(
                    to: address, clientId: configuration.client.clientId, on: eventLoop, timeout: .seconds(5))
                defer { connection.close() }
                let answer = try await connection.request(
                    .metadata, version: KafkaClientMessages.metadataVersion, body: KafkaClientMessages.metadataRequest(topic: topic))
                return try KafkaClientMessages.leader(of: topic, partition: partition, in: answer).get()
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    private func listOffset(on connection: KafkaClientConnection, timestamp: Int64) async throws -> Int64 {
        let answer = try await connection.request(
            .listOffsets, version: KafkaClientMessages.listOffsetsVersion,
            body: KafkaClientMessages.listOffsetsRequest(topic: topic, partition: partition, timestamp: timestamp))
        return try KafkaClientMessages.listedOffset(of: topic, partition: partition, in: answer).get()
    }

    /// An offset the broker no longer (or not yet) has: the earliest kept one if the reader fell
    /// behind the log's start, else the end.
    private func resetOffset(_ offset: Int64) async throws -> Int64 {
        let connection = try await KafkaClientConnection.connect(
            to: try await findLeader(), clientId: configuration.client.clientId, on: eventLoop, timeout: .seconds(5))
        defer { connection.close() }
        let earliest = try await listOffset(on: connection, timestamp: KafkaClientMessages.earliest)
        return offset < earliest ? earliest : try await listOffset(on: connection, timestamp: KafkaClientMessages.latest)
    }
}

/// One connection's fetches, on its event loop: a fetch, its answer handed to the application,
/// the next fetch, until an error or an unreadable batch completes `end`.
private final class FetchLoop: Sendable {
    let connection: KafkaClientConnection
    let topic: String
    let partition: Int32
    let configuration: KafkaConsumerConfiguration
    let catchUp: KafkaCatchUp
    let lag: Gauge
    let handler: @Sendable ([KafkaConsumerMessage]) -> Void
    let end: EventLoopPromise<KafkaPartitionReader.SessionEnd>
    /// `batching`: under load (the last answer brought records, and it was a batching fetch or came
    /// within `batchWait`), so the next fetch waits `batchWait` for more; records further apart
    /// are fetched as before, with no extra empty fetch after each. `sent`: when the fetch out went.
    private let state: NIOLoopBoundBox<(offset: Int64, maxBytes: Int32, progressed: Bool, batching: Bool, sent: NIODeadline)>
    private let maxWait: Int32
    private let minBytes: Int32
    private let batchWait: Int32

    init(
        connection: KafkaClientConnection, topic: String, partition: Int32, offset: Int64, configuration: KafkaConsumerConfiguration,
        catchUp: KafkaCatchUp, lag: Gauge, handler: @escaping @Sendable ([KafkaConsumerMessage]) -> Void,
        end: EventLoopPromise<KafkaPartitionReader.SessionEnd>
    ) {
        self.connection = connection
        self.topic = topic
        self.partition = partition
        self.configuration = configuration
        self.catchUp = catchUp
        self.lag = lag
        self.handler = handler
        self.end = end
        self.state = .makeBoxSendingValue((offset, 1 << 20, false, false, .now()), eventLoop: connection.eventLoop)
        self.maxWait = Int32(clamping: configuration.fetchWaitMaxMilliseconds)
        self.minBytes = Int32(clamping: Int(configuration.properties["fetch.min.bytes"] ?? "") ?? 1)
        self.batchWait = Int32(clamping: max(0, configuration.fetchBatchWaitMilliseconds))
    }

    /// On the loop.
    func fetch() {
        let (offset, maxBytes, progressed, batching, _) = state.value
        let batch = batching && batchWait > 0
        state.value.sent = .now()
        // The first fetch is answered at once: the partition's end (the catch-up) is not held up
        // by a long poll at an end the reader already sits at.
        let wait = !progressed ? 0 : batch ? batchWait : maxWait
        let body = KafkaClientMessages.fetchRequest(
            topic: topic, partition: partition, offset: offset, maxWaitMilliseconds: wait,
            minBytes: batch ? max(minBytes, KafkaConsumerConfiguration.batchFetchMinBytes) : minBytes, maxBytes: maxBytes)
        // The broker holds a fetch up to its wait; past that and 30 s more it went silent.
        connection.send(.fetch, version: KafkaClientMessages.fetchVersion, body: body, timeout: .milliseconds(Int64(wait) + 30_000))
            .assumeIsolated()
            .whenComplete { self.answered($0) }
    }

    private func finish(_ reason: KafkaPartitionReader.SessionEnd.Reason) {
        let (offset, _, progressed, _, _) = state.value
        end.succeed(.init(reason: reason, offset: offset, progressed: progressed))
    }

    private func answered(_ result: Result<ByteBuffer, any Error>) {
        do {
            let fetched = try KafkaClientMessages.fetchedPartition(topic, partition, in: result.get())
            guard fetched.error == 0 else { return finish(.partition(KafkaErrorCode(rawValue: fetched.error))) }
            state.value.progressed = true
            let records = try FetchedRecords(fetched.records ?? ByteBuffer(), topic: topic, partition: partition, from: state.value.offset)
            if !records.messages.isEmpty { handler(records.messages) }
            state.value.offset = records.nextOffset
            let underLoad = state.value.batching || .now() - state.value.sent <= .milliseconds(Int64(batchWait))
            state.value.batching = underLoad && !records.messages.isEmpty
            lag.record(max(0, fetched.highWatermark - records.nextOffset))
            if records.nextOffset >= fetched.highWatermark {
                catchUp.processed(.endOfPartition(TopicPartition(topic: topic, partition: partition), offset: records.nextOffset))
            }
            if let at = records.unreadableAt { return finish(.unreadable(at)) }
            if records.firstBatchCutShort {
                guard state.value.maxBytes < KafkaPartitionReader.maxFetchBytes else {
                    return finish(.failed(KafkaWireError("a record batch larger than \(KafkaPartitionReader.maxFetchBytes) bytes")))
                }
                state.value.maxBytes *= 2
            }
            fetch()
        } catch {
            finish(.failed(error))
        }
    }
}
