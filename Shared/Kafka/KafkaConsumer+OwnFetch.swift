import CRdKafka
import Logging
import Synchronization

extension KafkaConsumer {
    /// Whether `consumeFetchingOnPollThread` fetches itself for `configuration`: a group member on
    /// a plaintext cluster with a bootstrap list, starting a partition with no commit from its
    /// earliest offset (with `latest`, librdkafka could skip records after a hand-over:
    /// `HandedOverFloors`).
    public static func canFetchItself(_ configuration: KafkaConsumerConfiguration) -> Bool {
        guard case .group = configuration.mode, configuration.client.security == .plaintext, configuration.autoOffsetReset == .earliest,
            KafkaBrokerAddress.parseList(configuration.client.bootstrapServers) != nil
        else { return false }
        return true
    }

    /// `consumeOnPollThread`, with the poll thread fetching the assigned partitions itself
    /// (`BlockingPartitionFetcher`: Fetch requests on blocking sockets, answers decoded on this
    /// thread) while librdkafka keeps the group: membership, assignments (paused, so its fetcher
    /// leaves them alone), the committed offsets each assignment starts from, and the commits of
    /// what `storeOffset` stored. A poll's records reach `handler` with one thread wake-up (the
    /// answer's), not librdkafka's three (its broker thread reading the answer, its queue, the
    /// poll thread). Batches hold at most `maxBatchSize` records, end-of-partition markers only
    /// with `reportEndOfPartition`. With a `batchLingerMilliseconds`, the records fetched within
    /// it of a batch's first are handed out together (rebalances wait for them to be handled).
    ///
    /// Uncompressed and lz4 batches are read here. A batch the fetcher cannot read (gzip, snappy
    /// or zstd, or a message format before v2) hands every
    /// partition to librdkafka, each from the next offset not yet handed to `handler`, and the
    /// loop carries on as `consumeOnPollThread` for good, never handing out a record below a
    /// partition's last one (`HandedOverFloors`). A configuration `canFetchItself` refuses is
    /// consumed by `consumeOnPollThread`.
    public func consumeFetchingOnPollThread(
        _ handler: @escaping @Sendable (_ batch: [KafkaConsumerEvent], _ stopping: () -> Bool) throws -> Void
    ) async throws {
        guard Self.canFetchItself(configuration), let bootstrap = KafkaBrokerAddress.parseList(configuration.client.bootstrapServers) else {
            return try await consumeOnPollThread(handler)
        }
        let settings = BlockingPartitionFetcher.Settings(
            clientId: configuration.client.clientId, bootstrap: bootstrap,
            maxWaitMilliseconds: Int32(clamping: max(0, configuration.fetchWaitMaxMilliseconds)),
            minBytes: Int32(clamping: max(1, Int(configuration.properties["fetch.min.bytes"] ?? "") ?? 1)),
            batchWaitMilliseconds: Int32(clamping: max(0, configuration.fetchBatchWaitMilliseconds)),
            resetToEarliest: configuration.autoOffsetReset == .earliest)
        let reportEnds = configuration.reportEndOfPartition
        let maxBatch = max(1, configuration.maxBatchSize)
        let linger = Duration.milliseconds(max(0, configuration.batchLingerMilliseconds))
        client.context.onAssign.store(AssignedPartitions.pause.rawValue, ordering: .relaxed)
        try await onPollThread { running, stopping in
            let fetcher = BlockingPartitionFetcher(settings: settings, logger: self.logger) { !running() }
            var generation = -1
            var handedOver: HandedOverFloors?
            // What the steps brought and was not handed out yet: with a linger, the records that
            // came within it of the first; end-of-partition markers after them.
            var held: [KafkaConsumerMessage] = []
            var heldEnds: [KafkaConsumerEvent] = []
            var lingerEnd: ContinuousClock.Instant?
            while running() {
                if held.isEmpty {
                    // Callbacks (a rebalance) only with nothing held: a revoke must not come
                    // between records fetched and their handling.
                    try self.serveCallbacks(waitingUntil: fetcher.idleUntil)
                    let rebalances = self.client.context.rebalances.load(ordering: .relaxed)
                    if rebalances != generation {
                        guard self.reassign(fetcher) else { continue }
                        generation = rebalances
                    }
                    guard fetcher.idleUntil == nil else { continue }
                }
                var unreadable: TopicPartition?
                if fetcher.idleUntil == nil {
                    let step = fetcher.step(until: min(.now + .milliseconds(100), lingerEnd ?? .now + .milliseconds(100)))
                    let catchUp = self.client.context.catchUp
                    let withoutEnd = step.answered.isEmpty ? [] : catchUp.partitionsWithoutEnd()
                    for answered in step.answered where withoutEnd.contains(answered.partition) {
                        if catchUp.observed(low: -1, high: answered.highWatermark, for: answered.partition) { self.logCaughtUp() }
                    }
                    held += step.records
                    for answered in step.answered where answered.next >= answered.highWatermark {
                        heldEnds.append(.endOfPartition(answered.partition, offset: answered.next))
                    }
                    self.lag.update { fetcher.lag() }
                    unreadable = step.unreadable
                    if !held.isEmpty, lingerEnd == nil { lingerEnd = .now + linger }
                }
                // Handed out: a full batch, the linger over, a back-off or a hand-over ahead.
                let due = held.isEmpty || held.count >= maxBatch || (lingerEnd ?? .now) <= .now || fetcher.idleUntil != nil || unreadable != nil
                if due, running() {
                    var start = 0
                    while start < held.count {
                        let chunk = held[start..<min(start + maxBatch, held.count)].map(KafkaConsumerEvent.message)
                        try handler(chunk, stopping)
                        chunk.forEach(self.finished)
                        start += chunk.count
                    }
                    for end in heldEnds {
                        if reportEnds { try handler([end], stopping) }
                        self.finished(end)
                    }
                    (held, heldEnds, lingerEnd) = ([], [], nil)
                }
                if let partition = unreadable {
                    handedOver = try self.handOver(fetcher.positions, because: partition)
                    break
                }
            }
            // Handed over (or stopping: then this ends at once).
            guard var floors = handedOver else { return }
            while running() {
                try self.pollAndHandle(handler, stopping) { polled in
                    let rebalances = self.client.context.rebalances.load(ordering: .relaxed)
                    if rebalances != generation, !floors.isEmpty {
                        floors.retain(usesCooperativeRebalance(self.client.pointer) ? self.client.context.assignment.withLock { $0 } : [])
                    }
                    generation = rebalances
                    let (kept, rewound) = floors.filter(polled)
                    polled = kept
                    if !rewound.isEmpty {
                        self.logger.info(
                            "Kafka consumer: librdkafka went back after the hand-over; records handed out already dropped",
                            metadata: ["kafka.partitions": "\(rewound.keys.map(\.description).sorted().joined(separator: ","))"])
                        try self.seek(rewound)
                    }
                }
            }
        }
    }

