import Common
import Database
import Events
import Foundation
import Kafka
import Logging
import PostgresNIO
import Testing
import TestSupport

/// Polls `condition` every 10 ms until it holds or `timeout` passes; returns whether it held.
func poll(timeout: Duration, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}

/// Appends `count` raw records of `bytes` bytes each (not events: only their size matters).
func writeOversized(_ client: PostgresClient, topic: String, key: String, count: Int, bytes: Int) async throws {
    let logger = TestDatabase.logger
    for start in stride(from: 0, to: count, by: 50) {
        try await client.withTransaction(logger: logger) { connection in
            for _ in start..<min(count, start + 50) {
                try await Outbox.appendRaw(
                    eventId: UUIDv7.generate(), topic: topic, key: key, type: OutboxTestEvent.eventType,
                    payload: [UInt8](repeating: 0x41, count: bytes), on: connection, logger: logger
                )
            }
        }
    }
}

/// The dead-letter rows: (outbox id, error code, error, payload size), in id order.
func deadLetters(_ client: PostgresClient) async throws -> [(id: Int64, code: Int32, error: String, bytes: Int)] {
    var rows: [(id: Int64, code: Int32, error: String, bytes: Int)] = []
    for try await row in try await client.query(
        """
        SELECT id, error_code, error, octet_length(payload) FROM outbox_dead_letters ORDER BY id
        """
    ).decode((Int64, Int32, String, Int).self) {
        rows.append(row)
    }
    return rows
}

/// A relay logger that keeps the 500 expected dead-letter warnings out of the test output.
let quietLogger: Logger = {
    var logger = Logger(label: "test.relay")
    logger.logLevel = .error
    return logger
}()

@Suite("Outbox records the broker refuses for good", .serialized)
struct OutboxDeadLetterTests {
    @Test("a 2 MB record (over the producer's message.max.bytes) is dead-lettered; the rows behind it go out at once, in order, without back-off")
    func oversizedRecordDoesNotBlock() async throws {
        let f = try await OutboxFixture.make(prefix: "dead", partitions: 1)
        let (cluster, topic, producer) = (f.cluster, f.topic, f.producer)
        try await f.run { client in
            try await writeOversized(client, topic: topic, key: "k0", count: 1, bytes: 2_000_000)
            try await writeEvents(client, topic: topic, count: 10, keys: 1, perTransaction: 1, startSeq: 1)
            // One row per batch: the refused row is alone in the relay's way.
            var configuration = OutboxRelay.Configuration()
            configuration.batchSize = 1
            let relay = OutboxRelay(postgres: client, producer: producer, logger: TestDatabase.logger, configuration: configuration)
            let started = ContinuousClock.now
            let task = Task { try await relay.run() }
            defer { task.cancel() }
            let drained = try await poll(timeout: .seconds(15)) {
                try await count(client, "SELECT count(*)::int FROM outbox WHERE published_at IS NULL") == 0
            }
            let elapsed = ContinuousClock.now - started
            #expect(drained, "every row behind the refused one is published")
            #expect(elapsed < .seconds(3), "well under the relay's 5 s back-off: \(elapsed)")
            #expect(relay.backOffCount == 0, "a permanent refusal is not retried")

            let letters = try await deadLetters(client)
            #expect(letters.count == 1)
            #expect(letters.first?.id == 1 && letters.first?.code == 10 && letters.first?.bytes == 2_000_000, "\(letters)")
            #expect(letters.first?.error.lowercased().contains("too large") == true, "\(letters)")
            #expect(try await count(client, "SELECT count(*)::int FROM outbox WHERE id = 1") == 0, "moved, not copied")

            let events = try await collect(cluster, topic: topic, group: "g-\(topic)") { $0.count >= 10 }
            #expect(events.map(\.data.seq) == Array(1...10), "published in order")
        }
    }

