import Common
import Events
import Foundation
import HTTPTypes
import HummingbirdTesting
import Kafka
import NIOCore
import SuiteTesting
import Testing
import TestSupport

/// The gateway's Socket.IO server with real python-socketio clients, over the whole path:
/// REST post → chat → `chat.message.v1` → (a fan-out stand-in) → `gateway.delivery.v1` → gateway
/// → Socket.IO namespace.
@Suite("Socket.IO at the gateway", .serialized)
struct SocketIOTests {
    static func gatewayEnvironment(_ gatewayId: String) -> [String: String] {
        ["GATEWAY_ID": gatewayId]
    }

    /// A workspace with `owner` and `member` in its default channel (as chat sees it).
    func channel(_ s: Stack, _ owner: User, _ member: User) async throws -> (workspace: String, channel: String) {
        let wid = id(try await s.createWorkspace(owner), "workspace_id")
        try await s.invite(member, to: wid, by: owner)
        let channel = id(try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/channels", owner))).first, "channel_id")
        try await s.waitForChatMember(owner.id, channel: channel)
        try await s.waitForChatMember(member.id, channel: channel)
        return (wid, channel)
    }

    func port(_ s: Stack) throws -> Int { try #require(s.client.port) }

    /// Exactly one event with this id arrives, equal to the REST answer; checked again after a pause
    /// so a late duplicate would be seen.
    func expectOnce(_ client: PythonSocketClient, _ event: String, _ idKey: String, equalTo answer: [String: Any]) async throws {
        let messageId = try #require(answer[idKey] as? String)
        try await eventually("\(event) \(messageId) at the client") { client.events(event).contains { $0[idKey] as? String == messageId } }
        try await Task.sleep(for: .milliseconds(700))
        let received = client.events(event).filter { $0[idKey] as? String == messageId }
        #expect(received.count == 1, "\(received.count) emits of \(messageId): \(client.process.output.suffix(2000))")
        let first = try #require(received.first)
        #expect(NSDictionary(dictionary: first).isEqual(to: answer), "socket \(first) vs REST \(answer)")
    }

    @Test("EIO4: polling-then-upgrade and WebSocket-only clients get each channel message once (sender's echo too), even when redelivered; interest announced and withdrawn")
    func channelMessages() async throws {
        let gatewayId = "gw-test-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(workspace: true, chat: true, gatewayEnvironment: Self.gatewayEnvironment(gatewayId)) { s in
            let owner = try await s.user("주인")
            let member = try await s.user("멤버")
            let (wid, cid) = try await channel(s, owner, member)
            let namespace = "/ws-channel-\(cid)"
            try await TestFanoutStandIn.run(cluster: s.cluster, gatewayId: gatewayId) { fanout in
                let upgrading = try PythonSocketClient.start(.eio4, port: try port(s), namespaces: [(namespace, "channel")])
                let websocketOnly = try PythonSocketClient.start(.eio4, port: try port(s), namespaces: [(namespace, "channel")], transports: "websocket")
                let ready = try await upgrading.waitFor("ready")
                #expect(ready["transport"] as? String == "websocket", "the polling client upgraded: \(ready)")
                #expect(try await websocketOnly.waitFor("ready")["transport"] as? String == "websocket")
                try await upgrading.waitFor("connected")

                // The member posts; the owner's clients and the member's own (echo) receive it.
                let posted = try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(cid)/chats", member, json: #"{"content":"안녕 \"소켓\""}"#)
                #expect(posted.status == .ok)
                let answer = try #require(jsonObject(posted))
                #expect(Set(answer.keys) == ["channel_id", "channelName", "chat_id", "content", "createdAt", "files", "user"])
                try await expectOnce(upgrading, "channel", "chat_id", equalTo: answer)
                try await expectOnce(websocketOnly, "channel", "chat_id", equalTo: answer)

                // A forced redelivery of everything: still once per socket.
                let second = try #require(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(cid)/chats", owner, json: #"{"content":"둘"}"#)))
                try await expectOnce(websocketOnly, "channel", "chat_id", equalTo: second)
                try await fanout.redeliverAll()
                try await expectOnce(upgrading, "channel", "chat_id", equalTo: answer)
                try await expectOnce(upgrading, "channel", "chat_id", equalTo: second)
                try await expectOnce(websocketOnly, "channel", "chat_id", equalTo: second)
                #expect(upgrading.events("channel").count == 2 && websocketOnly.events("channel").count == 2)

                try await upgrading.stop()
                try await websocketOnly.stop()
                let key = "\(gatewayId)/\(cid)"
                let history = try await interestHistory(s.cluster, key: key) { $0.last == false }
                #expect(history == [true, false], "interest records for \(key): \(history)")
            }
        }
    }

    @Test("DMs on /ws-dm-{room} to EIO4 and EIO3 clients; EIO3 on a channel; invalid namespaces refused; Engine.IO errors are 400s")
    func directMessagesEIO3AndRefusals() async throws {
        let gatewayId = "gw-test-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(workspace: true, chat: true, gatewayEnvironment: Self.gatewayEnvironment(gatewayId)) { s in
            let a = try await s.user("에이")
            let b = try await s.user("비")
            let (wid, cid) = try await channel(s, a, b)
            let room = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/dms", a, json: #"{"opponent_id":"\#(b.id)"}"#)), "room_id")
            try await TestFanoutStandIn.run(cluster: s.cluster, gatewayId: gatewayId) { _ in
                let dmNamespace = "/ws-dm-\(room)"
                let eio4 = try PythonSocketClient.start(.eio4, port: try port(s), namespaces: [(dmNamespace, "dm")])
                let eio3 = try PythonSocketClient.start(
                    .eio3, port: try port(s), namespaces: [(dmNamespace, "dm"), ("/ws-channel-\(cid)", "channel")], changesocketid: b.id
                )
                try await eio4.waitFor("ready")
                try await eio3.waitFor("ready")
                try await eventually("the EIO3 client joined both namespaces") { eio3.lines("connected").count >= 3 }

                let dm = try #require(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/dms/\(room)/chats", a, json: #"{"content":"디엠"}"#)))
                #expect(Set(dm.keys) == ["dm_id", "room_id", "content", "createdAt", "files", "user"])
                try await expectOnce(eio4, "dm", "dm_id", equalTo: dm)
                try await expectOnce(eio3, "dm", "dm_id", equalTo: dm)
                let chat = try #require(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(cid)/chats", b, json: #"{"content":"채널"}"#)))
                try await expectOnce(eio3, "channel", "chat_id", equalTo: chat)
                #expect(eio4.events("channel").isEmpty && eio3.events("dm").count == 1)
                try await eio4.stop()
                try await eio3.stop()
            }

            // Namespaces outside the contract are refused with CONNECT_ERROR.
            for namespace in ["/ws-channel-not-a-uuid", "/chat", "/ws-channel-\(cid.uppercased())"] {
                let refused = try PythonSocketClient.start(.eio4, port: try port(s), namespaces: [(namespace, "channel")], transports: "websocket")
                let failed = try await refused.waitFor("connect_failed")
                #expect(refused.lines("ready").isEmpty, "\(namespace) joined: \(failed)")
                #expect(refused.lines("connect_error").contains { "\($0["data"] ?? "")".contains("Invalid namespace") }, "\(refused.process.output)")
                try await refused.stop()
            }

            // Engine.IO errors: clear 400s with the protocol's codes, never a 500.
            func engineError(_ uri: String, method: HTTPRequest.Method = .get, body: String? = nil) async throws -> String {
                let response = try await s.client.execute(uri: uri, method: method, headers: [:], body: body.map { ByteBuffer(string: $0) })
                return "\(response.status.code) \(String(buffer: response.body))"
            }
            #expect(try await engineError("/socket.io/?EIO=5&transport=polling") == #"400 {"code":5,"message":"Unsupported protocol version"}"#)
            #expect(try await engineError("/socket.io/?EIO=4&transport=carrier-pigeon") == #"400 {"code":0,"message":"Transport unknown"}"#)
            #expect(try await engineError("/socket.io/?EIO=4&transport=polling&sid=nope") == #"400 {"code":1,"message":"Session ID unknown"}"#)
            #expect(try await engineError("/socket.io/?EIO=4&transport=polling", method: .post, body: "40") == #"400 {"code":2,"message":"Bad handshake method"}"#)
            let handshake = try await engineError("/socket.io/?EIO=4&transport=polling")
            #expect(handshake.hasPrefix(#"200 0{"sid":""#) && handshake.contains(#""upgrades":["websocket"]"#), "\(handshake)")
            let sid = String(handshake.dropFirst(#"200 0{"sid":""#.count).prefix(20))
            #expect(try await engineError("/socket.io/?EIO=4&transport=polling&sid=\(sid)", method: .post, body: "4\u{1E}") == #"400 {"code":3,"message":"Bad request"}"#)
            #expect(try await engineError("/socket.io/?EIO=4&transport=polling&sid=\(sid)") == #"400 {"code":1,"message":"Session ID unknown"}"#, "the session ended")
            #expect(try await engineError("/socket.io/?EIO=4&transport=polling", method: .get).hasPrefix("200"))
            let bad = try await s.client.execute(uri: "/socket.io/?EIO=4&transport=polling", method: .get, headers: [.authorization: "not-a-jwt"], body: nil)
            #expect(bad.status == .forbidden)
        }
    }
}

/// The `interested` values recorded on `gateway.interest.v1` for `key`, oldest first, read until
/// `done` holds (10 s at most).
func interestHistory(_ cluster: EmbeddedKafkaCluster, key: String, until done: @escaping @Sendable ([Bool]) -> Bool) async throws -> [Bool] {
    let partitions = (0..<Topic.gatewayInterest.partitions).map {
        TopicPartitionOffset(topic: Topic.gatewayInterest.name, partition: Int32($0), offset: .beginning)
    }
    let consumer = try KafkaConsumer(
        configuration: KafkaConsumerConfiguration(
            client: KafkaClientConfiguration(bootstrapServers: cluster.bootstrapServers, clientId: "test-interest"), mode: .assignment(partitions)
        ),
        logger: TestKafka.logger
    )
    let history = Locked<[Bool]>([])
    let reader = Task {
        for try await message in consumer.messages where message.keyString == key {
            guard let value = message.value else { continue }
            let event = try EventCoding.decode(GatewayEvents.InterestChanged.self, from: value)
            history.withLock { $0.append(event.data.interested) }
        }
    }
    defer { reader.cancel() }
    try? await eventually("interest records for \(key)") { done(history.value) }
    reader.cancel()
    await consumer.close()
    return history.value
}
