import CRdKafka
import Common
import Foundation
@testable import Kafka
import NIOCore
import NIOPosix
import Testing
import TestSupport

/// A consumer's catch-up (what the services' readiness waits for): it has its assignment and
/// processed what its partitions held when assigned.
@Suite("Kafka consumer catch-up", .serialized)
struct CatchUpTests {
    @Test("a group member is caught up only after it processed the backlog; the registry lists it until then")
    func groupMemberWithBacklog() async throws {
        let cluster = try TestKafka.cluster(brokers: 1)
        let topic = TestKafka.uniqueTopic()
        try cluster.createTopic(topic, partitions: 3)
        let producer = try TestKafka.producer(cluster)
        let backlog = 30
        for result in await producer.sendAllAndAwait((0..<backlog).map { KafkaProducerMessage(topic: topic, key: "k\($0)", value: [1]) }) {
            _ = try result.get()
        }
        let readiness = KafkaReadiness()
        let consumer = try TestKafka.groupConsumer(cluster, group: "g-\(topic)", topics: [topic], clientId: "catch-up-test") {
            $0.client.readiness = readiness
        }
        #expect(!consumer.isCaughtUp)
        #expect(readiness.pending == ["catch-up-test: waiting for assignment"])

        let processed = Locked(0)
        let reader = Task {
            for try await _ in consumer.messages {
                // The record in hand is not processed yet, so some of the backlog always is behind.
                #expect(!consumer.isCaughtUp)
                processed.withLock { $0 += 1 }
            }
        }
        try await Self.waitUntil("caught up") { consumer.isCaughtUp }
        #expect(processed.value == backlog)
        #expect(readiness.pending.isEmpty)

        await consumer.close()
        reader.cancel()
        #expect(!consumer.isCaughtUp, "a closed consumer is not ready")
        #expect(readiness.pending == ["catch-up-test: closed"])
    }

    @Test("nothing to read: a group member of an empty topic and a reader from the end catch up without a record")
    func nothingToRead() async throws {
        let (cluster, empty, busy) = try await Self.emptyAndBusy()

        let readiness = KafkaReadiness()
        let member = try TestKafka.groupConsumer(cluster, group: "g-\(empty)", topics: [empty], clientId: "member") { $0.client.readiness = readiness }
        var configuration = KafkaConsumerConfiguration(
            client: KafkaClientConfiguration(bootstrapServers: cluster.bootstrapServers, clientId: "from-end"),
            mode: .assignment([TopicPartitionOffset(topic: busy, partition: 0, offset: .end)])
        )
        configuration.client.readiness = readiness
        let reader = try KafkaConsumer(configuration: configuration, logger: TestKafka.logger)
        let received = Locked(0)
        let tasks = [member, reader].map { consumer in
            Task {
                for try await _ in consumer.messages { received.withLock { $0 += 1 } }
            }
        }
        try await Self.waitUntil("both caught up") { readiness.pending.isEmpty }
        #expect(member.isCaughtUp && reader.isCaughtUp)
        #expect(received.value == 0)
        await member.close()
        await reader.close()
        tasks.forEach { $0.cancel() }
    }

