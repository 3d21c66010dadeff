import Logging
import NIOCore

/// Fetches a set of partitions over the Kafka protocol on blocking sockets, on the thread that
/// processes their records: one Fetch v4 request per leader for all of its partitions, the
/// thread asleep in `poll` until an answer is in, the answer decoded there. No broker thread to
/// read the answer, no queue to hand its records over and no wake-up of the processing thread
/// in between: for a group consumer's poll thread (`KafkaConsumer.consumeFetchingOnPollThread`,
/// chat-fanout), where librdkafka's fetch path cost half of the process (docs/benchmarks.md,
/// part 20).
///
/// The group stays librdkafka's: the caller hands in each assignment with its start offsets
/// (`assign`), and stores offsets through librdkafka after processing. It reads uncompressed and
/// lz4 batches (`LZ4Frame`). What it is not: a reader of batches compressed otherwise or of
/// message formats before v2 (it stops a partition at such a batch
/// and says so: `Step.unreadable`), or a TLS/SASL client. It finds leaders with Metadata v1,
/// keeps one fetch connection per leader and one more per broker for Metadata and ListOffsets,
/// resolves an offset it has none for (no commit yet) by `auto.offset.reset` and an offset out of
/// range as librdkafka does (the earliest kept offset if it fell behind the log, else the end),
/// and backs off (100 ms doubling to 5 s) after a failure.
///
/// Not thread-safe: one thread uses it.
final class BlockingPartitionFetcher {
    struct Settings {
        var clientId: String
        var bootstrap: [KafkaBrokerAddress]
        /// How long the broker may hold a fetch for `minBytes` to arrive.
        var maxWaitMilliseconds: Int32
        var minBytes: Int32
        /// After an answer with records, the next fetch to that leader waits this long for more
        /// (`KafkaConsumerConfiguration.fetchBatchWaitMilliseconds`); 0: never.
        var batchWaitMilliseconds: Int32 = 0
        /// Where a partition without a committed offset starts.
        var resetToEarliest: Bool
    }

    /// What one `step` brought.
    struct Step {
        /// The answers' records, in offset order per partition.
        var records: [KafkaConsumerMessage] = []
        /// Per partition answered: its high watermark and the next offset to fetch.
        var answered: [(partition: TopicPartition, highWatermark: Int64, next: Int64)] = []
        /// A partition whose next batch only librdkafka reads (gzip, snappy or zstd, or a message
        /// format before v2); its position is that batch's offset, everything before it is in `records`.
        var unreadable: TopicPartition?
    }

    /// The largest answer asked for per partition: 1 MiB (librdkafka's `max.partition.fetch.bytes`),
    /// doubling up to this for a batch larger than that.
    static let maxPartitionBytes: Int32 = 64 << 20
    /// The whole answer's limit (librdkafka's `fetch.max.bytes`).
    static let maxAnswerBytes: Int32 = 50 << 20
    /// A broker holds a fetch up to its wait; past that and this much more it went silent.
    static let answerGrace: Duration = .seconds(30)

    /// One assigned partition.
    private struct Slot {
        let partition: TopicPartition
        /// The next offset to fetch; nil until resolved.
        var position: Int64?
        /// Without a position: nil for no committed offset (`auto.offset.reset`), else the offset
        /// the broker answered "out of range" for.
        var outOfRange: Int64?
        var leader: KafkaBrokerAddress?
        var maxBytes: Int32 = 1 << 20
        var highWatermark: Int64?
    }

    /// One leader's fetch request, encoded once for its partitions and their byte limits; each
    /// send patches in the positions.
    private struct Plan {
        var slots: [Int]
        var body: ByteBuffer
        /// Where each slot's fetch offset sits in `body`.
        var offsetAt: [Int]
    }

