import Common
import Foundation
import Synchronization
import Testing
import TestSupport

@testable import Kafka

/// `KafkaConsumer.consumeFetchingOnPollThread`: a group member whose poll thread fetches its
/// partitions itself (`BlockingPartitionFetcher`) while librdkafka keeps the group, against both
/// embedded brokers (the mock with three brokers, so a topic's partitions have different leaders).
@Suite("A group consumer fetching itself")
struct OwnFetchTests {
    /// What one member handled: per partition the offsets in the order handed out, and the values.
    final class Handled: Sendable {
        let offsets = Mutex<[Int32: [Int64]]>([:])
        let values = Mutex<[String]>([])
        let batchSizes = Mutex<[Int]>([])

        var count: Int { values.withLock { $0.count } }
        var distinct: Set<String> { Set(values.withLock { $0 }) }
    }

    /// Runs `consumer` fetching itself, storing each batch's offsets, until the task is cancelled.
    private func run(_ consumer: KafkaConsumer, into handled: Handled) -> Task<Void, any Error> {
        Task {
            try await consumer.consumeFetchingOnPollThread { batch, _ in
                handled.batchSizes.withLock { $0.append(batch.count) }
                for case .message(let message) in batch {
                    handled.offsets.withLock { $0[message.partition, default: []].append(message.offset) }
                    handled.values.withLock { $0.append(String(decoding: message.value ?? [], as: UTF8.self)) }
                    try consumer.storeOffset(message)
                }
            }
        }
    }

    /// Ends `running` (cancelled, its loop given up) and closes `consumer`.
    private func stop(_ running: Task<Void, any Error>, _ consumer: KafkaConsumer) async {
        running.cancel()
        _ = await running.result
        await consumer.close()
    }

    /// Each partition's offsets 0..<`count` handed out once, in order.
    private func expectEachOffsetOnce(_ handled: Handled, partitions: Int32, count: Int64) {
        for partition in Int32(0)..<partitions {
            #expect(handled.offsets.withLock { $0[partition] } == Array(0..<count), "partition \(partition): each offset once, in order")
        }
    }

    private func waitFor(_ what: String, seconds: Int = 60, _ done: @escaping @Sendable () -> Bool) async throws {
        try await withTimeout(.seconds(seconds), what) {
            while !done() { try await Task.sleep(for: .milliseconds(10)) }
        }
    }

    private func produce(_ cluster: EmbeddedKafkaCluster, _ topic: String, _ range: Range<Int>, partitions: Int32, compression: String = "none") async throws {
        let producer = try TestKafka.producer(cluster) { $0.compression = compression }
        for i in range {
            try await producer.send(KafkaProducerMessage(topic: topic, key: "k\(i)", value: Array("v\(i)".utf8), partition: Int32(i) % partitions))
        }
        try await producer.flush()
    }

    @Test(
        "every record once and in order per partition, from partitions on different leaders; caught up at the end; what was stored is committed: the group's next member starts after it",
        arguments: EmbeddedKafkaEngine.allCases)
    func readsAndCommits(engine: EmbeddedKafkaEngine) async throws {
        let (cluster, topic) = try clusterWithTopic("own-fetch", brokers: 3, engine: engine, partitions: 3)
        try await produce(cluster, topic, 0..<300, partitions: 3)
        let group = "g-\(topic)"
        let consumer = try TestKafka.groupConsumer(cluster, group: group, topics: [topic]) { $0.maxBatchSize = 40 }
        let handled = Handled()
        let running = run(consumer, into: handled)
        try await waitFor("300 records") { handled.count >= 300 }
        try await produce(cluster, topic, 300..<330, partitions: 3)  // while it runs
        try await waitFor("330 records") { handled.count >= 330 }
        try await waitFor("the catch-up") { consumer.isCaughtUp }
        expectEachOffsetOnce(handled, partitions: 3, count: 110)
        #expect(handled.distinct == Set((0..<330).map { "v\($0)" }))
        #expect(handled.batchSizes.withLock { $0.allSatisfy { $0 <= 40 } }, "no batch over maxBatchSize")
        await stop(running, consumer)

        try await produce(cluster, topic, 330..<336, partitions: 3)
        let next = try TestKafka.groupConsumer(cluster, group: group, topics: [topic], clientId: "next")
        let afterCommit = Handled()
        let nextRunning = run(next, into: afterCommit)
        try await waitFor("the six new records") { afterCommit.count >= 6 }
        try await Task.sleep(for: .milliseconds(300))  // nothing older follows
        #expect(afterCommit.distinct == Set((330..<336).map { "v\($0)" }))
        #expect(afterCommit.count == 6)
        await stop(nextRunning, next)
    }

