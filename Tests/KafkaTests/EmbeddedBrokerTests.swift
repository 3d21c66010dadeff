import Common
import Foundation
import Kafka
import Testing
import TestSupport

/// `EmbeddedKafkaBroker` at the protocol level, with a hand-written client (RawKafkaClient), and
/// through librdkafka. The whole suite also runs on it (`CHATSUITE_EMBEDDED_KAFKA=swift`).
@Suite("The Swift embedded broker")
struct EmbeddedBrokerTests {
    private func produce(_ client: RawKafkaClient, _ topic: String, _ batch: [UInt8], partition: Int32 = 0) throws -> (error: Int16, offset: Int64) {
        var w = RawWriter()
        w.int16(-1)  // no transactional id
        w.int16(-1)  // acks=all
        w.int32(5_000)
        w.int32(1)
        w.string(topic)
        w.int32(1)
        w.int32(partition)
        w.int32(Int32(batch.count))
        w.bytes.append(contentsOf: batch)
        var r = try client.request(api: 0, version: 3, body: w.bytes)
        _ = try r.int32()
        _ = try r.string()
        _ = try r.int32()
        _ = try r.int32()
        let error = try r.int16()
        return (error, try r.int64())
    }

    private func listOffset(_ client: RawKafkaClient, _ topic: String, time: Int64) throws -> (error: Int16, timestamp: Int64, offset: Int64) {
        var w = RawWriter()
        w.int32(-1)
        w.int32(1)
        w.string(topic)
        w.int32(1)
        w.int32(0)
        w.int64(time)
        var r = try client.request(api: 2, version: 1, body: w.bytes)
        _ = try r.int32()
        _ = try r.string()
        _ = try r.int32()
        _ = try r.int32()
        return (try r.int16(), try r.int64(), try r.int64())
    }

    /// A fetch v4 that does not wait: the partition's error and the base offsets of the batches returned.
    private func fetch(_ client: RawKafkaClient, _ topic: String, offset: Int64) throws -> (error: Int16, baseOffsets: [Int64]) {
        try client.send(api: 1, version: 4, body: fetchBody(topic, offset: offset, maxWait: 0, minBytes: 1))
        return try fetchResponse(client)
    }

    private func fetchBody(_ topic: String, offset: Int64, maxWait: Int32, minBytes: Int32) -> [UInt8] {
        var w = RawWriter()
        w.int32(-1)
        w.int32(maxWait)
        w.int32(minBytes)
        w.int32(1 << 20)
        w.int8(0)
        w.int32(1)
        w.string(topic)
        w.int32(1)
        w.int32(0)
        w.int64(offset)
        w.int32(1 << 20)
        return w.bytes
    }

    private func fetchResponse(_ client: RawKafkaClient) throws -> (error: Int16, baseOffsets: [Int64]) {
        var r = try client.response()
        _ = try r.int32()  // throttle
        _ = try r.int32()
        _ = try r.string()
        _ = try r.int32()
        _ = try r.int32()
        let error = try r.int16()
        _ = try r.int64()
        _ = try r.int64()
        _ = try r.int32()
        var records = RawReader(Array(try r.take(Int(try r.int32()))))
        var bases: [Int64] = []
        while records.at < records.bytes.count {
            bases.append(try records.int64())
            _ = try records.take(Int(try records.int32()))
        }
        return (error, bases)
    }