    private let settings: Settings
    private let logger: Logger
    private var slots: [Slot] = []
    private var slotIndex: [TopicPartition: Int] = [:]
    /// Slots whose leader is known; all of them: no Metadata needed.
    private var withLeader = 0
    /// Per leader, its plan; dropped whenever a slot's position state, leader or byte limit changes.
    private var plans: [KafkaBrokerAddress: Plan]?
    private var fetchConnections: [KafkaBrokerAddress: BlockingKafkaConnection] = [:]
    private var controlConnections: [KafkaBrokerAddress: BlockingKafkaConnection] = [:]
    /// Per leader with a fetch out: the slots and offsets it asked for, and when the answer is overdue.
    /// `sent` and `batch` (a fetch waiting `batchWaitMilliseconds` for more) decide whether the
    /// leader's next fetch batches.
    private var inFlight:
        [KafkaBrokerAddress: (slots: [Int], offsets: [Int64], deadline: ContinuousClock.Instant, sent: ContinuousClock.Instant, batch: Bool)] = [:]
    /// Leaders under load: their last answer brought records, and it was a batching fetch or came
    /// within `batchWaitMilliseconds` (records arrive at least that often). Their next fetch waits
    /// `batchWaitMilliseconds` for more; a leader whose records come further apart is fetched as
    /// before, with no extra empty fetch after each record.
    private var batching: Set<KafkaBrokerAddress> = []
    private var retryAt: ContinuousClock.Instant?
    private var backoff: Duration = .milliseconds(100)

    private let giveUp: @Sendable () -> Bool

    /// - Parameter giveUp: checked at least every 100 ms while a call waits on a broker: once
    ///   true, the call ends as if the broker had not answered (a shutdown is not held up by a
    ///   silent broker).
    init(settings: Settings, logger: Logger, giveUp: @escaping @Sendable () -> Bool) {
        self.settings = settings
        self.logger = logger
        self.giveUp = giveUp
    }

    /// The partitions assigned.
    var partitions: Set<TopicPartition> { Set(slots.map(\.partition)) }

    /// The next offset to fetch per partition that has one.
    var positions: [TopicPartition: Int64] {
        Dictionary(uniqueKeysWithValues: slots.compactMap { slot in slot.position.map { (slot.partition, $0) } })
    }

    /// Until when the caller has nothing to fetch (no partitions, or a back-off); nil: `step` now.
    var idleUntil: ContinuousClock.Instant? {
        if let retryAt, retryAt > .now { return retryAt }
        return slots.isEmpty ? .now + .milliseconds(100) : nil
    }

    /// Replaces the assignment: `kept` partitions (already assigned) keep their positions, the
    /// others start at their `committed` offset (negative: none, `auto.offset.reset` decides). The
    /// fetches out are abandoned (their connections closed), so no answer for an old position counts.
    func assign(keeping kept: Set<TopicPartition>, starting committed: [TopicPartition: Int64]) {
        var next = slots.filter { kept.contains($0.partition) }
        for (partition, offset) in committed.sorted(by: { ($0.key.topic, $0.key.partition) < ($1.key.topic, $1.key.partition) }) {
            next.append(Slot(partition: partition, position: offset >= 0 ? offset : nil))
        }
        slots = next
        slotIndex = Dictionary(slots.enumerated().map { ($1.partition, $0) }) { first, _ in first }
        withLeader = slots.count { $0.leader != nil }
        plans = nil
        for address in inFlight.keys { fetchConnections.removeValue(forKey: address)?.close() }
        inFlight.removeAll()
        // A new assignment starts from unbatched fetches: the load seen before was another set's.
        batching.removeAll()
    }

    /// Records behind the end per topic (the high watermarks of the last answers minus the positions).
    func lag() -> [String: Int64] {
        var perTopic: [String: Int64] = [:]
        for slot in slots {
            guard let position = slot.position else { continue }
            perTopic[slot.partition.topic, default: 0] += max(0, (slot.highWatermark ?? position) - position)
        }
        return perTopic
    }

