import Events
import Foundation
import Kafka
import Logging
import Metrics
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Publishes the outbox to Kafka in id order (hence in per-key order) and marks rows published.
///
/// - One active relay per database: the relay holding a session advisory lock is the leader;
///   replicas stand by and take over when the leader's connection drops.
/// - Woken by `NOTIFY` at commit (any replica's write), by `wake()`, or by `wake(awaiting:)` from a
///   writer in this process that left `NOTIFY` out (`wakesInProcess`); a slow fallback poll covers
///   a lost notification.
/// - While the broker is down, delivery fails and the relay retries with capped exponential backoff;
///   rows are marked only after the broker acknowledged them, so a crash republishes (consumers'
///   inboxes drop the duplicates) but never loses.
/// - A record the broker (or the producer) refuses for good — too large, invalid — is moved to
///   `outbox_dead_letters` with the refusal (`outbox_dead_lettered_total{topic}`, one warning line)
///   and the relay carries on with the rows behind it, in order, without backing off: one bad row
///   never delays or stops the others.
public final class OutboxRelay: Service, Sendable {
    public struct Configuration: Sendable {
        public var batchSize: Int = 500
        public var fallbackPollInterval: Duration = .seconds(5)
        public var standbyRetryInterval: Duration = .seconds(2)
        public var maxBackoff: Duration = .seconds(5)
        /// Published rows older than this are deleted.
        public var retention: Duration = .seconds(3600)
        /// How often the leader starts deleting them, and how many rows each statement deletes.
        /// The statements take turns with publishing passes, so a large backlog of expired rows
        /// never holds up publishing (one statement for an hour's rows took 0.5 s of seq scan at
        /// 1 000 msgs/s, every minute: docs/benchmarks.md, part 11).
        public var cleanupInterval: Duration = .seconds(60)
        public var cleanupBatchSize: Int = 1_000
        /// How long the relay keeps looking for a row a writer woke it for (`wake(awaiting:)`) that
        /// it has not read yet; past that the fallback poll covers it (a transaction rolled back).
        public var awaitedRowTimeout: Duration = .seconds(5)
        public init() {}
    }

    /// The session advisory lock the leading relay holds (tests hold it to keep events in the outbox).
    public static let leaderLockId: Int64 = 0x6368_6174_6f75_7462  // "chatoutb"

    private let postgres: PostgresClient
    private let producer: KafkaProducer
    private let logger: Logger
    private let configuration: Configuration
    /// Wakes the publish loop of the current leadership term (nil while standing by).
    private let wakeContinuation = Mutex<AsyncStream<Void>.Continuation?>(nil)
    private let publishedCounter = Counter(label: "outbox_published_total")
    private let failedCounter = Counter(label: "outbox_publish_failures_total")
    private let leading = Atomic<Bool>(false)
    /// Rows written in this process without `NOTIFY` that no pass has read yet, and until when the
    /// relay looks for them (`wake(awaiting:)`).
    private let awaited = Mutex<Awaited>(Awaited())
    private let drainPasses = Atomic<Int>(0)
    private let backOffs = Atomic<Int>(0)
    private let drainCounter = Counter(label: "outbox_drain_passes_total")
    /// Rows not yet published and rows dead-lettered, as the leader last counted them.
    private let backlogGauge = Gauge(label: "outbox_backlog")
    private let deadLettersGauge = Gauge(label: "outbox_dead_letters")
    static let gaugeInterval: Duration = .seconds(5)

    public init(postgres: PostgresClient, producer: KafkaProducer, logger: Logger, configuration: Configuration = .init()) {
        self.postgres = postgres
        self.producer = producer
        self.logger = logger
        self.configuration = configuration
    }

    /// Asks the relay to look at the outbox now (in-process; other processes use NOTIFY).
    public func wake() {
        _ = wakeContinuation.withLock { $0 }?.yield()
    }