    @Test(
        "fetches that batch under load (fetchBatchWaitMilliseconds): 200 records trickled in one by one are handled once and in order, in far fewer batches than records"
    )
    func batchesUnderLoad() async throws {
        let (cluster, topic) = try clusterWithTopic("own-fetch-batch", brokers: 1, engine: .swift, partitions: 1)
        let consumer = try TestKafka.groupConsumer(cluster, group: "g-\(topic)", topics: [topic]) { $0.fetchBatchWaitMilliseconds = 100 }
        let handled = Handled()
        let running = run(consumer, into: handled)
        let producer = try TestKafka.producer(cluster) { $0.compression = "none" }
        for i in 0..<200 {
            try await producer.send(KafkaProducerMessage(topic: topic, key: "k\(i)", value: Array("v\(i)".utf8), partition: 0))
            try await producer.flush()
            // The member fetching before the trickle starts (the first record is handled alone).
            if i == 0 { try await waitFor("the first record") { handled.count >= 1 } }
            try await Task.sleep(for: .milliseconds(2))
        }
        try await waitFor("200 records") { handled.count >= 200 }
        expectEachOffsetOnce(handled, partitions: 1, count: 200)
        let batches = handled.batchSizes.withLock { $0.count }
        #expect(batches <= 40, "\(batches) batches for 200 records ~3 ms apart with a 100 ms batch wait")
        await stop(running, consumer)
    }

    @Test(
        "lz4 batches are fetched and decoded by the poll thread: nothing handed to librdkafka, nothing lost or twice", arguments: EmbeddedKafkaEngine.allCases)
    func lz4Batches(engine: EmbeddedKafkaEngine) async throws {
        let (cluster, topic) = try clusterWithTopic("own-fetch-lz4", brokers: 3, engine: engine, partitions: 2)
        try await produce(cluster, topic, 0..<200, partitions: 2, compression: "lz4")
        let consumer = try TestKafka.groupConsumer(cluster, group: "g-\(topic)", topics: [topic])
        let handled = Handled()
        let running = run(consumer, into: handled)
        try await waitFor("every record") { handled.count >= 200 }
        try await Task.sleep(for: .milliseconds(300))  // no duplicate follows
        expectEachOffsetOnce(handled, partitions: 2, count: 100)
        #expect(handled.distinct == Set((0..<200).map { "v\($0)" }))
        #expect(consumer.client.context.onAssign.load(ordering: .relaxed) == AssignedPartitions.pause.rawValue, "still fetching itself")
        await stop(running, consumer)
    }

    @Test(
        "a batch of a codec it does not read (gzip) hands every partition to librdkafka from the next offset not handed out: nothing lost, nothing twice",
        arguments: EmbeddedKafkaEngine.allCases)
    func compressedBatchHandsOver(engine: EmbeddedKafkaEngine) async throws {
        let (cluster, topic) = try clusterWithTopic("own-fetch-gzip", brokers: 3, engine: engine, partitions: 2)
        try await produce(cluster, topic, 0..<40, partitions: 2)
        let consumer = try TestKafka.groupConsumer(cluster, group: "g-\(topic)", topics: [topic])
        let handled = Handled()
        let running = run(consumer, into: handled)
        try await waitFor("the uncompressed records") { handled.count >= 40 }
        try await produce(cluster, topic, 40..<80, partitions: 2, compression: "gzip")
        try await produce(cluster, topic, 80..<120, partitions: 2)
        try await waitFor("every record") { handled.count >= 120 }
        #expect(consumer.client.context.onAssign.load(ordering: .relaxed) == AssignedPartitions.resume.rawValue, "handed over")
        try await Task.sleep(for: .milliseconds(300))  // no duplicate follows
        expectEachOffsetOnce(handled, partitions: 2, count: 60)
        #expect(handled.count == 120)
        #expect(handled.distinct == Set((0..<120).map { "v\($0)" }))
        await stop(running, consumer)
    }

