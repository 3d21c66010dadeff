import Common
import Foundation
import NIOCore
import NIOPosix
import Synchronization
import Testing
import TestSupport

@testable import Kafka

/// `KafkaRecordWriter`, the suite's own producer (chat-fanout's delivery writer), against both
/// embedded brokers over TCP — the Swift broker and librdkafka's mock cluster with three brokers,
/// where a topic's partitions have different leaders — read back by librdkafka with its CRC
/// check on.
@Suite("The record writer")
struct RecordWriterTests {
    private func writer(_ cluster: EmbeddedKafkaCluster, _ configure: (inout KafkaProducerConfiguration) -> Void = { _ in }) throws -> KafkaRecordWriter {
        var configuration = KafkaProducerConfiguration(client: KafkaClientConfiguration(bootstrapServers: cluster.bootstrapServers, clientId: "test-writer"))
        configure(&configuration)
        return try KafkaRecordWriter(configuration: configuration, logger: TestKafka.logger)
    }

    private func record(_ topic: String, _ partition: Int32, _ i: Int) -> KafkaProducerMessage {
        KafkaProducerMessage(
            topic: topic, key: i % 5 == 0 ? nil : Array("key-\(i)".utf8),
            value: i % 7 == 3 ? nil : Array("value-\(i)-\(String(repeating: "x", count: i * 13))".utf8),
            headers: [KafkaHeader(key: "ce_type", string: "test.\(i)"), KafkaHeader(key: "empty", value: nil), KafkaHeader(key: "zero", value: [])],
            partition: partition)
    }

