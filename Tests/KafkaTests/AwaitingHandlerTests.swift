import Common
import Foundation
import Synchronization
import Testing
import TestSupport

@testable import Kafka

/// `KafkaConsumer.consumeFetching` (the inbox consumers' loop): the own fetch with a handler that
/// awaits, and the own fetch's `batchLingerMilliseconds`.
@Suite("A group consumer fetching itself for an awaiting handler")
struct AwaitingHandlerTests {
    /// What the handler saw: the values in the order handled, and each batch's size.
    final class Seen: Sendable {
        let values = Mutex<[String]>([])
        let batchSizes = Mutex<[Int]>([])
        /// A batch being handled now (two at once would be a bug).
        let inside = Atomic<Int>(0)
        let overlapped = Atomic<Bool>(false)

        var count: Int { values.withLock { $0.count } }
    }

    private func produce(_ cluster: EmbeddedKafkaCluster, _ topic: String, _ range: Range<Int>, spacing: Duration = .zero) async throws {
        let producer = try TestKafka.producer(cluster) { $0.compression = "none" }
        for i in range {
            try await producer.send(KafkaProducerMessage(topic: topic, key: "k\(i)", value: Array("v\(i)".utf8), partition: 0))
            if spacing > .zero {
                try await producer.flush()
                try await Task.sleep(for: spacing)
            }
        }
        try await producer.flush()
    }

    private func waitFor(_ what: String, seconds: Int = 60, _ done: @escaping @Sendable () -> Bool) async throws {
        try await withTimeout(.seconds(seconds), what) {
            while !done() { try await Task.sleep(for: .milliseconds(10)) }
        }
    }

    @Test(
        "every record once and in order, one batch at a time though the handler awaits; what it stored is committed: the group's next member starts after it",
        arguments: EmbeddedKafkaEngine.allCases)
    func handlesInOrder(engine: EmbeddedKafkaEngine) async throws {
        let (cluster, topic) = try clusterWithTopic("awaiting", brokers: 1, engine: engine, partitions: 1)
        try await produce(cluster, topic, 0..<150)
        let group = "g-\(topic)"
        let consumer = try TestKafka.groupConsumer(cluster, group: group, topics: [topic]) { $0.maxBatchSize = 40 }
        let seen = Seen()
        let running = Task {
            try await consumer.consumeFetching { batch in
                if seen.inside.add(1, ordering: .relaxed).newValue > 1 { seen.overlapped.store(true, ordering: .relaxed) }
                try await Task.sleep(for: .milliseconds(5))  // an await, as a transaction has
                seen.batchSizes.withLock { $0.append(batch.count) }
                for message in batch {
                    seen.values.withLock { $0.append(String(decoding: message.value ?? [], as: UTF8.self)) }
                    try consumer.storeOffset(message)
                }
                seen.inside.subtract(1, ordering: .relaxed)
            }
        }
        try await waitFor("150 records") { seen.count >= 150 }
        try await produce(cluster, topic, 150..<160)  // while it runs
        try await waitFor("160 records") { seen.count >= 160 }
        running.cancel()
        _ = await running.result
        await consumer.close()
        #expect(seen.values.withLock { $0 } == (0..<160).map { "v\($0)" }, "each record once, in order")
        #expect(seen.batchSizes.withLock { $0.allSatisfy { $0 <= 40 } }, "batches of at most maxBatchSize")
        let overlapped = seen.overlapped.load(ordering: .relaxed)
        #expect(!overlapped, "one batch at a time")

        let next = try TestKafka.groupConsumer(cluster, group: group, topics: [topic])
        let after = Seen()
        let nextRunning = Task {
            try await next.consumeFetching { batch in
                after.values.withLock { $0 += batch.map { String(decoding: $0.value ?? [], as: UTF8.self) } }
            }
        }
        try await produce(cluster, topic, 160..<161)
        try await waitFor("the next member's first record") { after.count >= 1 }
        nextRunning.cancel()
        _ = await nextRunning.result
        await next.close()
        #expect(after.values.withLock { $0 } == ["v160"], "it starts after what was committed")
    }

    @Test("a handler that throws ends the loop with its error; one awaiting forever ends when the task is cancelled")
    func errorsAndCancellation() async throws {
        struct Refused: Error {}
        let (cluster, topic) = try clusterWithTopic("awaiting-end", brokers: 1, engine: .swift, partitions: 1)
        try await produce(cluster, topic, 0..<3)
        let throwing = try TestKafka.groupConsumer(cluster, group: "g-\(topic)-a", topics: [topic])
        await #expect(throws: Refused.self) {
            try await withTimeout(.seconds(60), "the loop ends") { try await throwing.consumeFetching { _ in throw Refused() } }
        }
        await throwing.close()

