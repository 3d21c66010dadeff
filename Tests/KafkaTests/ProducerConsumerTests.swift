import Common
import Foundation
import Kafka
import Synchronization
import Testing
import TestSupport

@Suite("Kafka producer and consumer against the embedded broker", .serialized)
struct ProducerConsumerTests {
    @Test("sendAndAwait returns a delivery report; a group consumer reads key, value and headers")
    func roundTrip() async throws {
        let cluster = try TestKafka.cluster()
        let topic = TestKafka.uniqueTopic()
        try cluster.createTopic(topic, partitions: 3)
        let producer = try TestKafka.producer(cluster)
        let report = try await producer.sendAndAwait(
            KafkaProducerMessage(
                topic: topic, key: "k1", value: Array("hello".utf8), headers: [KafkaHeader(key: "ce_type", string: "t.x")]
            ))
        #expect(report.topic == topic)
        #expect(report.offset == 0)

        let consumer = try TestKafka.groupConsumer(cluster, group: "g-\(topic)", topics: [topic])
        let received = try await withTimeout(.seconds(20), "first message") {
            for try await message in consumer.messages { return message }
            throw TimeoutError(what: "stream ended")
        }
        #expect(received.keyString == "k1")
        #expect(received.value == Array("hello".utf8))
        #expect(received.header("ce_type") == Array("t.x".utf8))
        #expect(received.partition == report.partition)
        await consumer.close()
        try await producer.flush()
    }

    @Test("a tombstone (nil value) and an empty value are distinct")
    func tombstone() async throws {
        let cluster = try TestKafka.cluster()
        let topic = TestKafka.uniqueTopic()
        try cluster.createTopic(topic, partitions: 1)
        let producer = try TestKafka.producer(cluster)
        _ = try await producer.sendAndAwait(KafkaProducerMessage(topic: topic, key: "a", value: nil))
        _ = try await producer.sendAndAwait(KafkaProducerMessage(topic: topic, key: "b", value: []))
        let consumer = try TestKafka.groupConsumer(cluster, group: "g-\(topic)", topics: [topic])
        let got = try await withTimeout(.seconds(20), "two messages") {
            var out: [KafkaConsumerMessage] = []
            for try await m in consumer.messages {
                out.append(m)
                if out.count == 2 { break }
            }
            return out
        }
        #expect(got[0].value == nil)
        #expect(got[1].value == [])
        await consumer.close()
    }

    /// A one-partition topic on a fresh one-broker cluster holding `records` values under one key.
    static func oneKeyTopic(records: Int) async throws -> (EmbeddedKafkaCluster, String, KafkaProducer, [[UInt8]]) {
        let cluster = try TestKafka.cluster(brokers: 1)
        let topic = TestKafka.uniqueTopic()
        try cluster.createTopic(topic, partitions: 1)
        let producer = try TestKafka.producer(cluster)
        let values = (0..<records).map { Array("m\($0)".utf8) }
        for result in await producer.sendAllAndAwait(values.map { KafkaProducerMessage(topic: topic, key: "k", value: $0) }) {
            _ = try result.get()
        }
        return (cluster, topic, producer, values)
    }

    @Test("batches hands out each poll's records together, never an empty batch, in partition order")
    func batches() async throws {
        let (cluster, topic, _, values) = try await Self.oneKeyTopic(records: 200)
        let consumer = try TestKafka.groupConsumer(cluster, group: "g-\(topic)", topics: [topic]) { $0.maxBatchSize = 64 }
        let batches = try await withTimeout(.seconds(20), "200 messages in batches") {
            var out: [[KafkaConsumerEvent]] = []
            for try await batch in consumer.batches {
                out.append(batch)
                if out.joined().count >= values.count { break }
            }
            return out
        }
        #expect(batches.allSatisfy { !$0.isEmpty && $0.count <= 64 })
        let received = batches.joined().compactMap { event -> [UInt8]? in
            if case .message(let m) = event { return m.value }
            return nil
        }
        #expect(received == values)
        await consumer.close()
    }