    /// The services' idle fetches wait long at the broker (`kafka.fetch-wait-ms`); a consumer at
    /// its partitions' ends must not wait one of them out before it counts as caught up.
    @Test(
        "with a 10 s fetch wait, consumers with nothing to read catch up at once: librdkafka's member and reader from the end, the own fetch's member, the partition reader",
        arguments: EmbeddedKafkaEngine.allCases)
    func longFetchWait(engine: EmbeddedKafkaEngine) async throws {
        let (cluster, empty, busy) = try await Self.emptyAndBusy(engine: engine)

        let started = ContinuousClock.now
        let readiness = KafkaReadiness()
        func long(_ configuration: inout KafkaConsumerConfiguration) {
            configuration.fetchWaitMaxMilliseconds = 10_000
            configuration.client.readiness = readiness
        }
        let member = try TestKafka.groupConsumer(cluster, group: "g-\(empty)", topics: [empty], clientId: "member", configure: long)
        let fetching = try TestKafka.groupConsumer(cluster, group: "g2-\(empty)", topics: [empty], clientId: "fetching", configure: long)
        var fromEnd = KafkaConsumerConfiguration(
            client: KafkaClientConfiguration(bootstrapServers: cluster.bootstrapServers, clientId: "from-end"),
            mode: .assignment([TopicPartitionOffset(topic: busy, partition: 0, offset: .end)]))
        long(&fromEnd)
        let reader = try KafkaConsumer(configuration: fromEnd, logger: TestKafka.logger)
        fromEnd.client.clientId = "partition-reader"
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let partitionReader = try KafkaPartitionReader(configuration: fromEnd, eventLoop: loop, logger: TestKafka.logger)
        let tasks = [
            Task { for try await _ in member.messages {} },
            Task { for try await _ in reader.messages {} },
            Task { try await fetching.consumeFetchingOnPollThread { _, _ in } },
            Task { try await partitionReader.run { _ in } },
        ]
        try await Self.waitUntil("all caught up") { readiness.pending.isEmpty }
        let elapsed = ContinuousClock.now - started
        #expect(elapsed < .seconds(5), "caught up after \(elapsed), not after a 10 s long poll")
        tasks.forEach { $0.cancel() }
        for task in tasks { _ = await task.result }
        for consumer in [member, fetching, reader] { await consumer.close() }
    }

    /// A restarted service's librdkafka group member (the event exporter) usually finds its group
    /// committed up to the end of partitions that hold records.
    @Test(
        "with a 10 s fetch wait, a librdkafka group member whose group committed everything catches up at once",
        arguments: EmbeddedKafkaEngine.allCases)
    func committedToTheEnd(engine: EmbeddedKafkaEngine) async throws {
        let (cluster, _, busy) = try await Self.emptyAndBusy(engine: engine)
        let group = "g-\(busy)"
        let first = try TestKafka.groupConsumer(cluster, group: group, topics: [busy], clientId: "first")
        let record = try await withTimeout(.seconds(20), "the record") {
            for try await message in first.messages { return message }
            throw TimeoutError(what: "stream ended")
        }
        try first.storeOffset(record)
        await first.close()  // commits offset 1, the partition's end

        let readiness = KafkaReadiness()
        let again = try TestKafka.groupConsumer(cluster, group: group, topics: [busy], clientId: "again") {
            $0.fetchWaitMaxMilliseconds = 10_000
            $0.client.readiness = readiness
        }
        let received = Locked(0)
        let task = Task { for try await _ in again.messages { received.withLock { $0 += 1 } } }
        // Timed from the assignment: the mock cluster's group takes seconds to take a new member.
        try await Self.waitUntil("assigned") { again.catchUpSummary != "waiting for assignment" }
        let assigned = ContinuousClock.now
        try await Self.waitUntil("caught up") { readiness.pending.isEmpty }
        let elapsed = ContinuousClock.now - assigned
        #expect(elapsed < .seconds(5), "caught up \(elapsed) after the assignment, not after a 10 s long poll")
        #expect(received.value == 0, "nothing after the commit")
        task.cancel()
        _ = await task.result
        await again.close()
    }

    /// librdkafka's consumers ask the broker for a partition's end on the poll loop's queue, where
    /// `close()` runs too; a broker that never answers must not hold the loop a second per partition.
    @Test("a broker that never answers: a reader of ten partitions still closes within seconds (its end-offset questions take at most 1 s per turn)")
    func silentBrokerDoesNotHoldClose() async throws {
        let (peer, port) = try await startPeer { _ in }  // accepts, reads, never answers
        defer { peer.close(promise: nil) }
        let topic = TestKafka.uniqueTopic()
        var configuration = KafkaConsumerConfiguration(
            client: KafkaClientConfiguration(bootstrapServers: "127.0.0.1:\(port)", clientId: "silent"),
            mode: .assignment((0..<10).map { TopicPartitionOffset(topic: topic, partition: Int32($0), offset: .beginning) }))
        configuration.closeTimeout = .seconds(1)
        let reader = try KafkaConsumer(configuration: configuration, logger: TestKafka.logger)
        let task = Task { for try await _ in reader.messages {} }
        try await Task.sleep(for: .milliseconds(300))  // the loop is asking by now
        let start = ContinuousClock.now
        try await withTimeout(.seconds(30), "close with a silent broker") { await reader.close() }
        let elapsed = ContinuousClock.now - start
        // 1 s for the turn in progress, 1 s for the close, slack for a loaded machine; asking each
        // partition for up to 1 s took 10 s here.
        #expect(elapsed < .seconds(5), "close took \(elapsed)")
        #expect(!reader.isCaughtUp)
        task.cancel()
        _ = await task.result
    }

