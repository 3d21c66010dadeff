import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOWebSocket
import SuiteTesting
import Testing
import TestSupport

/// Live changes on the native protocol (docs/native-gateway.md): edits, deletions and reactions
/// to every follower; read cursors to the reader's other sessions only; edits and deletions of
/// messages a detached session already had, replayed on resume.
@Suite("Native live changes", .serialized)
struct LiveChangesTests {
    @Test(
        "message.edited, message.reactions and message.deleted reach every follower; read.cursor reaches the reader's other session, not others; a resume replays an edit and a deletion made while detached"
    )
    func liveChanges() async throws {
        let gatewayId = "gw-live-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: NativeProtocolTests.environment(gatewayId)) { s in
            let a = try await s.user("에이")
            let b = try await s.user("비")
            let (wid, cid) = try await s.sharedChannel(a, b)
            let channelPath = "/v1/workspaces/\(wid)/channels/\(cid)/chats"
            let replica = try await RealFanoutTests.startReplica(s, "fanout-live")
            let port = try #require(s.client.port)
            let (phone, _) = try await NativeTestClient.connect(port, a)
            let (laptop, _) = try await NativeTestClient.connect(port, a)
            let (bob, _) = try await NativeTestClient.connect(port, b)
            try await NativeProtocolTests.awaitInterest(s, a, channelPath, [phone, laptop, bob])

            let message = id(jsonObject(try await s.send(.post, channelPath, b, json: #"{"content":"원문"}"#)), "chat_id")
            _ = try await s.send(.put, "\(channelPath)/\(message)", b, json: #"{"content":"고침"}"#)
            #expect(try await s.send(.put, "\(channelPath)/\(message)/reactions/%F0%9F%91%8D", a, json: "").status == .ok)
            for client in [phone, laptop, bob] {
                try await client.waitFor("the edit and the reaction") { _ in
                    !client.dispatches("message.edited").isEmpty && !client.dispatches("message.reactions").isEmpty
                }
                let edited = try #require(client.dispatches("message.edited").first?.data)
                #expect(edited["chat_id"] as? String == message && edited["content"] as? String == "고침" && edited["user_id"] as? String == b.id)
                #expect(edited["conversation_id"] as? String == cid && edited["kind"] as? String == "channel" && edited["editedAt"] is String)
                let reaction = try #require(client.dispatches("message.reactions").first?.data)
                #expect(reaction["emoji"] as? String == "👍" && reaction["added"] as? Bool == true && reaction["user_id"] as? String == a.id)
                let summary = try #require((reaction["reactions"] as? [[String: Any]])?.first)
                #expect(summary["count"] as? Int == 1 && summary["users"] as? [String] == [a.id])
            }

            // Alice reads on her phone: her laptop hears of it, Bob does not.
            _ = try await s.send(.put, "/v1/workspaces/\(wid)/channels/\(cid)/read", a, json: "{}")
            try await laptop.waitFor("read.cursor") { _ in !laptop.dispatches("read.cursor").isEmpty }
            let cursor = try #require(laptop.dispatches("read.cursor").first?.data)
            #expect(cursor["conversation_id"] as? String == cid && cursor["readAt"] is String)
            // Deleting is the last change: by then Bob would have had the cursor if it were his.
            _ = try await s.send(.delete, "\(channelPath)/\(message)", b, json: "")
            try await bob.waitFor("the deletion") { _ in bob.dispatches("message.deleted").contains { $0.data["chat_id"] as? String == message } }
            #expect(bob.dispatches("read.cursor").isEmpty, "a read cursor goes to its reader's sessions only")

            // Detached: an older message is edited and another deleted; the resume replays both.
            let older = id(jsonObject(try await s.send(.post, channelPath, b, json: #"{"content":"오래된"}"#)), "chat_id")
            let doomed = id(jsonObject(try await s.send(.post, channelPath, b, json: #"{"content":"지울"}"#)), "chat_id")
            try await laptop.waitFor("both messages") { _ in
                laptop.dispatches("channel.message").contains { $0.data["chat_id"] as? String == doomed }
            }
            let session = try #require(laptop.dispatches("ready").first?.data["session_id"] as? String)
            let seq = laptop.lastSeq
            await laptop.kill()
            _ = try await s.send(.put, "\(channelPath)/\(older)", b, json: #"{"content":"새로 고침"}"#)
            _ = try await s.send(.delete, "\(channelPath)/\(doomed)", b, json: "")
            let resumed = NativeTestClient(port: port)
            _ = try await resumed.waitForOp("hello")
            resumed.resume(a.token, session: session, seq: seq)
            _ = try await resumed.waitForOp("resumed")
            #expect(resumed.dispatches("message.edited").contains { $0.data["chat_id"] as? String == older && $0.data["content"] as? String == "새로 고침" })
            #expect(resumed.dispatches("message.deleted").contains { $0.data["chat_id"] as? String == doomed })
            #expect(resumed.sequence == Array(seq + 1...seq + resumed.sequence.count), "the sequence continues: \(resumed.sequence)")

            for client in [phone, resumed, bob] { await client.kill() }
            try await replica.stop()
        }
    }
}
