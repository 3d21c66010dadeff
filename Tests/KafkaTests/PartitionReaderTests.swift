import Common
import Foundation
import MetricsTestKit
import NIOCore
import NIOPosix
import Synchronization
import Testing
import TestSupport

@testable import Kafka

/// `KafkaPartitionReader`, the suite's own single-partition Kafka client (the gateway's delivery
/// reader), against both embedded brokers over TCP — the Swift broker and librdkafka's mock
/// cluster with three brokers, where the partition's leader need not be the bootstrap broker —
/// with records produced by librdkafka.
@Suite("The partition reader")
struct PartitionReaderTests {
    /// What a reader handed on, in order.
    final class Received: Sendable {
        let messages = Mutex<[KafkaConsumerMessage]>([])
        let onLoop = Atomic<Bool>(true)
        /// Handler calls: one per fetch that brought records.
        let batches = Atomic<Int>(0)

        func handler(_ loop: any EventLoop) -> @Sendable ([KafkaConsumerMessage]) -> Void {
            { batch in
                if !loop.inEventLoop { self.onLoop.store(false, ordering: .relaxed) }
                self.batches.add(1, ordering: .relaxed)
                self.messages.withLock { $0.append(contentsOf: batch) }
            }
        }

        var count: Int { messages.withLock { $0.count } }
    }

    private func readerConfiguration(_ cluster: EmbeddedKafkaCluster, topic: String, partition: Int32, offset: TopicPartitionOffset.Offset)
        -> KafkaConsumerConfiguration
    {
        var configuration = KafkaConsumerConfiguration(
            client: KafkaClientConfiguration(bootstrapServers: cluster.bootstrapServers, clientId: "test-reader"),
            mode: .assignment([TopicPartitionOffset(topic: topic, partition: partition, offset: offset)]))
        configuration.fetchWaitMaxMilliseconds = 50
        return configuration
    }

    /// A reader of `configuration` running in a task, and what it handed on.
    struct Running {
        let reader: KafkaPartitionReader
        let received = Received()
        let task: Task<Void, any Error>

        init(_ configuration: KafkaConsumerConfiguration) throws {
            let loop = MultiThreadedEventLoopGroup.singleton.next()
            let reader = try KafkaPartitionReader(configuration: configuration, eventLoop: loop, logger: TestKafka.logger)
            self.reader = reader
            task = Task { [received] in try await reader.run(received.handler(loop)) }
        }
    }

    /// A cluster with a new topic of `partitions` partitions, and an uncompressed producer.
    private func freshTopic(brokers: Int, engine: EmbeddedKafkaEngine, partitions: Int) throws -> (EmbeddedKafkaCluster, String, KafkaProducer) {
        let (cluster, topic) = try clusterWithTopic("reader", brokers: brokers, engine: engine, partitions: partitions)
        return (cluster, topic, try TestKafka.producer(cluster) { $0.compression = "none" })
    }

    private func records(_ topic: String, partition: Int32, _ range: Range<Int>, tag: String) -> [KafkaProducerMessage] {
        range.map { i in
            KafkaProducerMessage(
                topic: topic, key: "key-\(i)", value: Array("\(tag)-\(i)".utf8),
                headers: [KafkaHeader(key: "ce_type", string: "test.\(i)"), KafkaHeader(key: "empty", value: nil)], partition: partition)
        }
    }

    private func send(_ producer: KafkaProducer, _ messages: [KafkaProducerMessage]) async throws {
        for result in await producer.sendAllAndAwait(messages) { _ = try result.get() }
    }