    @Test(
        "consumeOnPollThread hands every poll's records to the handler in order, outside any task; offsets it stores there are committed on close; it ends promptly when its task is cancelled"
    )
    func consumeOnPollThread() async throws {
        let (cluster, topic, producer, values) = try await Self.oneKeyTopic(records: 300)
        let group = "g-\(topic)"
        let consumer = try TestKafka.groupConsumer(cluster, group: group, topics: [topic]) { $0.maxBatchSize = 64 }
        let received = Mutex<[[UInt8]]>([])
        let batchSizes = Mutex<[Int]>([])
        let inTask = Mutex(false)
        let running = Task {
            try await consumer.consumeOnPollThread { batch, _ in
                // The handler runs on the consumer's thread, outside any task.
                if withUnsafeCurrentTask(body: { $0 != nil }) { inTask.withLock { $0 = true } }
                batchSizes.withLock { $0.append(batch.count) }
                for case .message(let message) in batch {
                    received.withLock { $0.append(message.value ?? []) }
                    try? consumer.storeOffset(message)
                }
            }
        }
        try await withTimeout(.seconds(30), "300 records handled") {
            while received.withLock({ $0.count }) < values.count { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(received.withLock { $0 } == values)
        #expect(batchSizes.withLock { $0.allSatisfy { $0 > 0 && $0 <= 64 } })
        #expect(!inTask.withLock { $0 }, "the handler ran inside a task")
        // A poll's records count as processed once the handler returns, so the consumer is
        // caught up just after the handler has seen the last record.
        try await withTimeout(.seconds(5), "the consumer caught up") {
            while !consumer.isCaughtUp { try await Task.sleep(for: .milliseconds(10)) }
        }

        let clock = ContinuousClock()
        let cancelled = clock.now
        running.cancel()
        try await running.value
        #expect(cancelled.duration(to: clock.now) < .seconds(5))
        await consumer.close()

        // The offsets the handler stored were committed on close: the group resumes past them.
        _ = try await producer.sendAndAwait(KafkaProducerMessage(topic: topic, key: "k", value: Array("after".utf8)))
        let next = try TestKafka.groupConsumer(cluster, group: group, topics: [topic])
        let first = try await withTimeout(.seconds(20), "the first record after the commit") {
            for try await message in next.messages { return message.value }
            throw TimeoutError(what: "stream ended")
        }
        #expect(first == Array("after".utf8))
        await next.close()
    }

    @Test("close() while consumeOnPollThread runs, its task not cancelled: both return promptly (the loop gives up the consumer's thread)")
    func closeEndsConsumeOnPollThread() async throws {
        let (cluster, topic, _, values) = try await Self.oneKeyTopic(records: 5)
        let consumer = try TestKafka.groupConsumer(cluster, group: "g-\(topic)", topics: [topic])
        let handled = Mutex(0)
        let running = Task { try await consumer.consumeOnPollThread { batch, _ in handled.withLock { $0 += batch.count } } }
        try await withTimeout(.seconds(30), "the records handled") {
            while handled.withLock({ $0 }) < values.count { try await Task.sleep(for: .milliseconds(10)) }
        }
        let clock = ContinuousClock()
        let start = clock.now
        try await withTimeout(.seconds(20), "close and the loop's end") {
            await consumer.close()
            try await running.value
        }
        #expect(start.duration(to: clock.now) < .seconds(15))
        #expect(consumer.isClosed)
    }

    @Test(
        "sendAllBlocking, off the cooperative pool, returns once every record is acknowledged, in order per key; with no broker it returns each record's failure within message.timeout.ms (reports served by the producer's poll thread, or by the caller: KafkaBlockingProducer)",
        arguments: [false, true]
    )
    func sendAllBlocking(callerServesReports: Bool) async throws {
        let cluster = try TestKafka.cluster(brokers: 1)
        let topic = TestKafka.uniqueTopic()
        try cluster.createTopic(topic, partitions: 3)
        let producer = try TestKafka.producer(cluster) { $0.messageTimeoutMilliseconds = 2_000 }
        let blockingProducer = try KafkaBlockingProducer(configuration: producer.configuration, logger: TestKafka.logger)
        @Sendable func send(_ messages: [KafkaProducerMessage]) -> [Result<KafkaDeliveryReport, any Error>] {
            callerServesReports ? blockingProducer.sendAll(messages) : producer.sendAllBlocking(messages)
        }
        let messages = (0..<90).map { KafkaProducerMessage(topic: topic, key: "k\($0 % 3)", value: Array("v\($0)".utf8)) }
        /// The blocking send on a Dispatch thread, as a consumer's poll thread calls it.
        func blocking(_ messages: [KafkaProducerMessage]) async -> [Result<KafkaDeliveryReport, any Error>] {
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async { continuation.resume(returning: send(messages)) }
            }
        }
        let reports = try await blocking(messages).map { try $0.get() }
        #expect(reports.count == messages.count)
        // Per key (one partition each), offsets rise in the order the records were given.
        for key in 0..<3 {
            let offsets = reports.enumerated().filter { $0.offset % 3 == key }.map(\.element.offset)
            #expect(offsets == offsets.sorted() && Set(offsets).count == offsets.count)
            #expect(Set(reports.enumerated().filter { $0.offset % 3 == key }.map(\.element.partition)).count == 1)
        }

        cluster.setAllBrokersDown()
        let clock = ContinuousClock()
        let start = clock.now
        let failed = await blocking(Array(messages.prefix(5)))
        #expect(failed.count == 5 && failed.allSatisfy { if case .failure = $0 { true } else { false } })
        #expect(start.duration(to: clock.now) < .seconds(15))
        cluster.setAllBrokersUp()
    }

    @Test("with a batch linger, records arriving within it after the poll's first join its batch; a lone record still comes out after the linger")
    func batchLinger() async throws {
        let cluster = try TestKafka.cluster(brokers: 1)
        let topic = TestKafka.uniqueTopic()
        try cluster.createTopic(topic, partitions: 2)
        let producer = try TestKafka.producer(cluster)
        let consumer = try TestKafka.groupConsumer(cluster, group: "g-\(topic)", topics: [topic]) { $0.batchLingerMilliseconds = 5_000 }
        @Sendable func send(_ values: [String]) async throws {
            for result in await producer.sendAllAndAwait(values.map { KafkaProducerMessage(topic: topic, key: $0, value: Array($0.utf8)) }) {
                _ = try result.get()
            }
        }
        // A linger long enough that a loaded CI machine still sends b, c and d within it.
        let batches = try await withTimeout(.seconds(60), "two batches") {
            var iterator = consumer.batches.makeAsyncIterator()
            // The consumer joins its group: a first record, then three more well within the linger.
            let late = Task {
                try await Task.sleep(for: .seconds(3))
                try await send(["a"])
                try await Task.sleep(for: .milliseconds(300))
                try await send(["b", "c", "d"])
            }
            let first = try await iterator.next() ?? []
            try await late.value
            // A lone record: handed out once the linger has passed.
            try await send(["e"])
            let sent = ContinuousClock.now
            let second = try await iterator.next() ?? []
            return (first, second, ContinuousClock.now - sent)
        }
        func values(_ batch: [KafkaConsumerEvent]) -> [String] {
            batch.compactMap { if case .message(let m) = $0 { m.keyString } else { nil } }.sorted()
        }
        #expect(values(batches.0) == ["a", "b", "c", "d"])
        #expect(values(batches.1) == ["e"])
        #expect(batches.2 < .seconds(15), "not held beyond the linger: \(batches.2)")
        await consumer.close()
    }

    /// Acceptance: 10 000 keyed messages, a 2-member group, one member leaves mid-stream; none
    /// lost, per-key order kept within each member, the survivor finishes the stream.
    @Test("10 000 keyed messages, 2-member group, member leaves mid-stream")
    func groupRebalance() async throws {
        let cluster = try TestKafka.cluster()
        let topic = TestKafka.uniqueTopic()
        try cluster.createTopic(topic, partitions: 6)
        let total = 10_000
        let keys = 50
        let group = "g-\(topic)"

        // Each record's value is "<key>:<seq>" where seq counts per key from 0.
        let producer = try TestKafka.producer(cluster)
        var messages: [KafkaProducerMessage] = []
        for i in 0..<total {
            let key = "key-\(i % keys)"
            messages.append(KafkaProducerMessage(topic: topic, key: key, value: Array("\(key):\(i / keys)".utf8)))
        }

        // Processing log in global order: (member, key, seq). Redeliveries after a rebalance are
        // allowed (at-least-once; the inbox drops them); what must hold is that, per key, the
        // first processing of each record happens in order and nothing is missing.
        let log = Locked<[(member: String, key: String, seq: Int)]>([])
        let union = Locked<Set<String>>([])
        let leaverProcessed = Locked(0)

        let survivor = try TestKafka.groupConsumer(cluster, group: group, topics: [topic], clientId: "survivor")
        let leaver = try TestKafka.groupConsumer(cluster, group: group, topics: [topic], clientId: "leaver")

        @Sendable func record(_ member: String, _ m: KafkaConsumerMessage) {
            let text = String(decoding: m.value ?? [], as: UTF8.self)
            let parts = text.split(separator: ":")
            guard parts.count == 2, let seq = Int(parts[1]) else { return }
            log.withLock { $0.append((member, String(parts[0]), seq)) }
            union.withLock { _ = $0.insert(text) }
        }

        let records = messages
        try await withTimeout(.seconds(120), "group stream") {
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask {
                    for try await m in survivor.messages {
                        record("survivor", m)
                        try survivor.storeOffset(m)
                        if union.withLock({ $0.count }) == total { break }
                    }
                }
                tasks.addTask {
                    for try await m in leaver.messages {
                        record("leaver", m)
                        try leaver.storeOffset(m)
                        if leaverProcessed.withLock({
                            $0 += 1; return $0
                        }) >= 1_500 {
                            break
                        }
                    }
                    // Leaving mid-stream: commit and leave the group → rebalance to the survivor.
                    await leaver.close()
                }
                // Wait until both members have partitions, then produce.
                let deadline = ContinuousClock.now + .seconds(30)
                while survivor.assignment.isEmpty || leaver.assignment.isEmpty {
                    guard ContinuousClock.now < deadline else { throw TimeoutError(what: "initial assignment") }
                    try await Task.sleep(for: .milliseconds(50))
                }
                for chunk in stride(from: 0, to: total, by: 500) {
                    for m in records[chunk..<min(total, chunk + 500)] { try await producer.send(m) }
                    try await Task.sleep(for: .milliseconds(20))  // a stream, not one burst
                }
                try await producer.flush()
                try await tasks.waitForAll()
            }
        }
        await survivor.close()

        #expect(union.value.count == total, "no message lost")
        #expect(leaverProcessed.value >= 1_500, "the leaver processed part of the stream")
        #expect(survivor.rebalanceCount >= 2, "the survivor saw a rebalance after the leaver left")
        var firstSeen: [String: [Int]] = [:]
        var seenPairs = Set<String>()
        var survivorAfterLeave = 0
        for entry in log.value where seenPairs.insert("\(entry.key):\(entry.seq)").inserted {
            firstSeen[entry.key, default: []].append(entry.seq)
            if entry.member == "survivor" { survivorAfterLeave += 1 }
        }
        for (key, seqs) in firstSeen {
            #expect(seqs == Array(0..<(total / keys)), "first processing of \(key) is in order and complete")
        }
        #expect(survivorAfterLeave > 0)
        let duplicates = log.value.count - total
        print("group stream: \(total) records, \(duplicates) redelivered after the rebalance")
    }
}