    /// `writer.sendAll(messages)` on a thread of its own (it blocks its caller).
    private func send(_ writer: KafkaRecordWriter, _ messages: [KafkaProducerMessage]) async -> [Result<KafkaDeliveryReport, any Error>] {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: writer.sendAll(messages)) }.start()
        }
    }

    /// Everything on `partition` of `topic` from the beginning, read by librdkafka checking CRCs.
    private func readBack(_ cluster: EmbeddedKafkaCluster, _ topic: String, partition: Int32, count: Int) async throws -> [KafkaConsumerMessage] {
        var configuration = KafkaConsumerConfiguration(
            client: KafkaClientConfiguration(bootstrapServers: cluster.bootstrapServers, clientId: "test-read-back"),
            mode: .assignment([TopicPartitionOffset(topic: topic, partition: partition, offset: .beginning)]))
        configuration.properties["check.crcs"] = "true"
        let consumer = try KafkaConsumer(configuration: configuration, logger: TestKafka.logger)
        defer { Task { await consumer.close() } }
        return try await withTimeout(.seconds(30), "\(count) records on partition \(partition)") {
            var out: [KafkaConsumerMessage] = []
            for try await message in consumer.messages {
                out.append(message)
                if out.count == count { break }
            }
            return out
        }
    }

    @Test("records to several partitions: acknowledged with their offsets, read back whole and in order", arguments: EmbeddedKafkaEngine.allCases)
    func writesAndReadsBack(engine: EmbeddedKafkaEngine) async throws {
        let (cluster, topic) = try clusterWithTopic("writer", brokers: 3, engine: engine, partitions: 3)
        let writer = try writer(cluster)
        let start = Date()
        // Interleaved over the three partitions (three leaders on the mock), two calls.
        let first = (0..<30).map { record(topic, Int32($0 % 3), $0) }
        let firstOutcomes = await send(writer, first)
        let second = (30..<36).map { record(topic, Int32($0 % 3), $0) }
        let secondOutcomes = await send(writer, second)

        let reports = try (firstOutcomes + secondOutcomes).map { try $0.get() }
        for partition in Int32(0)..<3 {
            let offsets = reports.filter { $0.partition == partition }.map(\.offset)
            #expect(offsets == Array(0..<12), "partition \(partition): consecutive offsets from 0 across both calls")
        }
        #expect(reports.allSatisfy { $0.topic == topic })
        #expect(zip(first + second, reports).allSatisfy { $0.partition == $1.partition })

        for partition in Int32(0)..<3 {
            let sent = (first + second).filter { $0.partition == partition }
            let read = try await readBack(cluster, topic, partition: partition, count: sent.count)
            #expect(read.map(\.offset) == Array(0..<12))
            #expect(read.map(\.key) == sent.map(\.key), "keys, a null key stays null")
            #expect(read.map(\.value) == sent.map(\.value), "values, a null value (tombstone) stays null")
            #expect(read.map(\.headers) == sent.map(\.headers), "headers in order; a null value stays null, an empty one empty")
            #expect(read.allSatisfy { abs(Double($0.timestampMilliseconds ?? 0) / 1000 - start.timeIntervalSince1970) < 60 })
        }
    }

    @Test("records beyond a batch's message.max.bytes go in several batches, one request after another, in order", arguments: EmbeddedKafkaEngine.allCases)
    func largeCalls(engine: EmbeddedKafkaEngine) async throws {
        let (cluster, topic) = try clusterWithTopic("writer", brokers: 3, engine: engine, partitions: 2)
        if engine == .swift { try cluster.setMaxBatchBytes(2_000) }  // as Kafka, it refuses a larger batch
        let writer = try writer(cluster) { $0.properties["message.max.bytes"] = "2000" }
        let messages = (0..<14).map { i in
            KafkaProducerMessage(topic: topic, key: "k\(i)", value: Array(repeating: UInt8(i), count: 600), partition: i < 10 ? 0 : 1)
        }
        let outcomes = await send(writer, messages)
        let offsets = try outcomes.map { try $0.get().offset }
        #expect(offsets == Array(0..<10) + Array(0..<4))
        let read = try await readBack(cluster, topic, partition: 0, count: 10)
        #expect(read.map(\.value) == messages.prefix(10).map(\.value), "in order, across batches")
    }

    @Test("a batch refused mid-call: that partition's later batches are not sent, so a retry keeps the order")
    func refusedBatchStopsItsPartition() async throws {
        let (cluster, topic) = try clusterWithTopic("writer", brokers: 1, engine: .swift, partitions: 1)
        try cluster.setMaxBatchBytes(2_000)
        let writer = try writer(cluster) { $0.properties["message.max.bytes"] = "2000" }
        let messages = (0..<10).map { i in KafkaProducerMessage(topic: topic, key: "k", value: Array(repeating: UInt8(i), count: 600), partition: 0) }
        cluster.failNextProduceRequests(1, code: 6)  // NOT_LEADER_OR_FOLLOWER, for the first batch
        let refused = await send(writer, messages)
        #expect(refused.allSatisfy { if case .failure = $0 { true } else { false } }, "every record of the partition fails with its first batch")
        #expect(cluster.pendingProduceFaults == 0)
        let again = await send(writer, messages)
        #expect(try again.map { try $0.get().offset } == Array(0..<10), "nothing of the refused call was written")
    }

    @Test("batches: within message.max.bytes, in order, a record larger than that on its own")
    func batchBounds() {
        let sizes = [600, 600, 600, 5_000, 10, 600, 1_300, 1_300, 0]
        let messages = sizes.enumerated().map { i, size in
            KafkaProducerMessage(topic: "t", key: "k\(i)", value: Array(repeating: 7, count: size), headers: [KafkaHeader(key: "h", string: "v")], partition: 0)
        }
        let indices = Array(messages.indices)
        let batches = RecordBatchEncoder.batches(indices, of: messages, maxBytes: 2_000)
        #expect(Array(batches.joined()) == indices)
        for (number, batch) in batches.enumerated() {
            var encoded = ByteBuffer()
            RecordBatchEncoder.write(batch.map { messages[$0] }, timestampMilliseconds: 0, to: &encoded)
            #expect(encoded.readableBytes <= 2_000 || batch.count == 1, "batch \(number): \(encoded.readableBytes) bytes")
            if number + 1 < batches.count {
                var grown = ByteBuffer()
                RecordBatchEncoder.write((batch + [batches[number + 1][0]]).map { messages[$0] }, timestampMilliseconds: 0, to: &grown)
                #expect(grown.readableBytes > 2_000, "batch \(number) could not take the next record")
            }
        }
        #expect(batches.contains([3]), "the 5 000-byte record alone")
    }

    @Test("a record without a partition fails alone")
    func blockingAndInvalid() async throws {
        let (cluster, topic) = try clusterWithTopic("writer", brokers: 1, engine: .swift, partitions: 2)
        let writer = try writer(cluster)
        var messages = (0..<4).map { record(topic, Int32($0 % 2), $0) }
        messages.insert(KafkaProducerMessage(topic: topic, key: "k", value: [1]), at: 2)  // no partition
        let outcomes = await send(writer, messages)
        #expect(outcomes.count == 5)
        #expect(try outcomes[0].get().offset == 0 && outcomes[1].get().offset == 0)
        #expect(try outcomes[3].get().offset == 1 && outcomes[4].get().offset == 1)
        guard case .failure(let error) = outcomes[2] else {
            Issue.record("a record without a partition was written")
            return
        }
        #expect("\(error)".contains("partition"))
    }

    @Test("an unknown partition and a broker's error are the records' outcomes; the next call succeeds", arguments: EmbeddedKafkaEngine.allCases)
    func brokerErrors(engine: EmbeddedKafkaEngine) async throws {
        let (cluster, topic) = try clusterWithTopic("writer", brokers: 1, engine: engine, partitions: 1)
        let writer = try writer(cluster)

        let unknown = await send(writer, [record(topic, 7, 1), record(topic, 0, 2)])
        #expect(throws: (any Error).self) { try unknown[0].get() }
        #expect(try unknown[1].get().offset == 0, "the other partition's record is written")

        cluster.failNextProduceRequests(1, code: 6)  // NOT_LEADER_OR_FOLLOWER
        let refused = await send(writer, [record(topic, 0, 3), record(topic, 0, 4)])
        for outcome in refused {
            guard case .failure(let error) = outcome else {
                Issue.record("a refused request's record succeeded")
                continue
            }
            #expect((error as? KafkaErrorCode)?.rawValue == 6)
        }
        let again = await send(writer, [record(topic, 0, 3), record(topic, 0, 4)])
        #expect(try again.map { try $0.get().offset } == [1, 2], "a refused record was not written")
    }

    @Test("the broker going down: each record fails within its timeout, and the writer reconnects once it is back")
    func outage() async throws {
        let (cluster, topic) = try clusterWithTopic("writer", brokers: 1, engine: .swift, partitions: 1)
        let writer = try writer(cluster) { $0.messageTimeoutMilliseconds = 1_000 }
        #expect(try await send(writer, [record(topic, 0, 0)]).map { try $0.get().offset } == [0])

        cluster.setAllBrokersDown()
        let clock = ContinuousClock()
        let started = clock.now
        let down = await send(writer, [record(topic, 0, 1), record(topic, 0, 2)])
        #expect(down.allSatisfy { if case .failure = $0 { true } else { false } })
        #expect(clock.now - started < .seconds(15), "failed within the request's timeout and the connection's deadline")

        cluster.setAllBrokersUp()
        var written: [Int64] = []
        let deadline = clock.now + .seconds(30)
        while written.isEmpty, clock.now < deadline {
            // The caller retries, as chat-fanout does.
            if let offsets = try? await send(writer, [record(topic, 0, 1), record(topic, 0, 2)]).map({ try $0.get().offset }) {
                written = offsets
            } else {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        #expect(written.count == 2, "written once the broker is back")
    }

    @Test("a peer that is not a Kafka broker: every record fails, nothing crashes")
    func hostilePeer() async throws {
        let (server, port) = try await startPeer { try $0.addHandler(GarbageAnswerer()) }
        defer { server.close(promise: nil) }
        let configuration = KafkaProducerConfiguration(client: KafkaClientConfiguration(bootstrapServers: "127.0.0.1:\(port)", clientId: "test-writer"))
        let writer = try KafkaRecordWriter(configuration: configuration, logger: TestKafka.logger)
        for _ in 0..<4 {
            let outcomes = await send(writer, [record("t", 0, 1)])
            #expect(outcomes.count == 1)
            #expect(throws: (any Error).self) { try outcomes[0].get() }
        }
    }

    @Test("a peer that accepts and never answers: the call returns each record's failure 5 s past the request timeout")
    func silentPeer() async throws {
        let (server, port) = try await startPeer { try $0.addHandler(SilentPeer()) }
        defer { server.close(promise: nil) }
        var configuration = KafkaProducerConfiguration(client: KafkaClientConfiguration(bootstrapServers: "127.0.0.1:\(port)", clientId: "test-writer"))
        configuration.messageTimeoutMilliseconds = 200
        let writer = try KafkaRecordWriter(configuration: configuration, logger: TestKafka.logger)
        let clock = ContinuousClock()
        let started = clock.now
        let outcomes = await send(writer, [record("t", 0, 1), record("t", 1, 2)])
        let took = clock.now - started
        #expect(outcomes.count == 2)
        for outcome in outcomes { #expect(throws: (any Error).self) { try outcome.get() } }
        #expect(took >= .seconds(5) && took < .seconds(20), "the metadata request timed out, not refused (\(took))")
    }

    @Test("a broker that closes the connection while it is idle (connections.max.idle.ms): the next call reconnects instead of failing")
    func idleClose() async throws {
        let port = Locked(0)
        let (server, bound) = try await startPeer { pipeline in
            try pipeline.addHandler(ByteToMessageHandler(KafkaFrameDecoder(minimumSize: 4)))
            try pipeline.addHandler(IdleClosingBroker(port: port.value))
        }
        defer { server.close(promise: nil) }
        port.withLock { $0 = bound }
        let configuration = KafkaProducerConfiguration(client: KafkaClientConfiguration(bootstrapServers: "127.0.0.1:\(port.value)", clientId: "test-writer"))
        let writer = try KafkaRecordWriter(configuration: configuration, logger: TestKafka.logger)
        for round in 0..<3 {
            let outcomes = await send(writer, [record("t", 0, round)])
            #expect(throws: Never.self, "round \(round)") { try outcomes[0].get() }
            try await Task.sleep(for: .milliseconds(1_100))  // the broker has closed the connection meanwhile
        }
        #expect(IdleClosingBroker.produced.load(ordering: .relaxed) == 3)
    }

    @Test("plaintext with a bootstrap list: anything else is librdkafka's")
    func whatItWrites() throws {
        let client = KafkaClientConfiguration(bootstrapServers: "127.0.0.1:9092", clientId: "c")
        #expect(KafkaRecordWriter.canWrite(KafkaProducerConfiguration(client: client)))
        var tls = client
        tls.security = try KafkaSecurity(protocol: "ssl", saslMechanism: nil, saslUsername: nil, saslPassword: nil, caLocation: nil)
        #expect(!KafkaRecordWriter.canWrite(KafkaProducerConfiguration(client: tls)))
        var bad = client
        bad.bootstrapServers = "no-port"
        #expect(!KafkaRecordWriter.canWrite(KafkaProducerConfiguration(client: bad)))
    }

    @Test("CRC-32C: the standard check value, and slicing by eight agrees with bit by bit at every length and alignment")
    func checksum() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([]) == 0)
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<300).map { _ in UInt8.random(in: 0...255, using: &generator) }
        for start in 0..<9 {
            for end in stride(from: start, through: bytes.count, by: 7) {
                let slice = Array(bytes[start..<end])
                #expect(CRC32C.checksum(slice) == crc32c(slice))
            }
        }
    }
}