    /// Whether a writer in this process may leave `NOTIFY` out of its statement and call
    /// `wake(awaiting:)` with the rows' ids instead: this relay leads, so it is the one the
    /// notification would reach. A `NOTIFY` per commit costs PostgreSQL a signal to the listening
    /// backend, that backend's wake-up and a message to the relay's connection (about a tenth of
    /// PostgreSQL's CPU per channel send over REST: docs/benchmarks.md, parts 38 and 39). Should the
    /// leadership move between this check and the commit, the next leader's first pass (it drains
    /// before it waits) or its fallback poll finds the row: later, never lost.
    public var wakesInProcess: Bool { isLeader }

    /// Asks the relay to publish the outbox rows `ids`, written in this process without `NOTIFY`.
    /// The writer may call this before its transaction is visible (a statement's rows can reach it
    /// before PostgreSQL has committed at the `Sync` that follows): the relay keeps each id until a
    /// pass has read it, or it reads as published, looking again shortly after a pass that missed
    /// it, for up to `awaitedRowTimeout`. Ignored while this relay does not lead.
    public func wake(awaiting ids: some Sequence<Int64>) {
        guard isLeader else { return }
        let now = ContinuousClock.now
        let until = now + configuration.awaitedRowTimeout
        awaited.withLock { awaited in
            // While the broker is down no pass reads them, so the ids would pile up: expired ones
            // are dropped now and then, and past `maxAwaitedRows` no more are kept (the passes
            // still read those rows in order, and the fallback poll wakes the relay).
            if awaited.rows.count >= Self.awaitedPruneThreshold, now - awaited.prunedAt >= .seconds(1) {
                awaited.rows = awaited.rows.filter { $0.value > now }
                awaited.prunedAt = now
            }
            for id in ids where awaited.rows.count < Self.maxAwaitedRows { awaited.rows[id] = until }
        }
        wake()
    }

    /// Rows written in this process without `NOTIFY` that no pass has read yet, with the time the
    /// relay stops looking for each, and when the expired ones were last dropped.
    struct Awaited {
        var rows: [Int64: ContinuousClock.Instant] = [:]
        var prunedAt = ContinuousClock.now
    }

    /// How many awaited rows the relay keeps at most, and from how many on a wake drops the
    /// expired ones (at most once a second). Sends at 1 000/s awaited for 5 s are 5 000.
    public static let maxAwaitedRows = 100_000
    static let awaitedPruneThreshold = 10_000

    /// How many rows woken for in process the relay still looks for.
    public var awaitedRowCount: Int { awaited.withLock { $0.rows.count } }

    /// How many times the relay looked at the outbox (an idle relay should barely move this).
    public var drainPassCount: Int { drainPasses.load(ordering: .relaxed) }

    /// How many times the relay backed off after a failed delivery (transient failures only).
    public var backOffCount: Int { backOffs.load(ordering: .relaxed) }

