import Events
import Foundation
import Kafka
import SuiteTesting
import Testing

/// All chat records of a test go into one partition of `chat.message.v1` (the key still names the
/// conversation; the fan-out only reads the key). One partition is one ordered stream, so when a
/// gateway receives the last record, every record before it was processed — and any delivery
/// wrongly made for an earlier one would have arrived before it. That makes "no delivery" exact.
private let streamPartition: Int32 = 0

/// One serialized suite: each test runs its own cluster and replicas, and two at once would
/// compete for the same cores.
@Suite("chat-fanout against the embedded broker", .serialized)
struct FanoutServiceTests {
    @Test(
        "interest on → one delivery per interested gateway, in its partition, keyed by its id, value and headers unchanged; interest off or an unknown conversation → none (messages fetched by the replica's poll thread and deliveries written by the suite's own writer, on uncompressed records; or both by librdkafka, on compressed ones)",
        arguments: ["native", "librdkafka"]
    )
    func routing(writer: String) async throws {
        let harness = try FanoutHarness(compression: writer == "native" ? "none" : "lz4")
        let a = try SimulatedGateway.start("gateway-a", on: harness)
        let b = try SimulatedGateway.start("gateway-b", on: harness)
        let (c1, c2, unknown) = (UUID(), UUID(), UUID())
        try await harness.setInterest(a.id, c1, true)
        try await harness.setInterest(b.id, c1, true)
        try await harness.setInterest(a.id, c2, true)
        let replica = try await harness.startReplica("fanout-routing", writer: writer, reader: writer)

        let first = try await harness.sendMessages([c1, c2, unknown, c1], partition: streamPartition)
        try await a.waitFor([first[3].id])
        try await b.waitFor([first[3].id])
        #expect(a.eventIds == [first[0].id, first[1].id, first[3].id])
        #expect(b.eventIds == [first[0].id, first[3].id])
        let sentById = Dictionary(uniqueKeysWithValues: first.map { ($0.id, $0) })
        for (gateway, delivery) in a.deliveries.map({ (a.id, $0) }) + b.deliveries.map({ (b.id, $0) }) {
            #expect(delivery.key == gateway)
            #expect(delivery.partition == GatewayEvents.deliveryPartition(for: gateway))
            #expect(delivery.value == sentById[delivery.eventId]?.value)
            #expect(delivery.headers == sentById[delivery.eventId]?.headers)
        }

        // Interest withdrawn while the replica runs: b leaves c1, a leaves c2.
        let bLeft = try await harness.setInterest(b.id, c1, false)
        let aLeft = try await harness.setInterest(a.id, c2, false)
        // A barrier conversation both gateways join, published after each withdrawal in that
        // withdrawal's partition: once a message of every barrier reaches both gateways, the
        // replica has applied the withdrawals (the table applies each partition in order).
        var barriers: [UUID] = []
        for partition in Set([bLeft, aLeft]) {
            let barrier = UUID()
            barriers.append(barrier)
            try await harness.setInterest(a.id, barrier, true, partition: partition)
            try await harness.setInterest(b.id, barrier, true, partition: partition)
        }
        for barrier in barriers {
            try await eventually("barrier applied", timeout: .seconds(30)) {
                let probe = try await harness.sendMessages([barrier], partition: streamPartition)[0]
                try await Task.sleep(for: .milliseconds(300))
                return a.eventIds.contains(probe.id) && b.eventIds.contains(probe.id)
            }
        }

        let second = try await harness.sendMessages([c1, c2, unknown, barriers[0]], partition: streamPartition)
        try await a.waitFor([second[3].id])
        try await b.waitFor([second[3].id])
        let aGot = Set(a.eventIds)
        let bGot = Set(b.eventIds)
        #expect(aGot.contains(second[0].id), "a is still interested in c1")
        #expect(!aGot.contains(second[1].id), "a withdrew from c2")
        #expect(!bGot.contains(second[0].id), "b withdrew from c1")
        #expect(!bGot.contains(second[1].id) && !bGot.contains(second[2].id))
        #expect(!aGot.contains(second[2].id), "nobody is interested in an unknown conversation")

        try await replica.stop()
        await a.stop()
        await b.stop()
    }

    @Test(
        "deliveries the broker refuses are produced again, with backoff, until acknowledged: none lost, each conversation's order kept",
        .enabled(if: EmbeddedKafkaEngine.fromEnvironment == .swift, "librdkafka's mock cannot fail one topic's produce requests")
    )
    func refusedDeliveriesAreRetried() async throws {
        let harness = try FanoutHarness()
        let gateway = try SimulatedGateway.start("gateway-retry", on: harness)
        let conversations = [UUID(), UUID()]
        for conversation in conversations { try await harness.setInterest(gateway.id, conversation, true) }
        let replica = try await harness.startReplica("fanout-retry")
        // Routing works before the faults.
        let warmUp = try await harness.sendMessages([conversations[0]], partition: streamPartition)
        try await gateway.waitFor(warmUp.map(\.id))

        // The next three produce requests to gateway.delivery.v1 fail with MSG_SIZE_TOO_LARGE, an
        // error librdkafka does not retry by itself: each delivery report is a failure, which
        // chat-fanout must produce again. chat.message.v1 (the test's own sends) is served.
        try harness.cluster.failNextProduceRequests(to: Topic.gatewayDelivery.name, count: 3, code: 10)
        var sent: [SentMessage] = []
        for round in 0..<10 {
            sent += try await harness.sendMessages([conversations[round % 2]], partition: streamPartition)
            try await Task.sleep(for: .milliseconds(20))
        }
        try await gateway.waitFor(sent.map(\.id), timeout: .seconds(60))
        #expect(harness.cluster.pendingProduceFaults == 0, "every injected fault was met by a delivery")
        // First arrivals per conversation in the order chat published them.
        var seen = Set<UUID>()
        let firstArrivals = gateway.eventIds.filter { seen.insert($0).inserted && $0 != warmUp[0].id }
        for conversation in conversations {
            let expected = sent.filter { $0.conversation == conversation }.map(\.id)
            let arrived = firstArrivals.filter { id in expected.contains(id) }
            #expect(arrived == expected, "\(conversation): per-conversation order kept through the retries")
        }
        try await replica.stop()
        await gateway.stop()
    }

