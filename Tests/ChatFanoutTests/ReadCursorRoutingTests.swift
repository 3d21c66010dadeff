import Events
import Foundation
import Kafka
import SuiteTesting
import Testing

/// A `chat.read.v1` record the test produced: keyed by the user, as `chat`'s relay does.
struct SentReadCursor: Sendable {
    let id: UUID
    let value: [UInt8]
    let headers: [KafkaHeader]
    let record: KafkaProducerMessage

    init(user: UserID, conversation: ChatEvents.Conversation, partition: Int32?) throws {
        let event = CloudEvent(
            source: "test-chat",
            data: ChatEvents.ReadCursorMoved(userId: user, workspaceId: .generate(), conversation: conversation, readAt: Date()))
        id = event.id
        value = try EventCoding.encode(event)
        headers = [
            KafkaHeader(key: CloudEventKafkaHeader.id, string: event.id.lowercased),
            KafkaHeader(key: CloudEventKafkaHeader.type, string: event.type),
        ]
        record = KafkaProducerMessage(topic: Topic.chatRead.name, key: event.subject, value: value, headers: headers, partition: partition)
    }
}

extension FanoutHarness {
    /// Publishes one `chat.read.v1` record per conversation, in order, all into `partition` (one
    /// user's records share a partition: the key is the user).
    func sendReadCursors(of user: UserID, _ conversations: [ChatEvents.Conversation], partition: Int32) async throws -> [SentReadCursor] {
        let sent = try conversations.map { try SentReadCursor(user: user, conversation: $0, partition: partition) }
        for result in await producer.sendAllAndAwait(sent.map(\.record)) { _ = try result.get() }
        return sent
    }
}

extension FanoutServiceTests {
    @Test(
        "a read cursor (chat.read.v1, keyed by the user) reaches the gateways following its conversation — unchanged, keyed by the gateway, in its partition — and no other; its offsets are stored"
    )
    func readCursorRouting() async throws {
        let harness = try FanoutHarness()
        let a = try SimulatedGateway.start("gateway-read-a", on: harness)
        let b = try SimulatedGateway.start("gateway-read-b", on: harness)
        let (channel, room, shared, unknown) = (UUID(), UUID(), UUID(), UUID())
        try await harness.setInterest(a.id, channel, true)
        try await harness.setInterest(b.id, room, true)
        try await harness.setInterest(a.id, shared, true)
        try await harness.setInterest(b.id, shared, true)
        let replica = try await harness.startReplica("fanout-read")

        // One user's records, in one partition: the last one (a conversation both gateways follow)
        // is processed after the others, and any delivery wrongly made for an earlier record would
        // have reached the gateway's partition before it.
        let user = UserID.generate()
        let sent = try await harness.sendReadCursors(
            of: user, [.channel(ChannelID(channel)), .channel(ChannelID(unknown)), .room(RoomID(room), participants: [user]), .channel(ChannelID(shared))],
            partition: 0)
        try await a.waitFor([sent[3].id])
        try await b.waitFor([sent[3].id])
        #expect(a.eventIds == [sent[0].id, sent[3].id])
        #expect(b.eventIds == [sent[2].id, sent[3].id])
        let sentById = Dictionary(uniqueKeysWithValues: sent.map { ($0.id, $0) })
        for (gateway, delivery) in a.deliveries.map({ (a.id, $0) }) + b.deliveries.map({ (b.id, $0) }) {
            #expect(delivery.key == gateway)
            #expect(delivery.partition == GatewayEvents.deliveryPartition(for: gateway))
            #expect(delivery.value == sentById[delivery.eventId]?.value)
            #expect(delivery.headers == sentById[delivery.eventId]?.headers)
        }

        // The replica stored the topic's offsets: a successor in the group starts after them and
        // delivers only what is new.
        try await replica.stop()
        let successor = try await harness.startReplica("fanout-read-2")
        let next = try await harness.sendReadCursors(of: user, [.channel(ChannelID(shared))], partition: 0)
        try await a.waitFor([next[0].id])
        try await b.waitFor([next[0].id])
        #expect(a.eventIds == [sent[0].id, sent[3].id, next[0].id])
        #expect(b.eventIds == [sent[2].id, sent[3].id, next[0].id])

        try await successor.stop()
        await a.stop()
        await b.stop()
    }
}
