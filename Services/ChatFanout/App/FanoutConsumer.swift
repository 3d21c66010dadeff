import Events
import Foundation
import Kafka
import Logging
import Tracing
import Messaging
import Metrics
import ServiceKit
import ServiceLifecycle

/// The `chat-fanout` consumer group over `chat.message.v1` and `gateway.typing.v1` (typing
/// indicators of native sessions, keyed by conversation like messages), `presence.v1` (routed by
/// the workspaces a status change names) and `chat.read.v1` (a user's read cursor moved, keyed by
/// the user: routed by the conversation it names, so the user's sessions on the gateways following
/// it learn of it), and `study.v1` (a study chat, routed by its recipient's live route; the rest
/// of the topic reaches no gateway). For each poll's batch it produces one
/// delivery per (record, interested gateway) to `gateway.delivery.v1` — the record's value and
/// headers unchanged, keyed by the gateway id, into the gateway's own partition — waits for every
/// delivery report, and only then stores the batch's offsets. At-least-once: a replica that dies
/// mid-batch has stored nothing for it, and the partition's next owner re-reads from the last
/// commit (gateways de-duplicate by event id). Batches are processed one after another and
/// deliveries enqueued in poll order, so per-partition (per-conversation) order is kept per gateway.
final class FanoutConsumer: Service, Sendable {
    static let group = "chat-fanout"

    private let configuration: KafkaConsumerConfiguration
    private let producer: any KafkaBlockingSender
    private let table: InterestTable
    private let interestLoaded: @Sendable () -> Bool
    /// The consumer's poll thread fetches the partitions itself (`consumeFetchingOnPollThread`).
    private let fetchesItself: Bool
    private let logger: Logger
    private let messages = Counter(label: "fanout_messages_total")
    private let deliveries = Counter(label: "fanout_deliveries_total")
    private let skippedUninterested = Counter(label: "fanout_messages_skipped_total", dimensions: [("reason", "no_interest")])
    private let skippedUnreadable = Counter(label: "fanout_messages_skipped_total", dimensions: [("reason", "unreadable")])
    private let deliveryFailures = Counter(label: "fanout_delivery_failures_total")

    /// - Parameter interestLoaded: whether the interest table is complete (`InterestReader.isCaughtUp`);
    ///   the group is joined only once it is.
    init(
        configuration: KafkaConsumerConfiguration, producer: any KafkaBlockingSender, table: InterestTable, logger: Logger,
        fetchesItself: Bool = true, interestLoaded: @escaping @Sendable () -> Bool
    ) {
        self.fetchesItself = fetchesItself
        self.configuration = configuration
        self.producer = producer
        self.table = table
        self.interestLoaded = interestLoaded
        self.logger = logger
    }

    /// The group consumer's configuration for this replica.
    static func configuration(
        client: KafkaClientConfiguration, fetchWaitMilliseconds: Int, fetchMinBytes: Int = 1, fetchBatchMilliseconds: Int = 0, batchSize: Int
    ) -> KafkaConsumerConfiguration {
        var config = KafkaConsumerConfiguration(
            client: client,
            mode: .group(
                id: group, topics: [Topic.chatMessage.name, Topic.gatewayTyping.name, Topic.presence.name, Topic.chatRead.name, Topic.study.name]))
        config.client.clientId = "\(client.clientId)-\(group)"
        config.fetchWaitMaxMilliseconds = fetchWaitMilliseconds
        config.properties["fetch.min.bytes"] = String(fetchMinBytes)
        config.fetchBatchWaitMilliseconds = fetchBatchMilliseconds
        config.maxBatchSize = batchSize
        return config
    }

    func run() async throws {
        // Join the group only with the whole interest table loaded (see InterestReader).
        let ready: Bool = await cancelWhenGracefulShutdown {
            while !self.interestLoaded() {
                do { try await Task.sleep(for: .milliseconds(10)) } catch { return false }
            }
            return true
        }
        guard ready, !Task.isCancelled else { return }
        let consumer = try KafkaConsumer(configuration: configuration, logger: logger)
        do {
            try await cancelWhenGracefulShutdown {
                // Routing and producing never wait on the cooperative pool, so a poll is processed
                // on the consumer's poll thread, which blocks for the deliveries' acknowledgements:
                // no hop to a task and back per poll. By default that thread also fetches the
                // records itself (docs/benchmarks.md, part 20).
                let process: @Sendable ([KafkaConsumerEvent], () -> Bool) throws -> Void = { batch, stopping in
                    try self.process(batch, consumer: consumer, stopping: stopping)
                }
                if self.fetchesItself {
                    try await consumer.consumeFetchingOnPollThread(process)
                } else {
                    try await consumer.consumeOnPollThread(process)
                }
            }
        } catch is CancellationError {
            // Shut down mid-batch: its offsets were not stored, the next owner re-delivers it.
        } catch {
            await consumer.close()
            throw error
        }
        // Leaving the group commits what was stored; the partitions move to the other replicas.
        await consumer.close()
    }