    @Test("a replica started after the interest was published knows all of it before it reads its first message")
    func catchUpBeforeConsuming() async throws {
        let harness = try FanoutHarness()
        let gateway = try SimulatedGateway.start("gateway-late", on: harness)
        // 300 conversations spread over every interest partition; the first 100 joined and left.
        let conversations = (0..<300).map { _ in UUID() }
        for conversation in conversations {
            try await harness.setInterest(gateway.id, conversation, true)
        }
        for conversation in conversations.prefix(100) {
            try await harness.setInterest(gateway.id, conversation, false)
        }
        // The messages wait in the topic, so the replica's group consumer reads them the moment
        // it joins: each one is delivered only if the table was complete by then.
        let sent = try await harness.sendMessages(conversations, partition: streamPartition)
        let replica = try await harness.startReplica("fanout-late")

        let expected = sent.dropFirst(100).map(\.id)
        try await gateway.waitFor(expected)
        #expect(gateway.eventIds == expected, "every message of a joined conversation once, in order; none of the left ones")

        try await replica.stop()
        await gateway.stop()
    }

    @Test(
        "3 replicas, 2 gateways, 1 000 messages over 50 conversations, one replica stopped mid-run: each gateway gets every message of its conversations, exactly once after de-duplication, in order (the replicas' poll threads fetch them, lz4 or uncompressed; gzip: librdkafka reads them after the first batch)",
        arguments: ["lz4", "none", "gzip"]
    )
    func scaleOutWithReplicaStopped(compression: String) async throws {
        let harness = try FanoutHarness(compression: compression)
        let a = try SimulatedGateway.start("gateway-1", on: harness)
        let b = try SimulatedGateway.start("gateway-2", on: harness)
        let conversations = (0..<50).map { _ in UUID() }
        // a serves conversations 0..<30, b 20..<50: ten conversations are on both.
        for conversation in conversations[0..<30] { try await harness.setInterest(a.id, conversation, true) }
        for conversation in conversations[20..<50] { try await harness.setInterest(b.id, conversation, true) }

        var replicas: [RunningService] = []
        for name in ["fanout-1", "fanout-2", "fanout-3"] { replicas.append(try await harness.startReplica(name)) }

        // Let the group settle so each replica owns some of the 12 partitions.
        try await Task.sleep(for: .seconds(2))

        // 1 000 messages in 20 waves, keyed by conversation (the partitioner spreads them over
        // all 12 partitions); the second replica is shut down while the waves flow, so its
        // partitions move to the others mid-stream.
        var sent: [SentMessage] = []
        var stopping: Task<Void, any Error>?
        for wave in 0..<20 {
            sent += try await harness.sendMessages((0..<50).map { conversations[(wave * 50 + $0) % conversations.count] })
            if wave == 6 {
                let leaving = replicas.remove(at: 1)
                stopping = Task { try await leaving.stop() }
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        try await stopping?.value

        let aConversations = Set(conversations[0..<30])
        let bConversations = Set(conversations[20..<50])
        let expectedA = sent.filter { aConversations.contains($0.conversation) }
        let expectedB = sent.filter { bConversations.contains($0.conversation) }
        #expect(expectedA.count == 600 && expectedB.count == 600)
        try await a.waitFor(expectedA.map(\.id), timeout: .seconds(120))
        try await b.waitFor(expectedB.map(\.id), timeout: .seconds(120))

        for (gateway, expected) in [(a, expectedA), (b, expectedB)] {
            let received = gateway.eventIds
            #expect(Set(received) == Set(expected.map(\.id)), "\(gateway.id): exactly its conversations' messages after de-duplication")
            // First arrivals per conversation in the order chat published them.
            var firstArrivals: [UUID] = []
            var seen = Set<UUID>()
            for id in received where seen.insert(id).inserted { firstArrivals.append(id) }
            let conversationOf = Dictionary(uniqueKeysWithValues: expected.map { ($0.id, $0.conversation) })
            let arrivedOrder = Dictionary(grouping: firstArrivals) { conversationOf[$0] }
            let sentOrder = Dictionary(grouping: expected.map(\.id)) { conversationOf[$0] }
            #expect(arrivedOrder == sentOrder, "\(gateway.id): per-conversation order kept")
        }

        for replica in replicas { try await replica.stop() }
        await a.stop()
        await b.stop()
    }
}
