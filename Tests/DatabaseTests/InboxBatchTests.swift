import Common
import Database
import Events
import Foundation
import Kafka
import PostgresNIO
import Testing
import TestSupport

/// The inbox consumer applies a poll's records in one transaction, and falls back to one
/// transaction per record when any of them fails.
@Suite("Inbox: a poll's events in one transaction", .serialized)
struct InboxBatchTests {
    struct Failure: Error {}

    /// Produces `count` events (seq 0…count-1) in one go: one message set, so one poll holds them.
    func produce(_ f: OutboxFixture, count: Int) async throws {
        let messages = try (0..<count).map { seq in
            let event = CloudEvent(source: "test", data: OutboxTestEvent(key: "a", seq: seq))
            return KafkaProducerMessage(topic: f.topic, key: "a", value: try EventCoding.encode(event))
        }
        for result in await f.producer.sendAllAndAwait(messages) { _ = try result.get() }
    }

    /// Runs an inbox consumer with `handle` until `effects` holds `count` rows or 30 s pass.
    func consume(
        _ f: OutboxFixture, _ client: PostgresClient, count: Int,
        handle: @escaping @Sendable (CloudEvent<OutboxTestEvent>, EventContext) async throws -> Void
    ) async throws {
        var router = EventRouter()
        router.on(OutboxTestEvent.self, handle)
        let consumer = try TestKafka.groupConsumer(f.cluster, group: "g-\(f.topic)", topics: [f.topic])
        let inbox = InboxEventConsumer(name: "batch", consumer: consumer, postgres: client, router: router, logger: TestDatabase.logger)
        let task = Task { try await inbox.run() }
        defer { task.cancel() }
        try await Self.waitForEffects(client, count)
        try await Task.sleep(for: .milliseconds(300))  // anything applied twice would land meanwhile
    }

    static let effects = Migration(100, "effects", "CREATE TABLE effects (seq int NOT NULL)")

    @Test("60 events of one poll: each applied once, in fewer transactions than events")
    func sharedTransaction() async throws {
        let f = try await OutboxFixture.make(prefix: "batch", partitions: 1)
        try await produce(f, count: 60)
        try await f.run(extra: [Self.effects]) { client in
            try await consume(f, client, count: 60) { event, ctx in
                _ = try await ctx.connection.query("INSERT INTO effects (seq) VALUES (\(event.data.seq))", logger: ctx.logger)
            }
            #expect(try await DatabaseTests.count(client, "SELECT count(*)::int FROM effects") == 60)
            #expect(try await DatabaseTests.count(client, "SELECT count(DISTINCT seq)::int FROM effects") == 60)
            // Rows one transaction wrote share its id (xmin).
            let transactions = try await DatabaseTests.count(client, "SELECT count(DISTINCT xmin::text)::int FROM effects")
            #expect(transactions < 60, "\(transactions) transactions for 60 events")
        }
    }

    @Test("redelivered events in one poll, and events an earlier poll applied: each applied once (the poll's ids claimed in one statement)")
    func duplicatesInAndAcrossPolls() async throws {
        let f = try await OutboxFixture.make(prefix: "batchdup", partitions: 1)
        let events = (0..<40).map { CloudEvent(source: "test", data: OutboxTestEvent(key: "a", seq: $0)) }
        @Sendable func produce(_ batch: [CloudEvent<OutboxTestEvent>]) async throws {
            let messages = try batch.map { KafkaProducerMessage(topic: f.topic, key: "a", value: try EventCoding.encode($0)) }
            for result in await f.producer.sendAllAndAwait(messages) { _ = try result.get() }
        }
        // One poll: events 0…29, then 0…9 again (a producer's retry), and 5 twice in a row.
        try await produce(Array(events[0..<30]) + Array(events[0..<10]) + [events[5]])
        try await f.run(extra: [Self.effects]) { client in
            let handle: @Sendable (CloudEvent<OutboxTestEvent>, EventContext) async throws -> Void = { event, ctx in
                _ = try await ctx.connection.query("INSERT INTO effects (seq) VALUES (\(event.data.seq))", logger: ctx.logger)
            }
            try await consume(f, client, count: 30, handle: handle)
            #expect(try await DatabaseTests.count(client, "SELECT count(*)::int FROM effects") == 30)
            #expect(try await DatabaseTests.count(client, "SELECT count(DISTINCT seq)::int FROM effects") == 30)
            // A later poll: 20…29 applied before, 30…39 new.
            try await produce(Array(events[20..<40]))
            try await consume(f, client, count: 40, handle: handle)
            #expect(try await DatabaseTests.count(client, "SELECT count(*)::int FROM effects") == 40)
            #expect(try await DatabaseTests.count(client, "SELECT count(DISTINCT seq)::int FROM effects") == 40)
        }
    }