    /// Sends a fetch to every leader without one out, then waits until an answer is in or `limit`,
    /// and decodes what came. A failure is logged and backed off from, never thrown.
    func step(until limit: ContinuousClock.Instant) -> Step {
        var step = Step()
        guard idleUntil == nil else { return step }
        guard findLeaders(), resolveOffsets() else { return step }
        sendFetches()
        var waiting: [BlockingKafkaConnection] = []
        var overdue = limit
        for (address, request) in inFlight {
            guard let connection = fetchConnections[address] else { continue }
            waiting.append(connection)
            overdue = min(overdue, request.deadline)
        }
        guard !waiting.isEmpty else { return step }
        for index in BlockingKafkaConnection.readable(waiting, until: overdue) { receive(on: waiting[index], into: &step) }
        // An answer overdue: the broker went silent on that connection.
        let now = ContinuousClock.now
        for (address, request) in inFlight where request.deadline <= now {
            failed(address, KafkaRequestTimedOut())
        }
        return step
    }

    // MARK: - Steps

    private func setLeader(_ slot: Int, _ leader: KafkaBrokerAddress?) {
        if (slots[slot].leader == nil) != (leader == nil) { withLeader += leader == nil ? -1 : 1 }
        slots[slot].leader = leader
        plans = nil
    }

    /// Asks for the leaders of partitions without one; false after a failure (backed off).
    private func findLeaders() -> Bool {
        guard withLeader < slots.count else { return true }
        let topics = Set(slots.filter { $0.leader == nil }.map(\.partition.topic))
        var lastError: any Error = KafkaConnectionClosed()
        let deadline = ContinuousClock.now + .seconds(5)
        for address in settings.bootstrap {
            do {
                let connection = try control(address, until: deadline)
                try connection.send(
                    .metadata, version: KafkaClientMessages.metadataVersion, body: KafkaClientMessages.metadataRequest(topics: topics.sorted()),
                    until: deadline)
                let metadata = try KafkaClientMessages.ClusterMetadata(connection.receive(until: deadline))
                var missing: (TopicPartition, KafkaErrorCode)?
                for index in slots.indices where slots[index].leader == nil {
                    let partition = slots[index].partition
                    switch metadata.leader(of: partition.topic, partition: partition.partition) {
                    case .success(let leader): setLeader(index, leader)
                    case .failure(let error): missing = missing ?? (partition, error)
                    }
                }
                if let (partition, error) = missing {
                    backOff("no leader for \(partition)", error)
                    return false
                }
                return true
            } catch {
                controlConnections.removeValue(forKey: address)?.close()
                lastError = error
            }
        }
        backOff("cannot fetch metadata", lastError)
        return false
    }

    /// Gives every partition without a position one (ListOffsets at its leader); false after a failure.
    private func resolveOffsets() -> Bool {
        for index in slots.indices where slots[index].position == nil {
            let partition = slots[index].partition
            guard let leader = slots[index].leader else { return false }
            let deadline = ContinuousClock.now + .seconds(5)
            do {
                let connection = try control(leader, until: deadline)
                let earliest = try listOffset(partition, KafkaClientMessages.earliest, on: connection, until: deadline)
                let position: Int64
                if let outOfRange = slots[index].outOfRange {
                    position = outOfRange < earliest ? earliest : try listOffset(partition, KafkaClientMessages.latest, on: connection, until: deadline)
                    logger.warning(
                        "Kafka offset out of range; reset",
                        metadata: ["kafka.partition": "\(partition)", "kafka.offset": "\(outOfRange)", "kafka.reset": "\(position)"])
                } else {
                    position = settings.resetToEarliest ? earliest : try listOffset(partition, KafkaClientMessages.latest, on: connection, until: deadline)
                }
                slots[index].position = position
                slots[index].outOfRange = nil
                plans = nil
            } catch {
                // A broker's error code leaves the connection fine; anything else does not.
                if !(error is KafkaErrorCode) { controlConnections.removeValue(forKey: leader)?.close() }
                setLeader(index, nil)
                backOff("cannot find the offset to start \(partition) at", error)
                return false
            }
        }
        return true
    }

    private func listOffset(_ partition: TopicPartition, _ timestamp: Int64, on connection: BlockingKafkaConnection, until deadline: ContinuousClock.Instant)
        throws -> Int64
    {
        try connection.send(
            .listOffsets, version: KafkaClientMessages.listOffsetsVersion,
            body: KafkaClientMessages.listOffsetsRequest(topic: partition.topic, partition: partition.partition, timestamp: timestamp), until: deadline)
        return try KafkaClientMessages.listedOffset(of: partition.topic, partition: partition.partition, in: connection.receive(until: deadline)).get()
    }

