import Events
import Foundation
import GatewayApp
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOWebSocket
import ServiceKit
import SuiteTesting
import Testing
import TestSupport

/// The native `/v1/gateway` protocol (docs/native-gateway.md) against the in-process suite with
/// the real chat-fanout, driven by hummingbird-websocket's WebSocket client.
@Suite("Native gateway protocol", .serialized)
struct NativeProtocolTests {
    /// A gateway's settings for these suites. The heartbeat interval is 10 s unless a test times
    /// heartbeats itself: the test client beats once per interval, and at 2 s a busy CI machine
    /// delayed a beat past the 1.5 × interval deadline (4009 instead of the graceful 1001).
    static func environment(_ gatewayId: String, heartbeatMilliseconds: Int = 10_000) -> [String: String] {
        ["GATEWAY_ID": gatewayId, "GATEWAY_NATIVE_HEARTBEAT_INTERVAL_MS": "\(heartbeatMilliseconds)"]
    }

    /// Identifies `user` and waits for ready.
    static func connect(_ port: Int, _ user: User, heartbeats: Bool = true) async throws -> (NativeTestClient, [String: Any]) {
        try await NativeTestClient.connect(port, user, heartbeats: heartbeats)
    }

    /// Posts probes until `clients` each received one: the fan-out learned the gateway's interest.
    static func awaitInterest(_ s: Stack, _ author: User, _ path: String, _ clients: [NativeTestClient]) async throws {
        var probes: [String] = []
        try await eventually("the fan-out knows the gateway's interest", timeout: .seconds(60)) {
            probes.append(id(jsonObject(try await s.send(.post, path, author, json: #"{"content":"probe \#(probes.count)"}"#)), "chat_id"))
            try await Task.sleep(for: .milliseconds(200))
            // One of this call's probes arrived at every client.
            return clients.allSatisfy { client in
                client.dispatches("channel.message").contains { probes.contains($0.data["chat_id"] as? String ?? "") }
            }
        }
        // The probes posted after the first that arrived are still on their way (under load one
        // takes longer than the 200 ms between probes); they arrive too, in the conversation's
        // order. Waiting for them keeps them out of what a caller counts afterwards (`lastSeq`).
        try await eventually("every probe after the first delivered one arrived", timeout: .seconds(30)) {
            clients.allSatisfy { client in
                let received = Set(client.dispatches("channel.message").compactMap { $0.data["chat_id"] as? String })
                guard let first = probes.firstIndex(where: received.contains) else { return false }
                return probes[first...].allSatisfy(received.contains)
            }
        }
    }

    @Test(
        "identify → ready with conversations and unread counts; live messages and DMs with consecutive sequence numbers; typing to others only; heartbeat ack; kill the socket, resume → missed messages in order, then live"
    )
    func identifyReceiveResume() async throws {
        let gatewayId = "gw-native-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: Self.environment(gatewayId)) { s in
            let a = try await s.user("에이")
            let b = try await s.user("비")
            let (wid, cid) = try await s.sharedChannel(a, b)
            let room = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/dms", a, json: #"{"opponent_id":"\#(b.id)"}"#)), "room_id")
            let channelPath = "/v1/workspaces/\(wid)/channels/\(cid)/chats"
            _ = try await s.send(.post, channelPath, b, json: #"{"content":"읽지 않음"}"#)
            let replica = try await RealFanoutTests.startReplica(s, "fanout-native")
            let port = try #require(s.client.port)

            let (alice, ready) = try await Self.connect(port, a)
            #expect(ready["user_id"] as? String == a.id && (ready["session_id"] as? String)?.isEmpty == false)
            #expect(ready["heartbeat_interval"] as? Int == 10_000)
            let channels = try #require(ready["channels"] as? [[String: Any]])
            #expect(channels.contains { $0["channel_id"] as? String == cid && $0["unread_count"] as? Int == 1 && $0["workspace_id"] as? String == wid })
            #expect((ready["dms"] as? [[String: Any]])?.contains { $0["room_id"] as? String == room && $0["user_id"] as? String == b.id } == true)
            #expect((ready["workspaces"] as? [[String: Any]])?.contains { $0["workspace_id"] as? String == wid } == true)
            let (bob, _) = try await Self.connect(port, b)
            try await Self.awaitInterest(s, a, channelPath, [alice, bob])

            // Live: a channel message (the sender gets its echo) and a DM, in sequence.
            let chat = try #require(jsonObject(try await s.send(.post, channelPath, b, json: #"{"content":"안녕"}"#)))
            let dm = try #require(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/dms/\(room)/chats", b, json: #"{"content":"디엠"}"#)))
            let (chatId, dmId, channelName) = (id(chat, "chat_id"), id(dm, "dm_id"), chat["channelName"] as? String)
            for client in [alice, bob] {
                try await client.waitFor("the message and the DM") { _ in
                    client.dispatches("channel.message").contains { $0.data["chat_id"] as? String == chatId }
                        && client.dispatches("dm.message").contains { $0.data["dm_id"] as? String == dmId }
                }
                #expect(client.sequence == Array(1...client.sequence.count), "consecutive sequence numbers from 1: \(client.sequence)")
            }
            let delivered = try #require(alice.dispatches("channel.message").last?.data)
            #expect(delivered["content"] as? String == "안녕" && delivered["channelName"] as? String == channelName)

            // A message far over the sharing threshold (10 000 Hangul characters, 30 000 bytes):
            // every session's frame is its own head, the one shared JSON and its own tail, and
            // arrives whole, in sequence.
            let long = String(repeating: "가", count: 10_000)
            let big = id(jsonObject(try await s.send(.post, channelPath, b, json: #"{"content":"\#(long)"}"#)), "chat_id")
            for client in [alice, bob] {
                try await client.waitFor("the long message") { _ in
                    client.dispatches("channel.message").contains { $0.data["chat_id"] as? String == big }
                }
                #expect(client.dispatches("channel.message").first { $0.data["chat_id"] as? String == big }?.data["content"] as? String == long)
                #expect(client.sequence == Array(1...client.sequence.count), "consecutive sequence numbers from 1: \(client.sequence)")
            }

            // Typing reaches the others in the conversation, not the typist.
            bob.send(#"{"op":"typing","d":{"conversation_id":"\#(cid)"}}"#)
            try await alice.waitFor("typing") { _ in !alice.dispatches("typing").isEmpty }
            let typing = try #require(alice.dispatches("typing").first?.data)
            #expect(typing["user_id"] as? String == b.id && typing["conversation_id"] as? String == cid && typing["kind"] as? String == "channel")
            // A second typing event within 3 s is not forwarded.
            bob.send(#"{"op":"typing","d":{"conversation_id":"\#(cid)"}}"#)
            alice.send(#"{"op":"heartbeat","d":{"seq":\#(alice.lastSeq)}}"#)
            _ = try await alice.waitForOp("heartbeat_ack")
            try await Task.sleep(for: .milliseconds(500))
            #expect(bob.dispatches("typing").isEmpty)
            #expect(alice.dispatches("typing").count == 1, "typing is forwarded at most once per 3 s")

            // Kill Alice's socket; what is posted meanwhile is replayed on resume, in order.
            let session = try #require(ready["session_id"] as? String)
            let seq = alice.lastSeq
            await alice.kill()
            var missed: [String] = []
            for i in 0..<6 {
                if i % 3 == 2 {
                    missed.append(
                        id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/dms/\(room)/chats", b, json: #"{"content":"놓친 디엠 \#(i)"}"#)), "dm_id"))
                } else {
                    missed.append(id(jsonObject(try await s.send(.post, channelPath, b, json: #"{"content":"놓친 \#(i)"}"#)), "chat_id"))
                }
            }
            let resumed = NativeTestClient(port: port)
            _ = try await resumed.waitForOp("hello")
            resumed.resume(a.token, session: session, seq: seq)
            let done = try await resumed.waitForOp("resumed")
            #expect(done["replayed"] as? Int == 6 && done["session_id"] as? String == session)
            let replayed = resumed.frames.filter { $0["op"] as? String == "dispatch" }
            #expect(replayed.compactMap { $0["s"] as? Int } == Array(seq + 1...seq + 6), "\(resumed.frames.map { "\($0["op"] ?? "-")/\($0["t"] ?? "-")" })")
            #expect(replayed.compactMap { (($0["d"] as? [String: Any])?["chat_id"] ?? ($0["d"] as? [String: Any])?["dm_id"]) as? String } == missed)
            // Live again, continuing the sequence.
            let after = id(jsonObject(try await s.send(.post, channelPath, a, json: #"{"content":"다시"}"#)), "chat_id")
            try await resumed.waitFor("the live message after resume") { _ in
                resumed.dispatches("channel.message").contains { $0.data["chat_id"] as? String == after }
            }
            #expect(resumed.dispatches("channel.message").last.map { $0.seq } == seq + 7)
            let ids = resumed.dispatches("channel.message").compactMap { $0.data["chat_id"] as? String }
            #expect(ids.count == Set(ids).count, "no message twice")
            let dmIds = resumed.dispatches("dm.message").compactMap { $0.data["dm_id"] as? String }
            #expect(dmIds.count == Set(dmIds).count, "no DM twice")

            // The session is resumable only by its user, and not from a seq it never sent.
            let stranger = NativeTestClient(port: port)
            _ = try await stranger.waitForOp("hello")
            stranger.resume(b.token, session: session, seq: 0)
            #expect(try await stranger.closed().code == WebSocketErrorCode(codeNumber: 4006))
            let ahead = NativeTestClient(port: port)
            _ = try await ahead.waitForOp("hello")
            ahead.resume(a.token, session: session, seq: 10_000)
            #expect(try await ahead.closed().code == WebSocketErrorCode(codeNumber: 4007))

            await resumed.kill()
            await bob.kill()
            try await replica.stop()
        }
    }

    @Test("restart the gateway: a session resumes on the new process with what was posted meanwhile, replayed from history; a second gateway can resume it too")
    func resumeAfterRestart() async throws {
        let gatewayId = "gw-restart-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: Self.environment("gw-other-\(UUID().uuidString.prefix(8).lowercased())")) { s in
            let a = try await s.user("에이")
            let b = try await s.user("비")
            let (wid, cid) = try await s.sharedChannel(a, b)
            let channelPath = "/v1/workspaces/\(wid)/channels/\(cid)/chats"
            let replica = try await RealFanoutTests.startReplica(s, "fanout-restart")
            func startGateway() async throws -> RunningService {
                let environment = s.gatewayEnvironment.merging(Self.environment(gatewayId)) { $1 }
                let settings = ServiceSettings(serviceName: "gateway", defaults: GatewayService.defaults, environment: environment, arguments: ["gateway"])
                return try await RunningService.start { try await GatewayApp.buildApplication(settings: settings, logger: TestDatabase.logger) }
            }
            let gateway = try await startGateway()
            let port = try #require(gateway.client.port)
            let (alice, ready) = try await Self.connect(port, a)
            try await Self.awaitInterest(s, b, channelPath, [alice])
            let session = try #require(ready["session_id"] as? String)
            let seq = alice.lastSeq

            // A graceful stop: the session is checkpointed to gateway.session.v1 and its socket closed.
            try await gateway.stop()
            let stopped = try await alice.closed()
            #expect([.goingAway, .normalClosure].contains(stopped.code), "\(String(describing: stopped.code)) \(stopped.reason)")
            var missed: [String] = []
            for i in 0..<5 {
                missed.append(id(jsonObject(try await s.send(.post, channelPath, b, json: #"{"content":"재시작 중 \#(i)"}"#)), "chat_id"))
            }
            let restarted = try await startGateway()
            let newPort = try #require(restarted.client.port)
            let resumed = NativeTestClient(port: newPort)
            _ = try await resumed.waitForOp("hello")
            resumed.resume(a.token, session: session, seq: seq)
            let done = try await resumed.waitForOp("resumed")
            #expect(done["replayed"] as? Int == 5)
            let replayed = resumed.dispatches("channel.message")
            #expect(replayed.map(\.seq) == Array(seq + 1...seq + 5))
            #expect(replayed.compactMap { $0.data["chat_id"] as? String } == missed)
            // Live on the restarted process (its interest is announced again on resume).
            try await eventually("live after the restart", timeout: .seconds(60)) {
                _ = try await s.send(.post, channelPath, b, json: #"{"content":"재시작 후"}"#)
                try await Task.sleep(for: .milliseconds(300))
                return resumed.dispatches("channel.message").count > 5
            }
            let sequence = resumed.sequence
            #expect(sequence == Array(seq + 1...seq + sequence.count), "one sequence without gaps: \(sequence)")

            // Drop it again: another gateway (the stack's) resumes it from the new checkpoint.
            let seqNow = resumed.lastSeq
            await resumed.kill()
            let later = id(jsonObject(try await s.send(.post, channelPath, b, json: #"{"content":"다른 게이트웨이"}"#)), "chat_id")
            // The restarted gateway checkpoints the session as it detaches; once that is on the
            // topic, a resume anywhere waits until its gateway's reader has read it.
            _ = try await RealtimeAdmissionTests.records(s.cluster, topics: [Topic.gatewaySession], timeout: .seconds(60)) { records in
                records.contains { record in
                    guard record.key == session, let value = record.value,
                        let checkpoint = try? EventCoding.decode(GatewayEvents.SessionCheckpoint.self, from: value).data
                    else { return false }
                    return checkpoint.seq >= seqNow && checkpoint.attached != true
                }
            }
            let elsewhere = NativeTestClient(port: try #require(s.client.port))
            _ = try await elsewhere.waitForOp("hello")
            elsewhere.resume(a.token, session: session, seq: seqNow)
            let again = try await elsewhere.waitForOp("resumed")
            #expect(again["replayed"] as? Int == 1)
            #expect(elsewhere.dispatches("channel.message").map { $0.data["chat_id"] as? String } == [later])
            #expect(elsewhere.dispatches("channel.message").first?.seq == seqNow + 1)

            await elsewhere.kill()
            try await restarted.stop()
            try await replica.stop()
        }
    }

    @Test("leaving a channel: the member's native session gets conversation.removed and no more of its messages, live or on resume")
    func leavingStopsDelivery() async throws {
        let gatewayId = "gw-native-leave-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: Self.environment(gatewayId)) { s in
            let a = try await s.user("에이")
            let b = try await s.user("비")
            let (wid, general) = try await s.sharedChannel(a, b)
            let extra = id(try await s.createChannel(a, in: wid), "channel_id")
            let joined = try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(extra)/join", b, json: "{}")
            #expect(joined.status == .ok)
            try await s.waitForChatMember(b.id, channel: extra)
            let replica = try await RealFanoutTests.startReplica(s, "fanout-leave")
            let port = try #require(s.client.port)
            let (bob, ready) = try await Self.connect(port, b)
            #expect((ready["channels"] as? [[String: Any]])?.contains { $0["channel_id"] as? String == extra } == true)
            let extraPath = "/v1/workspaces/\(wid)/channels/\(extra)/chats"
            try await Self.awaitInterest(s, a, extraPath, [bob])

            let left = try await s.get("/v1/workspaces/\(wid)/channels/\(extra)/exit", b)
            #expect(left.status == .ok, "exit: \(String(buffer: left.body))")
            try await bob.waitFor("conversation.removed") { _ in
                bob.dispatches("conversation.removed").contains { $0.data["conversation_id"] as? String == extra }
            }
            let seq = bob.lastSeq
            let secret = id(jsonObject(try await s.send(.post, extraPath, a, json: #"{"content":"나간 뒤"}"#)), "chat_id")
            let visible = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(general)/chats", a, json: #"{"content":"일반"}"#)), "chat_id")
            try await bob.waitFor("the message of the channel still followed") { _ in
                bob.dispatches("channel.message").contains { $0.data["chat_id"] as? String == visible }
            }
            try await Task.sleep(for: .milliseconds(500))
            #expect(!bob.dispatches("channel.message").contains { $0.data["chat_id"] as? String == secret }, "a message of a channel left")

            // Resuming from before those messages replays the followed channel's only.
            let session = try #require(ready["session_id"] as? String)
            await bob.kill()
            let resumed = NativeTestClient(port: port)
            _ = try await resumed.waitForOp("hello")
            resumed.resume(b.token, session: session, seq: seq)
            _ = try await resumed.waitForOp("resumed")
            let replayed = resumed.dispatches("channel.message").compactMap { $0.data["chat_id"] as? String }
            #expect(replayed.contains(visible) && !replayed.contains(secret), "\(replayed)")

            // Joining again does not follow by itself; subscribe does (membership checked at chat).
            #expect(try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(extra)/join", b, json: "{}").status == .ok)
            try await s.waitForChatMember(b.id, channel: extra)
            resumed.send(#"{"op":"subscribe","d":{"conversation_id":"\#(extra)"}}"#)
            let subscribed = try await resumed.waitForOp("subscribed")
            #expect(subscribed["conversation_id"] as? String == extra)
            try await Self.awaitInterest(s, a, extraPath, [resumed])
            let back = id(jsonObject(try await s.send(.post, extraPath, a, json: #"{"content":"다시 들어옴"}"#)), "chat_id")
            try await resumed.waitFor("a message of the channel joined again") { _ in
                resumed.dispatches("channel.message").contains { $0.data["chat_id"] as? String == back }
            }
            await resumed.kill()
            try await replica.stop()
        }
    }

    @Test(
        "heartbeats answered on the socket's loop keep their place: one sent right after identify is acknowledged after ready; many in a row get one ack each, before and after identify"
    )
    func heartbeatsInOrder() async throws {
        let gatewayId = "gw-native-hb-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: Self.environment(gatewayId)) { s in
            let a = try await s.user("하트")
            let port = try #require(s.client.port)
            let client = NativeTestClient(port: port, heartbeats: false)
            _ = try await client.waitForOp("hello")
            // Before identify, a heartbeat is answered (docs/native-gateway.md).
            client.send(#"{"op":"heartbeat","d":null}"#)
            _ = try await client.waitForOp("heartbeat_ack")
            // identify waits for chat's snapshot; the heartbeat behind it must wait too.
            client.identify(a.token)
            client.send(#"{"op":"heartbeat","d":{"seq":1}}"#)
            let frames = try await client.waitFor("ready and a second ack") { frames in
                frames.filter { $0["op"] as? String == "heartbeat_ack" }.count == 2 && frames.contains { $0["t"] as? String == "ready" }
            }
            let order = frames.compactMap { ($0["t"] as? String) ?? ($0["op"] as? String) }.filter { ["hello", "heartbeat_ack", "ready"].contains($0) }
            #expect(order == ["hello", "heartbeat_ack", "ready", "heartbeat_ack"], "\(order)")
            for _ in 0..<50 { client.send(#"{"op":"heartbeat","d":{"seq":1}}"#) }
            try await client.waitFor("52 acks") { $0.filter { $0["op"] as? String == "heartbeat_ack" }.count == 52 }
            // A heartbeat in another spelling goes the usual way and is answered the same.
            client.send(#"{ "op": "heartbeat", "d": { "seq": 1 } }"#)
            try await client.waitFor("53 acks") { $0.filter { $0["op"] as? String == "heartbeat_ack" }.count == 53 }
            // One ack each, never two.
            try await Task.sleep(for: .milliseconds(300))
            #expect(client.frames.filter { $0["op"] as? String == "heartbeat_ack" }.count == 53)
            await client.kill()
        }
    }

    @Test("protocol errors close with their documented codes; subscribing to someone else's conversation is refused")
    func errors() async throws {
        let gatewayId = "gw-native-err-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: Self.environment(gatewayId, heartbeatMilliseconds: 2_000)) { s in
            let a = try await s.user("에이")
            let b = try await s.user("비")
            let c = try await s.user("씨")
            let (_, cid) = try await s.sharedChannel(a, b)
            let port = try #require(s.client.port)
            for (frames, code) in [
                ([#"{"op":"identify","d":{"token":"not-a-jwt"}}"#], 4004),
                ([#"{"op":"dance"}"#], 4001),
                (["not json"], 4002),
                ([#"{"op":"resume","d":{"token":"x","session_id":7}}"#], 4002),
                ([#"{"op":"typing","d":{"conversation_id":"\#(cid)"}}"#], 4003),
                ([#"{"op":"identify","d":{"token":"\#(a.token)"}}"#, #"{"op":"identify","d":{"token":"\#(a.token)"}}"#], 4005),
                ([#"{"op":"resume","d":{"token":"\#(a.token)","session_id":"unknown","seq":1}}"#], 4006),
            ] {
                let client = NativeTestClient(port: port)
                _ = try await client.waitForOp("hello")
                for frame in frames {
                    client.send(frame)
                    try await Task.sleep(for: .milliseconds(100))
                }
                let closed = try await client.closed(timeout: .seconds(20))
                #expect(closed.code == WebSocketErrorCode(codeNumber: code), "\(frames) → \(String(describing: closed.code)) \(closed.reason)")
            }
            // A frame over gateway.native.max-frame-bytes (64 KiB) ends the connection.
            let oversized = NativeTestClient(port: port)
            _ = try await oversized.waitForOp("hello")
            oversized.send(#"{"op":"heartbeat","d":{"pad":"\#(String(repeating: "x", count: 70_000))"}}"#)
            let tooLarge = try await oversized.closed(timeout: .seconds(10))
            #expect(tooLarge.code == .messageTooLarge, "\(String(describing: tooLarge.code)) \(tooLarge.reason)")

            // A message in fragments is one message: identify split over three frames is answered
            // with ready; fragments adding up to more than 64 KiB end the connection with 1009.
            let fragmented = NativeTestClient(port: port)
            _ = try await fragmented.waitForOp("hello")
            fragmented.sendFragments([#"{"op":"ident"#, #"ify","d":{"token":""#, #"\#(a.token)"}}"#])
            try await fragmented.waitFor("ready") { $0.contains { $0["t"] as? String == "ready" } }
            fragmented.sendFragments([
                #"{"op":"heartbeat","d":{"pad":""#, String(repeating: "x", count: 40_000), String(repeating: "y", count: 40_000), #""}}"#,
            ])
            let fragmentsTooLarge = try await fragmented.closed(timeout: .seconds(10))
            #expect(fragmentsTooLarge.code == .messageTooLarge, "\(String(describing: fragmentsTooLarge.code)) \(fragmentsTooLarge.reason)")

            // No identify within the heartbeat interval (2 s here) → 4003; no heartbeat for 1.5 intervals → 4009.
            let silent = NativeTestClient(port: port, heartbeats: false)
            #expect(try await silent.closed(timeout: .seconds(10)).code == WebSocketErrorCode(codeNumber: 4003))
            let (zombie, _) = try await Self.connect(port, c, heartbeats: false)
            #expect(try await zombie.closed(timeout: .seconds(10)).code == WebSocketErrorCode(codeNumber: 4009))

            let (outsider, _) = try await Self.connect(port, c)
            outsider.send(#"{"op":"subscribe","d":{"conversation_id":"\#(cid)"}}"#)
            let error = try await outsider.waitForOp("error")
            #expect(error["code"] as? Int == 4010)
            outsider.send(#"{"op":"typing","d":{"conversation_id":"\#(cid)"}}"#)  // not its conversation: dropped
            outsider.send(#"{"op":"heartbeat","d":{"seq":1}}"#)
            _ = try await outsider.waitForOp("heartbeat_ack")
            await outsider.kill()
        }
    }
}
