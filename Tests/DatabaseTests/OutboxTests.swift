import Common
import Database
import Events
import Foundation
import Kafka
import Logging
import PostgresNIO
import Testing
import TestSupport

struct OutboxTestEvent: EventPayload {
    static let eventType = "test.outbox.event"
    static let topic = Topic(name: "test.outbox.v1", partitions: 3, key: "key")
    var key: String
    var seq: Int
    var subject: String { key }
}

/// Writes `count` events in transactions of `perTransaction`, keys `k0…k(keys-1)` with a per-key
/// sequence, to `topic`.
func writeEvents(_ client: PostgresClient, topic: String, count: Int, keys: Int = 20, perTransaction: Int = 10, startSeq: Int = 0) async throws {
    let logger = TestDatabase.logger
    for start in stride(from: 0, to: count, by: perTransaction) {
        // Live: OutboxRecoveryTests writes right after terminating every backend, and a raw pooled
        // query on a connection whose close the pool has not heard of yet waits for ever.
        try await client.withLiveTransaction(logger: logger) { connection in
            for i in start..<min(count, start + perTransaction) {
                let n = startSeq + i
                let event = CloudEvent(source: "test", data: OutboxTestEvent(key: "k\(n % keys)", seq: n / keys))
                try await Outbox.appendRaw(
                    eventId: event.id, topic: topic, key: event.subject, type: OutboxTestEvent.eventType,
                    payload: try EventCoding.encode(event), on: connection, logger: logger
                )
            }
        }
    }
}

/// Collects decoded test events from `topic` until `stop` says so or `timeout` passes.
func collect(
    _ cluster: EmbeddedKafkaCluster, topic: String, group: String, timeout: Duration = .seconds(60),
    until stop: @escaping @Sendable ([CloudEvent<OutboxTestEvent>]) -> Bool
) async throws -> [CloudEvent<OutboxTestEvent>] {
    let consumer = try TestKafka.groupConsumer(cluster, group: group, topics: [topic])
    let received = Locked<[CloudEvent<OutboxTestEvent>]>([])
    do {
        try await withTimeout(timeout, "collecting from \(topic)") {
            for try await message in consumer.messages {
                let event = try EventCoding.decode(OutboxTestEvent.self, from: message.value ?? [])
                let done = received.withLock {
                    $0.append(event); return stop($0)
                }
                if done { break }
            }
        }
    } catch {
        await consumer.close()
        throw error
    }
    await consumer.close()
    return received.value
}

func distinctCount(_ events: [CloudEvent<OutboxTestEvent>]) -> Int { Set(events.map(\.id)).count }

func expectPerKeyOrder(_ events: [CloudEvent<OutboxTestEvent>], sourceLocation: SourceLocation = #_sourceLocation) {
    var firstSeen: [String: [Int]] = [:]
    var seen = Set<UUID>()
    for e in events where seen.insert(e.id).inserted {
        firstSeen[e.data.key, default: []].append(e.data.seq)
    }
    for (key, seqs) in firstSeen {
        #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, "per-key order for \(key)", sourceLocation: sourceLocation)
    }
}

/// A fresh database (platform tables migrated), embedded cluster, topic and producer per test.
struct OutboxFixture: Sendable {
    let db: TestDatabase
    let cluster: EmbeddedKafkaCluster
    let topic: String
    let producer: KafkaProducer

    static func make(prefix: String = "outbox", partitions: Int = 3) async throws -> OutboxFixture {
        let cluster = try TestKafka.cluster()
        let topic = TestKafka.uniqueTopic(prefix)
        try cluster.createTopic(topic, partitions: partitions)
        return OutboxFixture(db: try await TestDatabase.create(), cluster: cluster, topic: topic, producer: try TestKafka.producer(cluster))
    }

    /// Migrates (platform tables + `extra`), runs `body` with a running client, drops the database.
    func run(extra: [Migration] = [], _ body: @escaping @Sendable (PostgresClient) async throws -> Void) async throws {
        try await db.withClient { client in
            try await Migrator(PlatformMigrations.all + extra).migrate(client: client, logger: TestDatabase.logger)
            try await body(client)
        }
        try await db.drop()
    }
}

/// The single integer a counting query returns.
func count(_ client: PostgresClient, _ query: PostgresQuery) async throws -> Int {
    var n = 0
    for try await value in try await client.liveQuery(query, logger: TestDatabase.logger).decode(Int.self) { n = value }
    return n
}

