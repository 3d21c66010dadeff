import AsyncHTTPClient
import ChatFanoutApp
import Common
import Configuration
import Foundation
import HTTPTypes
import HummingbirdTesting
import Kafka
import NIOCore
import ServiceKit
import SuiteTesting
import Testing
import TestSupport

/// The whole real-time path with no stand-in: REST post → chat → `chat.message.v1` → the real
/// `chat-fanout` (two replicas, one stopped mid-run) → `gateway.delivery.v1` → gateway →
/// python-socketio clients.
@Suite("Real-time path with the real chat-fanout", .serialized)
struct RealFanoutTests {
    /// The gateway timed each delivery it read (age since chat-fanout produced it) and each drain
    /// that wrote deliveries to sockets (its wait for the loop, its length).
    static func expectDeliveryPathTimed(_ s: Stack, deliveries: Int) async throws {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(s.gatewayAdminPort)/metrics"), timeout: .seconds(5))
        let metrics = MetricsExposition(String(buffer: try await response.body.collect(upTo: 16 << 20)))
        let read = try #require(metrics.value("gateway_delivery_age_at_read_seconds_count"), "\(metrics.text.prefix(3000))")
        #expect(read >= Double(deliveries))
        // Produced and read on one machine within the test: none is older than 10 s, or negative.
        #expect(metrics.value(#"gateway_delivery_age_at_read_seconds_bucket{le="10.0"}"#) == read, "\(metrics.text.prefix(3000))")
        #expect((metrics.value("gateway_delivery_age_at_read_seconds_sum") ?? -1) >= 0)
        for drains in ["gateway_write_drain_seconds_count", "gateway_write_drain_wait_seconds_count"] {
            #expect((metrics.value(drains) ?? 0) >= 1, "\(drains)")
        }
    }

    static func startReplica(_ s: Stack, _ name: String) async throws -> RunningService {
        try await s.startFanoutReplica(name)
    }

