import Common
import Events
import Foundation
import Kafka
import SuiteTesting
import Synchronization
import Testing
import TestSupport

@testable import GatewayApp

/// A subscription is confirmed to its client (STOMP RECEIPT, Socket.IO CONNECT, native
/// `subscribed`) only once the gateway's interest in it reached the broker: what is sent after the
/// confirmation is then routed here as soon as chat-fanout reads `gateway.interest.v1`.
@Suite("Interest confirmation")
struct InterestConfirmationTests {
    @Test(
        "an announcement is in flight until its acknowledgement; only the first holder announces, and a broker that never answers delays the wait by its limit"
    )
    func inFlightUntilAcknowledged() async throws {
        let acknowledgements = Mutex<[@Sendable () -> Void]>([])
        let announced = Mutex<[(UUID, Bool)]>([])
        let interest = GatewayInterest { conversation, interested, delivered in
            announced.withLock { $0.append((conversation, interested)) }
            acknowledgements.withLock { $0.append(delivered) }
        }
        let conversation = UUID()
        interest.hold(conversation)
        interest.hold(conversation)
        #expect(announced.withLock { $0.count } == 1)
        #expect(interest.isAnnouncing(conversation))
        #expect(!interest.isAnnouncing(UUID()))

        let done = Mutex(false)
        let waiting = Task {
            await interest.announced(conversation, within: .seconds(30))
            done.withLock { $0 = true }
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(!done.withLock { $0 }, "the wait ended before the acknowledgement")
        let clock = ContinuousClock()
        let start = clock.now
        acknowledgements.withLock { $0[0]() }
        await waiting.value
        #expect(start.duration(to: clock.now) < .seconds(5))
        #expect(!interest.isAnnouncing(conversation))

        // Withdrawn and held again: a new announcement, in flight until acknowledged, and a wait
        // bounded by its limit when no acknowledgement comes.
        interest.release(conversation)
        interest.release(conversation)
        interest.hold(conversation)
        #expect(announced.withLock { $0.map(\.1) } == [true, false, true])
        #expect(interest.isAnnouncing(conversation))
        let before = clock.now
        await interest.announced(conversation, within: .milliseconds(300))
        #expect(before.duration(to: clock.now) >= .milliseconds(300))
        #expect(interest.isAnnouncing(conversation))
    }

    @Test("through the gateway's publisher: the wait ends once the interest record is on the broker, and a stopped broker bounds it")
    func publisherAcknowledges() async throws {
        let cluster = try TestKafka.catalogCluster(brokers: 1)
        let producer = try TestKafka.producer(cluster)
        let gatewayId = "gw-confirm-\(UUID().uuidString.prefix(8))"
        let publisher = GatewayEventPublisher(producer: producer, gatewayId: gatewayId, logger: TestKafka.logger)
        let running = Task { try await publisher.run() }
        defer { running.cancel() }
        let interest = GatewayInterest(gatewayId: gatewayId, events: publisher)

        let conversation = UUID()
        interest.hold(conversation)
        await interest.announced(conversation, within: .seconds(20))
        #expect(!interest.isAnnouncing(conversation))
        // The record the wait stood for is there to read.
        let consumer = try TestKafka.groupConsumer(cluster, group: "confirm-\(UUID().uuidString.prefix(8))", topics: [Topic.gatewayInterest.name])
        let found = try await withTimeout(.seconds(30), "the interest record") { () async throws -> Bool in
            for try await event in consumer.events {
                guard case .message(let message) = event, let value = message.value else { continue }
                let change = try EventCoding.decode(GatewayEvents.InterestChanged.self, from: value).data
                if change.gatewayId == gatewayId && change.conversationId == conversation { return change.interested }
            }
            return false
        }
        #expect(found)
        await consumer.close()

        // With the broker down, the acknowledgement does not come in time: the wait ends at its limit.
        cluster.setAllBrokersDown()
        let other = UUID()
        interest.hold(other)
        let clock = ContinuousClock()
        let before = clock.now
        await interest.announced(other, within: .milliseconds(500))
        #expect(before.duration(to: clock.now) >= .milliseconds(500))
        #expect(interest.isAnnouncing(other))
        cluster.setAllBrokersUp()
        await interest.announced(other, within: .seconds(30))
        #expect(!interest.isAnnouncing(other))
    }
}