    @Test("a handler failing once inside a shared transaction: every event still applied exactly once")
    func failureFallsBackToOneByOne() async throws {
        let f = try await OutboxFixture.make(prefix: "batchfail", partitions: 1)
        try await produce(f, count: 40)
        let failedOnce = Locked(false)
        try await f.run(extra: [Self.effects]) { client in
            try await consume(f, client, count: 40) { event, ctx in
                _ = try await ctx.connection.query("INSERT INTO effects (seq) VALUES (\(event.data.seq))", logger: ctx.logger)
                // Event 20 fails the first time, after the events before it wrote their rows.
                guard event.data.seq == 20 else { return }
                let first = failedOnce.withLock { failed -> Bool in
                    defer { failed = true }
                    return !failed
                }
                if first { throw Failure() }
            }
            #expect(failedOnce.value)
            #expect(try await DatabaseTests.count(client, "SELECT count(*)::int FROM effects") == 40)
            #expect(try await DatabaseTests.count(client, "SELECT count(DISTINCT seq)::int FROM effects") == 40)
        }
    }
    /// Waits until `effects` holds `count` rows (or 30 s pass).
    static func waitForEffects(_ client: PostgresClient, _ count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while try await DatabaseTests.count(client, "SELECT count(*)::int FROM effects") < count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Another type on the same topic, handled one by one: it splits the runs of `OutboxTestEvent`.
    struct OtherTestEvent: EventPayload {
        static let eventType = "test.outbox.other"
        static let topic = OutboxTestEvent.topic
        var key: String
        var seq: Int
        var subject: String { key }
    }

    @Test(
        "a batch handler gets each run of its type in one call, in topic order: another type splits the runs, duplicates are left out, an undecodable record is skipped alone"
    )
    func runsOfOneType() async throws {
        let f = try await OutboxFixture.make(prefix: "batchrun", partitions: 1)
        let events = (0..<30).map { CloudEvent(source: "test", data: OutboxTestEvent(key: "a", seq: $0)) }
        func record<P: EventPayload>(_ event: CloudEvent<P>) throws -> KafkaProducerMessage {
            KafkaProducerMessage(topic: f.topic, key: "a", value: try EventCoding.encode(event))
        }
        // 0…14, the other type (seq 100), 15…29, a redelivery of 3…5; then a record of the batched
        // type whose data is not one, and 30…31.
        var first = try events[0..<15].map(record)
        first.append(try record(CloudEvent(source: "test", data: OtherTestEvent(key: "a", seq: 100))))
        first += try events[15..<30].map(record) + events[3..<6].map(record)
        // An `OutboxTestEvent` envelope whose seq is not a number.
        let valid = String(decoding: try record(CloudEvent(source: "test", data: OutboxTestEvent(key: "a", seq: 999))).value ?? [], as: UTF8.self)
        let broken = valid.replacingOccurrences(of: #""seq":999"#, with: #""seq":"nine""#)
        #expect(broken != valid)
        var second = [KafkaProducerMessage(topic: f.topic, key: "a", value: Array(broken.utf8))]
        second += try (30..<32).map { try record(CloudEvent(source: "test", data: OutboxTestEvent(key: "a", seq: $0))) }
        for result in await f.producer.sendAllAndAwait(first) { _ = try result.get() }
        let later = second
        try await f.run(extra: [Self.effects]) { client in
            let calls = Locked<[[Int]]>([])
            var router = EventRouter()
            router.onBatch(OutboxTestEvent.self) { run in
                let seqs = run.map(\.event.data.seq)
                calls.withLock { $0.append(seqs) }
                let ctx = try #require(run.first?.context)
                _ = try await ctx.connection.query("INSERT INTO effects (seq) SELECT unnest(\(seqs)::int[])", logger: ctx.logger)
            }
            router.on(OtherTestEvent.self) { event, ctx in
                calls.withLock { $0.append([-event.data.seq]) }
                _ = try await ctx.connection.query("INSERT INTO effects (seq) VALUES (\(event.data.seq))", logger: ctx.logger)
            }
            let consumer = try TestKafka.groupConsumer(f.cluster, group: "g-\(f.topic)", topics: [f.topic])
            let inbox = InboxEventConsumer(name: "runs", consumer: consumer, postgres: client, router: router, logger: TestDatabase.logger)
            let task = Task { try await inbox.run() }
            defer { task.cancel() }
            try await Self.waitForEffects(client, 31)
            for result in await f.producer.sendAllAndAwait(later) { _ = try result.get() }
            try await Self.waitForEffects(client, 33)
            try await Task.sleep(for: .milliseconds(300))  // anything applied twice would land meanwhile

            #expect(try await DatabaseTests.count(client, "SELECT count(*)::int FROM effects") == 33)
            #expect(try await DatabaseTests.count(client, "SELECT count(DISTINCT seq)::int FROM effects") == 33)
            let seen = calls.withLock { $0 }
            // In topic order, each event once, the other type between 14 and 15.
            #expect(seen.flatMap { $0 } == Array(0..<15) + [-100] + Array(15..<32), "\(seen)")
            #expect(seen.contains { $0.count > 1 }, "some run came in one call: \(seen)")
            #expect(!seen.contains { $0.contains(14) && $0.contains(15) }, "a run does not cross the other type: \(seen)")
        }
    }
}
