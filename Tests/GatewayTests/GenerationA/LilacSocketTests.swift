import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import SuiteTesting
import Testing
import TestSupport

/// Lilac's live chats (docs/generation-a.md): it opens `/ws-channel-{integer channel id}` without
/// credentials and stores a chat only when the `channel` event brings it, in Gen A's `Chatting`
/// shape: the sender's own chat included, once.
@Suite("Gen A (Lilac) Socket.IO namespaces")
struct LilacSocketTests {
    let flow = LilacFlowTests()

    @Test("a chat posted on Gen A reaches Lilac's /ws-channel-{alias} socket once, equal to the REST answer; Gen B's socket gets Gen B's shape")
    func liveChats() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: LilacFlowTests.gateway) { s in
            let fanout = try await s.startFanoutReplica("fanout-lilac")
            let owner = try await flow.signUp(s, "라일락")
            let created = try await flow.lilacMultipart(s, .post, "/v1/workspaces", owner.token, fields: ["name": "소켓 팀", "description": ""], image: jpegBytes)
            let workspace = try #require(jsonObject(created), "\(String(buffer: created.body))")
            let wid = try #require(workspace["workspace_id"] as? Int)
            let detail = try #require(jsonObject(try await flow.lilac(s, .get, "/v1/workspaces/\(wid)", owner.token)))
            let cid = try #require((detail["channels"] as? [[String: Any]])?.first?["channel_id"] as? Int)
            try await s.waitForChatMember(try await flow.userUUID(s, owner.id), channelAlias: cid)
            let channelUUID = try await Self.channelUUID(s, alias: cid)
            let port = try #require(s.client.port)
            // As Lilac connects (polling, then the upgrade), and a Gen B client on the same channel.
            let lilac = try PythonSocketClient.start(.eio4, port: port, namespaces: [("/ws-channel-\(cid)", "channel")])
            let genB = try PythonSocketClient.start(.eio4, port: port, namespaces: [("/ws-channel-\(channelUUID)", "channel")], transports: "websocket")
            let strays = try PythonSocketClient.start(
                .eio4, port: port, namespaces: [("/ws-channel-999999999", "channel"), ("/ws-channel-0\(cid)", "channel")], transports: "websocket")
            try await lilac.waitFor("ready")
            try await genB.waitFor("ready")
            try await strays.waitFor("done")
            #expect(strays.lines("connected").isEmpty, "unknown or non-canonical aliases are refused: \(strays.process.output.suffix(1000))")

            // Interest reaches the fan-out through Kafka: post until Lilac's socket hears one.
            var answers: [[String: Any]] = []
            let chats = "/v1/workspaces/\(wid)/channels/\(flow.path("일반"))/chats"
            try await eventually("Lilac's socket hears a chat", timeout: .seconds(60)) {
                let posted = try await flow.lilacMultipart(s, .post, chats, owner.token, fields: ["content": "실시간 \(answers.count)"])
                answers.append(try #require(jsonObject(posted), "\(String(buffer: posted.body))"))
                try await Task.sleep(for: .milliseconds(200))
                return !lilac.events("channel").isEmpty
            }
            let last = try await flow.lilacMultipart(s, .post, chats, owner.token, fields: ["content": "마지막"])
            let lastAnswer = try #require(jsonObject(last))
            try await eventually("the last chat on both sockets") {
                lilac.events("channel").contains { $0["chat_id"] as? Int == lastAnswer["chat_id"] as? Int }
                    && genB.events("channel").contains { $0["content"] as? String == "마지막" }
            }
            try await Task.sleep(for: .milliseconds(500))
            let received = lilac.events("channel").filter { $0["chat_id"] as? Int == lastAnswer["chat_id"] as? Int }
            #expect(received.count == 1)
            #expect(NSDictionary(dictionary: try #require(received.first)).isEqual(to: lastAnswer), "socket \(received) vs REST \(lastAnswer)")
            let ids = lilac.events("channel").compactMap { $0["chat_id"] as? Int }
            #expect(Set(ids).count == ids.count, "each chat once: \(ids)")
            let genBLast = try #require(genB.events("channel").first { $0["content"] as? String == "마지막" })
            #expect(genBLast["chat_id"] is String && genBLast["channel_id"] as? String == channelUUID)
            try await lilac.stop()
            try await genB.stop()
            try await strays.stop()
            try await fanout.stop()
        }
    }

    static func channelUUID(_ s: Stack, alias: Int) async throws -> String {
        let db = try #require(s.chatDatabase)
        for try await id in try await db.query("SELECT id FROM channels WHERE alias = \(Int64(alias))").decode(UUID.self) {
            return id.uuidString.lowercased()
        }
        Issue.record("no channel with alias \(alias)")
        throw CancellationError()
    }
}