    @Test("500 refused records ahead of a good one: the good one still arrives, all 500 are dead-lettered")
    func fiveHundredRefusedRecords() async throws {
        let f = try await OutboxFixture.make(prefix: "dead500", partitions: 1)
        // A producer that refuses records over 10 000 bytes, so 500 refused rows stay small.
        let producer = try TestKafka.producer(f.cluster) { $0.properties["message.max.bytes"] = "10000" }
        let (cluster, topic) = (f.cluster, f.topic)
        try await f.run { client in
            try await writeOversized(client, topic: topic, key: "k0", count: 500, bytes: 20_000)
            try await writeEvents(client, topic: topic, count: 1, keys: 1, startSeq: 42)
            let relay = OutboxRelay(postgres: client, producer: producer, logger: quietLogger)  // batches of 500
            let task = Task { try await relay.run() }
            defer { task.cancel() }
            let events = try await collect(cluster, topic: topic, group: "g-\(topic)", timeout: .seconds(30)) { $0.count >= 1 }
            #expect(events.map(\.data.seq) == [42])
            #expect(relay.backOffCount == 0)
            let letters = try await deadLetters(client)
            #expect(letters.count == 500 && letters.allSatisfy { $0.code == 10 && $0.bytes == 20_000 })
            #expect(letters.map(\.id) == Array(1...500))
            #expect(try await count(client, "SELECT count(*)::int FROM outbox") == 1)
        }
    }

    @Test("a record the broker itself refuses (Message size too large) is dead-lettered; later rows are published")
    func brokerRefusal() async throws {
        let f = try await OutboxFixture.make(prefix: "deadbroker", partitions: 1)
        let (cluster, topic, producer) = (f.cluster, f.topic, f.producer)
        try await f.run { client in
            let relay = OutboxRelay(postgres: client, producer: producer, logger: TestDatabase.logger)
            let task = Task { try await relay.run() }
            defer { task.cancel() }
            try await writeEvents(client, topic: topic, count: 1, keys: 1, startSeq: 0)
            _ = try await collect(cluster, topic: topic, group: "warm-\(topic)") { $0.count >= 1 }

            cluster.failNextProduceRequests(1, code: 10)  // RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, from the broker
            try await writeEvents(client, topic: topic, count: 1, keys: 1, startSeq: 1)
            #expect(try await poll(timeout: .seconds(15)) { try await deadLetters(client).count == 1 })
            #expect(try await deadLetters(client).first?.code == 10)
            try await writeEvents(client, topic: topic, count: 5, keys: 1, startSeq: 2)
            let events = try await collect(cluster, topic: topic, group: "g-\(topic)") { $0.count >= 6 }
            #expect(events.map(\.data.seq) == [0, 2, 3, 4, 5, 6], "the refused record is not published; the others are, in order")
            #expect(relay.backOffCount == 0)
        }
    }
}

/// A test event with a text of any size.
struct BlobEvent: EventPayload {
    static let eventType = "test.blob"
    static let topic = Topic(name: "test.blob.v1", partitions: 1, key: "key")
    var text: String
    var subject: String { "blob" }
}

@Suite("Outbox event size limit")
struct OutboxLimitTests {
    @Test("an event over the limit is refused before anything is written; one at the limit is appended")
    func eventOverTheLimit() async throws {
        let db = try await TestDatabase.create()
        try await db.withClient { client in
            try await Migrator(PlatformMigrations.all).migrate(client: client, logger: TestDatabase.logger)
            let small = CloudEvent(source: "test", data: BlobEvent(text: "x"))
            let size = try EventCoding.encode(small).count
            let fits = CloudEvent(source: "test", data: BlobEvent(text: String(repeating: "x", count: 2_048 - size + 1)))
            #expect(try EventCoding.encode(fits).count == 2_048)
            let tooLarge = CloudEvent(source: "test", data: BlobEvent(text: String(repeating: "x", count: 2_048 - size + 2)))
            try await client.withTransaction(logger: TestDatabase.logger) { c in
                try await Outbox.append(fits, maxEventBytes: 2_048, on: c, logger: TestDatabase.logger)
            }
            do {
                try await client.withTransaction(logger: TestDatabase.logger) { c in
                    try await Outbox.append(tooLarge, maxEventBytes: 2_048, on: c, logger: TestDatabase.logger)
                }
                Issue.record("an event of 2 049 bytes was appended under a 2 048-byte limit")
            } catch {
                let refused = try #require((error as? OutboxEventTooLarge) ?? ((error as? PostgresTransactionError)?.closureError as? OutboxEventTooLarge))
                #expect(refused.bytes == 2_049 && refused.limit == 2_048 && refused.eventType == BlobEvent.eventType)
            }
            #expect(try await count(client, "SELECT count(*)::int FROM outbox") == 1)
            #expect(Outbox.defaultMaxEventBytes < 1_000_000, "under librdkafka's and the broker's default limits")
        }
        try await db.drop()
    }
}
