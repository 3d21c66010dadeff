import CRdKafka
import Common
import Dispatch
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// Consumer as a `Service`: a consumer group member (subscribe) or a fixed-assignment reader.
///
/// Messages are pulled through `events`/`messages` (an `AsyncSequence`); each pull hops to this
/// consumer's own serial Dispatch queue for the blocking `rd_kafka_consumer_poll`, so polling
/// never blocks the cooperative pool, and poll and close never run at the same time.
/// At-least-once: offsets are stored only by `storeOffset(_:)` after processing and committed in
/// the background, on rebalance and on close.
///
/// Each consumer tracks whether it caught up (`isCaughtUp`, see `KafkaCatchUp`); one created
/// from a client configuration with a `readiness` registry registers there, which is what the
/// services' `/health/ready` waits for.
public final class KafkaConsumer: Service, Sendable {
    let client: RdKafkaClient
    private let queue: DispatchQueue
    let logger: Logger
    private let closed = Atomic<Bool>(false)
    /// `close()` was called: a `consumeOnPollThread` loop holding `queue` ends at its next poll,
    /// so the close queued behind it can run.
    private let closeRequested = Atomic<Bool>(false)
    public let configuration: KafkaConsumerConfiguration
    let lag: ConsumerLag
    /// Partitions whose end offsets were asked of the broker for the catch-up (once each).
    private let endsAsked = Mutex<Set<TopicPartition>>([])