    @Test("a retried batch of an idempotent producer is stored once; a gap in its sequence is refused")
    func idempotentRetry() throws {
        let broker = try EmbeddedKafkaBroker(logger: TestKafka.logger)
        try broker.createTopic("t", partitions: 1)
        let client = try RawKafkaClient(bootstrap: broker.bootstrapServers)
        let first = recordBatch(timestamps: [1, 2], producerId: 7, epoch: 0, baseSequence: 0)
        #expect(try produce(client, "t", first) == (0, 0))
        #expect(try produce(client, "t", first) == (0, 0), "the retry answers with the offset already given")
        #expect(try produce(client, "t", recordBatch(timestamps: [3], producerId: 7, epoch: 0, baseSequence: 2)) == (0, 2))
        #expect(try produce(client, "t", recordBatch(timestamps: [4], producerId: 7, epoch: 0, baseSequence: 9)).error == 45, "OUT_OF_ORDER_SEQUENCE_NUMBER")
        #expect(try listOffset(client, "t", time: -1).offset == 3, "three records, none twice")
        #expect(try fetch(client, "t", offset: 0).baseOffsets == [0, 2])
        #expect(try fetch(client, "t", offset: 1).baseOffsets == [0, 2], "a fetch inside a batch starts at that batch")
        #expect(try fetch(client, "t", offset: 3).baseOffsets == [], "at the end: nothing yet")
    }

    @Test("as Kafka: a batch over message.max.bytes is refused (MESSAGE_TOO_LARGE), and so are two batches for one partition in Produce v3 (INVALID_RECORD)")
    func produceLimits() throws {
        let broker = try EmbeddedKafkaBroker(logger: TestKafka.logger)
        try broker.createTopic("t", partitions: 1)
        let client = try RawKafkaClient(bootstrap: broker.bootstrapServers)
        let batch = recordBatch(timestamps: [1, 2, 3], valueSize: 300)
        broker.setMaxBatchBytes(batch.count - 1)
        #expect(try produce(client, "t", batch).error == 10)
        broker.setMaxBatchBytes(batch.count)
        #expect(try produce(client, "t", batch) == (0, 0))
        #expect(try produce(client, "t", batch + batch).error == 87, "one batch per partition from Produce v3 on")
        #expect(try listOffset(client, "t", time: -1).offset == 3, "nothing refused was stored")
    }

