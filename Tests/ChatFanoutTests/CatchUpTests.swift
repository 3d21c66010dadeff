@testable import ChatFanoutApp
import Common
import Foundation
import Kafka
import SuiteTesting
import Testing
import TestSupport

/// The two halves of "catch up before consuming", each checked on its own: the interest reader
/// reports caught up only with the whole topic applied, and the fan-out consumer does not read a
/// message before that.
extension FanoutServiceTests {
    @Test("the interest reader reports caught up only once every record published before it started is applied, then keeps following")
    func readerCatchesUpThenFollows() async throws {
        let harness = try FanoutHarness()
        let conversations = (0..<3_000).map { _ in UUID() }
        try await harness.setInterests(conversations.map { ("gateway-x", $0, true) })
        let table = InterestTable()
        let client = KafkaClientConfiguration(bootstrapServers: harness.cluster.bootstrapServers, clientId: "test-interest")
        let reader = try InterestReader(client: client, fetchWaitMilliseconds: 5, table: table, logger: TestKafka.logger)
        let running = Task { try await reader.run() }

        let entriesWhenCaughtUp = try await withTimeout(.seconds(30), "interest caught up") {
            while !reader.isCaughtUp { try await Task.sleep(for: .milliseconds(1)) }
            return table.entryCount
        }
        #expect(entriesWhenCaughtUp == conversations.count)

        try await harness.setInterest("gateway-x", conversations[0], false)
        try await eventually("withdrawal applied", timeout: .seconds(20)) { table.entryCount == conversations.count - 1 }
        running.cancel()
        try await running.value
    }

    @Test("the fan-out consumer reads no message until the interest table is loaded")
    func consumerWaitsForInterest() async throws {
        let harness = try FanoutHarness()
        let gateway = try SimulatedGateway.start("gateway-wait", on: harness)
        let conversation = UUID()
        let table = InterestTable()
        table.apply(gatewayId: gateway.id, conversationId: conversation, interested: true)
        let sent = try await harness.sendMessages([conversation])
        let loaded = Locked(false)
        let client = KafkaClientConfiguration(bootstrapServers: harness.cluster.bootstrapServers, clientId: "test-fanout")
        let producer = try KafkaBlockingProducer(configuration: harness.producer.configuration, logger: TestKafka.logger)
        let consumer = FanoutConsumer(
            configuration: FanoutConsumer.configuration(client: client, fetchWaitMilliseconds: 5, batchSize: 100), producer: producer,
            table: table, logger: TestKafka.logger
        ) { loaded.value }
        let running = Task { try await consumer.run() }

        // Long enough for a consumer that did not wait to join the group and deliver.
        try await Task.sleep(for: .seconds(4))
        #expect(gateway.eventIds.isEmpty)
        loaded.withLock { $0 = true }
        try await gateway.waitFor([sent[0].id], timeout: .seconds(30))
        #expect(gateway.eventIds == [sent[0].id])

        running.cancel()
        try await running.value
        await gateway.stop()
    }
}