    /// Each leader's request, encoded once: the offsets are patched in per send.
    private func makePlans() -> [KafkaBrokerAddress: Plan] {
        var byLeader: [KafkaBrokerAddress: [Int]] = [:]
        for index in slots.indices where slots[index].position != nil {
            guard let leader = slots[index].leader else { continue }
            byLeader[leader, default: []].append(index)
        }
        return byLeader.mapValues { unsorted in
            // Grouped by topic, as the request and its answer are: the answer's partitions then
            // come in this order.
            let indices = unsorted.sorted {
                (slots[$0].partition.topic, slots[$0].partition.partition) < (slots[$1].partition.topic, slots[$1].partition.partition)
            }
            let (body, offsetAt) = KafkaClientMessages.fetchRequestAndOffsetPositions(
                indices.map { (slots[$0].partition, Int64(0), slots[$0].maxBytes) }, maxWaitMilliseconds: settings.maxWaitMilliseconds,
                minBytes: settings.minBytes, maxBytes: Self.maxAnswerBytes)
            return Plan(slots: indices, body: body, offsetAt: offsetAt)
        }
    }

    /// One fetch per leader that has none out, for all of its partitions with a position.
    private func sendFetches() {
        let plans = self.plans ?? makePlans()
        self.plans = plans
        for (leader, plan) in plans where inFlight[leader] == nil {
            let batch = settings.batchWaitMilliseconds > 0 && batching.contains(leader)
            // A partition whose end is not known yet (just assigned) is answered at once: its end
            // (the consumer's catch-up) is not held up by a long poll at an end it already sits at.
            let learning = plan.slots.contains { slots[$0].highWatermark == nil }
            let wait = learning ? 0 : batch ? settings.batchWaitMilliseconds : settings.maxWaitMilliseconds
            let deadline = ContinuousClock.now + .milliseconds(Int(wait)) + Self.answerGrace
            var body = plan.body
            if learning {
                body.setInteger(Int32(0), at: KafkaClientMessages.fetchMaxWaitAt, endianness: .big)
            } else if batch {
                body.setInteger(wait, at: KafkaClientMessages.fetchMaxWaitAt, endianness: .big)
                body.setInteger(
                    max(settings.minBytes, KafkaConsumerConfiguration.batchFetchMinBytes), at: KafkaClientMessages.fetchMinBytesAt, endianness: .big)
            }
            var offsets: [Int64] = []
            offsets.reserveCapacity(plan.slots.count)
            for (slot, at) in zip(plan.slots, plan.offsetAt) {
                let offset = slots[slot].position ?? 0
                offsets.append(offset)
                body.setInteger(offset, at: at, endianness: .big)
            }
            do {
                let connection = try fetchConnection(leader, until: deadline)
                try connection.send(.fetch, version: KafkaClientMessages.fetchVersion, body: body, until: deadline)
                inFlight[leader] = (plan.slots, offsets, deadline, .now, batch)
            } catch {
                failed(leader, error)
            }
        }
    }

