import Common
import Dispatch
import Foundation
import Kafka
import Testing
import TestSupport

/// A service stopping while its brokers are unreachable still stops, and a test whose embedded
/// cluster is gone before its consumers still ends: librdkafka 2.0.2's `rd_kafka_consumer_close`
/// waits for the group coordinator (forever in librdkafka #4519; 7–12 s here), and its
/// `rd_kafka_destroy` of a consumer whose brokers are gone can block forever.
@Suite("Kafka consumer shutdown with the brokers gone", .serialized)
struct ConsumerShutdownTests {
    /// A group member that consumed and stored an offset, of a cluster that is destroyed when this
    /// returns (the consumer and producer hold only its address).
    private func memberOfVanishedCluster(closeTimeout: Duration = .seconds(10)) async throws -> KafkaConsumer {
        try await member(of: try TestKafka.cluster(brokers: 1), closeTimeout: closeTimeout)
    }

    private func member(of cluster: EmbeddedKafkaCluster, closeTimeout: Duration) async throws -> KafkaConsumer {
        let topic = TestKafka.uniqueTopic("vanish")
        try cluster.createTopic(topic, partitions: 2)
        let producer = try TestKafka.producer(cluster)
        _ = try await producer.sendAndAwait(KafkaProducerMessage(topic: topic, key: "k", value: Array("v".utf8)))
        let consumer = try TestKafka.groupConsumer(cluster, group: "g-\(topic)", topics: [topic]) { $0.closeTimeout = closeTimeout }
        let message = try await withTimeout(.seconds(20), "the message") {
            for try await message in consumer.messages { return message }
            throw TimeoutError(what: "stream ended")
        }
        try consumer.storeOffset(message)
        try await producer.flush()
        return consumer
    }

    @Test("close() ends within closeTimeout when every broker is gone (the consumer is given up, not waited for)")
    func closeWithoutBrokers() async throws {
        let consumer = try await memberOfVanishedCluster(closeTimeout: .seconds(3))
        let start = ContinuousClock.now
        // librdkafka 2.0.2 alone took 12 s here, and can take forever; the bound plus slack for a
        // loaded machine. The final revoke's commit keeps to the bound too: with a 5 s bound of its
        // own, the close took 6.5 s.
        try await withTimeout(.seconds(30), "close with the brokers gone") { await consumer.close() }
        #expect(ContinuousClock.now - start < .seconds(5), "close took \(ContinuousClock.now - start)")
        #expect(consumer.isClosed)
    }

    @Test("a consumer released without close() after its brokers are gone: the release returns at once (the destroy runs off the caller's thread)")
    func releaseWithoutClose() async throws {
        let holder = Locked<KafkaConsumer?>(try await memberOfVanishedCluster())
        let start = ContinuousClock.now
        // The last reference dropped on a thread of our own, so a destroy that blocks shows up as
        // this timeout rather than as a frozen cooperative pool.
        try await withTimeout(.seconds(30), "destroying the consumer") {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async {
                    holder.withLock { $0 = nil }
                    done.resume()
                }
            }
        }
        // librdkafka 2.0.2 can block in that destroy forever (see RdKafkaClient.deinit); here it
        // took 3–6 s before it moved to a thread of its own.
        #expect(ContinuousClock.now - start < .seconds(2), "the release took \(ContinuousClock.now - start)")
    }

    @Test("with the brokers up, close() still commits the stored offset: a new member resumes after it")
    func closeCommits() async throws {
        let cluster = try TestKafka.cluster(brokers: 1)
        let topic = TestKafka.uniqueTopic("close-commit")
        try cluster.createTopic(topic, partitions: 1)
        let producer = try TestKafka.producer(cluster)
        for value in ["a", "b"] {
            _ = try await producer.sendAndAwait(KafkaProducerMessage(topic: topic, key: "k", value: Array(value.utf8)))
        }
        let group = "g-\(topic)"
        let first = try TestKafka.groupConsumer(cluster, group: group, topics: [topic])
        let a = try await withTimeout(.seconds(20), "the first message") {
            for try await message in first.messages { return message }
            throw TimeoutError(what: "stream ended")
        }
        try first.storeOffset(a)
        await first.close()
        let second = try TestKafka.groupConsumer(cluster, group: group, topics: [topic], clientId: "test-consumer-2")
        let next = try await withTimeout(.seconds(20), "the message after the committed one") {
            for try await message in second.messages { return message }
            throw TimeoutError(what: "stream ended")
        }
        await second.close()
        withExtendedLifetime(cluster) {}  // its brokers up until both closed
        #expect(a.value == Array("a".utf8))
        #expect(next.value == Array("b".utf8), "the second member resumes after the first's committed offset")
    }
}