    /// A group member's rebalance callback asks where new partitions start and end before it assigns
    /// them (`AssignedBounds`); the callback runs on the poll loop, so both questions together must
    /// hold it no longer than their budget, however many partitions and whoever does not answer.
    @Test("a coordinator and leaders that never answer: the assignment's two questions take their budget together, not each")
    func silentBoundsKeepTheirBudget() async throws {
        let (peer, port) = try await startPeer { _ in }  // accepts, reads, never answers
        defer { peer.close(promise: nil) }
        let client = try RdKafkaClient(
            kind: .consumer, properties: ["bootstrap.servers": "127.0.0.1:\(port)", "group.id": "silent-bounds"], logger: TestKafka.logger)
        let topic = TestKafka.uniqueTopic()
        let partitions = try #require(rd_kafka_topic_partition_list_new(10))
        defer { rd_kafka_topic_partition_list_destroy(partitions) }
        for partition in 0..<Int32(10) { _ = rd_kafka_topic_partition_list_add(partitions, topic, partition) }
        let budget = Duration.seconds(2)
        let start = ContinuousClock.now
        let bounds = AssignedBounds.ask(client.pointer, partitions, within: budget)
        let elapsed = ContinuousClock.now - start
        #expect(bounds.starts.isEmpty && bounds.ends.isEmpty, "nothing known from a silent peer")
        // It did wait (the peer is silent, not refusing), and the second question got only what the
        // first left: the budget each would take 4 s.
        #expect(elapsed >= .milliseconds(1_500), "asked for \(elapsed): the questions did not wait for the peer")
        #expect(elapsed < .milliseconds(3_200), "asked for \(elapsed) with a budget of \(budget)")
    }

    @Test("an announced consumer counts before it exists; a hold until it is released")
    func announcementsAndHolds() throws {
        let readiness = KafkaReadiness()
        var configuration = KafkaConsumerConfiguration(
            client: KafkaClientConfiguration(bootstrapServers: "127.0.0.1:1", clientId: "later"), mode: .group(id: "g", topics: ["t"]))
        configuration.client.readiness = readiness
        configuration.announceForReadiness()
        let hold = readiness.hold("building")
        #expect(readiness.pending == ["building: starting", "later: not started"])
        hold.release()
        #expect(readiness.pending == ["later: not started"])
        let consumer = try KafkaConsumer(configuration: configuration, logger: TestKafka.logger)
        #expect(readiness.pending == ["later: waiting for assignment"])
        withExtendedLifetime(consumer) {}
    }

    /// A one-broker cluster with an empty topic of two partitions and a topic of one partition
    /// holding one record.
    static func emptyAndBusy(engine: EmbeddedKafkaEngine = .fromEnvironment) async throws -> (EmbeddedKafkaCluster, empty: String, busy: String) {
        let cluster = try TestKafka.cluster(brokers: 1, engine: engine)
        let empty = TestKafka.uniqueTopic()
        let busy = TestKafka.uniqueTopic()
        try cluster.createTopic(empty, partitions: 2)
        try cluster.createTopic(busy, partitions: 1)
        let producer = try TestKafka.producer(cluster)
        _ = try await producer.sendAndAwait(KafkaProducerMessage(topic: busy, key: "k", value: [1]))
        return (cluster, empty, busy)
    }

    static func waitUntil(_ what: String, timeout: Duration = .seconds(30), _ condition: @escaping @Sendable () -> Bool) async throws {
        try await withTimeout(timeout, what) {
            while !condition() { try await Task.sleep(for: .milliseconds(20)) }
        }
    }
}