    /// Whether this instance currently holds the relay leadership.
    public var isLeader: Bool { leading.load(ordering: .relaxed) }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await self.leadOrStandBy()
                } catch is CancellationError {
                    return
                } catch {
                    if Task.isCancelled { return }
                    self.logger.error("outbox relay failed; retrying", metadata: ["error": "\(String(reflecting: error))"])
                }
                try? await Task.sleep(for: self.configuration.standbyRetryInterval)
            }
        }
    }

    private func leadOrStandBy() async throws {
        try await postgres.withLiveConnection { connection in
            let logger = self.logger
            guard try await connection.tryAdvisoryLock(Self.leaderLockId, logger: logger) else { return }  // another replica leads; stand by
            self.leading.store(true, ordering: .relaxed)
            // A fresh wake stream per leadership term: a cancelled term finishes its stream.
            let (wakes, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            self.wakeContinuation.withLock { $0 = continuation }
            defer {
                self.wakeContinuation.withLock { $0 = nil }
                // The next leader's first pass reads whatever this term was still looking for.
                self.awaited.withLock { $0.rows = [:] }
                continuation.finish()
                self.leading.store(false, ordering: .relaxed)
            }
            logger.info("outbox relay is the leader")
            do {
                // Abandoned when the connection closes or the term is cancelled: a LISTEN on a
                // connection whose backend was terminated can wait forever, and with it the pool
                // (it would never get its connection back) and every shutdown after it.
                try await connection.abandoningOnClose {
                    try await self.lead(connection, wakes: wakes)
                }
            } catch {
                await connection.releaseAdvisoryLock(Self.leaderLockId, logger: logger)
                throw error
            }
            await connection.releaseAdvisoryLock(Self.leaderLockId, logger: logger)
        }
    }

    /// A leadership term: LISTEN for outbox notifications, a fallback poll, and the publish loop,
    /// until one of them ends.
    private func lead(_ connection: PostgresConnection, wakes: AsyncStream<Void>) async throws {
        try await connection.listen(on: Outbox.channel) { notifications in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await _ in notifications { self.wake() }
                }
                // The fallback poll feeds the same wake stream (a lost notification costs at most
                // one interval).
                group.addTask {
                    while true {
                        try await Task.sleep(for: self.configuration.fallbackPollInterval)
                        self.wake()
                    }
                }
                group.addTask { try await self.publishLoop(connection, wakes: wakes) }
                try await group.next()
                group.cancelAll()
            }
        }
    }

    private func publishLoop(_ connection: PostgresConnection, wakes: AsyncStream<Void>) async throws {
        // One iterator for the term: cancelling a task that waits on an AsyncStream terminates
        // the stream, so the wait is never raced against a timer by cancellation.
        var wakes = wakes.makeAsyncIterator()
        var backoff = Duration.milliseconds(100)
        var lastCleanup = ContinuousClock.now
        var cleaning = false
        var lastCount: ContinuousClock.Instant?
        var lookAgainAfter = Self.firstLookAgain
        while !Task.isCancelled {
            // Abandoned when the connection closes (a query can hang on a closing connection).
            let outcome = try await connection.abandoningOnClose { try await self.drain(connection) }
            if lastCount.map({ ContinuousClock.now - $0 >= Self.gaugeInterval }) ?? true {
                lastCount = ContinuousClock.now
                try await connection.abandoningOnClose { try await self.recordGauges(connection) }
            }
            if outcome.failed > 0 {
                logger.warning(
                    "outbox publish failed; backing off",
                    metadata: [
                        "outbox.failed": "\(outcome.failed)",
                        "outbox.backoff_ms": "\(backoff.components.seconds * 1000 + backoff.components.attoseconds / 1_000_000_000_000_000)",
                    ])
                backOffs.add(1, ordering: .relaxed)
                try await Task.sleep(for: backoff)
                backoff = min(backoff * 2, configuration.maxBackoff)
                continue
            }
            backoff = .milliseconds(100)
            if !cleaning, ContinuousClock.now - lastCleanup > configuration.cleanupInterval {
                lastCleanup = ContinuousClock.now
                cleaning = true
            }
            if cleaning {
                let deleted = try await connection.abandoningOnClose { try await self.deleteExpired(connection) }
                cleaning = deleted >= configuration.cleanupBatchSize
                // More to delete: publish what came meanwhile, then the next batch.
                if cleaning { continue }
            }
            switch try await connection.abandoningOnClose({ try await self.lookAgain(connection, afterPublishing: outcome.published) }) {
            case .now:
                lookAgainAfter = Self.firstLookAgain
                continue
            case .later:
                try await Task.sleep(for: lookAgainAfter)
                lookAgainAfter = min(lookAgainAfter * 2, Self.lastLookAgain)
                continue
            case .no:
                lookAgainAfter = Self.firstLookAgain
            }
            guard await wakes.next() != nil else { return }
        }
    }

    /// The first wait before looking again for an awaited row a pass did not find; it doubles up
    /// to `lastLookAgain` while the row stays invisible.
    static let firstLookAgain: Duration = .milliseconds(1)
    static let lastLookAgain: Duration = .milliseconds(50)

    private func forget(_ ids: some Sequence<Int64>) {
        awaited.withLock { awaited in
            guard !awaited.rows.isEmpty else { return }
            for id in ids { awaited.rows.removeValue(forKey: id) }
        }
    }

    /// What follows a pass for rows woken in process that no pass has read yet.
    enum LookAgain: Equatable {
        /// None is left: wait for a wake.
        case no
        /// Another pass at once.
        case now
        /// Their transactions have not committed: another pass after a short wait.
        case later
    }

    /// After a pass, for the rows woken in process (`wake(awaiting:)`) that no pass has read yet:
    /// after a pass that read rows, another at once (they may have committed meanwhile). After an
    /// empty one the relay asks which of them are visible: those already published (by an earlier
    /// pass, before the writer's wake) are done; one visible and unpublished means another pass
    /// now; if none is visible yet, their transactions have not committed, so later. Expired ones
    /// are dropped: the fallback poll covers them.
    private func lookAgain(_ connection: PostgresConnection, afterPublishing count: Int) async throws -> LookAgain {
        let now = ContinuousClock.now
        let ids = awaited.withLock { awaited -> [Int64] in
            guard !awaited.rows.isEmpty else { return [] }
            awaited.rows = awaited.rows.filter { $0.value > now }
            awaited.prunedAt = now
            return Array(awaited.rows.keys)
        }
        if ids.isEmpty { return .no }
        if count > 0 { return .now }
        var published: [Int64] = []
        var visibleUnpublished = false
        for try await (id, isPublished) in try await connection.execute(OutboxRowsPublished(ids: ids), logger: logger) {
            if isPublished { published.append(id) } else { visibleUnpublished = true }
        }
        forget(published)
        if visibleUnpublished { return .now }
        return published.count < ids.count ? .later : .no
    }

    /// Deletes up to `cleanupBatchSize` published rows older than `retention`, oldest first (on
    /// `outbox_published_at`); returns how many.
    private func deleteExpired(_ connection: PostgresConnection) async throws -> Int {
        let cutoff = Date().addingTimeInterval(-Double(configuration.retention.components.seconds))
        let rows = try await connection.query(
            """
            WITH doomed AS (
                SELECT id FROM outbox WHERE published_at < \(cutoff) ORDER BY published_at LIMIT \(configuration.cleanupBatchSize)
            ), gone AS (
                DELETE FROM outbox o USING doomed d WHERE o.id = d.id RETURNING 1
            )
            SELECT count(*)::int8 FROM gone
            """, logger: logger)
        var deleted = 0
        for try await n in rows.decode(Int64.self) { deleted = Int(n) }
        return deleted
    }

    /// `outbox_backlog` and `outbox_dead_letters` (both on partial or small indexes: cheap).
    private func recordGauges(_ connection: PostgresConnection) async throws {
        let rows = try await connection.query(
            "SELECT (SELECT count(*) FROM outbox WHERE published_at IS NULL), (SELECT count(*) FROM outbox_dead_letters)", logger: logger)
        for try await (backlog, deadLetters) in rows.decode((Int64, Int64).self) {
            backlogGauge.record(backlog)
            deadLettersGauge.record(deadLetters)
        }
    }

    struct DrainOutcome: Sendable {
        var published = 0
        var failed = 0
    }

    /// Publishes unpublished rows batch by batch until a batch comes back short or a delivery
    /// fails transiently. Rows refused for good are dead-lettered and do not count as failures.
    private func drain(_ connection: PostgresConnection) async throws -> DrainOutcome {
        drainPasses.add(1, ordering: .relaxed)
        drainCounter.increment()
        var outcome = DrainOutcome()
        while !Task.isCancelled {
            var rows: [(id: Int64, eventId: UUID, topic: String, type: String, bytes: Int)] = []
            var messages: [KafkaProducerMessage] = []
            for try await (id, eventId, topic, key, type, payload, traceparent, tracestate) in try await connection.execute(
                UnpublishedOutboxRows(limit: configuration.batchSize), logger: logger)
            {
                rows.append((id, eventId, topic, type, payload?.readableBytes ?? 0))
                var headers = [
                    KafkaHeader(key: CloudEventKafkaHeader.id, string: eventId.lowercased),
                    KafkaHeader(key: CloudEventKafkaHeader.type, string: type),
                ]
                if payload != nil {
                    headers.append(KafkaHeader(key: CloudEventKafkaHeader.contentType, string: CloudEventKafkaHeader.contentTypeValue))
                }
                if let traceparent { headers.append(KafkaHeader(key: KafkaTracing.traceparent, string: traceparent)) }
                if let tracestate { headers.append(KafkaHeader(key: KafkaTracing.tracestate, string: tracestate)) }
                messages.append(
                    KafkaProducerMessage(
                        topic: topic, key: key, value: payload.map { Array($0.readableBytesView) }, headers: headers
                    ))
            }
            if rows.isEmpty { return outcome }
            forget(rows.lazy.map(\.id))
            let results = await producer.sendAllAndAwait(messages)
            var delivered: [Int64] = []
            var refused: [DeadLetter] = []
            var failed = 0
            for (row, result) in zip(rows, results) {
                switch result {
                case .success: delivered.append(row.id)
                case .failure(let error as KafkaError) where error.isPermanentForRecord:
                    refused.append(
                        DeadLetter(
                            id: row.id, eventId: row.eventId, topic: row.topic, eventType: row.type, payloadBytes: row.bytes, error: error
                        ))
                case .failure(let error):
                    failed += 1
                    if failed == 1 {
                        logger.warning("outbox record not delivered", metadata: ["outbox.id": "\(row.id)", "kafka.error": "\(error)"])
                    }
                }
            }
            if !delivered.isEmpty {
                _ = try await connection.execute(MarkOutboxPublished(ids: delivered), logger: logger)
            }
            try await OutboxDeadLetters.move(refused, on: connection, logger: logger)
            outcome.published += delivered.count
            publishedCounter.increment(by: delivered.count)
            if failed > 0 {
                outcome.failed += failed
                failedCounter.increment(by: failed)
                return outcome
            }
            // A short batch was every row committed before it was read. A row committed since
            // has notified after its commit, and that wake is buffered for the next pass, so no
            // empty read is needed to find it.
            if rows.count < configuration.batchSize { return outcome }
        }
        return outcome
    }
}