    /// Reads the answer out on `connection` and decodes each partition's records.
    private func receive(on connection: BlockingKafkaConnection, into step: inout Step) {
        let leader = connection.address
        guard let request = inFlight[leader] else { return }
        var answer: [(at: Int, fetched: KafkaClientMessages.FetchedPartition)]
        do {
            let expected = request.slots.map { slots[$0].partition }
            answer = try KafkaClientMessages.fetchedPartitions(in: connection.receive(until: request.deadline), expecting: expected).compactMap { at, fetched in
                at.map { ($0, fetched) }
            }
        } catch {
            return failed(leader, error)
        }
        inFlight[leader] = nil
        batching.remove(leader)
        let underLoad = request.batch || ContinuousClock.now - request.sent <= .milliseconds(Int(settings.batchWaitMilliseconds))
        var trouble: (TopicPartition, any Error)?
        if answer.count < request.slots.count {
            // A partition asked for and not answered: ask for its leader again.
            let answered = Set(answer.map(\.at))
            for (at, slot) in request.slots.enumerated() where !answered.contains(at) {
                setLeader(slot, nil)
                trouble = trouble ?? (slots[slot].partition, KafkaWireError("a Fetch answer without \(slots[slot].partition)"))
            }
        }
        for (at, fetched) in answer {
            let slot = request.slots[at]
            let offset = request.offsets[at]
            guard slots[slot].position == offset else { continue }  // answered twice, or moved meanwhile
            let partition = slots[slot].partition
            guard fetched.error == 0 else {
                let error = KafkaErrorCode(rawValue: fetched.error)
                if error == .offsetOutOfRange {
                    slots[slot].position = nil
                    slots[slot].outOfRange = offset
                    plans = nil
                } else {
                    // Not the leader any more, the partition unknown, no leader yet: ask again.
                    setLeader(slot, nil)
                    trouble = trouble ?? (partition, error)
                }
                continue
            }
            slots[slot].highWatermark = fetched.highWatermark
            guard let records = fetched.records, records.readableBytes > 0 else {
                step.answered.append((partition, fetched.highWatermark, offset))
                continue
            }
            do {
                let decoded = try FetchedRecords(records, topic: partition.topic, partition: partition.partition, from: offset)
                step.records.append(contentsOf: decoded.messages)
                if underLoad, !decoded.messages.isEmpty { batching.insert(leader) }
                let next = decoded.unreadableAt ?? decoded.nextOffset
                slots[slot].position = next
                step.answered.append((partition, fetched.highWatermark, next))
                if decoded.unreadableAt != nil {
                    step.unreadable = step.unreadable ?? partition
                } else if decoded.firstBatchCutShort {
                    guard slots[slot].maxBytes < Self.maxPartitionBytes else {
                        trouble = trouble ?? (partition, KafkaWireError("a record batch larger than \(Self.maxPartitionBytes) bytes"))
                        continue
                    }
                    slots[slot].maxBytes *= 2
                    plans = nil
                }
            } catch {
                // A batch whose lengths contradict each other: the connection's data is not to be trusted.
                connection.close()
                fetchConnections[leader] = nil
                trouble = trouble ?? (partition, error)
            }
        }
        if let (partition, error) = trouble {
            backOff("fetching \(partition) failed", error)
        } else {
            backoff = .milliseconds(100)
        }
    }

    // MARK: - Connections and failures

    private func fetchConnection(_ address: KafkaBrokerAddress, until deadline: ContinuousClock.Instant) throws -> BlockingKafkaConnection {
        try connection(address, in: &fetchConnections, until: deadline)
    }

    private func control(_ address: KafkaBrokerAddress, until deadline: ContinuousClock.Instant) throws -> BlockingKafkaConnection {
        try connection(address, in: &controlConnections, until: deadline)
    }

    private func connection(
        _ address: KafkaBrokerAddress, in pool: inout [KafkaBrokerAddress: BlockingKafkaConnection], until deadline: ContinuousClock.Instant
    ) throws -> BlockingKafkaConnection {
        if let connection = pool[address] {
            if connection.isUsable { return connection }
            pool[address] = nil
        }
        let connection = try BlockingKafkaConnection(
            to: address, clientId: settings.clientId, timeout: min(.seconds(5), deadline - .now), giveUp: giveUp)
        pool[address] = connection
        return connection
    }

    /// A fetch connection failed: it is closed, its request abandoned, and its partitions' leaders
    /// asked for again after the back-off.
    private func failed(_ leader: KafkaBrokerAddress, _ error: any Error) {
        fetchConnections.removeValue(forKey: leader)?.close()
        inFlight[leader] = nil
        for index in slots.indices where slots[index].leader == leader { setLeader(index, nil) }
        backOff("fetching from \(leader) failed", error)
    }

    private func backOff(_ what: String, _ error: any Error) {
        logger.warning("Kafka fetch: \(what); retrying", metadata: ["error": "\(error)", "retry.in": "\(backoff)"])
        retryAt = .now + backoff
        backoff = min(backoff * 2, .seconds(5))
    }
}
