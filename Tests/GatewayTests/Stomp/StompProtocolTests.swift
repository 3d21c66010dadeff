import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import GatewayApp
import NIOWebSocket
import SuiteTesting
import Testing
import TestSupport

@testable import GatewayApp

/// STOMP over WebSocket (docs/stomp.md, client contract §2.2) against the in-process suite with
/// the real chat-fanout: the protocol's refusals on a raw client (hummingbird-websocket's), and
/// a STOMP sender (stomp.py from PyPI) whose messages reach Socket.IO, native and STOMP
/// receivers exactly once.
@Suite("STOMP over WebSocket", .serialized)
struct StompProtocolTests {
    static func environment(_ gatewayId: String) -> [String: String] {
        ["GATEWAY_ID": gatewayId, "GATEWAY_STOMP_HEARTBEAT_MS": "1000", "GATEWAY_STOMP_CONNECT_TIMEOUT_MS": "3000"]
    }

    static func error(_ client: StompTestClient) async throws -> String {
        try await client.waitFor(.error).headers["message"] ?? ""
    }

    @Test(
        "CONNECTED with version and heart-beat; RECEIPT; ERROR then close for a bad token, another user's user-id, a frame before CONNECT, SENDs refused (foreign room, another user's name, unknown destination, not JSON, reply without parent), an unknown command, a frame over the byte limit, a room of someone else, an unknown subscription; a silent client is dropped"
    )
    func refusals() async throws {
        let gatewayId = "gw-stomp-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: Self.environment(gatewayId)) { s in
            let a = try await s.user("에이")
            let b = try await s.user("비")
            let stranger = try await s.user("씨")
            let (wid, cid) = try await s.sharedChannel(a, b)
            let port = try #require(s.client.port)

            let badToken = StompTestClient(port: port)
            badToken.connect(token: "not-a-token")
            #expect(try await Self.error(badToken) == "authentication failed")
            #expect(try await badToken.closed().code == .policyViolation)

            let otherUser = StompTestClient(port: port, path: "/v1/stomp")
            otherUser.connect(token: a.token, userId: b.id)
            #expect(try await Self.error(otherUser) == "user-id is not the token's user")

            let early = StompTestClient(port: port)
            early.send("SEND\ndestination:/kafka/send-channel-message\ncontent-type:application/json\n\n{}\0")
            #expect(try await Self.error(early) == "not connected: send CONNECT first")
            #expect(try await early.closed().code == .protocolError)

            let client = StompTestClient(port: port)
            client.connect(token: a.token, userId: a.id)
            let connected = try await client.waitFor(.connected)
            #expect(connected.headers["version"] == "1.2" && connected.headers["heart-beat"] == "1000,1000")
            #expect(connected.headers["session"]?.isEmpty == false)
            client.send("SUBSCRIBE\nid:s1\ndestination:/topic/group/\(cid)\nreceipt:r-1\n\n\0")
            #expect(try await client.waitFor(.receipt).headers["receipt-id"] == "r-1")
            client.send("UNSUBSCRIBE\nid:nope\n\n\0")
            #expect(try await Self.error(client) == "no subscription nope")

            let foreign = StompTestClient(port: port)
            foreign.connect(token: stranger.token)
            _ = try await foreign.waitFor(.connected)
            foreign.send("SUBSCRIBE\nid:s1\ndestination:/topic/group/\(cid)\n\n\0")
            #expect(try await Self.error(foreign) == "not a member of /topic/group/\(cid)")
            #expect(try await foreign.closed().code == .protocolError)

            // SENDs that are refused, each on its own connection (an ERROR closes it): to a room
            // the user is not in (chat's E13), in someone else's name, to no destination we
            // know, with a body that is not a JSON object, a reply without its parent.
            let channel = "/kafka/send-channel-message"
            let refusedSends: [(String, String, String)] = [
                (stranger.token, channel, #"{"content":"hi","channelId":"\#(cid)"}"#),
                (a.token, channel, #"{"content":"hi","channelId":"\#(cid)","userId":"\#(b.id)"}"#),
                (a.token, "/kafka/send-everything", #"{"content":"hi","channelId":"\#(cid)"}"#),
                (a.token, channel, "not json"),
                (a.token, "/kafka/send-channel-reply", #"{"content":"hi","channelId":"\#(cid)"}"#),
            ]
            var refusals: [String] = []
            for (token, destination, body) in refusedSends {
                let sender = StompTestClient(port: port)
                sender.connect(token: token)
                _ = try await sender.waitFor(.connected)
                sender.send("SEND\ndestination:\(destination)\nreceipt:r\n\n\(body)\0")
                let error = try await sender.waitFor(.error)
                #expect(error.headers["receipt-id"] == "r", "the ERROR names the failed frame's receipt")
                refusals.append(error.headers["message"] ?? "")
                await sender.stop()
            }
            #expect(
                refusals == [
                    "E13", "userId is not the connected user", "unknown destination", "the body must be a JSON object", "a reply needs a parentId",
                ])
            // None of them was stored.
            let history = try await s.get("/v1/workspaces/\(wid)/channels/\(cid)/chats", a)
            #expect(!String(buffer: history.body).contains(#""content":"hi""#), "refused sends are not stored")

            let unknown = StompTestClient(port: port)
            unknown.connect(token: a.token)
            _ = try await unknown.waitFor(.connected)
            unknown.send("BOGUS\n\n\0")
            #expect(try await Self.error(unknown).contains("unknown command"))

            let huge = StompTestClient(port: port)
            huge.connect(token: a.token)
            _ = try await huge.waitFor(.connected)
            huge.send("SEND\ndestination:/kafka/send-channel-message\n\n" + String(repeating: "x", count: 70_000) + "\0")
            #expect(try await Self.error(huge) == "frame larger than 65536 bytes")
            #expect(try await huge.closed().code == .messageTooLarge)
            // The limit is in bytes: 22 000 Hangul syllables are 66 000 UTF-8 bytes.
            let wide = StompTestClient(port: port)
            wide.connect(token: a.token)
            _ = try await wide.waitFor(.connected)
            wide.send("SEND\ndestination:/kafka/send-channel-message\n\n" + String(repeating: "가", count: 22_000) + "\0")
            #expect(try await Self.error(wide) == "frame larger than 65536 bytes")
            await wide.stop()

            // The server's own heart-beats: a client that sends none (0) but wants one every second
            // is never dropped for silence and hears them.
            let listener = StompTestClient(port: port)
            listener.connect(token: a.token, heartBeat: "0,1000")
            _ = try await listener.waitFor(.connected)
            let beats = ContinuousClock.now + .seconds(20)
            while listener.heartbeatCount < 2, ContinuousClock.now < beats { try await Task.sleep(for: .milliseconds(50)) }
            #expect(listener.heartbeatCount >= 2, "the server sent heart-beats")
            #expect(listener.received.allSatisfy { $0.command != .error })
            await listener.stop()

            // heart-beat 1000,1000 against the server's 1000,1000: both sides every second; this
            // client never sends one, so after twice that it is dropped. (Whether a server beat
            // reaches it first depends on when the once-a-second sweep runs: not asserted here.)
            let silent = StompTestClient(port: port)
            silent.connect(token: a.token, heartBeat: "1000,1000")
            _ = try await silent.waitFor(.connected)
            #expect(try await Self.error(silent) == "no heart-beat from the client")
            #expect(try await silent.closed().code == .policyViolation)

            // No CONNECT at all: dropped after the connect timeout (3 s here).
            let mute = StompTestClient(port: port)
            #expect(try await Self.error(mute) == "no CONNECT in time")

            // The suite is still up for everyone else.
            let after = StompTestClient(port: port)
            after.connect(token: b.token)
            _ = try await after.waitFor(.connected)
            for c in [badToken, otherUser, early, client, foreign, unknown, huge, silent, mute, after] { await c.stop() }
        }
    }

    @Test(
        "a STOMP sender's message, edit and deletion reach Socket.IO, native and STOMP receivers exactly once; typing reaches the others; REST messages reach STOMP"
    )
    func crossProtocol() async throws {
        let gatewayId = "gw-stomp-x-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: Self.environment(gatewayId)) { s in
            let a = try await s.user("에이")
            let b = try await s.user("비")
            let (wid, cid) = try await s.sharedChannel(a, b)
            let channelPath = "/v1/workspaces/\(wid)/channels/\(cid)/chats"
            let replica = try await RealFanoutTests.startReplica(s, "fanout-stomp")
            let port = try #require(s.client.port)

            let (native, _) = try await NativeTestClient.connect(port, b)
            let socketIO = try PythonSocketClient.start(
                .eio4, port: port, namespaces: [("/ws-channel-\(cid)", "channel,message.edited,message.deleted")], transports: "websocket")
            _ = try await socketIO.waitFor("ready")
            let receiver = StompTestClient(port: port)
            receiver.connect(token: b.token, userId: b.id)
            _ = try await receiver.waitFor(.connected)
            receiver.send("SUBSCRIBE\nid:sub-0\ndestination:/topic/group/\(cid)\n\n\0")
            let channel = "/kafka/send-channel-message"
            let sender = try PythonStompClient.start(
                port: port, token: a.token, userId: a.id,
                steps: [
                    ["op": "subscribe", "destination": "/topic/group/\(cid)", "id": "mine"],
                    ["op": "wait", "type": "message", "message": "go"],
                    ["op": "send", "destination": channel, "body": ["content": "from stomp", "channelId": cid, "userId": a.id, "name": "에이"]],
                    ["op": "wait", "type": "message", "message": "from stomp"],
                    ["op": "send", "destination": "/kafka/send-channel-typing", "body": ["content": "에이", "type": "typing", "channelId": cid]],
                    [
                        "op": "send", "destination": "/kafka/send-channel-modify",
                        "body": ["id": "{{message.id}}", "content": "edited", "userId": a.id, "type": "modify", "channelId": cid],
                    ],
                    ["op": "wait", "type": "modify", "message": "edited"],
                    [
                        "op": "send", "destination": "/kafka/send-channel-delete",
                        "body": ["id": "{{message.id}}", "userId": a.id, "type": "delete", "channelId": cid],
                    ],
                    ["op": "wait", "type": "delete"],
                ])
            try await s.probeUntilDelivered("every receiver gets REST messages", to: channelPath, as: b) {
                let content: ([String: Any]) -> Bool = { ($0["content"] as? String ?? $0["message"] as? String ?? "").hasPrefix("probe") }
                return native.dispatches("channel.message").contains { content($0.data) } && socketIO.events("channel").contains(where: content)
                    && receiver.messages.contains(where: content) && sender.frames.contains(where: content)
            }
            _ = try await s.send(.post, channelPath, b, json: #"{"content":"go"}"#)
            try await sender.waitFor("done")
            #expect(sender.lines("timeout").isEmpty, "the sender's steps: \(sender.process.output.suffix(2000))")
            #expect(sender.lines("error").isEmpty)

            let fromStomp = try #require(sender.frames.first { $0["message"] as? String == "from stomp" })
            let messageId = try #require(fromStomp["id"] as? String)
            // Named by their integer ids, as Smooth's client knows them.
            let (aAlias, cAlias) = (try await s.userAlias(a.id), try await s.channelAlias(cid))
            #expect(fromStomp["type"] as? String == "message" && fromStomp["userId"] as? String == String(aAlias) && fromStomp["name"] as? String == "에이")
            #expect(fromStomp["channelId"] as? String == String(cAlias))
            #expect((fromStomp["time"] as? String)?.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}/) != nil, "zone-less (Smooth appends Z)")
            try await native.waitFor("the deletion") { _ in native.dispatches("message.deleted").contains { $0.data["chat_id"] as? String == messageId } }
            try await receiver.waitFor("the deletion") { _ in receiver.messages.contains { $0["type"] as? String == "delete" } }
            try await eventually("Socket.IO gets the deletion") { socketIO.events("message.deleted").contains { $0["chat_id"] as? String == messageId } }

            // Exactly once on every protocol.
            #expect(native.dispatches("channel.message").filter { $0.data["chat_id"] as? String == messageId }.count == 1)
            #expect(socketIO.events("channel").filter { $0["chat_id"] as? String == messageId }.count == 1)
            #expect(receiver.messages.filter { $0["id"] as? String == messageId && $0["type"] as? String == "message" }.count == 1)
            #expect(sender.frames.filter { $0["id"] as? String == messageId && $0["type"] as? String == "message" }.count == 1)
            // The edit, in each protocol's shape.
            let edited = try #require(native.dispatches("message.edited").first { $0.data["chat_id"] as? String == messageId }?.data)
            #expect(edited["content"] as? String == "edited" && edited["conversation_id"] as? String == cid && edited["kind"] as? String == "channel")
            #expect(socketIO.events("message.edited").contains { $0["chat_id"] as? String == messageId && $0["content"] as? String == "edited" })
            #expect(
                receiver.messages.contains { $0["type"] as? String == "modify" && $0["id"] as? String == messageId && $0["message"] as? String == "edited" })
            #expect(receiver.messages.contains { $0["type"] as? String == "delete" && $0["id"] as? String == messageId })
            // Typing: to the others (the STOMP receiver with the typist's name, native), never back to the typist.
            #expect(receiver.messages.contains { $0["type"] as? String == "typing" && $0["name"] as? String == "에이" })
            try await native.waitFor("typing") { _ in native.dispatches("typing").contains { $0.data["user_id"] as? String == a.id } }
            #expect(!sender.frames.contains { $0["type"] as? String == "typing" })
            // The stored message went through chat: history has the edit, then the deletion hides it.
            let history = try await s.get(channelPath, a)
            #expect(!String(buffer: history.body).contains(messageId))

            try await sender.stop()
            try await socketIO.stop()
            await receiver.stop()
            await native.kill()
            try await replica.stop()
        }
    }

    @Test(
        "a community signal reaches every subscriber of the community, the sender included (a broadcast, as the original broker does); join-channel marks the room read; leaving a channel ends its subscription with `out` and no more of its messages"
    )
    func communityReadAndRevocation() async throws {
        let gatewayId = "gw-stomp-c-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: Self.environment(gatewayId)) { s in
            let a = try await s.user("에이")
            let b = try await s.user("비")
            let (wid, general) = try await s.sharedChannel(a, b)
            let extra = id(try await s.createChannel(a, in: wid), "channel_id")
            #expect(try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(extra)/join", b, json: "{}").status == .ok)
            try await s.waitForChatMember(b.id, channel: extra)
            let extraPath = "/v1/workspaces/\(wid)/channels/\(extra)/chats"
            let replica = try await RealFanoutTests.startReplica(s, "fanout-stomp-c")
            let port = try #require(s.client.port)

            let alice = StompTestClient(port: port)
            alice.connect(token: a.token)
            _ = try await alice.waitFor(.connected)
            alice.send("SUBSCRIBE\nid:c\ndestination:/topic/community/\(wid)\n\n\0")
            let bob = StompTestClient(port: port)
            bob.connect(token: b.token)
            _ = try await bob.waitFor(.connected)
            bob.send("SUBSCRIBE\nid:c\ndestination:/topic/community/\(wid)\nreceipt:c\n\n\0")
            bob.send("SUBSCRIBE\nid:x\ndestination:/topic/group/\(extra)\nreceipt:x\n\n\0")
            try await bob.waitFor("both receipts") { $0.filter { $0.command == .receipt }.count == 2 }
            try await s.probeUntilDelivered("bob gets the extra channel's messages", to: extraPath, as: a) {
                bob.messages.contains { ($0["message"] as? String ?? "").hasPrefix("probe") }
            }

            // The signal: to every community subscription, Alice's own too. Retried until the
            // fan-out knows this gateway's interest in the workspace (announced with the subscriptions).
            try await eventually("bob gets alice's community signal", timeout: .seconds(30)) {
                alice.send(
                    "SEND\ndestination:/kafka/community-signaling\ncontent-type:application/json\n\n"
                        + #"{"user_id":"\#(a.id)","type":"before-enter","community_id":"\#(wid)"}"# + "\0")
                try await Task.sleep(for: .milliseconds(300))
                return bob.messages.contains { $0["type"] as? String == "before-enter" }
            }
            let signal = try #require(bob.messages.first { $0["type"] as? String == "before-enter" })
            #expect(signal["userId"] as? String == a.id && signal["communityId"] as? String == wid)
            try await alice.waitFor("alice's own signal") { _ in alice.messages.contains { $0["type"] as? String == "before-enter" } }
            // Her signals to a community she subscribes to are never refused (no chat check to fail).
            #expect(!alice.received.contains { $0.command == .error })
            // Somebody who is not a member naming the community: chat's check refuses it (ERROR,
            // then close), and no subscriber hears it.
            let c = try await s.user("씨")
            let outsider = StompTestClient(port: port)
            outsider.connect(token: c.token)
            _ = try await outsider.waitFor(.connected)
            outsider.send(
                "SEND\ndestination:/kafka/community-signaling\ncontent-type:application/json\n\n"
                    + #"{"user_id":"\#(c.id)","type":"intrude","community_id":"\#(wid)"}"# + "\0")
            #expect(try await outsider.waitFor(.error).headers["message"] == "not a member of the community")
            await outsider.stop()
            // A member's signal whose type is not 1–32 of a–z and - (too long, upper case, empty,
            // a control character, not a string): refused the same way, and no subscriber hears it.
            let badTypes = ["\"" + String(repeating: "a", count: 33) + "\"", "\"Before-Enter\"", "\"\"", #""x\u0000""#, "7"]
            for type in badTypes {
                let member = StompTestClient(port: port)
                member.connect(token: a.token)
                _ = try await member.waitFor(.connected)
                member.send(
                    "SEND\ndestination:/kafka/community-signaling\ncontent-type:application/json\n\n"
                        + #"{"user_id":"\#(a.id)","type":\#(type),"community_id":"\#(wid)"}"# + "\0")
                #expect(try await member.waitFor(.error).headers["message"] == "type must be 1–32 of a–z and -", "type \(type)")
                await member.stop()
            }

            // join-channel marks the room read: Bob's unread count of the extra channel drops to 0.
            bob.send(
                "SEND\ndestination:/kafka/join-channel\nreceipt:read\n\n" + #"{"user_id":"\#(b.id)","type":"state","channel_id":"c-\#(extra)"}"# + "\0")
            try await bob.waitFor("the read receipt") { $0.contains { $0.command == .receipt && $0.headers["receipt-id"] == "read" } }
            let unreads = try await s.get("/v1/workspaces/\(wid)/unreads", b)
            let summary = (jsonObject(unreads)?["channels"] as? [[String: Any]])?.first { $0["channel_id"] as? String == extra }
            #expect(summary?["count"] as? Int == 0 && summary?["readAt"] is String, "unreads: \(String(buffer: unreads.body))")

            // Leaving the channel ends the subscription with `out`; later messages do not arrive.
            #expect(try await s.get("/v1/workspaces/\(wid)/channels/\(extra)/exit", b).status == .ok)
            try await bob.waitFor("out") { _ in bob.messages.contains { $0["type"] as? String == "out" && $0["channelId"] as? String == extra } }
            let secret = id(jsonObject(try await s.send(.post, extraPath, a, json: #"{"content":"after"}"#)), "chat_id")
            _ = try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(general)/chats", a, json: #"{"content":"general"}"#)
            try await Task.sleep(for: .seconds(1))
            #expect(!bob.messages.contains { $0["id"] as? String == secret })
            #expect(!bob.messages.contains { $0["type"] as? String == "intrude" })
            let heardSignals = bob.messages.filter { $0["communityId"] != nil }.compactMap { $0["type"] as? String }
            #expect(!heardSignals.isEmpty && heardSignals.allSatisfy { $0 == "before-enter" }, "signals heard: \(heardSignals)")
            for c in [alice, bob] { await c.stop() }
            try await replica.stop()
        }
    }
}

/// stomp.py's WebSocket client running `clients/stomp_steps.py`, observed through its JSON lines.
struct PythonStompClient: Sendable {
    let process: TestProcess
    let stopFile: String

    static func start(port: Int, token: String, userId: String?, steps: [[String: Any]]) throws -> PythonStompClient {
        let python = PythonSocketClient.repository.appendingPathComponent(".devdata/pyenv/bin/python").path
        let script = PythonSocketClient.repository.appendingPathComponent("Tests/GatewayTests/Realtime/clients/stomp_steps.py").path
        let stopFile = FileManager.default.temporaryDirectory.appendingPathComponent("stomp-stop-\(UUID().uuidString)").path
        var arguments = ["-u", script, "--url", "ws://127.0.0.1:\(port)/my-chat/websocket", "--token", token, "--stop-file", stopFile]
        if let userId { arguments += ["--user-id", userId] }
        for step in steps {
            arguments += ["--step", String(decoding: try JSONSerialization.data(withJSONObject: step), as: UTF8.self)]
        }
        return PythonStompClient(process: try TestProcess(path: python, arguments: arguments), stopFile: stopFile)
    }

    var lines: [[String: Any]] {
        process.output.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("{") else { return nil }
            return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    func lines(_ type: String) -> [[String: Any]] { lines.filter { $0["type"] as? String == type } }

    /// The MESSAGE bodies received.
    var frames: [[String: Any]] { lines("frame").compactMap { $0["body"] as? [String: Any] } }

    func waitFor(_ type: String, timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if !lines(type).isEmpty { return }
            if process.reap() != nil { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("no \(type) line from the STOMP client:\n\(process.output.suffix(3000))")
        throw CancellationError()
    }

    func stop() async throws {
        _ = FileManager.default.createFile(atPath: stopFile, contents: nil)
        if try await process.waitForExit(timeout: .seconds(10)) == nil {
            process.signal(SIGKILL)
            _ = try await process.waitForExit(timeout: .seconds(5))
        }
        try? FileManager.default.removeItem(atPath: stopFile)
    }
}

extension StompProtocolTests {
    /// Sessions connected together (a reconnect storm after a restart) used to get their server
    /// heart-beats in the same sweep, interval after interval (docs/benchmarks.md, part 30). With
    /// a 4 s interval each first heart-beat is due within 4 s of the CONNECT, spread by
    /// `HeartbeatPhases` (the sweep runs each second); without the phases all twelve came in one
    /// sweep.
    @Test(
        "client heart-beats taken on the socket's loop keep a connection alive; an EOL inside a frame split over messages is still the frame's; a client that stops is dropped"
    )
    func clientHeartBeats() async throws {
        let gatewayId = "gw-stomp-hb-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: Self.environment(gatewayId)) { s in
            let a = try await s.user("심장")
            let b = try await s.user("박동")
            let (_, cid) = try await s.sharedChannel(a, b)
            let port = try #require(s.client.port)
            let client = StompTestClient(port: port)
            // The client beats every second; the server drops it after two silent seconds.
            client.connect(token: a.token, heartBeat: "1000,0")
            _ = try await client.waitFor(.connected)
            for beat in 0..<12 {
                client.send(beat.isMultiple(of: 2) ? "\n" : "\r\n")
                if beat == 5 {
                    // A SUBSCRIBE in three messages: its blank line alone is not a heart-beat.
                    client.send("SUBSCRIBE\nid:s1\ndestination:/topic/group/\(cid)\nreceipt:r-split\n")
                    client.send("\n")
                    client.send("\0")
                }
                try await Task.sleep(for: .milliseconds(400))
            }
            let frames = try await client.waitFor("the split frame's receipt") { $0.contains { $0.command == .receipt } }
            #expect(frames.first { $0.command == .receipt }?.headers["receipt-id"] == "r-split")
            #expect(!frames.contains { $0.command == .error }, "\(frames.map(\.command))")
            // 4.8 s of heart-beats every 0.4 s kept it; silence ends it.
            #expect(try await Self.error(client) == "no heart-beat from the client")
            await client.stop()
        }
    }

    @Test("sessions connected together get their first server heart-beats spread over the interval")
    func firstHeartBeatsSpread() async throws {
        try await Stack.run(gateway: ["GATEWAY_STOMP_HEARTBEAT_MS": "4000"]) { s in
            let user = try await s.user("박동")
            let port = try #require(s.client.port)
            let start = ContinuousClock.now
            let clients = (0..<12).map { _ in StompTestClient(port: port) }
            for client in clients { client.connect(token: user.token, heartBeat: "0,4000") }
            for client in clients { _ = try await client.waitFor(.connected) }
            #expect(ContinuousClock.now - start < .seconds(1), "the CONNECTs took \(ContinuousClock.now - start)")
            var arrivals: [Int: Duration] = [:]
            let deadline = start + .seconds(10)
            while arrivals.count < clients.count, ContinuousClock.now < deadline {
                for (index, client) in clients.enumerated() where arrivals[index] == nil && client.heartbeatCount > 0 {
                    arrivals[index] = ContinuousClock.now - start
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            for client in clients { await client.stop() }
            let times = arrivals.values.sorted()
            #expect(times.count == clients.count, "every session heard a heart-beat: \(times)")
            let first = try #require(times.first)
            let last = try #require(times.last)
            #expect(last < .seconds(8), "every first heart-beat within twice the interval: \(times)")
            #expect(last - first >= .seconds(2), "the first heart-beats spread over the interval: \(times)")
            #expect(Set(times.map { Int($0 / .seconds(1)) }).count >= 3, "the first heart-beats came in at least three sweeps: \(times)")
        }
    }
}