@Suite("Transactional outbox and relay", .serialized)
struct OutboxTests {
    @Test("1 000 events: published exactly once, per-key order kept, one leader among two relays")
    func exactlyOnceInOrder() async throws {
        let f = try await OutboxFixture.make()
        let (cluster, topic, producer) = (f.cluster, f.topic, f.producer)
        try await f.run { client in
            var config = OutboxRelay.Configuration()
            config.batchSize = 100
            let relayA = OutboxRelay(postgres: client, producer: producer, logger: TestDatabase.logger, configuration: config)
            let relayB = OutboxRelay(postgres: client, producer: producer, logger: TestDatabase.logger, configuration: config)
            let tasks = [Task { try await relayA.run() }, Task { try await relayB.run() }]
            defer { tasks.forEach { $0.cancel() } }

            try await writeEvents(client, topic: topic, count: 1_000)
            let events = try await collect(cluster, topic: topic, group: "g-\(topic)") { $0.count >= 1_000 }
            #expect(relayA.isLeader != relayB.isLeader, "exactly one relay leads")
            // Anything published twice would arrive after the first 1 000; give it time to show.
            try await Task.sleep(for: .seconds(1))
            #expect(try await poll(timeout: .seconds(30)) { try await count(client, "SELECT count(*)::int FROM outbox WHERE published_at IS NULL") == 0 })
            let again = try await collect(cluster, topic: topic, group: "g2-\(topic)", timeout: .seconds(30)) { $0.count >= 1_000 }
            #expect(again.count == 1_000)
            #expect(distinctCount(again) == 1_000, "each event published exactly once")
            #expect(events.count == 1_000)
            expectPerKeyOrder(again)
        }
    }

