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
/// (`assign`), and stores offsets through librdkafka after processing. What it is not: a reader
/// of compressed batches or of message formats before v2 (it stops a partition at such a batch
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
        /// Where a partition without a committed offset starts.
        var resetToEarliest: Bool
    }

    /// What one `step` brought.
    struct Step {
        /// The answers' records, in offset order per partition.
        var records: [KafkaConsumerMessage] = []
        /// Per partition answered: its high watermark and the next offset to fetch.
        var answered: [(partition: TopicPartition, highWatermark: Int64, next: Int64)] = []
        /// A partition whose next batch only librdkafka reads (compressed, or a message format
        /// before v2); its position is that batch's offset, everything before it is in `records`.
        var unreadable: TopicPartition?
    }

    /// The largest answer asked for per partition: 1 MiB (librdkafka's `max.partition.fetch.bytes`),
    /// doubling up to this for a batch larger than that.
    static let maxPartitionBytes: Int32 = 64 << 20
    /// The whole answer's limit (librdkafka's `fetch.max.bytes`).
    static let maxAnswerBytes: Int32 = 50 << 20
    /// A broker holds a fetch up to its wait; past that and this much more it went silent.
    static let answerGrace: Duration = .seconds(30)

    private let settings: Settings
    private let logger: Logger
    /// The next offset to fetch per assigned partition.
    private(set) var positions: [TopicPartition: Int64] = [:]
    /// Assigned partitions without a position yet: nil for no committed offset (`auto.offset.reset`),
    /// else the offset the broker answered "out of range" for.
    private var unresolved: [TopicPartition: Int64?] = [:]
    private var partitionBytes: [TopicPartition: Int32] = [:]
    private var highWatermarks: [TopicPartition: Int64] = [:]
    private var leaders: [TopicPartition: KafkaBrokerAddress] = [:]
    private var fetchConnections: [KafkaBrokerAddress: BlockingKafkaConnection] = [:]
    private var controlConnections: [KafkaBrokerAddress: BlockingKafkaConnection] = [:]
    /// Per leader with a fetch out: what it asked for, and when the answer is overdue.
    private var inFlight: [KafkaBrokerAddress: (asked: [(TopicPartition, Int64)], deadline: ContinuousClock.Instant)] = [:]
    private var retryAt: ContinuousClock.Instant?
    private var backoff: Duration = .milliseconds(100)

    init(settings: Settings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    /// The partitions assigned.
    var partitions: Set<TopicPartition> { Set(positions.keys).union(unresolved.keys) }

    /// Until when the caller has nothing to fetch (no partitions, or a back-off); nil: `step` now.
    var idleUntil: ContinuousClock.Instant? {
        if let retryAt, retryAt > .now { return retryAt }
        return positions.isEmpty && unresolved.isEmpty ? .now + .milliseconds(100) : nil
    }

    /// Replaces the assignment: `kept` partitions (already assigned) keep their positions, the
    /// others start at their `committed` offset (negative: none, `auto.offset.reset` decides). The
    /// fetches out are abandoned (their connections closed), so no answer for an old position counts.
    func assign(keeping kept: Set<TopicPartition>, starting committed: [TopicPartition: Int64]) {
        positions = positions.filter { kept.contains($0.key) }
        unresolved = unresolved.filter { kept.contains($0.key) }
        for (partition, offset) in committed {
            if offset >= 0 { positions[partition] = offset } else { unresolved[partition] = .some(nil) }
        }
        let assigned = partitions
        partitionBytes = partitionBytes.filter { assigned.contains($0.key) }
        highWatermarks = highWatermarks.filter { assigned.contains($0.key) }
        leaders = leaders.filter { assigned.contains($0.key) }
        for address in inFlight.keys { fetchConnections.removeValue(forKey: address)?.close() }
        inFlight.removeAll()
    }

    /// Records behind the end per topic (the high watermarks of the last answers minus the positions).
    func lag() -> [String: Int64] {
        var perTopic: [String: Int64] = [:]
        for (partition, position) in positions {
            perTopic[partition.topic, default: 0] += max(0, (highWatermarks[partition] ?? position) - position)
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
        let waiting = inFlight.compactMap { address, _ in fetchConnections[address] }
        guard !waiting.isEmpty else { return step }
        let overdue = inFlight.values.map(\.deadline).min() ?? limit
        let ready = BlockingKafkaConnection.readable(waiting, until: min(limit, overdue))
        for index in ready { receive(on: waiting[index], into: &step) }
        // An answer overdue: the broker went silent on that connection.
        for (address, request) in inFlight where request.deadline <= .now {
            failed(address, KafkaRequestTimedOut())
        }
        return step
    }

    // MARK: - Steps

    /// Asks for the leaders of partitions without one; false after a failure (backed off).
    private func findLeaders() -> Bool {
        let assigned = partitions
        let topics = Set(assigned.filter { leaders[$0] == nil }.map(\.topic))
        guard !topics.isEmpty else { return true }
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
                for partition in assigned where leaders[partition] == nil {
                    switch metadata.leader(of: partition.topic, partition: partition.partition) {
                    case .success(let leader): leaders[partition] = leader
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

    /// Gives every unresolved partition a position (ListOffsets at its leader); false after a failure.
    private func resolveOffsets() -> Bool {
        for (partition, outOfRange) in unresolved {
            guard let leader = leaders[partition] else { return false }
            let deadline = ContinuousClock.now + .seconds(5)
            do {
                let connection = try control(leader, until: deadline)
                let earliest = try listOffset(partition, KafkaClientMessages.earliest, on: connection, until: deadline)
                let position: Int64
                if let outOfRange {
                    position = outOfRange < earliest ? earliest : try listOffset(partition, KafkaClientMessages.latest, on: connection, until: deadline)
                    logger.warning(
                        "Kafka offset out of range; reset", metadata: ["kafka.partition": "\(partition)", "kafka.offset": "\(outOfRange)", "kafka.reset": "\(position)"])
                } else {
                    position = settings.resetToEarliest ? earliest : try listOffset(partition, KafkaClientMessages.latest, on: connection, until: deadline)
                }
                unresolved[partition] = nil
                positions[partition] = position
            } catch {
                // A broker's error code leaves the connection fine; anything else does not.
                if !(error is KafkaErrorCode) { controlConnections.removeValue(forKey: leader)?.close() }
                leaders[partition] = nil
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

    /// One fetch per leader that has none out, for all of its partitions with a position.
    private func sendFetches() {
        var byLeader: [KafkaBrokerAddress: [(TopicPartition, Int64)]] = [:]
        for (partition, position) in positions {
            guard let leader = leaders[partition], inFlight[leader] == nil else { continue }
            byLeader[leader, default: []].append((partition, position))
        }
        for (leader, asked) in byLeader {
            let deadline = ContinuousClock.now + .milliseconds(Int(settings.maxWaitMilliseconds)) + Self.answerGrace
            do {
                let connection = try fetchConnection(leader, until: deadline)
                let body = KafkaClientMessages.fetchRequest(
                    asked.map { ($0.0, $0.1, partitionBytes[$0.0] ?? 1 << 20) }, maxWaitMilliseconds: settings.maxWaitMilliseconds,
                    minBytes: settings.minBytes, maxBytes: Self.maxAnswerBytes)
                try connection.send(.fetch, version: KafkaClientMessages.fetchVersion, body: body, until: deadline)
                inFlight[leader] = (asked, deadline)
            } catch {
                failed(leader, error)
            }
        }
    }

    /// Reads the answer out on `connection` and decodes each partition's records.
    private func receive(on connection: BlockingKafkaConnection, into step: inout Step) {
        let leader = connection.address
        guard let request = inFlight[leader] else { return }
        let answer: [TopicPartition: KafkaClientMessages.FetchedPartition]
        do {
            answer = try KafkaClientMessages.fetchedPartitions(in: connection.receive(until: request.deadline))
        } catch {
            return failed(leader, error)
        }
        inFlight[leader] = nil
        var trouble: (TopicPartition, any Error)?
        for (partition, offset) in request.asked {
            guard positions[partition] == offset else { continue }  // not asked for at this position any more
            guard let fetched = answer[partition] else {
                trouble = trouble ?? (partition, KafkaWireError("a Fetch answer without \(partition)"))
                leaders[partition] = nil
                continue
            }
            guard fetched.error == 0 else {
                let error = KafkaErrorCode(rawValue: fetched.error)
                if error == .offsetOutOfRange {
                    positions[partition] = nil
                    unresolved[partition] = .some(offset)
                } else {
                    // Not the leader any more, the partition unknown, no leader yet: ask again.
                    leaders[partition] = nil
                    trouble = trouble ?? (partition, error)
                }
                continue
            }
            do {
                let records = try FetchedRecords(fetched.records ?? ByteBuffer(), topic: partition.topic, partition: partition.partition, from: offset)
                step.records.append(contentsOf: records.messages)
                positions[partition] = records.unreadableAt ?? records.nextOffset
                highWatermarks[partition] = fetched.highWatermark
                step.answered.append((partition, fetched.highWatermark, records.unreadableAt ?? records.nextOffset))
                if records.unreadableAt != nil {
                    step.unreadable = step.unreadable ?? partition
                } else if records.firstBatchCutShort {
                    let bytes = partitionBytes[partition] ?? 1 << 20
                    guard bytes < Self.maxPartitionBytes else {
                        trouble = trouble ?? (partition, KafkaWireError("a record batch larger than \(Self.maxPartitionBytes) bytes"))
                        continue
                    }
                    partitionBytes[partition] = bytes * 2
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
        let connection = try BlockingKafkaConnection(to: address, clientId: settings.clientId, timeout: min(.seconds(5), deadline - .now))
        pool[address] = connection
        return connection
    }

    /// A fetch connection failed: it is closed, its request abandoned, and its partitions' leaders
    /// asked for again after the back-off.
    private func failed(_ leader: KafkaBrokerAddress, _ error: any Error) {
        fetchConnections.removeValue(forKey: leader)?.close()
        inFlight[leader] = nil
        leaders = leaders.filter { $0.value != leader }
        backOff("fetching from \(leader) failed", error)
    }

    private func backOff(_ what: String, _ error: any Error) {
        logger.warning("Kafka fetch: \(what); retrying", metadata: ["error": "\(error)", "retry.in": "\(backoff)"])
        retryAt = .now + backoff
        backoff = min(backoff * 2, .seconds(5))
    }
}