    public init(configuration: KafkaConsumerConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        self.client = try RdKafkaClient(kind: .consumer, properties: configuration.librdkafkaProperties, logger: logger)
        self.queue = DispatchQueue(label: "kafka-consumer-\(configuration.client.clientId)")
        self.lag = ConsumerLag(consumer: configuration.lagLabel)
        rd_kafka_poll_set_consumer(client.pointer)
        switch configuration.mode {
        case .group(_, let topics):
            let list = rd_kafka_topic_partition_list_new(Int32(topics.count))
            defer { rd_kafka_topic_partition_list_destroy(list) }
            for topic in topics {
                rd_kafka_topic_partition_list_add(list, topic, -1)  // RD_KAFKA_PARTITION_UA
            }
            let err = rd_kafka_subscribe(client.pointer, list)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(err, "subscribe to \(topics) failed") }
        case .assignment(let partitions):
            let list = rd_kafka_topic_partition_list_new(Int32(partitions.count))
            defer { rd_kafka_topic_partition_list_destroy(list) }
            for p in partitions {
                let elem = rd_kafka_topic_partition_list_add(list, p.topic, p.partition)
                elem?.pointee.offset = p.offset.rawValue
            }
            let err = rd_kafka_assign(client.pointer, list)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(err, "assign failed") }
            let assigned = partitions.map { TopicPartition(topic: $0.topic, partition: $0.partition) }
            client.context.assignment.withLock { $0 = Set(assigned) }
            // A partition read from its end held nothing to process when assigned: it is not
            // waited for (its first fetch answer would come only once a long poll is over).
            client.context.catchUp.assigned(partitions.filter { $0.offset != .end }.map { TopicPartition(topic: $0.topic, partition: $0.partition) })
        }
        configuration.client.readiness?.register(configuration, client.context.catchUp)
    }

    /// Whether the consumer has its assignment and processed every record its partitions held
    /// when assigned (see `KafkaCatchUp`). Stays true once reached, until the consumer closes.
    public var isCaughtUp: Bool { client.context.catchUp.isCaughtUp }

    /// The catch-up state in a few words, for readiness answers and logs.
    public var catchUpSummary: String { client.context.catchUp.summary }

    /// The application finished with `event` (the sequences call this when asked for the next one).
    func finished(_ event: KafkaConsumerEvent) {
        if client.context.catchUp.processed(event) { logCaughtUp() }
    }

    func logCaughtUp() {
        logger.info("Kafka consumer caught up", metadata: ["kafka.client": "\(configuration.client.clientId)"])
    }

    /// Messages and end-of-partition markers, in partition order. One iterator at a time.
    public var events: KafkaConsumerEvents { KafkaConsumerEvents(consumer: self) }

    /// Only the messages of `events`.
    public var messages: some AsyncSequence<KafkaConsumerMessage, any Error> & Sendable {
        events.compactMap(\.message)
    }

    /// One element per poll: the events one blocking poll returned (never empty), in partition
    /// order, for consumers that process a poll's records together. One iterator at a time, and
    /// not together with `events`.
    public var batches: KafkaConsumerBatches { KafkaConsumerBatches(consumer: self) }

    /// Marks `message` as processed; its offset + 1 is committed with the next commit.
    public func storeOffset(_ message: KafkaConsumerMessage) throws {
        let list = rd_kafka_topic_partition_list_new(1)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let elem = rd_kafka_topic_partition_list_add(list, message.topic, message.partition)
        elem?.pointee.offset = message.offset + 1
        let err = rd_kafka_offsets_store(client.pointer, list)
        if err == RD_KAFKA_RESP_ERR__STATE || err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION {
            // The partition was revoked meanwhile; its new owner re-reads from the last commit.
            logger.debug("offset not stored for revoked partition", metadata: ["kafka.partition": "\(message.topic)[\(message.partition)]"])
            return
        }
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(err, "offset store failed") }
    }

    /// Commits stored offsets now and waits for the coordinator's answer, at most `timeout`
    /// (`_TIMED_OUT` past it: the coordinator may be gone for good).
    public func commit(timeout: Duration = .seconds(10)) async throws {
        let client = self.client
        try await runBlocking {
            let err = client.commitStored(until: .now + timeout)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR || err == RD_KAFKA_RESP_ERR__NO_OFFSET else {
                throw KafkaError(err, "commit failed")
            }
        }
    }

    /// Partitions currently assigned to this member.
    public var assignment: Set<TopicPartition> { client.context.assignment.withLock { $0 } }

    /// Rebalance callbacks served so far (assign and revoke each count once).
    public var rebalanceCount: Int { client.context.rebalances.load(ordering: .relaxed) }

    public var isClosed: Bool { closed.load(ordering: .relaxed) }

    /// Low and high watermarks of a partition as the broker reports them.
    public func watermarks(topic: String, partition: Int32, timeout: Duration = .seconds(5)) async throws -> (low: Int64, high: Int64) {
        let client = self.client
        let ms = Int32(timeout.components.seconds * 1000)
        return try await runBlocking {
            var low: Int64 = 0
            var high: Int64 = 0
            let err = rd_kafka_query_watermark_offsets(client.pointer, topic, partition, &low, &high, ms)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(err, "watermark query failed") }
            return (low, high)
        }
    }

    public func run() async throws {
        try? await gracefulShutdown()
        await close()
    }

    /// Leaves the group (committing stored offsets through the final revoke) and ends `events`,
    /// within `configuration.closeTimeout`, or sooner when the calling task is cancelled (a
    /// service past its graceful-shutdown limit): with no broker answering, librdkafka 2.0.2's
    /// close waits for the group coordinator indefinitely (librdkafka #4519), and a service's
    /// shutdown with it. A consumer given up is left unclosed (logged); its group times it out.
    public func close() async {
        guard !closed.load(ordering: .relaxed) else { return }
        closeRequested.store(true, ordering: .relaxed)
        let client = self.client
        let logger = self.logger
        let bound = configuration.closeTimeout
        let abandoned = Locked(false)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                queue.async {
                    if !self.closed.load(ordering: .relaxed) {
                        let giveUp = { abandoned.value }
                        let start = ContinuousClock.now
                        if case .group = self.configuration.mode {
                            let err = client.commitStored(until: start + bound / 2, giveUp: giveUp)
                            if err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR__NO_OFFSET {
                                logger.warning("Kafka commit on close failed", metadata: ["kafka.error": "\(KafkaError(err))"])
                            }
                        }
                        if case .failure(let error) = client.closeConsumer(until: start + bound, giveUp: giveUp) {
                            logger.warning("Kafka consumer close failed", metadata: ["kafka.error": "\(error)"])
                        }
                        self.closed.store(true, ordering: .relaxed)
                        client.context.catchUp.markClosed()
                    }
                    continuation.resume()
                }
            }
        } onCancel: {
            abandoned.withLock { $0 = true }
        }
    }

    /// One blocking poll on the consumer queue: up to `maxBatchSize` events, or none after 100 ms;
    /// after the first one, what else is queued, or arrives within `batchLingerMilliseconds`.
    /// End-of-partition events are always included (the catch-up needs them); the sequences
    /// hand them to the application only with `reportEndOfPartition`.
    func pollBatch() async throws -> [KafkaConsumerEvent] {
        try await runBlocking(on: queue) { try self.pollBatchBlocking() }
    }

    /// `pollBatch`'s work, on `queue`.
    func pollBatchBlocking() throws -> [KafkaConsumerEvent] {
        let maxBatch = configuration.maxBatchSize
        let linger = Duration.milliseconds(max(0, configuration.batchLingerMilliseconds))
        guard !closed.load(ordering: .relaxed) else { return [] }
        if let fatal = client.context.fatalError.withLock({ $0 }) { throw fatal }
        var batch: [KafkaConsumerEvent] = []
        var timeout: Int32 = 100
        var deadline: ContinuousClock.Instant?
        while batch.count < maxBatch, let raw = rd_kafka_consumer_poll(client.pointer, timeout) {
            // Then only what is queued, or arrives before the linger ends.
            if linger > .zero {
                let end = deadline ?? ContinuousClock.now + linger
                deadline = end
                timeout = ContinuousClock.now.duration(to: end).librdkafkaMilliseconds
            } else {
                timeout = 0
            }
            defer { rd_kafka_message_destroy(raw) }
            let err = raw.pointee.err
            if err == RD_KAFKA_RESP_ERR_NO_ERROR {
                batch.append(.message(KafkaConsumerMessage(raw)))
            } else if err == RD_KAFKA_RESP_ERR__PARTITION_EOF {
                let topic = raw.pointee.rkt.map { String(cString: rd_kafka_topic_name($0)) } ?? ""
                batch.append(.endOfPartition(TopicPartition(topic: topic, partition: raw.pointee.partition), offset: raw.pointee.offset))
            } else {
                let error = KafkaError(err, "consume")
                if error.isFatal { throw error }
                logger.warning("Kafka consume error", metadata: ["kafka.error": "\(error)"])
            }
        }
        observeEndOffsets()
        lag.update(client: client, assignment: client.context.assignment.withLock { $0 })
        return batch
    }

    /// Polls on this consumer's own thread and hands each poll's events to `handler` there,
    /// synchronously, until the calling task is cancelled, `close()` is called, a fatal error or
    /// `handler` throws (rethrown). The events are `batches`' (end-of-partition markers only with
    /// `reportEndOfPartition`), finished once `handler` returns. `handler`'s second argument
    /// tells whether the calling task was cancelled meanwhile (for a handler that retries).
    ///
    /// For a consumer whose processing never waits on the cooperative pool: a poll's records
    /// reach the application without a hop to the pool and back, two thread wake-ups per poll
    /// fewer than `batches`. Not together with `events` or `batches`.
    public func consumeOnPollThread(
        _ handler: @escaping @Sendable (_ batch: [KafkaConsumerEvent], _ stopping: () -> Bool) throws -> Void
    ) async throws {
        try await onPollThread { running, stopping in
            while running() { try self.pollAndHandle(handler, stopping) }
        }
    }

    /// One blocking poll, its events (what `keep` leaves of them) handed to `handler`
    /// (end-of-partition markers only with `reportEndOfPartition`), then marked finished. On the
    /// consumer's queue.
    func pollAndHandle(
        _ handler: ([KafkaConsumerEvent], () -> Bool) throws -> Void, _ stopping: @escaping @Sendable () -> Bool,
        keeping keep: (inout [KafkaConsumerEvent]) throws -> Void = { _ in }
    ) throws {
        var polled = try pollBatchBlocking()
        try keep(&polled)
        let batch = configuration.reportEndOfPartition ? polled : polled.filter { if case .message = $0 { true } else { false } }
        if !batch.isEmpty { try handler(batch, stopping) }
        polled.forEach(finished)
    }

    /// Runs `loop` on the consumer's queue. Its `running` turns false once the calling task is
    /// cancelled or `close()` is called, `stopping` once the task is cancelled; what `loop`
    /// throws is rethrown.
    func onPollThread(
        _ loop: @escaping @Sendable (_ running: @escaping @Sendable () -> Bool, _ stopping: @escaping @Sendable () -> Bool) throws -> Void
    ) async throws {
        let stop = StopFlag()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                queue.async {
                    continuation.resume(
                        with: Result {
                            try loop({ !stop.flag.load(ordering: .relaxed) && !self.closeRequested.load(ordering: .relaxed) }) {
                                stop.flag.load(ordering: .relaxed)
                            }
                        })
                }
            }
        } onCancel: {
            stop.flag.store(true, ordering: .relaxed)
        }
    }

    /// Until caught up: the end offsets of newly assigned partitions, as the fetcher last saw them
    /// (cached by librdkafka from fetch responses), or asked of the broker once before the first
    /// fetch answer. On the consumer queue; the questions of one call take at most
    /// `endQuestionsBudget`, so a broker that does not answer holds up the poll loop (and a
    /// shutdown) no longer than that per turn, however many partitions there are.
    private func observeEndOffsets() {
        let catchUp = client.context.catchUp
        let budgetEnd = ContinuousClock.now + Self.endQuestionsBudget
        for partition in catchUp.partitionsWithoutEnd() {
            var low: Int64 = -1
            var high: Int64 = -1
            let cached = rd_kafka_get_watermark_offsets(client.pointer, partition.topic, partition.partition, &low, &high)
            if cached != RD_KAFKA_RESP_ERR_NO_ERROR || high < 0 {
                // Nothing fetched yet: the broker is asked once (a ListOffsets round trip), so a
                // partition at its end is caught up without waiting out a long poll there.
                let left = ContinuousClock.now.duration(to: budgetEnd)
                guard left > .milliseconds(1), endsAsked.withLock({ $0.insert(partition).inserted }),
                    rd_kafka_query_watermark_offsets(client.pointer, partition.topic, partition.partition, &low, &high, left.librdkafkaMilliseconds)
                        == RD_KAFKA_RESP_ERR_NO_ERROR
                else { continue }
            }
            if catchUp.observed(low: low, high: high, for: partition) { logCaughtUp() }
        }
    }

    /// The longest one turn of the poll loop spends asking the broker for partitions' ends.
    static let endQuestionsBudget = Duration.seconds(1)
}