        let stuck = try TestKafka.groupConsumer(cluster, group: "g-\(topic)-b", topics: [topic])
        let entered = Atomic<Bool>(false)
        let cancelledInside = Atomic<Bool>(false)
        let running = Task {
            try await stuck.consumeFetching { _ in
                entered.store(true, ordering: .relaxed)
                do {
                    try await Task.sleep(for: .seconds(3_600))
                } catch {
                    cancelledInside.store(true, ordering: .relaxed)
                    throw error
                }
            }
        }
        try await waitFor("the handler is awaiting") { entered.load(ordering: .relaxed) }
        let started = ContinuousClock.now
        running.cancel()
        let result = await running.result
        #expect(ContinuousClock.now - started < .seconds(5), "ended soon after the cancellation")
        let wasCancelled = cancelledInside.load(ordering: .relaxed)
        #expect(wasCancelled, "the batch being handled was cancelled")
        #expect(throws: CancellationError.self) { try result.get() }
        await stuck.close()
    }

    @Test("with a linger, records 30 ms apart within it of the first are handed out together; without one, each comes alone")
    func linger() async throws {
        var batches: [Int: [Int]] = [:]
        for linger in [0, 1_000] {
            let (cluster, topic) = try clusterWithTopic("awaiting-linger", brokers: 1, engine: .swift, partitions: 1)
            let consumer = try TestKafka.groupConsumer(cluster, group: "g-\(topic)", topics: [topic]) {
                $0.batchLingerMilliseconds = linger
                $0.fetchWaitMaxMilliseconds = 5
            }
            let seen = Seen()
            let running = Task {
                try await consumer.consumeFetching { batch in
                    seen.batchSizes.withLock { $0.append(batch.count) }
                    seen.values.withLock { $0 += batch.map { String(decoding: $0.value ?? [], as: UTF8.self) } }
                }
            }
            try await produce(cluster, topic, 0..<1)  // the member fetches at the end once this is handled
            try await waitFor("the first record") { seen.count >= 1 }
            try await produce(cluster, topic, 1..<5, spacing: .milliseconds(30))
            try await waitFor("five records") { seen.count >= 5 }
            running.cancel()
            _ = await running.result
            await consumer.close()
            #expect(seen.values.withLock { $0 } == (0..<5).map { "v\($0)" }, "linger \(linger): each once, in order")
            batches[linger] = Array(seen.batchSizes.withLock { $0 }.dropFirst())
        }
        #expect(batches[1_000] == [4], "with a 1 s linger the four came in one batch: \(batches)")
        #expect((batches[0]?.count ?? 0) > 1, "without a linger they came in several: \(batches)")
    }

    /// The records a member holds in its linger are handled (and their offsets stored) before it
    /// serves a rebalance: a revoke in between would commit without them, and the partition's
    /// next owner would fetch them again.
    @Test("a member joining during another's linger gets none of the held records again: the rebalance waits for them to be handled")
    func rebalanceWaitsForHeld() async throws {
        let (cluster, topic) = try clusterWithTopic("awaiting-held", brokers: 1, engine: .swift, partitions: 1)
        let group = "g-\(topic)"
        func member(_ seen: Seen) throws -> (KafkaConsumer, Task<Void, any Error>) {
            let consumer = try TestKafka.groupConsumer(cluster, group: group, topics: [topic]) {
                $0.batchLingerMilliseconds = 3_000
                $0.fetchWaitMaxMilliseconds = 5
            }
            let running = Task {
                try await consumer.consumeFetching { batch in
                    for message in batch {
                        seen.values.withLock { $0.append(String(decoding: message.value ?? [], as: UTF8.self)) }
                        try consumer.storeOffset(message)
                    }
                }
            }
            return (consumer, running)
        }
        let (first, second) = (Seen(), Seen())
        let (a, aRunning) = try member(first)
        try await produce(cluster, topic, 0..<1)  // a owns the partition and fetches at its end once this is handled
        try await waitFor("the first record") { first.count >= 1 }
        try await produce(cluster, topic, 1..<4)
        try await Task.sleep(for: .milliseconds(500))  // a has fetched them and holds them for 3 s
        let (b, bRunning) = try member(second)
        try await waitFor("the held records") { first.count >= 4 }
        try await produce(cluster, topic, 4..<7)  // to whichever member owns the partition now
        try await waitFor("every record") { first.count + second.count >= 7 }
        try await Task.sleep(for: .milliseconds(500))  // a duplicate would show up by now
        for running in [aRunning, bRunning] { running.cancel() }
        _ = await (aRunning.result, bRunning.result)
        await a.close()
        await b.close()
        let (byA, byB) = (first.values.withLock { $0 }, second.values.withLock { $0 })
        #expect((byA + byB).sorted() == (0..<7).map { "v\($0)" }, "each record once, whichever member handled it: a \(byA), b \(byB)")
        #expect(Array(byA.prefix(4)) == (0..<4).map { "v\($0)" }, "a handled what it held")
    }
}