    @Test("relay killed mid-stream and restarted: none lost; duplicates dropped by the inbox")
    func killedRelayLosesNothing() async throws {
        let f = try await OutboxFixture.make()
        let (cluster, topic, producer) = (f.cluster, f.topic, f.producer)
        try await f.run(extra: [Migration(100, "effects", "CREATE TABLE effects (event_id uuid NOT NULL, key text, seq int)")]) { client in
            try await writeEvents(client, topic: topic, count: 1_000)
            var config = OutboxRelay.Configuration()
            config.batchSize = 50
            let first = OutboxRelay(postgres: client, producer: producer, logger: TestDatabase.logger, configuration: config)
            let firstTask = Task { try await first.run() }
            // Kill it once part of the outbox is out.
            let deadline = ContinuousClock.now + .seconds(30)
            while true {
                if try await count(client, "SELECT count(*)::int FROM outbox WHERE published_at IS NOT NULL") >= 300 { break }
                guard ContinuousClock.now < deadline else { throw TimeoutError(what: "first relay publishing") }
                try await Task.sleep(for: .milliseconds(5))
            }
            firstTask.cancel()
            _ = await firstTask.result
            // A crash between the broker's acknowledgement and the UPDATE: the last batch is
            // published but still unmarked.
            _ = try await client.query(
                """
                UPDATE outbox SET published_at = NULL
                WHERE id IN (SELECT id FROM outbox WHERE published_at IS NOT NULL ORDER BY id DESC LIMIT 50)
                """)

            let second = OutboxRelay(postgres: client, producer: producer, logger: TestDatabase.logger, configuration: config)
            let secondTask = Task { try await second.run() }
            defer { secondTask.cancel() }

            let raw = try await collect(cluster, topic: topic, group: "raw-\(topic)") { distinctCount($0) >= 1_000 }
            #expect(distinctCount(raw) == 1_000, "none lost")
            #expect(raw.count > 1_000, "the unmarked batch was republished")
            expectPerKeyOrder(raw)

            // The same stream through an inbox consumer: one effect per event.
            var router = EventRouter()
            router.on(OutboxTestEvent.self) { event, ctx in
                _ = try await ctx.connection.query(
                    "INSERT INTO effects (event_id, key, seq) VALUES (\(event.id), \(event.data.key), \(event.data.seq))", logger: ctx.logger
                )
            }
            let kafkaConsumer = try TestKafka.groupConsumer(cluster, group: "inbox-\(topic)", topics: [topic])
            let inbox = InboxEventConsumer(name: "test", consumer: kafkaConsumer, postgres: client, router: router, logger: TestDatabase.logger)
            let inboxTask = Task { try await inbox.run() }
            defer { inboxTask.cancel() }
            var effects = 0
            let effectDeadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < effectDeadline {
                effects = try await count(client, "SELECT count(*)::int FROM effects")
                if effects >= 1_000 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            try await Task.sleep(for: .milliseconds(500))  // let any duplicate land, if it would
            var distinct = 0
            for try await (n, d) in try await client.query("SELECT count(*)::int, count(DISTINCT event_id)::int FROM effects").decode((Int, Int).self) {
                effects = n
                distinct = d
            }
            #expect(effects == 1_000)
            #expect(distinct == 1_000)
        }
    }

    @Test("an idle relay waits (no polling loop); a commit wakes it without the fallback poll")
    func idleRelayWaits() async throws {
        let f = try await OutboxFixture.make()
        let (cluster, topic, producer) = (f.cluster, f.topic, f.producer)
        try await f.run { client in
            // A fallback poll far beyond the test's horizon: if the event is published at all, the
            // commit's NOTIFY woke the relay (no wall-clock bound, so a loaded machine cannot fail it).
            var configuration = OutboxRelay.Configuration()
            configuration.fallbackPollInterval = .seconds(600)
            let relay = OutboxRelay(postgres: client, producer: producer, logger: TestDatabase.logger, configuration: configuration)
            let task = Task { try await relay.run() }
            defer { task.cancel() }
            try await Task.sleep(for: .seconds(2))
            let idlePasses = relay.drainPassCount
            #expect(idlePasses >= 1 && idlePasses <= 2, "idle for 2 s: \(idlePasses) passes (the start-up drain, no polling loop)")
            let written = ContinuousClock.now
            try await writeEvents(client, topic: topic, count: 1)
            while try await count(client, "SELECT count(*)::int FROM outbox WHERE published_at IS NOT NULL") == 0 {
                guard ContinuousClock.now - written < .seconds(60) else { break }
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(try await count(client, "SELECT count(*)::int FROM outbox WHERE published_at IS NOT NULL") == 1, "NOTIFY woke the relay")
            #expect(relay.drainPassCount > idlePasses)
            _ = try await collect(cluster, topic: topic, group: "idle-\(topic)") { $0.count >= 1 }
        }
    }

    @Test(
        "a row woken for in process before its transaction commits (no NOTIFY): the relay looks again until it commits, then publishes it; one of a rolled-back transaction is given up after awaitedRowTimeout"
    )
    func wakeAwaitingRowsBeforeCommit() async throws {
        let f = try await OutboxFixture.make(prefix: "awaiting", partitions: 1)
        let (cluster, topic, producer) = (f.cluster, f.topic, f.producer)
        try await f.run { client in
            let logger = TestDatabase.logger
            // No fallback poll within the test and no NOTIFY in these inserts: only the wake
            // for the awaited row can publish it.
            var configuration = OutboxRelay.Configuration()
            configuration.fallbackPollInterval = .seconds(600)
            configuration.awaitedRowTimeout = .seconds(2)
            let relay = OutboxRelay(postgres: client, producer: producer, logger: logger, configuration: configuration)
            let task = Task { try await relay.run() }
            defer { task.cancel() }
            #expect(try await poll(timeout: .seconds(30)) { relay.wakesInProcess }, "the only relay leads")
            // A replica standing by is not the relay a writer may wake instead of notifying.
            let standby = OutboxRelay(postgres: client, producer: producer, logger: logger, configuration: configuration)
            let standbyTask = Task { try await standby.run() }
            defer { standbyTask.cancel() }
            try await Task.sleep(for: .milliseconds(300))
            #expect(!standby.wakesInProcess)
            standby.wake(awaiting: [1])
            #expect(standby.awaitedRowCount == 0, "a standby keeps no awaited rows")
            /// Inserts one row without NOTIFY in a transaction, wakes the relay for it, waits
            /// `held` before the transaction ends (committed, or rolled back when `commit` is false).
            func insert(_ event: CloudEvent<OutboxTestEvent>, held: Duration, commit: Bool) async throws {
                struct RolledBack: Error {}
                do {
                    try await client.withLiveTransaction(logger: logger) { c in
                        let payload = ByteBuffer(bytes: try EventCoding.encode(event))
                        var id: Int64?
                        for try await row in try await c.query(
                            """
                            INSERT INTO outbox (event_id, topic, event_key, event_type, payload)
                            VALUES (\(event.id), \(topic), \(event.subject), \(OutboxTestEvent.eventType), \(payload)) RETURNING id
                            """, logger: logger
                        ).decode(Int64.self) { id = row }
                        relay.wake(awaiting: [try #require(id)])
                        try await Task.sleep(for: held)
                        if !commit { throw RolledBack() }
                    }
                } catch let error as PostgresTransactionError where error.closureError is RolledBack {}
            }
            try await Task.sleep(for: .milliseconds(500))
            let before = relay.drainPassCount
            let committed = CloudEvent(source: "test", data: OutboxTestEvent(key: "k", seq: 1))
            try await insert(committed, held: .milliseconds(400), commit: true)
            #expect(relay.drainPassCount > before + 1, "the relay looked while the row was not visible: \(relay.drainPassCount - before) passes")
            let received = try await collect(cluster, topic: topic, group: "awaiting-\(topic)", timeout: .seconds(60)) { $0.count >= 1 }
            #expect(received.map(\.id) == [committed.id])
            #expect(try await poll(timeout: .seconds(30)) { relay.awaitedRowCount == 0 })

            // Rolled back: the row never shows; the relay stops looking once its time is up.
            try await insert(CloudEvent(source: "test", data: OutboxTestEvent(key: "k", seq: 2)), held: .milliseconds(100), commit: false)
            #expect(try await poll(timeout: .seconds(30)) { relay.awaitedRowCount == 0 }, "given up after awaitedRowTimeout")
            try await Task.sleep(for: .milliseconds(300))
            let idle = relay.drainPassCount
            try await Task.sleep(for: .seconds(1))
            #expect(relay.drainPassCount == idle, "idle again: no pass in 1 s")
            #expect(try await count(client, "SELECT count(*)::int FROM outbox") == 1)
        }
    }

    @Test("while the broker is down, the rows a relay was woken for stay bounded: at most maxAwaitedRows, the expired ones dropped by a later wake")
    func awaitedRowsStayBounded() async throws {
        let f = try await OutboxFixture.make(prefix: "bounded", partitions: 1)
        let (cluster, topic, producer) = (f.cluster, f.topic, f.producer)
        try await f.run { client in
            var configuration = OutboxRelay.Configuration()
            configuration.fallbackPollInterval = .seconds(600)
            configuration.awaitedRowTimeout = .milliseconds(500)
            let relay = OutboxRelay(postgres: client, producer: producer, logger: TestDatabase.logger, configuration: configuration)
            let task = Task { try await relay.run() }
            defer { task.cancel() }
            #expect(try await poll(timeout: .seconds(30)) { relay.wakesInProcess }, "the only relay leads")
            // A row no pass can publish: passes fail and back off, none asks after awaited rows.
            cluster.setAllBrokersDown()
            try await writeEvents(client, topic: topic, count: 1)
            try await Task.sleep(for: .milliseconds(200))
            let unknown = Int64(1_000_000_000)
            relay.wake(awaiting: unknown..<unknown + 150_000)
            #expect(relay.awaitedRowCount == OutboxRelay.maxAwaitedRows)
            try await Task.sleep(for: .milliseconds(1_200))
            relay.wake(awaiting: [unknown + 200_000])
            #expect(relay.awaitedRowCount == 1, "the expired ones dropped")
            cluster.setAllBrokersUp()
            let events = try await collect(cluster, topic: topic, group: "bounded-\(topic)", timeout: .seconds(60)) { $0.count >= 1 }
            #expect(events.count == 1)
        }
    }

    @Test("published rows past the retention are deleted batch by batch, between publishing passes; newer ones stay")
    func expiredRowsDeletedInBatches() async throws {
        let f = try await OutboxFixture.make()
        let (cluster, topic, producer) = (f.cluster, f.topic, f.producer)
        try await f.run { client in
            _ = try await client.liveQuery(
                """
                INSERT INTO outbox (event_id, topic, event_key, event_type, published_at)
                SELECT gen_random_uuid(), \(topic), 'k', 'test.expired', now() - interval '2 hours' FROM generate_series(1, 2500)
                UNION ALL
                SELECT gen_random_uuid(), \(topic), 'k', 'test.recent', now() - interval '10 minutes' FROM generate_series(1, 3)
                """, logger: TestDatabase.logger)
            var configuration = OutboxRelay.Configuration()
            configuration.cleanupInterval = .milliseconds(300)
            configuration.cleanupBatchSize = 500
            let relay = OutboxRelay(postgres: client, producer: producer, logger: TestDatabase.logger, configuration: configuration)
            let task = Task { try await relay.run() }
            defer { task.cancel() }
            try await writeEvents(client, topic: topic, count: 1)
            let start = ContinuousClock.now
            while try await count(client, "SELECT count(*)::int FROM outbox WHERE event_type = 'test.expired'") > 0 {
                guard ContinuousClock.now - start < .seconds(60) else { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(try await count(client, "SELECT count(*)::int FROM outbox WHERE event_type = 'test.expired'") == 0)
            #expect(try await count(client, "SELECT count(*)::int FROM outbox WHERE event_type = 'test.recent'") == 3, "within the retention")
            // Five statements of 500, each after a publishing pass.
            #expect(relay.drainPassCount >= 5, "\(relay.drainPassCount) passes")
            _ = try await collect(cluster, topic: topic, group: "expired-\(topic)") { $0.count >= 1 }
            #expect(try await poll(timeout: .seconds(30)) { try await count(client, "SELECT count(*)::int FROM outbox WHERE published_at IS NULL") == 0 })
        }
    }

    @Test("broker down for 5 s: events written meanwhile are published after it returns")
    func brokerOutage() async throws {
        let f = try await OutboxFixture.make()
        let (cluster, topic, producer) = (f.cluster, f.topic, f.producer)
        try await f.run { client in
            let relay = OutboxRelay(postgres: client, producer: producer, logger: TestDatabase.logger)
            let task = Task { try await relay.run() }
            defer { task.cancel() }
            try await writeEvents(client, topic: topic, count: 10)
            _ = try await collect(cluster, topic: topic, group: "warm-\(topic)") { $0.count >= 10 }

            cluster.setAllBrokersDown()
            try await writeEvents(client, topic: topic, count: 100, startSeq: 10)
            try await Task.sleep(for: .seconds(5))
            #expect(
                try await count(client, "SELECT count(*)::int FROM outbox WHERE published_at IS NULL") == 100,
                "nothing can be acknowledged while the broker is down")
            cluster.setAllBrokersUp()

            let events = try await collect(cluster, topic: topic, group: "after-\(topic)", timeout: .seconds(60)) { distinctCount($0) >= 110 }
            #expect(distinctCount(events) == 110)
            expectPerKeyOrder(events)
        }
    }
}

@Suite("Inbox")
struct InboxTests {
    @Test(
        "records that can never be applied (not a CloudEvent, or data not matching its type) are skipped, not retried forever, whoever fetches (kafka.inbox-reader)",
        arguments: [true, false])
    func poisonRecordsDoNotBlockThePartition(fetchesItself: Bool) async throws {
        let f = try await OutboxFixture.make(prefix: "poison", partitions: 1)
        let (cluster, topic, producer) = (f.cluster, f.topic, f.producer)
        let good = CloudEvent(source: "test", data: OutboxTestEvent(key: "a", seq: 7))
        let wrongData =
            #"{"specversion":"1.0","id":"\#(UUIDv7.generate().lowercased)","source":"x","type":"test.outbox.event","time":"2026-01-01T00:00:00.000Z","subject":"a","data":{"key":42}}"#
        for value in [Array("not json at all".utf8), Array(wrongData.utf8), try EventCoding.encode(good)] {
            _ = try await producer.sendAndAwait(KafkaProducerMessage(topic: topic, key: "a", value: value))
        }
        try await f.run(extra: [Migration(100, "seen", "CREATE TABLE seen (seq int NOT NULL)")]) { client in
            var router = EventRouter()
            router.on(OutboxTestEvent.self) { event, ctx in
                _ = try await ctx.connection.query("INSERT INTO seen (seq) VALUES (\(event.data.seq))", logger: ctx.logger)
            }
            let consumer = try TestKafka.groupConsumer(cluster, group: "g-\(topic)", topics: [topic])
            let inbox = InboxEventConsumer(
                name: "poison", consumer: consumer, postgres: client, router: router, logger: TestDatabase.logger, fetchesItself: fetchesItself)
            let task = Task { try await inbox.run() }
            let deadline = ContinuousClock.now + .seconds(30)
            while (try? await count(client, "SELECT count(*)::int FROM seen")) == 0, ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(50))
            }
            let applied = try? await count(client, "SELECT count(*)::int FROM seen WHERE seq = 7")
            // The consumer leaves the group while the broker is still there.
            task.cancel()
            _ = await task.result
            #expect(applied == 1, "the good event after two poison records is applied")
        }
    }

    @Test("the same event delivered twice has one effect")
    func duplicateDelivery() async throws {
        let f = try await OutboxFixture.make(prefix: "inbox", partitions: 1)
        let (cluster, topic, producer) = (f.cluster, f.topic, f.producer)

        let event = CloudEvent(source: "test", data: OutboxTestEvent(key: "a", seq: 1))
        let marker = CloudEvent(source: "test", data: OutboxTestEvent(key: "a", seq: 2))
        for e in [event, event, marker] {
            _ = try await producer.sendAndAwait(KafkaProducerMessage(topic: topic, key: "a", value: try EventCoding.encode(e)))
        }
        try await f.run(extra: [Migration(100, "counter", "CREATE TABLE counter (seq int PRIMARY KEY, n int NOT NULL)")]) { client in
            var router = EventRouter()
            router.on(OutboxTestEvent.self) { event, ctx in
                _ = try await ctx.connection.query(
                    """
                    INSERT INTO counter (seq, n) VALUES (\(event.data.seq), 1)
                    ON CONFLICT (seq) DO UPDATE SET n = counter.n + 1
                    """, logger: ctx.logger)
            }
            let consumer = try TestKafka.groupConsumer(cluster, group: "g-\(topic)", topics: [topic])
            let inbox = InboxEventConsumer(name: "counter", consumer: consumer, postgres: client, router: router, logger: TestDatabase.logger)
            let task = Task { try await inbox.run() }
            defer { task.cancel() }
            var counts: [Int: Int] = [:]
            let deadline = ContinuousClock.now + .seconds(30)
            while counts[2] == nil, ContinuousClock.now < deadline {
                for try await (seq, n) in try await client.query("SELECT seq, n FROM counter").decode((Int, Int).self) { counts[seq] = n }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(counts == [1: 1, 2: 1])
        }
    }

    @Test("a tombstone (null payload), then an event, appended on one connection: both go out as written")
    func nullFirstThenValueOnOneConnection() async throws {
        let f = try await OutboxFixture.make(prefix: "tombstone", partitions: 1)
        let (cluster, topic, producer) = (f.cluster, f.topic, f.producer)
        try await f.run { client in
            let logger = TestDatabase.logger
            let event = CloudEvent(source: "test", data: OutboxTestEvent(key: "k", seq: 1))
            try await client.withConnection { connection in
                try await Outbox.appendRaw(
                    eventId: UUID(), topic: topic, key: "k", type: OutboxTestEvent.eventType, payload: nil, on: connection, logger: logger)
                try await Outbox.appendRaw(
                    eventId: event.id, topic: topic, key: "k", type: OutboxTestEvent.eventType, payload: try EventCoding.encode(event),
                    on: connection, logger: logger)
            }
            let relay = OutboxRelay(postgres: client, producer: producer, logger: logger)
            let task = Task { try await relay.run() }
            defer { task.cancel() }
            let consumer = try TestKafka.groupConsumer(cluster, group: "g-\(topic)", topics: [topic])
            let values = Locked<[[UInt8]?]>([])
            try await withTimeout(.seconds(60), "both records from \(topic)") {
                for try await message in consumer.messages {
                    let received = values.withLock { list -> Int in
                        list.append(message.value)
                        return list.count
                    }
                    if received >= 2 { break }
                }
            }
            await consumer.close()
            let received = values.value
            #expect(received.count == 2)
            #expect(received.first.map { $0 == nil } == true, "the tombstone first, without a value")
            let second = try #require(received.last.flatMap { $0 })
            #expect(try EventCoding.decode(OutboxTestEvent.self, from: second).id == event.id)
            // Marked published once the relay heard the broker's acknowledgement, which may come
            // after the consumer already read the records.
            #expect(
                try await poll(timeout: .seconds(30)) {
                    try await count(client, "SELECT count(*)::int FROM outbox WHERE published_at IS NULL") == 0
                })
        }
    }
}