public struct KafkaConsumerEvents: AsyncSequence, Sendable {
    public typealias Element = KafkaConsumerEvent
    let consumer: KafkaConsumer

    public struct AsyncIterator: AsyncIteratorProtocol {
        let consumer: KafkaConsumer
        var buffer: [KafkaConsumerEvent] = []
        var index = 0
        /// The element returned last: asking for the next one means the application is done with it.
        var handedOut: KafkaConsumerEvent?

        public mutating func next() async throws -> KafkaConsumerEvent? {
            if let previous = handedOut {
                consumer.finished(previous)
                handedOut = nil
            }
            let reportEnds = consumer.configuration.reportEndOfPartition
            while true {
                while index < buffer.count {
                    let event = buffer[index]
                    index += 1
                    if case .endOfPartition = event, !reportEnds {
                        consumer.finished(event)  // everything before it was processed
                        continue
                    }
                    handedOut = event
                    return event
                }
                if Task.isCancelled || consumer.isClosed { return nil }
                buffer = try await consumer.pollBatch()
                index = 0
            }
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(consumer: consumer) }
}

public struct KafkaConsumerBatches: AsyncSequence, Sendable {
    public typealias Element = [KafkaConsumerEvent]
    let consumer: KafkaConsumer

    public struct AsyncIterator: AsyncIteratorProtocol {
        let consumer: KafkaConsumer
        /// The poll returned last (with any end-of-partition events not handed out): asking for
        /// the next batch means the application is done with it.
        var handedOut: [KafkaConsumerEvent] = []

        public mutating func next() async throws -> [KafkaConsumerEvent]? {
            handedOut.forEach(consumer.finished)
            handedOut = []
            let reportEnds = consumer.configuration.reportEndOfPartition
            while true {
                if Task.isCancelled || consumer.isClosed { return nil }
                let polled = try await consumer.pollBatch()
                let batch = reportEnds ? polled : polled.filter { if case .message = $0 { true } else { false } }
                if batch.isEmpty {
                    polled.forEach(consumer.finished)
                    continue
                }
                handedOut = polled
                return batch
            }
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(consumer: consumer) }
}

/// A flag the cancellation handler of `onPollThread` sets and its loop's closures read.
private final class StopFlag: Sendable {
    let flag = Atomic<Bool>(false)
}