/// A peer that reads everything and answers nothing.
final class SilentPeer: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}

/// A broker of one partition ("t"[0]) on 127.0.0.1:`port` that answers Metadata v1 and Produce v3,
/// and closes the connection after each Produce answer, as Kafka closes an idle connection.
final class IdleClosingBroker: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    static let produced = Atomic<Int>(0)
    let port: Int

    init(port: Int) { self.port = port }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var request = unwrapInboundIn(data)
        guard let api = request.readInteger(as: Int16.self), let _ = request.readInteger(as: Int16.self),
            let correlationId = request.readInteger(as: Int32.self)
        else { return }
        var answer = ByteBuffer()
        answer.writeInteger(Int32(0))
        answer.writeInteger(correlationId)
        switch api {
        case 3:
            answer.writeSingleBrokerMetadata(port: port)
        case 0:
            let offset = Int64(Self.produced.add(1, ordering: .relaxed).newValue - 1)
            answer.writeKafkaArray(["t"]) { out, topic in
                out.writeKafkaString(topic)
                out.writeKafkaArray([Int32(0)]) { out, partition in
                    out.writeKafka(partition)
                    out.writeKafka(Int16(0))
                    out.writeKafka(offset)
                    out.writeKafka(Int64(-1))
                }
            }
            answer.writeKafka(Int32(0))  // throttle
        default:
            return
        }
        answer.setInteger(Int32(answer.readableBytes - 4), at: 0)
        let closing = api == 0
        context.writeAndFlush(wrapOutboundOut(answer)).assumeIsolated().whenComplete { _ in
            if closing { context.close(promise: nil) }
        }
    }
}
