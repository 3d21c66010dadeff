import AsyncHTTPClient
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

    func port(_ s: Stack) throws -> Int { try #require(s.client.port) }

    /// Exactly one event with this id arrives, equal to the REST answer; checked again after a pause
    /// so a late duplicate would be seen.
    func expectOnce(_ client: PythonSocketClient, _ event: String, _ idKey: String, equalTo answer: [String: Any]) async throws {
        let messageId = try #require(answer[idKey] as? String)
        do {
            try await eventually("\(event) \(messageId) at the client") { client.events(event).contains { $0[idKey] as? String == messageId } }
        } catch {
            Issue.record("client output: \(client.process.output.suffix(3000))")
            throw error
        }
        try await Task.sleep(for: .milliseconds(700))
        let received = client.events(event).filter { $0[idKey] as? String == messageId }
        #expect(received.count == 1, "\(received.count) emits of \(messageId): \(client.process.output.suffix(2000))")
        let first = try #require(received.first)
        #expect(NSDictionary(dictionary: first).isEqual(to: answer), "socket \(first) vs REST \(answer)")
    }

    @Test(
        "EIO4: polling-then-upgrade and WebSocket-only clients get each channel message once (sender's echo too), even when redelivered; interest announced and withdrawn"
    )
    func channelMessages() async throws {
        let gatewayId = "gw-test-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: Self.gatewayEnvironment(gatewayId)) { s in
            let owner = try await s.user("주인")
            let member = try await s.user("멤버")
            let (wid, cid) = try await s.sharedChannel(owner, member)
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
                let conversation = try #require(UUID(uuidString: cid))
                let interest = try await recordedEvents(s.cluster, GatewayEvents.InterestChanged.self) {
                    $0.gatewayId == gatewayId && $0.conversationId == conversation
                } until: {
                    $0.last?.interested == false
                }
                #expect(interest.map(\.interested) == [true, false], "interest records: \(interest)")
                // Both Engine.IO sessions were announced on gateway.session.v1, opened and closed.
                let opened = try await recordedEvents(s.cluster, GatewayEvents.SessionOpened.self) {
                    $0.gatewayId == gatewayId
                } until: {
                    $0.count >= 2
                }
                let closed = try await recordedEvents(s.cluster, GatewayEvents.SessionClosed.self) {
                    $0.gatewayId == gatewayId
                } until: {
                    $0.count >= 2
                }
                #expect(opened.count == 2 && opened.allSatisfy { $0.clientProtocol == .socketIO })
                #expect(Set(opened.map(\.sessionId)) == Set(closed.map(\.sessionId)))
            }
        }
    }

    @Test(
        "DMs on /ws-dm-{room} to EIO4 and EIO3 clients; EIO3 polling-upgrade and WebSocket-only on a channel across client heartbeats; invalid namespaces refused; Engine.IO errors are 400s"
    )
    func directMessagesEIO3AndRefusals() async throws {
        let gatewayId = "gw-test-\(UUID().uuidString.prefix(8).lowercased())"
        // Ping intervals short enough that EIO3 clients ping (and the server answers) during the
        // test, yet long enough for a loaded machine: python-engineio 3 drops the connection when
        // a PONG takes longer than one ping interval.
        let environment = Self.gatewayEnvironment(gatewayId).merging([
            "GATEWAY_SOCKETIO_PING_INTERVAL_MS": "3000", "GATEWAY_SOCKETIO_PING_TIMEOUT_MS": "10000",
        ]) { $1 }
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: environment) { s in
            let a = try await s.user("에이")
            let b = try await s.user("비")
            let (wid, cid) = try await s.sharedChannel(a, b)
            let room = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/dms", a, json: #"{"opponent_id":"\#(b.id)"}"#)), "room_id")
            try await TestFanoutStandIn.run(cluster: s.cluster, gatewayId: gatewayId) { _ in
                let dmNamespace = "/ws-dm-\(room)"
                let eio4 = try PythonSocketClient.start(.eio4, port: try port(s), namespaces: [(dmNamespace, "dm")])
                let eio3 = try PythonSocketClient.start(
                    .eio3, port: try port(s), namespaces: [(dmNamespace, "dm"), ("/ws-channel-\(cid)", "channel")], changesocketid: b.id
                )
                #expect(try await eio4.waitFor("ready")["version"] as? String != "4.6.1")
                let eio3Ready = try await eio3.waitFor("ready")
                #expect(eio3Ready["version"] as? String == "4.6.1" && eio3Ready["transport"] as? String == "websocket", "EIO3 upgraded: \(eio3Ready)")
                try await eventually("the EIO3 client joined both namespaces") { eio3.lines("connected").count >= 3 }
                // The study app's way: Engine.IO v3 over WebSocket only, default namespace + changesocketid.
                let eio3WebSocket = try PythonSocketClient.start(
                    .eio3, port: try port(s), namespaces: [("/ws-channel-\(cid)", "channel")], transports: "websocket", changesocketid: a.id
                )
                #expect(try await eio3WebSocket.waitFor("ready")["transport"] as? String == "websocket")
                try await eventually("the EIO3 WebSocket client joined") { eio3WebSocket.lines("connected").count >= 2 }
                try await Task.sleep(for: .seconds(7))  // several client pings

                let dm = try #require(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/dms/\(room)/chats", a, json: #"{"content":"디엠"}"#)))
                #expect(Set(dm.keys) == ["dm_id", "room_id", "content", "createdAt", "files", "user"])
                try await expectOnce(eio4, "dm", "dm_id", equalTo: dm)
                try await expectOnce(eio3, "dm", "dm_id", equalTo: dm)
                let chat = try #require(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(cid)/chats", b, json: #"{"content":"채널"}"#)))
                try await expectOnce(eio3, "channel", "chat_id", equalTo: chat)
                try await expectOnce(eio3WebSocket, "channel", "chat_id", equalTo: chat)
                try await eio3WebSocket.stop()
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
            #expect(
                try await engineError("/socket.io/?EIO=4&transport=polling", method: .post, body: "40") == #"400 {"code":2,"message":"Bad handshake method"}"#)
            let handshake = try await engineError("/socket.io/?EIO=4&transport=polling")
            #expect(handshake.hasPrefix(#"200 0{"sid":""#) && handshake.contains(#""upgrades":["websocket"]"#), "\(handshake)")
            let sid = String(handshake.dropFirst(#"200 0{"sid":""#.count).prefix(20))
            #expect(
                try await engineError("/socket.io/?EIO=4&transport=polling&sid=\(sid)", method: .post, body: "4\u{1E}")
                    == #"400 {"code":3,"message":"Bad request"}"#)
            #expect(
                try await engineError("/socket.io/?EIO=4&transport=polling&sid=\(sid)") == #"400 {"code":1,"message":"Session ID unknown"}"#,
                "the session ended")
            #expect(try await engineError("/socket.io/?EIO=4&transport=polling", method: .get).hasPrefix("200"))
            let bad = try await s.client.execute(uri: "/socket.io/?EIO=4&transport=polling", method: .get, headers: [.authorization: "not-a-jwt"], body: nil)
            #expect(bad.status == .forbidden)
            let badWebSocket = try await s.client.execute(
                uri: "/socket.io/?EIO=4&transport=websocket", method: .get, headers: [.authorization: "not-a-jwt"], body: nil)
            #expect(badWebSocket.status == .forbidden)
            #expect(try await engineError("/socket.io/?EIO=4&transport=websocket") == #"400 {"code":3,"message":"Bad request"}"#, "not an upgrade request")
        }
    }
}

