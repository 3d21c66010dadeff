import Foundation
import SuiteTesting
import Testing

@Suite("chat-fanout scales out and loses nothing when a replica leaves", .serialized)
struct FanoutScaleOutTests {
    @Test("3 replicas, 2 gateways, 1 000 messages over 50 conversations, one replica stopped mid-run: each gateway gets every message of its conversations, exactly once after de-duplication, in order")
    func scaleOutWithReplicaStopped() async throws {
        let harness = try FanoutHarness()
        let a = try SimulatedGateway.start("gateway-1", on: harness)
        let b = try SimulatedGateway.start("gateway-2", on: harness)
        let conversations = (0..<50).map { _ in UUID() }
        // a serves conversations 0..<30, b 20..<50: ten conversations are on both.
        for conversation in conversations[0..<30] { try await harness.setInterest(a.id, conversation, true) }
        for conversation in conversations[20..<50] { try await harness.setInterest(b.id, conversation, true) }

        var replicas = [
            try await harness.startReplica("fanout-1"), try await harness.startReplica("fanout-2"), try await harness.startReplica("fanout-3"),
        ]

        // 1 000 messages in 10 waves, keyed by conversation (the partitioner spreads them over
        // all 12 partitions, so every replica owns some); the second replica is shut down while
        // the waves flow, so its partitions move to the others mid-stream.
        var sent: [SentMessage] = []
        var stopping: Task<Void, any Error>?
        for wave in 0..<10 {
            sent += try await harness.sendMessages((0..<100).map { conversations[(wave * 100 + $0) % conversations.count] })
            if wave == 3 {
                let leaving = replicas.remove(at: 1)
                stopping = Task { try await leaving.stop() }
            }
            try await Task.sleep(for: .milliseconds(150))
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