    @Test(
        "fetches that batch under load (kafka.delivery-fetch-batch-ms): 200 records trickled in one by one arrive once and in order, in far fewer fetches than records; without it, about one fetch per record"
    )
    func batchesUnderLoad() async throws {
        var batchesSeen: [Int: Int] = [:]
        for batchWait in [0, 100] {
            let (cluster, topic, producer) = try freshTopic(brokers: 1, engine: .swift, partitions: 1)
            var configuration = readerConfiguration(cluster, topic: topic, partition: 0, offset: .beginning)
            configuration.fetchBatchWaitMilliseconds = batchWait
            let running = try Running(configuration)
            defer { running.task.cancel() }
            for i in 0..<200 {
                try await send(producer, records(topic, partition: 0, i..<(i + 1), tag: "trickle"))
                try await Task.sleep(for: .milliseconds(2))
            }
            try await withTimeout(.seconds(30), "200 records") {
                while running.received.count < 200 { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(running.received.messages.withLock { $0.map(\.offset) } == Array(0..<200), "batch wait \(batchWait): each record once, in order")
            batchesSeen[batchWait] = running.received.batches.load(ordering: .relaxed)
        }
        let unbatched = batchesSeen[0] ?? 0
        let batched = batchesSeen[100] ?? 0
        // Records come ~3 ms apart; a fetch held 100 ms carries dozens of them.
        #expect(batched <= 40, "\(batched) fetches with records with a 100 ms batch wait (\(unbatched) without)")
        #expect(batched * 3 <= unbatched, "\(batched) fetches with records with a 100 ms batch wait, \(unbatched) without")
    }

    @Test("from the end: only what is produced after it started, in order, with keys, values, headers and timestamps", arguments: EmbeddedKafkaEngine.allCases)
    func readsFromTheEnd(engine: EmbeddedKafkaEngine) async throws {
        let (cluster, topic, producer) = try freshTopic(brokers: 3, engine: engine, partitions: 3)
        try await send(producer, records(topic, partition: 1, 0..<5, tag: "before"))

        let readiness = KafkaReadiness()
        var configuration = readerConfiguration(cluster, topic: topic, partition: 1, offset: .end)
        configuration.client.readiness = readiness
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let reader = try KafkaPartitionReader(configuration: configuration, eventLoop: loop, logger: TestKafka.logger)
        #expect(!readiness.pending.isEmpty, "readiness waits for the reader")
        let received = Received()
        let running = Task { try await reader.run(received.handler(loop)) }
        defer { running.cancel() }
        try await eventually("the reader reaches the partition's end", timeout: .seconds(20)) { reader.isCaughtUp }
        #expect(readiness.pending.isEmpty)

        let start = Date()
        try await send(producer, records(topic, partition: 1, 0..<50, tag: "after") + records(topic, partition: 0, 0..<5, tag: "elsewhere"))
        try await eventually("the 50 records arrive", timeout: .seconds(20)) { received.count >= 50 }
        try await Task.sleep(for: .milliseconds(200))  // nothing more may follow
        let messages = received.messages.withLock { $0 }
        #expect(messages.count == 50)
        #expect(messages.map { String(decoding: $0.value ?? [], as: UTF8.self) } == (0..<50).map { "after-\($0)" })
        #expect(messages.map(\.keyString) == (0..<50).map { "key-\($0)" })
        #expect(messages.map(\.offset) == Array(5..<55).map(Int64.init))
        #expect(messages.allSatisfy { $0.topic == topic && $0.partition == 1 })
        #expect(messages.map { $0.header("ce_type").map { String(decoding: $0, as: UTF8.self) } } == (0..<50).map { "test.\($0)" })
        #expect(messages.allSatisfy { $0.headers.contains(KafkaHeader(key: "empty", value: nil)) }, "a null header value stays null")
        let timestamps = messages.compactMap(\.timestampMilliseconds)
        #expect(timestamps.count == 50)
        #expect(timestamps.allSatisfy { abs(Double($0) / 1000 - start.timeIntervalSince1970) < 60 })
        let onLoop = received.onLoop.load(ordering: .relaxed)
        #expect(onLoop, "records are handed on on the reader's event loop")

        running.cancel()
        _ = await running.result
        #expect(!reader.isCaughtUp, "a stopped reader no longer counts as caught up")
    }

    @Test("from the beginning, and from an offset past the end (reset to the end, as auto.offset.reset would)")
    func startOffsets() async throws {
        let (cluster, topic, producer) = try freshTopic(brokers: 1, engine: .swift, partitions: 1)
        try await send(producer, records(topic, partition: 0, 0..<5, tag: "old"))
        let first = try Running(readerConfiguration(cluster, topic: topic, partition: 0, offset: .beginning))
        let fromStart = first.received
        defer { first.task.cancel() }
        try await eventually("the five old records", timeout: .seconds(20)) { fromStart.count >= 5 }
        #expect(fromStart.messages.withLock { $0.map(\.offset) } == [0, 1, 2, 3, 4])

        let second = try Running(readerConfiguration(cluster, topic: topic, partition: 0, offset: .exact(1_000)))
        let (beyond, pastEnd) = (second.reader, second.received)
        defer { second.task.cancel() }
        try await eventually("the reader past the end resets to it", timeout: .seconds(20)) { beyond.isCaughtUp }
        try await send(producer, records(topic, partition: 0, 0..<3, tag: "new"))
        try await eventually("the three new records", timeout: .seconds(20)) { pastEnd.count >= 3 }
        #expect(pastEnd.messages.withLock { $0.map(\.offset) } == [5, 6, 7])
    }

    @Test("its lag: the records between its position and the partition's end after each fetch, down to 0 once caught up")
    func lag() async throws {
        let (cluster, topic, producer) = try freshTopic(brokers: 1, engine: .swift, partitions: 1)
        // 3 000 records of 1 KiB: more than the first fetch's 1 MiB, so that fetch leaves a lag.
        let big = (0..<3_000).map { i in KafkaProducerMessage(topic: topic, key: "k", value: Array(repeating: UInt8(i % 256), count: 1_024), partition: 0) }
        try await send(producer, big)
        let metrics = TestMetrics()
        let configuration = readerConfiguration(cluster, topic: topic, partition: 0, offset: .beginning)
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let reader = try KafkaPartitionReader(configuration: configuration, eventLoop: loop, logger: TestKafka.logger, metrics: metrics)
        let received = Received()
        let running = Task { try await reader.run(received.handler(loop)) }
        defer { running.cancel() }
        try await eventually("all 3 000 records", timeout: .seconds(30)) { received.count >= 3_000 }
        let gauge = try metrics.expectGauge("kafka_consumer_lag", [("consumer", configuration.lagLabel), ("topic", topic)])
        let values = gauge.values
        #expect(values.first.map { $0 > 0 && $0 < 3_000 } == true, "the first fetch left records behind: \(values.prefix(3))")
        #expect(values.last == 0, "caught up")
        #expect(zip(values, values.dropFirst()).allSatisfy { $0 >= $1 }, "the lag only falls while nothing is produced")
    }

    @Test(
        "lz4 batches (the suite's default codec) are read like uncompressed ones: every record whole, in order",
        arguments: EmbeddedKafkaEngine.allCases)
    func lz4Batches(engine: EmbeddedKafkaEngine) async throws {
        let cluster = try TestKafka.cluster(brokers: 1, engine: engine)
        let topic = TestKafka.uniqueTopic("reader")
        try cluster.createTopic(topic, partitions: 1)
        let compressed = try TestKafka.producer(cluster) { $0.compression = "lz4" }
        let started = try Running(readerConfiguration(cluster, topic: topic, partition: 0, offset: .beginning))
        let (received, running) = (started.received, started.task)
        defer { running.cancel() }
        // Values that compress, and a 300 KB one (more than one 64 KiB lz4 block, linked).
        let sent =
            records(topic, partition: 0, 0..<20, tag: String(repeating: "lz4", count: 200))
            + records(topic, partition: 0, 20..<21, tag: String(repeating: "0123456789abcdef", count: 20_000))
        try await send(compressed, sent)
        try await eventually("the lz4 records", timeout: .seconds(20)) { received.count >= 21 }
        #expect(received.messages.withLock { $0.map(\.offset) } == Array(0..<21))
        #expect(received.messages.withLock { $0.map(\.value) } == sent.map(\.value))
        #expect(received.messages.withLock { $0.map(\.key) } == sent.map(\.key))
    }

    @Test(
        "a batch of a codec it does not read (gzip) ends the run with its offset, after every record before it was handed on",
        arguments: EmbeddedKafkaEngine.allCases)
    func compressedBatch(engine: EmbeddedKafkaEngine) async throws {
        let cluster = try TestKafka.cluster(brokers: 1, engine: engine)
        let topic = TestKafka.uniqueTopic("reader")
        try cluster.createTopic(topic, partitions: 1)
        let plain = try TestKafka.producer(cluster) { $0.compression = "none" }
        let compressed = try TestKafka.producer(cluster) { $0.compression = "gzip" }
        let started = try Running(readerConfiguration(cluster, topic: topic, partition: 0, offset: .beginning))
        let (received, running) = (started.received, started.task)
        defer { running.cancel() }
        try await send(plain, records(topic, partition: 0, 0..<3, tag: "plain"))
        try await eventually("the plain records", timeout: .seconds(20)) { received.count >= 3 }
        // Values that compress (librdkafka sends a batch uncompressed when compressing does not shrink it).
        try await send(compressed, records(topic, partition: 0, 0..<2, tag: String(repeating: "gzip", count: 200)))
        do {
            try await running.value
            Issue.record("the run ended without an error")
        } catch let unreadable as KafkaPartitionReader.UnreadableBatch {
            #expect(unreadable.offset == 3)
        }
        #expect(received.messages.withLock { $0.map(\.offset) } == [0, 1, 2])
    }

    @Test("the broker going down and up again: the reader reconnects and misses nothing produced meanwhile")
    func reconnects() async throws {
        let (cluster, topic, producer) = try freshTopic(brokers: 1, engine: .swift, partitions: 1)
        let started = try Running(readerConfiguration(cluster, topic: topic, partition: 0, offset: .end))
        let (reader, received, running) = (started.reader, started.received, started.task)
        defer { running.cancel() }
        try await eventually("the reader reaches the end", timeout: .seconds(20)) { reader.isCaughtUp }
        try await send(producer, records(topic, partition: 0, 0..<3, tag: "a"))
        try await eventually("the first three", timeout: .seconds(20)) { received.count >= 3 }

        cluster.setAllBrokersDown()
        try await Task.sleep(for: .milliseconds(500))
        cluster.setAllBrokersUp()
        // Produced once the broker is back; the producer retries through the outage.
        try await send(producer, records(topic, partition: 0, 3..<6, tag: "b"))
        try await eventually("the three produced after the outage", timeout: .seconds(30)) { received.count >= 6 }
        #expect(received.messages.withLock { $0.map(\.offset) } == [0, 1, 2, 3, 4, 5])
        #expect(!running.isCancelled)
    }

    @Test("a peer that is not a Kafka broker: the reader keeps retrying, never crashes, and stops when cancelled")
    func hostileBroker() async throws {
        // Answers every connection with a frame claiming 2 GiB, then a frame with a correlation id
        // nobody asked for.
        let (server, port) = try await startPeer { try $0.addHandler(GarbageAnswerer()) }
        defer { server.close(promise: nil) }
        let group = MultiThreadedEventLoopGroup.singleton
        var configuration = KafkaConsumerConfiguration(
            client: KafkaClientConfiguration(bootstrapServers: "127.0.0.1:\(port)", clientId: "test-reader"),
            mode: .assignment([TopicPartitionOffset(topic: "t", partition: 0, offset: .end)]))
        configuration.fetchWaitMaxMilliseconds = 50
        let reader = try KafkaPartitionReader(configuration: configuration, eventLoop: group.next(), logger: TestKafka.logger)
        let running = Task { try await reader.run { _ in } }
        try await eventually("the reader has tried several times", timeout: .seconds(20)) { GarbageAnswerer.answered.load(ordering: .relaxed) >= 3 }
        #expect(!reader.isCaughtUp)
        running.cancel()
        let clock = ContinuousClock()
        let stopped = clock.now
        try await running.value
        #expect(clock.now - stopped < .seconds(6), "cancelled during a back-off, the run ends")
    }

    @Test("plaintext, one partition by assignment: anything else is librdkafka's")
    func whatItReads() throws {
        let client = KafkaClientConfiguration(bootstrapServers: "127.0.0.1:9092", clientId: "c")
        let one = [TopicPartitionOffset(topic: "t", partition: 0, offset: .end)]
        #expect(KafkaPartitionReader.canRead(KafkaConsumerConfiguration(client: client, mode: .assignment(one))))
        #expect(!KafkaPartitionReader.canRead(KafkaConsumerConfiguration(client: client, mode: .assignment(one + one))))
        #expect(!KafkaPartitionReader.canRead(KafkaConsumerConfiguration(client: client, mode: .group(id: "g", topics: ["t"]))))
        #expect(
            !KafkaPartitionReader.canRead(
                KafkaConsumerConfiguration(client: client, mode: .assignment([TopicPartitionOffset(topic: "t", partition: 0, offset: .stored)]))))
        var tls = client
        tls.security = try KafkaSecurity(protocol: "ssl", saslMechanism: nil, saslUsername: nil, saslPassword: nil, caLocation: nil)
        #expect(!KafkaPartitionReader.canRead(KafkaConsumerConfiguration(client: tls, mode: .assignment(one))))
        var bad = client
        bad.bootstrapServers = "no-port"
        #expect(!KafkaPartitionReader.canRead(KafkaConsumerConfiguration(client: bad, mode: .assignment(one))))
        #expect(KafkaBrokerAddress.parseList("PLAINTEXT://a:1, [::1]:2") == [KafkaBrokerAddress(host: "a", port: 1), KafkaBrokerAddress(host: "::1", port: 2)])
        #expect(KafkaBrokerAddress.parseList("a:0") == nil)
        #expect(KafkaBrokerAddress.parseList("") == nil)
    }

    @Test("record batches: from the offset asked for, a batch cut short left for later, contradictory lengths refused")
    func decoding() throws {
        let first = recordBatch(timestamps: [1_000, 1_001, 1_002])
        var second = recordBatch(timestamps: [2_000, 2_001])
        second.replaceSubrange(0..<8, with: withUnsafeBytes(of: Int64(3).bigEndian, Array.init))  // base offset 3
        let both = ByteBuffer(bytes: first + second)

        let all = try FetchedRecords(both, topic: "t", partition: 0, from: 0)
        #expect(all.messages.map(\.offset) == [0, 1, 2, 3, 4])
        #expect(all.messages.map(\.timestampMilliseconds) == [1_000, 1_001, 1_002, 2_000, 2_001])
        #expect(all.nextOffset == 5)
        #expect(all.unreadableAt == nil && !all.firstBatchCutShort)

        let fromMiddle = try FetchedRecords(both, topic: "t", partition: 0, from: 2)
        #expect(fromMiddle.messages.map(\.offset) == [2, 3, 4], "records before the offset asked for are skipped")

        let cut = try FetchedRecords(ByteBuffer(bytes: first + second.prefix(30)), topic: "t", partition: 0, from: 0)
        #expect(cut.messages.map(\.offset) == [0, 1, 2])
        #expect(cut.nextOffset == 3 && !cut.firstBatchCutShort, "the cut batch is fetched again")
        let onlyCut = try FetchedRecords(ByteBuffer(bytes: Array(first.prefix(40))), topic: "t", partition: 0, from: 0)
        #expect(onlyCut.messages.isEmpty && onlyCut.firstBatchCutShort)

        var compressed = first
        compressed.replaceSubrange(0..<8, with: withUnsafeBytes(of: Int64(5).bigEndian, Array.init))  // base offset 5
        compressed[22] |= 0x03  // attributes: lz4
        let unreadable = try FetchedRecords(ByteBuffer(bytes: second + compressed), topic: "t", partition: 0, from: 3)
        #expect(unreadable.messages.map(\.offset) == [3, 4])
        #expect(unreadable.unreadableAt == 5)
        #expect(unreadable.nextOffset == 5)

        var lying = first
        lying[61] = 0x7E  // the first record's length: far beyond its batch
        #expect(throws: KafkaWireError.self) { try FetchedRecords(ByteBuffer(bytes: lying), topic: "t", partition: 0, from: 0) }
        var tooMany = first
        tooMany[60] = 9  // record count 9 in a batch of three
        #expect(throws: KafkaWireError.self) { try FetchedRecords(ByteBuffer(bytes: tooMany), topic: "t", partition: 0, from: 0) }
    }
}

/// Polls `condition` every 20 ms until it holds; fails after `timeout`.
private func eventually(_ what: String, timeout: Duration, _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    Issue.record("timed out waiting for \(what)")
    throw CancellationError()
}

/// A cluster with a new topic (named after `prefix`) of `partitions` partitions.
func clusterWithTopic(_ prefix: String, brokers: Int, engine: EmbeddedKafkaEngine, partitions: Int) throws -> (EmbeddedKafkaCluster, String) {
    let cluster = try TestKafka.cluster(brokers: brokers, engine: engine)
    let topic = TestKafka.uniqueTopic(prefix)
    try cluster.createTopic(topic, partitions: partitions)
    return (cluster, topic)
}

/// A TCP server on 127.0.0.1 whose connections get the handlers `handlers` adds (a fake broker),
/// and its port.
func startPeer(_ handlers: @escaping @Sendable (ChannelPipeline.SynchronousOperations) throws -> Void) async throws -> (any Channel, Int) {
    let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture { try handlers(channel.pipeline.syncOperations) }
        }
        .bind(host: "127.0.0.1", port: 0).get()
    guard let port = server.localAddress?.port else { throw KafkaWireError("the peer has no port") }
    return (server, port)
}

/// A peer that answers every request with garbage: a frame claiming 2 GiB, or, on every other
/// connection, an answer with a correlation id nobody asked for.
final class GarbageAnswerer: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    static let answered = Atomic<Int>(0)

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let count = Self.answered.add(1, ordering: .relaxed).newValue
        var out = context.channel.allocator.buffer(capacity: 16)
        if count % 2 == 0 {
            out.writeInteger(Int32.max)
        } else {
            out.writeInteger(Int32(8))
            out.writeInteger(Int32(-77))
            out.writeInteger(Int32(0))
        }
        context.writeAndFlush(wrapOutboundOut(out), promise: nil)
    }
}