extension SocketIOTests {
    @Test("credentials: a verified member joins, a non-member or a bad token is refused, anonymous joins off by setting")
    func credentials() async throws {
        let gatewayId = "gw-test-\(UUID().uuidString.prefix(8).lowercased())"
        // Short heartbeats: clients that answer stay connected; a session that goes silent expires.
        let environment = Self.gatewayEnvironment(gatewayId).merging([
            "GATEWAY_SOCKETIO_ANONYMOUS": "false", "GATEWAY_SOCKETIO_PING_INTERVAL_MS": "1000", "GATEWAY_SOCKETIO_PING_TIMEOUT_MS": "3000",
        ]) { $1 }
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: environment) { s in
            let owner = try await s.user("주인")
            let member = try await s.user("멤버")
            let outsider = try await s.user("남")
            let (wid, cid) = try await s.sharedChannel(owner, member)
            let namespace = [("/ws-channel-\(cid)", "channel")]
            try await TestFanoutStandIn.run(cluster: s.cluster, gatewayId: gatewayId) { _ in
                let verified = try PythonSocketClient.start(.eio4, port: try port(s), namespaces: namespace, token: member.token)
                let stranger = try PythonSocketClient.start(.eio4, port: try port(s), namespaces: namespace, token: outsider.token)
                let forged = try PythonSocketClient.start(.eio4, port: try port(s), namespaces: namespace, token: "not-a-jwt")
                let anonymous = try PythonSocketClient.start(.eio4, port: try port(s), namespaces: namespace, transports: "websocket")
                try await verified.waitFor("ready")
                for refused in [stranger, forged, anonymous] {
                    try await refused.waitFor("connect_failed")
                    #expect(refused.lines("connect_error").contains { "\($0["data"] ?? "")".contains("Not authorized") }, "\(refused.process.output)")
                    try await refused.stop()
                }
                // Several heartbeats later the verified client is still there and receives.
                try await Task.sleep(for: .seconds(3))
                let answer = try #require(
                    jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(cid)/chats", owner, json: #"{"content":"회원만"}"#)))
                try await expectOnce(verified, "channel", "chat_id", equalTo: answer)
                try await verified.stop()
            }

            // A polling session that stops polling is closed after interval + timeout.
            let handshake = try await s.client.execute(uri: "/socket.io/?EIO=4&transport=polling", method: .get, headers: [:], body: nil)
            let sid = String(String(buffer: handshake.body).dropFirst(#"0{"sid":""#.count).prefix(20))
            let poll = "/socket.io/?EIO=4&transport=polling&sid=\(sid)"
            #expect(String(buffer: try await s.client.execute(uri: poll, method: .get, headers: [:], body: nil).body) == "2", "a ping arrives")
            try await Task.sleep(for: .milliseconds(5500))
            let expired = try await s.client.execute(uri: poll, method: .get, headers: [:], body: nil)
            #expect(expired.status == .badRequest && String(buffer: expired.body).contains(#""code":1"#))
        }
    }
}

/// The events of type `P` on its topic, oldest first per partition, read until `done` holds for
/// those `matching` (10 s at most).
func recordedEvents<P: EventPayload>(
    _ cluster: EmbeddedKafkaCluster, _ type: P.Type, matching: @escaping @Sendable (P) -> Bool, until done: @escaping @Sendable ([P]) -> Bool
) async throws -> [P] {
    let partitions = (0..<P.topic.partitions).map { TopicPartitionOffset(topic: P.topic.name, partition: Int32($0), offset: .beginning) }
    let consumer = try KafkaConsumer(
        configuration: KafkaConsumerConfiguration(
            client: KafkaClientConfiguration(bootstrapServers: cluster.bootstrapServers, clientId: "test-reader"), mode: .assignment(partitions)
        ),
        logger: TestKafka.logger
    )
    let events = Locked<[P]>([])
    let reader = Task {
        for try await message in consumer.messages {
            guard let value = message.value, (try? EventCoding.header(from: value))?.type == P.eventType else { continue }
            let event = try EventCoding.decode(P.self, from: value).data
            if matching(event) { events.withLock { $0.append(event) } }
        }
    }
    defer { reader.cancel() }
    try? await eventually("\(P.eventType) records") { done(events.value) }
    reader.cancel()
    await consumer.close()
    return events.value
}

extension SocketIOTests {
    /// Sessions opened together (a reconnect storm after a restart, a load test's ramp) used to get
    /// their first pings in the same heartbeat tick, and so every ping after (docs/benchmarks.md,
    /// part 30). With a 4 s interval each first ping is due within 4 s of its open, spread by
    /// `HeartbeatPhases` (the heartbeat ticks each second); without the phases all twelve came in
    /// one tick.
    @Test("sessions opened together get their first pings spread over the ping interval")
    func firstPingsSpread() async throws {
        let environment = ["GATEWAY_SOCKETIO_PING_INTERVAL_MS": "4000", "GATEWAY_SOCKETIO_PING_TIMEOUT_MS": "5000"]
        try await Stack.run(gateway: environment) { s in
            let start = ContinuousClock.now
            var sids: [String] = []
            for _ in 0..<12 {
                let handshake = try await s.client.execute(uri: "/socket.io/?EIO=4&transport=polling", method: .get, headers: [:], body: nil)
                let body = String(buffer: handshake.body)
                #expect(body.hasPrefix(#"0{"sid":""#), "\(body)")
                sids.append(String(body.dropFirst(#"0{"sid":""#.count).prefix(20)))
            }
            let opened = ContinuousClock.now
            #expect(opened - start < .seconds(1), "the handshakes took \(opened - start)")
            // Each poll on a connection of its own (the test client's one connection would answer
            // them in order, so behind the latest ping).
            var configuration = HTTPClient.Configuration()
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 16
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            let port = try port(s)
            let polled: Result<[Duration], any Error>
            do {
                polled = .success(
                    try await withThrowingTaskGroup(of: (String, Duration).self) { group in
                        for sid in sids {
                            group.addTask {
                                let request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/socket.io/?EIO=4&transport=polling&sid=\(sid)")
                                let response = try await http.execute(request, timeout: .seconds(10))
                                let body = try await response.body.collect(upTo: 1024)
                                return (String(buffer: body), ContinuousClock.now - start)
                            }
                        }
                        var arrivals: [Duration] = []
                        for try await (body, at) in group {
                            #expect(body == "2", "a ping, not \(body)")
                            arrivals.append(at)
                        }
                        return arrivals.sorted()
                    })
            } catch {
                polled = .failure(error)
            }
            try await http.shutdown()
            let arrivals = try polled.get()
            let first = try #require(arrivals.first)
            let last = try #require(arrivals.last)
            #expect(last < .seconds(8), "every first ping well within pingInterval + pingTimeout (9 s): \(arrivals)")
            #expect(last - first >= .seconds(2), "the first pings spread over the interval: \(arrivals)")
            #expect(Set(arrivals.map { Int($0 / .seconds(1)) }).count >= 3, "the first pings came in at least three ticks: \(arrivals)")
        }
    }
}