    /// On the consumer's poll thread: routes `batch`, produces its deliveries and waits for their
    /// acknowledgements, then stores its offsets. `stopping` ends the retries (shutdown).
    func process(_ batch: [KafkaConsumerEvent], consumer: KafkaConsumer, stopping: () -> Bool) throws {
        var records: [KafkaConsumerMessage] = []
        records.reserveCapacity(batch.count)
        for case .message(let message) in batch { records.append(message) }
        guard !records.isEmpty else { return }
        messages.increment(by: records.count)

        // Messages and typing are routed by their conversation (the key); a presence change by
        // the workspaces it names (interest in a workspace: a gateway has sessions in it); a read
        // cursor (keyed by its user) by the conversation it names.
        let routes = records.map { record -> [UUID]? in
            switch record.topic {
            case Topic.presence.name:
                record.value.flatMap { try? EventCoding.decode(PresenceEvents.StatusChanged.self, from: $0).data.workspaceIds.map(\.uuid) }
            case Topic.chatRead.name:
                // A join request is for the workspace service, not for any gateway.
                record.cloudEventType == ChatEvents.ChannelJoinRequested.eventType
                    ? []
                    : record.value.flatMap { try? [EventCoding.decode(ChatEvents.ReadCursorMoved.self, from: $0).data.conversation.id] }
            case Topic.study.name:
                // Study chats go to their recipient's sessions; the queue's events to no gateway.
                record.cloudEventType == StudyEvents.ChatSent.eventType
                    ? record.value.flatMap { try? [StudyEvents.liveRoute(of: EventCoding.decode(StudyEvents.ChatSent.self, from: $0).data.to)] }
                    : []
            default:
                record.keyString.flatMap { UUID(parsing: $0) }.map { [$0] }
            }
        }
        let interested = table.gateways(for: routes)
        var outgoing: [KafkaProducerMessage] = []
        var uninterested = 0
        // A span per record that carries a trace (none without tracing): the deliveries carry it on.
        var spans: [any Span] = []
        defer { for span in spans { span.end() } }
        for (index, record) in records.enumerated() {
            guard let value = record.value, routes[index] != nil else {
                skippedUnreadable.increment()
                logger.warning(
                    "skipping a record without a conversation key, a readable presence change or read cursor, or a value",
                    metadata: [
                        LogKey.kafkaTopic: "\(record.topic)", LogKey.kafkaPartition: "\(record.partition)", LogKey.kafkaOffset: "\(record.offset)",
                    ])
                continue
            }
            let gateways = interested[index]
            if gateways.isEmpty {
                uninterested += 1
                continue
            }
            var headers = record.headers
            if KafkaTracing.carriesTrace(headers) {
                let span = startSpan("chat-fanout route", context: KafkaTracing.context(of: headers), ofKind: .consumer)
                KafkaTracing.describe(record, on: span)
                span.attributes["chatsuite.gateways"] = gateways.count
                spans.append(span)
                headers = headers.filter { $0.key != KafkaTracing.traceparent && $0.key != KafkaTracing.tracestate } + KafkaTracing.headers(of: span.context)
            }
            for gateway in gateways {
                outgoing.append(
                    KafkaProducerMessage(
                        topic: Topic.gatewayDelivery.name, key: gateway, value: value, headers: headers,
                        partition: GatewayEvents.deliveryPartition(for: gateway)
                    ))
            }
        }
        if uninterested > 0 { skippedUninterested.increment(by: uninterested) }
        try deliver(outgoing, stopping: stopping)

        // Offsets only after every delivery was acknowledged: the last record of each partition
        // of each topic (the topics share partition numbers).
        var last: [TopicPartition: KafkaConsumerMessage] = [:]
        for record in records { last[TopicPartition(topic: record.topic, partition: record.partition)] = record }
        for record in last.values { try consumer.storeOffset(record) }
    }

    /// Produces `outgoing` and waits for every delivery report; failed records are produced again
    /// (in their order) with backoff until acknowledged. Throws only on shutdown or a fatal error.
    private func deliver(_ outgoing: [KafkaProducerMessage], stopping: () -> Bool) throws {
        var pending = outgoing
        var backoff = Duration.milliseconds(50)
        while !pending.isEmpty {
            let results = producer.sendAll(pending)
            var failed: [KafkaProducerMessage] = []
            var firstError: (any Error)?
            for (message, result) in zip(pending, results) {
                if case .failure(let error) = result {
                    if let kafka = error as? KafkaError, kafka.isFatal { throw kafka }
                    failed.append(message)
                    firstError = firstError ?? error
                }
            }
            deliveries.increment(by: pending.count - failed.count)
            guard let firstError else { return }
            deliveryFailures.increment(by: failed.count)
            logger.error(
                "deliveries failed; retrying",
                metadata: [
                    LogKey.kafkaTopic: "\(Topic.gatewayDelivery.name)", LogKey.count: "\(failed.count)", LogKey.error: "\(firstError)",
                ])
            // The backoff, in slices that notice a shutdown.
            let resume = ContinuousClock.now + backoff
            while ContinuousClock.now < resume {
                if stopping() { throw CancellationError() }
                usleep(10_000)
            }
            backoff = min(backoff * 2, .seconds(5))
            pending = failed
        }
    }
}