    @Test("batches whose numbers lie (stored unread, as Kafka without CRC checks): offsets by time and fetches still answer, the broker stays up")
    func lyingBatches() throws {
        typealias Record = HostileRecordBatchTests.Record
        let broker = try EmbeddedKafkaBroker(logger: TestKafka.logger)
        try broker.createTopic("t", partitions: 1)
        let client = try RawKafkaClient(bootstrap: broker.bootstrapServers)
        #expect(try produce(client, "t", recordBatch(timestamps: [100])) == (0, 0))
        let lying = [
            HostileRecordBatchTests.batch(firstTimestamp: 200, [Record(timestampDelta: .max, offsetDelta: 0)]),
            HostileRecordBatchTests.batch(firstTimestamp: 300, [Record(offsetDelta: .max)]),
            HostileRecordBatchTests.batch(firstTimestamp: 400, [Record(offsetDelta: 0, claimedLength: .max)]),
            HostileRecordBatchTests.batch(firstTimestamp: 500, lastOffsetDelta: .max, [Record(offsetDelta: 0)]),
        ]
        for batch in lying { #expect(try produce(client, "t", batch).error == 0) }
        var generator = SplitMix64(state: 5)
        for _ in 0..<300 {
            var bytes = HostileRecordBatchTests.batch(firstTimestamp: 600, [Record(offsetDelta: 0), Record(timestampDelta: 3, offsetDelta: 1)])
            for _ in 0..<3 { bytes[61 + Int(generator.next() % UInt64(bytes.count - 61))] = UInt8(truncatingIfNeeded: generator.next()) }
            _ = try produce(client, "t", bytes)
        }
        for time: Int64 in [0, 150, 250, 350, 450, 550, 650, 1_000_000] { #expect(try listOffset(client, "t", time: time).error == 0, "time \(time)") }
        #expect(try listOffset(client, "t", time: 50).offset == 0, "the honest first batch is still found")
        #expect(try fetch(client, "t", offset: 0).error == 0)
        let end = try listOffset(client, "t", time: -1).offset
        #expect(end > Int64(Int32.max), "the batch claiming 2^31 offsets moved the end past them")
        #expect(try produce(client, "t", recordBatch(timestamps: [700])) == (0, end), "and the broker takes the next batch")
    }

    @Test("a fetch waits for its min_bytes: a small record leaves it waiting, enough bytes answer it before its wait ends")
    func fetchMinBytes() throws {
        let broker = try EmbeddedKafkaBroker(logger: TestKafka.logger)
        try broker.createTopic("t", partitions: 1)
        let consumer = try RawKafkaClient(bootstrap: broker.bootstrapServers)
        let producer = try RawKafkaClient(bootstrap: broker.bootstrapServers)
        let started = ContinuousClock.now
        try consumer.send(api: 1, version: 4, body: fetchBody("t", offset: 0, maxWait: 8_000, minBytes: 2_000))
        #expect(try produce(producer, "t", recordBatch(timestamps: [1], valueSize: 10)) == (0, 0))
        Thread.sleep(forTimeInterval: 0.2)
        #expect(try produce(producer, "t", recordBatch(timestamps: [2], valueSize: 3_000)) == (0, 1))
        let answered = try fetchResponse(consumer)
        #expect(answered.error == 0)
        #expect(answered.baseOffsets == [0, 1], "answered with both batches")
        #expect(ContinuousClock.now - started < .seconds(4), "before its 8 s wait ended")

        // Less than min_bytes for the whole wait: answered at its end with what there is.
        let waited = ContinuousClock.now
        try consumer.send(api: 1, version: 4, body: fetchBody("t", offset: 1, maxWait: 300, minBytes: 1_000_000))
        #expect(try fetchResponse(consumer).baseOffsets == [1])
        #expect(ContinuousClock.now - waited >= .milliseconds(250))
    }

    /// JoinGroup v2 as a raw member: the error, generation, leader and member id it was given.
    private func join(_ client: RawKafkaClient, group: String, member: String, sessionMilliseconds: Int32) throws -> (
        error: Int16, generation: Int32, leader: String, member: String
    ) {
        var w = RawWriter()
        w.string(group)
        w.int32(sessionMilliseconds)
        w.int32(sessionMilliseconds)  // rebalance timeout
        w.string(member)
        w.string("consumer")
        w.int32(1)
        w.string("range")
        w.int32(0)  // empty metadata
        var r = try client.request(api: 11, version: 2, body: w.bytes)
        _ = try r.int32()
        let error = try r.int16()
        let generation = try r.int32()
        _ = try r.string()
        let leader = try r.string()
        return (error, generation, leader, try r.string())
    }

    private func heartbeat(_ client: RawKafkaClient, group: String, generation: Int32, member: String) throws -> Int16 {
        var w = RawWriter()
        w.string(group)
        w.int32(generation)
        w.string(member)
        var r = try client.request(api: 12, version: 1, body: w.bytes)
        _ = try r.int32()
        return try r.int16()
    }

    @Test("a member that stops heartbeating is dropped after its session; a stranger's heartbeat is refused; the group goes on")
    func sessionExpiry() throws {
        let broker = try EmbeddedKafkaBroker(logger: TestKafka.logger)
        let silent = try RawKafkaClient(bootstrap: broker.bootstrapServers)
        let first = try join(silent, group: "g", member: "", sessionMilliseconds: 1_000)
        #expect(first.error == 0 && first.generation == 1 && first.leader == first.member)
        #expect(try heartbeat(silent, group: "g", generation: 1, member: "somebody-else") == 25, "UNKNOWN_MEMBER_ID")
        #expect(try heartbeat(silent, group: "g", generation: 7, member: first.member) == 22, "ILLEGAL_GENERATION")

        // A second member joins: the group waits for the first to rejoin, which it never does.
        let live = try RawKafkaClient(bootstrap: broker.bootstrapServers)
        let started = ContinuousClock.now
        let second = try join(live, group: "g", member: "", sessionMilliseconds: 10_000)
        #expect(second.error == 0)
        #expect(second.generation == 2 && second.leader == second.member, "the silent member is gone: the live one leads alone")
        #expect(ContinuousClock.now - started < .seconds(5), "within the silent member's 1 s session (and the sweep)")
        #expect(try heartbeat(silent, group: "g", generation: 1, member: first.member) == 25)
    }

    @Test("offsets by time: the first record at or after the time, inside a batch; none after the last")
    func offsetsByTime() throws {
        let broker = try EmbeddedKafkaBroker(logger: TestKafka.logger)
        try broker.createTopic("t", partitions: 1)
        let client = try RawKafkaClient(bootstrap: broker.bootstrapServers)
        _ = try produce(client, "t", recordBatch(timestamps: [1_000]))
        _ = try produce(client, "t", recordBatch(timestamps: [2_000, 3_000, 4_000]))
        #expect(try listOffset(client, "t", time: 0) == (0, 1_000, 0))
        #expect(try listOffset(client, "t", time: 2_500) == (0, 3_000, 2))
        #expect(try listOffset(client, "t", time: 4_000) == (0, 4_000, 3))
        #expect(try listOffset(client, "t", time: 4_001) == (0, -1, -1))
        #expect(try listOffset(client, "t", time: -2).offset == 0)
        #expect(try listOffset(client, "t", time: -1).offset == 4)
        #expect(try listOffset(client, "missing", time: -1).error == 3, "UNKNOWN_TOPIC_OR_PARTITION")
    }

    @Test("retention by size: the oldest batches go, a fetch below the log start is out of range, one from it reads in order")
    func retention() throws {
        let broker = try EmbeddedKafkaBroker(retentionBytes: 4_000, logger: TestKafka.logger)
        try broker.createTopic("t", partitions: 1)
        let client = try RawKafkaClient(bootstrap: broker.bootstrapServers)
        for i in 0..<100 {
            #expect(try produce(client, "t", recordBatch(timestamps: [Int64(i)], valueSize: 100)) == (0, Int64(i)))
        }
        let start = try listOffset(client, "t", time: -2).offset
        #expect(start > 50 && start < 99, "about 4 000 bytes kept: from \(start)")
        #expect(try listOffset(client, "t", time: -1).offset == 100)
        #expect(try fetch(client, "t", offset: 0).error == 1, "OFFSET_OUT_OF_RANGE")
        #expect(try fetch(client, "t", offset: 101).error == 1)
        let read = try fetch(client, "t", offset: start)
        #expect(read.error == 0)
        #expect(read.baseOffsets == Array(start..<100))
    }

    @Test("hostile bytes close only the sender's connection; a corrupt batch is refused with an error; others are still served")
    func hostileInput() async throws {
        let broker = try EmbeddedKafkaBroker(logger: TestKafka.logger)
        try broker.createTopic("t", partitions: 1)

        let oversized = try RawKafkaClient(bootstrap: broker.bootstrapServers)
        try oversized.sendRaw([0x7F, 0xFF, 0xFF, 0xFF, 0, 0])
        #expect(oversized.isClosedByPeer(), "a 2 GiB request size")

        let unknownAPI = try RawKafkaClient(bootstrap: broker.bootstrapServers)
        #expect(throws: RawKafkaError.self) { _ = try unknownAPI.request(api: 999, version: 0, body: []) }

        let truncated = try RawKafkaClient(bootstrap: broker.bootstrapServers)
        #expect(throws: RawKafkaError.self) { _ = try truncated.request(api: 3, version: 1, body: [0, 0, 0, 1, 0, 9]) }

        let hugeCount = try RawKafkaClient(bootstrap: broker.bootstrapServers)
        #expect(throws: RawKafkaError.self, "an array of 2 billion topics in a 10-byte request") {
            _ = try hugeCount.request(api: 3, version: 1, body: [0x7F, 0xFF, 0xFF, 0xFF])
        }

        let corrupt = try RawKafkaClient(bootstrap: broker.bootstrapServers)
        var batch = recordBatch(timestamps: [1])
        batch[16] = 1  // magic 1
        #expect(try produce(corrupt, "t", batch).error == 2, "CORRUPT_MESSAGE")
        #expect(try produce(corrupt, "t", Array(recordBatch(timestamps: [1]).prefix(30))).error == 2, "a truncated batch")
        #expect(try produce(corrupt, "missing", recordBatch(timestamps: [1])).error == 3)

        // A thousand requests piled up behind a waiting fetch: the connection is closed.
        let piling = try RawKafkaClient(bootstrap: broker.bootstrapServers)
        try piling.send(api: 1, version: 4, body: fetchBody("t", offset: 0, maxWait: 30_000, minBytes: 1 << 30))
        for _ in 0...1_000 { try? piling.send(api: 18, version: 0, body: []) }  // sends fail once it is closed
        #expect(throws: RawKafkaError.self) { _ = try piling.response() }

        // The same connection and a librdkafka producer are still served.
        #expect(try produce(corrupt, "t", recordBatch(timestamps: [1])) == (0, 0))
        let cluster = try TestKafka.cluster(engine: .swift)
        try cluster.createTopic("t", partitions: 1)
        let producer = try TestKafka.producer(cluster)
        #expect(try await producer.sendAndAwait(KafkaProducerMessage(topic: "t", key: "k", value: [1])).offset == 0)
        try await producer.flush()
    }

    /// The mechanism the broker exists for: librdkafka's mock holds an empty fetch for its whole
    /// wait (5 s here), so a record sent meanwhile would wait 2.5 s on average; three in a row
    /// under 1 s would happen by chance with probability 0.2³.
    @Test("a waiting fetch is answered when a record arrives, not at the end of its wait")
    func fetchWakesOnData() async throws {
        let cluster = try TestKafka.cluster(engine: .swift)
        let topic = TestKafka.uniqueTopic()
        try cluster.createTopic(topic, partitions: 1)
        let producer = try TestKafka.producer(cluster)
        let consumer = try TestKafka.groupConsumer(cluster, group: "g-\(topic)", topics: [topic]) { $0.fetchWaitMaxMilliseconds = 5_000 }
        let delays = try await withTimeout(.seconds(60), "four messages") {
            var iterator = consumer.messages.makeAsyncIterator()
            _ = try await producer.sendAndAwait(KafkaProducerMessage(topic: topic, key: "k", value: [0]))
            _ = try await iterator.next()  // joined and caught up
            var delays: [Duration] = []
            for i in 1...3 {
                try await Task.sleep(for: .milliseconds(300))  // the consumer's next fetch is waiting
                let sent = ContinuousClock.now
                _ = try await producer.sendAndAwait(KafkaProducerMessage(topic: topic, key: "k", value: [UInt8(i)]))
                _ = try await iterator.next()
                delays.append(ContinuousClock.now - sent)
            }
            return delays
        }
        #expect(delays.allSatisfy { $0 < .seconds(1) }, "\(delays)")
        await consumer.close()
    }

    @Test("librdkafka's mock cluster, the other engine, still carries a record from a producer to a group consumer")
    func mockEngine() async throws {
        let cluster = try TestKafka.cluster(brokers: 1, engine: .mock)
        #expect(cluster.engine == .mock)
        let topic = TestKafka.uniqueTopic()
        try cluster.createTopic(topic, partitions: 2)
        let producer = try TestKafka.producer(cluster)
        _ = try await producer.sendAndAwait(KafkaProducerMessage(topic: topic, key: "k", value: Array("on the mock".utf8)))
        let consumer = try TestKafka.groupConsumer(cluster, group: "g-\(topic)", topics: [topic])
        let received = try await withTimeout(.seconds(20), "the record") {
            for try await message in consumer.messages { return message }
            throw TimeoutError(what: "stream ended")
        }
        #expect(received.value == Array("on the mock".utf8))
        await consumer.close()
    }
}
