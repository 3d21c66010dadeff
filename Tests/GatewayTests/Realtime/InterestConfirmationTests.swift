import Common
import Events
import Foundation
import HummingbirdTesting
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

    @Test(
        "through a running gateway: with the broker down, a native subscribe, a STOMP SUBSCRIBE's RECEIPT and a Socket.IO namespace CONNECT each wait the full 2 s for the interest's acknowledgement"
    )
    func protocolsWaitForTheBroker() async throws {
        let gatewayId = "gw-confirm-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: ["GATEWAY_ID": gatewayId]) { s in
            let a = try await s.user("에이")
            let b = try await s.user("비")
            let port = try #require(s.client.port)
            // Native: identified before its channel exists, so `subscribe` is its first follow of it.
            let (native, _) = try await NativeTestClient.connect(port, a)
            let stomp = StompTestClient(port: port)
            stomp.connect(token: a.token, userId: a.id)
            _ = try await stomp.waitFor(.connected)
            // One workspace and channel per protocol: each subscription is the gateway's first
            // interest in its conversation and workspace, so each announces.
            var channels: [String] = []
            for _ in 0..<3 {
                let (_, channel) = try await s.sharedChannel(a, b)
                try await s.waitForChatMember(a.id, channel: channel)
                channels.append(channel)
            }

            s.cluster.setAllBrokersDown()
            let clock = ContinuousClock()
            let start = clock.now
            native.send(#"{"op":"subscribe","d":{"conversation_id":"\#(channels[0])"}}"#)
            stomp.send("SUBSCRIBE\nid:s1\ndestination:/topic/group/\(channels[1])\nreceipt:r-1\n\n\0")
            let socketIO = try PythonSocketClient.start(.eio4, port: port, namespaces: [("/ws-channel-\(channels[2])", "channel")], token: a.token)
            // Each wait notes when its confirmation came (the clients are polled every few ms).
            async let nativeAt = Self.confirmed(clock) { try await native.waitForOp("subscribed")["conversation_id"] as? String }
            async let stompAt = Self.confirmed(clock) { try await stomp.waitFor(.receipt).headers["receipt-id"] }
            async let socketIOAt = Self.confirmed(clock) { try await socketIO.waitFor("connected")["namespace"] as? String }
            let confirmations = try await [("native", nativeAt), ("STOMP", stompAt), ("Socket.IO", socketIOAt)]
            s.cluster.setAllBrokersUp()
            #expect(confirmations.map(\.1.what) == [channels[0], "r-1", "/ws-channel-\(channels[2])"])
            // Each confirmation waited for the acknowledgement that could not come, up to its
            // limit (2 s): none came back sooner.
            for (name, confirmation) in confirmations {
                let waited = start.duration(to: confirmation.at)
                #expect(waited >= .milliseconds(1_950), "\(name) confirmed after \(waited) with the broker down")
            }
            try await socketIO.stop()
            await stomp.stop()
            await native.kill()
        }
    }

    /// Runs `wait` and notes when it returned.
    static func confirmed(
        _ clock: ContinuousClock, _ wait: @Sendable () async throws -> String?
    ) async throws -> (what: String?, at: ContinuousClock.Instant) {
        let what = try await wait()
        return (what, clock.now)
    }
}