    @Test("40 channel messages and 10 DMs posted over REST reach EIO4 and EIO3 clients exactly once each through two fan-out replicas, one stopped mid-run")
    func wholePath() async throws {
        Observability.bootstrapMetrics()  // before the gateway makes its timers
        let gatewayId = "gw-e2e-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: ["GATEWAY_ID": gatewayId]) { s in
            let owner = try await s.user("주인")
            let member = try await s.user("멤버")
            let (wid, cid) = try await s.sharedChannel(owner, member)
            let room = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/dms", owner, json: #"{"opponent_id":"\#(member.id)"}"#)), "room_id")
            let first = try await Self.startReplica(s, "fanout-a")
            let second = try await Self.startReplica(s, "fanout-b")
            let port = try #require(s.client.port)
            let modern = try PythonSocketClient.start(.eio4, port: port, namespaces: [("/ws-channel-\(cid)", "channel"), ("/ws-dm-\(room)", "dm")])
            let legacy = try PythonSocketClient.start(.eio3, port: port, namespaces: [("/ws-channel-\(cid)", "channel")], transports: "websocket")
            try await modern.waitFor("ready")
            try await legacy.waitFor("ready")
            try await eventually("both clients joined") { modern.lines("connected").count >= 2 && legacy.lines("connected").count >= 1 }
            // The interest announcement reaches the replicas through Kafka: a message sent before
            // they applied it would not be fanned out to this gateway (documented), so wait until
            // one probe message arrives before counting.
            try await s.probeUntilDelivered(
                "the fan-out knows the gateway's interest", to: "/v1/workspaces/\(wid)/channels/\(cid)/chats", as: owner, pause: .milliseconds(200)
            ) {
                !modern.events("channel").isEmpty && !legacy.events("channel").isEmpty
            }

            var channelIds: [String] = []
            var dmIds: [String] = []
            for i in 0..<40 {
                if i == 20 { try await first.stop() }  // one replica leaves mid-run; the group rebalances
                let author = i % 2 == 0 ? owner : member
                let chat = try #require(
                    jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(cid)/chats", author, json: #"{"content":"메시지 \#(i)"}"#)))
                channelIds.append(try #require(chat["chat_id"] as? String))
                if i % 4 == 0 {
                    let dm = try #require(
                        jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/dms/\(room)/chats", member, json: #"{"content":"디엠 \#(i)"}"#)))
                    dmIds.append(try #require(dm["dm_id"] as? String))
                }
            }
            func received(_ client: PythonSocketClient, _ event: String, _ key: String) -> [String] {
                client.events(event).compactMap { $0[key] as? String }
            }
            try await eventually("every message at both clients", timeout: .seconds(30)) {
                Set(channelIds).isSubset(of: Set(received(modern, "channel", "chat_id")))
                    && Set(channelIds).isSubset(of: Set(received(legacy, "channel", "chat_id")))
                    && Set(dmIds).isSubset(of: Set(received(modern, "dm", "dm_id")))
            }
            try await Task.sleep(for: .seconds(1))  // a late duplicate would show now
            try await Self.expectDeliveryPathTimed(s, deliveries: channelIds.count + dmIds.count)
            for (client, event, key) in [(modern, "channel", "chat_id"), (legacy, "channel", "chat_id"), (modern, "dm", "dm_id")] {
                let ids = received(client, event, key)
                #expect(ids.count == Set(ids).count, "a \(event) arrived twice at one socket")
            }
            // In order per conversation, as sent (the client prints events on its reading thread).
            #expect(received(modern, "channel", "chat_id").filter(channelIds.contains) == channelIds)
            #expect(received(legacy, "channel", "chat_id").filter(channelIds.contains) == channelIds)
            #expect(received(modern, "dm", "dm_id") == dmIds)
            try await modern.stop()
            try await legacy.stop()
            try await second.stop()
        }
    }
    /// `kafka.delivery-fetch-wait-ms` reaches the real-time path's two consumers. The embedded
    /// broker holds a fetch that finds nothing for the whole wait, so with every consumer at 2 s
    /// each hop (chat-fanout's `chat.message.v1` consumer, the gateway's delivery consumer) waits
    /// 0–2 s and a message takes ~2 s in the median. With the two at 1 ms it takes milliseconds;
    /// a consumer left on the 2 s wait puts the median near 1 s or beyond.
    @Test("with kafka.fetch-wait-ms at 2 s and kafka.delivery-fetch-wait-ms at 1 ms a message reaches its socket in well under a second")
    func deliveryFetchWaitReachesBothConsumers() async throws {
        let gatewayId = "gw-wait-\(UUID().uuidString.prefix(8).lowercased())"
        let waits = ["KAFKA_FETCH_WAIT_MS": "2000", "KAFKA_DELIVERY_FETCH_WAIT_MS": "1"]
        let gateway = NativeProtocolTests.environment(gatewayId).merging(waits) { $1 }
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: gateway) { s in
            let a = try await s.user("에이")
            let b = try await s.user("비")
            let (wid, cid) = try await s.sharedChannel(a, b)
            let path = "/v1/workspaces/\(wid)/channels/\(cid)/chats"
            let replica = try await s.startFanoutReplica("fanout-wait", environment: waits)
            let port = try #require(s.client.port)
            let (reader, _) = try await NativeTestClient.connect(port, b)
            try await NativeProtocolTests.awaitInterest(s, a, path, [reader])

            var latencies: [Duration] = []
            for i in 0..<9 {
                let sent = ContinuousClock.now
                let chat = id(jsonObject(try await s.send(.post, path, a, json: #"{"content":"wait \#(i)"}"#)), "chat_id")
                try await reader.waitFor("message \(i)", timeout: .seconds(20)) { _ in
                    reader.dispatches("channel.message").contains { $0.data["chat_id"] as? String == chat }
                }
                latencies.append(ContinuousClock.now - sent)
                try await Task.sleep(for: .milliseconds(Int.random(in: 50...250)))  // a fresh phase of each wait
            }
            let median = latencies.sorted()[latencies.count / 2]
            #expect(median < .milliseconds(600), "send → socket: \(latencies)")
            await reader.kill()
            try await replica.stop()
        }
    }
}