/// The relay's oldest unpublished rows. The relay runs these two statements on every pass, so
/// both are prepared once on its connection.
struct UnpublishedOutboxRows: PostgresPreparedStatement {
    typealias Row = (Int64, UUID, String, String, String, ByteBuffer?, String?, String?)
    static let sql = """
        SELECT id, event_id, topic, event_key, event_type, payload, traceparent, tracestate FROM outbox
        WHERE published_at IS NULL ORDER BY id LIMIT $1
        """
    static let bindingDataTypes: [PostgresDataType] = [.int8]

    var limit: Int

    func makeBindings() -> PostgresBindings { PostgresBindings(values: Int64(limit)) }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// Which of the rows `ids` are visible, and whether each is published (the relay's question for
/// rows woken in process that a pass did not read).
struct OutboxRowsPublished: PostgresPreparedStatement {
    typealias Row = (Int64, Bool)
    static let sql = "SELECT id, published_at IS NOT NULL FROM outbox WHERE id = ANY($1)"
    static let bindingDataTypes: [PostgresDataType] = [.int8Array]

    var ids: [Int64]

    func makeBindings() -> PostgresBindings { PostgresBindings(values: ids) }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// Marks rows the broker acknowledged.
struct MarkOutboxPublished: PostgresPreparedStatement {
    typealias Row = ()
    static let sql = "UPDATE outbox SET published_at = now() WHERE id = ANY($1)"
    static let bindingDataTypes: [PostgresDataType] = [.int8Array]

    var ids: [Int64]

    func makeBindings() -> PostgresBindings { PostgresBindings(values: ids) }

    func decodeRow(_ row: PostgresRow) throws -> Row {}
}