    @Test(
        "two members, one leaving mid-stream: every record handled, each key's records first handled in order",
        arguments: EmbeddedKafkaEngine.allCases)
    func memberLeaves(engine: EmbeddedKafkaEngine) async throws {
        let (cluster, topic) = try clusterWithTopic("own-fetch-group", brokers: 3, engine: engine, partitions: 6)
        let group = "g-\(topic)"
        let survivor = try TestKafka.groupConsumer(cluster, group: group, topics: [topic], clientId: "survivor")
        let leaver = try TestKafka.groupConsumer(cluster, group: group, topics: [topic], clientId: "leaver")
        let survived = Handled()
        let left = Handled()
        let survivorRunning = run(survivor, into: survived)
        let leaverRunning = run(leaver, into: left)
        try await waitFor("both members assigned") { !survivor.assignment.isEmpty && !leaver.assignment.isEmpty }
        // 3 000 records over 30 keys, value "<key>:<seq>", as a stream.
        let producer = try TestKafka.producer(cluster)
        for chunk in stride(from: 0, to: 3_000, by: 300) {
            for i in chunk..<chunk + 300 {
                try await producer.send(KafkaProducerMessage(topic: topic, key: "key-\(i % 30)", value: Array("key-\(i % 30):\(i / 30)".utf8)))
            }
            if chunk == 900 {
                try await waitFor("the leaver's share of the first records") { left.count > 0 }
                leaverRunning.cancel()
                _ = await leaverRunning.result
                await leaver.close()
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        try await producer.flush()
        try await waitFor("every record", seconds: 90) { survived.distinct.union(left.distinct).count >= 3_000 }
        await stop(survivorRunning, survivor)

        #expect(survivor.rebalanceCount >= 2, "the survivor saw the leaver go")
        var firstSeen: [String: [Int]] = [:]
        var seen = Set<String>()
        for value in left.values.withLock({ $0 }) + survived.values.withLock({ $0 }) where seen.insert(value).inserted {
            let parts = value.split(separator: ":")
            firstSeen[String(parts[0]), default: []].append(Int(parts[1]) ?? -1)
        }
        #expect(seen.count == 3_000, "no record lost")
        for (key, sequence) in firstSeen {
            #expect(sequence == Array(0..<100), "\(key): first handled in order")
        }
    }

    @Test("the brokers gone for a while: the member fetches again once they are back, nothing lost or twice", arguments: EmbeddedKafkaEngine.allCases)
    func brokerOutage(engine: EmbeddedKafkaEngine) async throws {
        let (cluster, topic) = try clusterWithTopic("own-fetch-outage", brokers: 1, engine: engine, partitions: 2)
        try await produce(cluster, topic, 0..<20, partitions: 2)
        let consumer = try TestKafka.groupConsumer(cluster, group: "g-\(topic)", topics: [topic])
        let handled = Handled()
        let running = run(consumer, into: handled)
        try await waitFor("the first records") { handled.count >= 20 }
        cluster.setAllBrokersDown()
        try await Task.sleep(for: .seconds(2))
        cluster.setAllBrokersUp()
        try await produce(cluster, topic, 20..<40, partitions: 2)
        try await waitFor("the records after the outage") { handled.count >= 40 }
        try await Task.sleep(for: .milliseconds(300))
        expectEachOffsetOnce(handled, partitions: 2, count: 20)
        await stop(running, consumer)
    }
}