    /// Serves librdkafka's callbacks (rebalances) on this thread, waiting up to 100 ms for one
    /// when `waitingUntil` is later than now. A record librdkafka fetched before its partition was
    /// paused is dropped: the fetcher's position, not librdkafka's, says what comes next.
    private func serveCallbacks(waitingUntil: ContinuousClock.Instant?) throws {
        var timeout = waitingUntil.map { min(max(ContinuousClock.now.duration(to: $0), .zero), .milliseconds(100)).librdkafkaMilliseconds } ?? 0
        var served = 0
        while served < 1_000, let raw = rd_kafka_consumer_poll(client.pointer, timeout) {
            defer { rd_kafka_message_destroy(raw) }
            timeout = 0
            served += 1
            let err = raw.pointee.err
            guard err != RD_KAFKA_RESP_ERR_NO_ERROR, err != RD_KAFKA_RESP_ERR__PARTITION_EOF else { continue }
            let error = KafkaError(err, "consume")
            if error.isFatal { throw error }
            logger.warning("Kafka consume error", metadata: ["kafka.error": "\(error)"])
        }
        if let fatal = client.context.fatalError.withLock({ $0 }) { throw fatal }
    }

    /// After a rebalance: pauses the assignment (librdkafka's fetcher stays off it) and gives the
    /// fetcher each new partition's committed offset. An eager rebalance revoked everything (and
    /// committed what was stored), so every partition starts from its commit; a cooperative one
    /// keeps the partitions it did not move where they are. False when the committed offsets
    /// could not be had (tried again on the next turn).
    private func reassign(_ fetcher: BlockingPartitionFetcher) -> Bool {
        let assignment = client.context.assignment.withLock { $0 }
        let cooperative = usesCooperativeRebalance(client.pointer)
        let fresh = cooperative ? assignment.subtracting(fetcher.partitions) : assignment
        var committed: [TopicPartition: Int64] = [:]
        if !assignment.isEmpty {
            let list = partitionList(assignment)
            defer { rd_kafka_topic_partition_list_destroy(list) }
            _ = rd_kafka_pause_partitions(client.pointer, list)
        }
        if !fresh.isEmpty {
            let list = partitionList(fresh)
            defer { rd_kafka_topic_partition_list_destroy(list) }
            // Bounded well within a shutdown's grace: a coordinator that does not answer is asked again
            // on the next turn, after the loop has checked whether to stop.
            let err = rd_kafka_committed(client.pointer, list, 1_500)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                logger.warning("Kafka committed offsets unavailable; retrying", metadata: ["kafka.error": "\(KafkaError(err))"])
                return false
            }
            for i in 0..<Int(list.pointee.cnt) {
                let element = list.pointee.elems[i]
                guard let topic = element.topic else { continue }
                committed[TopicPartition(topic: String(cString: topic), partition: element.partition)] =
                    element.err == RD_KAFKA_RESP_ERR_NO_ERROR ? element.offset : -1
            }
        }
        fetcher.assign(keeping: assignment.subtracting(fresh), starting: committed)
        return true
    }

    /// Gives librdkafka the assignment back: each partition with a position from there (a seek,
    /// so nothing it fetched before is handed out), the others from their commit; resumed, as
    /// every later assignment is. Returns the positions sought to, as floors.
    private func handOver(_ positions: [TopicPartition: Int64], because partition: TopicPartition) throws -> HandedOverFloors {
        client.context.onAssign.store(AssignedPartitions.resume.rawValue, ordering: .relaxed)
        let assignment = client.context.assignment.withLock { $0 }
        let known = positions.filter { assignment.contains($0.key) }
        logger.info(
            "Kafka consumer hands its partitions to librdkafka: a record batch it does not read (a codec other than lz4, or an old format)",
            metadata: ["kafka.partition": "\(partition)", "kafka.offset": "\(positions[partition] ?? -1)"])
        try seek(known)
        if !assignment.isEmpty {
            let list = partitionList(assignment)
            defer { rd_kafka_topic_partition_list_destroy(list) }
            _ = rd_kafka_resume_partitions(client.pointer, list)
        }
        return HandedOverFloors(known)
    }

    /// Seeks each partition to its offset; a partition librdkafka refuses is logged (it goes on
    /// from where librdkafka has it; `HandedOverFloors` drops what was handed out already).
    private func seek(_ positions: [TopicPartition: Int64]) throws {
        guard !positions.isEmpty else { return }
        let list = partitionList(Set(positions.keys))
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for i in 0..<Int(list.pointee.cnt) {
            guard let topic = list.pointee.elems[i].topic else { continue }
            list.pointee.elems[i].offset = positions[TopicPartition(topic: String(cString: topic), partition: list.pointee.elems[i].partition)] ?? -1001
        }
        if let error = rd_kafka_seek_partitions(client.pointer, list, 10_000) { throw KafkaError(error: error) }
        for i in 0..<Int(list.pointee.cnt) where list.pointee.elems[i].err != RD_KAFKA_RESP_ERR_NO_ERROR {
            let element = list.pointee.elems[i]
            logger.warning(
                "Kafka seek refused",
                metadata: [
                    "kafka.partition": "\(element.topic.map { String(cString: $0) } ?? "?")[\(element.partition)]",
                    "kafka.error": "\(KafkaError(element.err, "seek"))",
                ])
        }
    }

    private func partitionList(_ partitions: Set<TopicPartition>) -> UnsafeMutablePointer<rd_kafka_topic_partition_list_t> {
        let list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t> = rd_kafka_topic_partition_list_new(Int32(partitions.count))
        for partition in partitions.sorted(by: { ($0.topic, $0.partition) < ($1.topic, $1.partition) }) {
            rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition)
        }
        return list
    }
}
