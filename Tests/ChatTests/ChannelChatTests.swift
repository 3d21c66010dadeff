import Common
import Events
import Foundation
import HTTPTypes
import HummingbirdTesting
import Kafka
import NIOCore
import PostgresNIO
import SuiteTesting
import Testing
import TestSupport

@Suite("Channel chats through the gateway")
struct ChannelChatTests {
    struct Room {
        let workspace: String
        let channel: String
        var chats: String { "/v1/workspaces/\(workspace)/channels/\(channel)/chats" }
        var unreads: String { "/v1/workspaces/\(workspace)/channels/\(channel)/unreads" }
    }

    /// A workspace with `owner` and `member`; its default channel, once chat knows both are in it.
    func room(_ s: Stack, _ owner: User, _ member: User) async throws -> Room {
        let wid = id(try await s.createWorkspace(owner), "workspace_id")
        try await s.invite(member, to: wid, by: owner)
        let channel = id(try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/channels", owner))).first, "channel_id")
        try await s.waitForChatMember(owner.id, channel: channel)
        try await s.waitForChatMember(member.id, channel: channel)
        return Room(workspace: wid, channel: channel)
    }

    func post(_ s: Stack, _ room: Room, _ user: User, _ content: String, nonce: String? = nil) async throws -> TestResponse {
        var fields = ["content": content]
        if let nonce { fields["nonce"] = nonce }
        return try await s.multipartRequest(.post, room.chats, user, fields: fields)
    }

    @Test("send (multipart and JSON), history with the contract's exclusive cursor, unread counts")
    func sendHistoryUnreads() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user("주인")
            let member = try await s.user("멤버")
            let room = try await room(s, owner, member)
            let start = Timestamp.format(Date().addingTimeInterval(-1))

            // Three sends at once: the same millisecond window.
            async let a = post(s, room, owner, "첫번째")
            async let b = post(s, room, member, "두번째")
            async let c = s.send(.post, room.chats, owner, json: #"{"content":"세번째"}"#)
            let sent = [try await a, try await b, try await c]
            for response in sent {
                #expect(response.status == .ok, "\(String(buffer: response.body))")
                try expectContractDates(response)
            }
            let first = try #require(jsonObject(sent[0]))
            #expect(Set(first.keys) == ["channel_id", "channelName", "chat_id", "content", "createdAt", "files", "user"])
            #expect(first["channelName"] as? String == "일반" && first["files"] as? [String] == [])
            let user = try #require(first["user"] as? [String: Any])
            #expect(user["user_id"] as? String == owner.id && user["nickname"] as? String == "주인" && user["email"] as? String == owner.email)

            let all = try #require(jsonArray(try await s.get(room.chats, member)))
            #expect(all.count == 3)
            let times = all.map { $0["createdAt"] as? String ?? "" }
            #expect(times == times.sorted() && Set(times).count == 3, "oldest first, one time per message: \(times)")
            #expect(Set(all.map { id($0, "chat_id") }) == Set(sent.compactMap { jsonObject($0)?["chat_id"] as? String }))
            #expect(try #require(jsonArray(try await s.get(room.chats + "?cursor_date=", member))).count == 3)
            // The client's echoed cursor: nothing repeated, nothing missed.
            let afterFirst = try #require(jsonArray(try await s.get(room.chats + "?cursor_date=\(times[0])", member)))
            #expect(afterFirst.map { id($0, "chat_id") } == all.dropFirst().map { id($0, "chat_id") })
            #expect(try #require(jsonArray(try await s.get(room.chats + "?cursor_date=\(times[2])", member))).isEmpty)
            let fourth = try await post(s, room, member, "네번째")
            let newer = try #require(jsonArray(try await s.get(room.chats + "?cursor_date=\(times[2])", owner)))
            #expect(newer.map { id($0, "chat_id") } == [id(jsonObject(fourth), "chat_id")])
            #expect(outcome(try await s.get(room.chats + "?cursor_date=yesterday", owner)) == "400 E11")

            // Unreads: own messages excluded; no `after` = 0.
            let unread = try #require(jsonObject(try await s.get(room.unreads + "?after=\(start)", owner)))
            #expect(unread["channel_id"] as? String == room.channel && unread["name"] as? String == "일반")
            #expect(unread["count"] as? Int == 2)
            #expect(jsonObject(try await s.get(room.unreads + "?after=\(start)", member))?["count"] as? Int == 2)
            #expect(jsonObject(try await s.get(room.unreads + "?after=\(times[2])", owner))?["count"] as? Int == 1)
            #expect(jsonObject(try await s.get(room.unreads + "?after=", owner))?["count"] as? Int == 0)
            #expect(jsonObject(try await s.get(room.unreads, owner))?["count"] as? Int == 0)
        }
    }

    @Test("every message's own createdAt, echoed as the cursor, returns exactly the messages after it (20 messages)")
    func exactCursor() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let member = try await s.user()
            let room = try await room(s, owner, member)
            for i in 0..<20 { #expect(try await post(s, room, i % 2 == 0 ? owner : member, "#\(i)").status == .ok) }
            let all = try #require(jsonArray(try await s.get(room.chats, owner)))
            #expect(all.map { $0["content"] as? String } == (0..<20).map { "#\($0)" })
            for (i, message) in all.enumerated() {
                let cursor = try #require(message["createdAt"] as? String)
                let after = try #require(jsonArray(try await s.get(room.chats + "?cursor_date=\(cursor)", owner)))
                #expect(after.map { id($0, "chat_id") } == all.dropFirst(i + 1).map { id($0, "chat_id") }, "cursor \(cursor) of #\(i)")
                let unread = jsonObject(try await s.get(room.unreads + "?after=\(cursor)", owner))?["count"] as? Int
                #expect(unread == all.dropFirst(i + 1).filter { ($0["user"] as? [String: Any])?["user_id"] as? String != owner.id }.count)
            }
        }
    }

    @Test("refusals: E11 empty or oversized content, E13 non-member or unknown channel, E02 without a token")
    func refusals() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let member = try await s.user()
            let outsider = try await s.user()
            let room = try await room(s, owner, member)
            #expect(outcome(try await post(s, room, owner, "   ")) == "400 E11")
            #expect(outcome(try await s.send(.post, room.chats, owner, json: "{}")) == "400 E11")
            #expect(outcome(try await post(s, room, owner, String(repeating: "가", count: 10_001))) == "400 E11")
            #expect(outcome(try await post(s, room, owner, "x", nonce: String(repeating: "n", count: 65))) == "400 E11")
            for response in [
                try await post(s, room, outsider, "let me in"),
                try await s.get(room.chats, outsider),
                try await s.get(room.unreads + "?after=2024-01-01T00:00:00.000Z", outsider),
                try await s.get("/v1/workspaces/\(room.workspace)/channels/\(UUID().uuidString)/chats", owner),
                try await s.get("/v1/workspaces/\(UUID().uuidString)/channels/\(room.channel)/chats", owner),
            ] {
                #expect(outcome(response) == "400 E13", "\(String(buffer: response.body))")
            }
            #expect(outcome(try await s.get(room.chats, nil)) == "401 E02")
            #expect(try #require(jsonArray(try await s.get(room.chats, owner))).isEmpty)
        }
    }

    @Test("nonce: the same send retried 3 times concurrently is one message")
    func nonce() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let member = try await s.user()
            let room = try await room(s, owner, member)
            let racing = s.onOwnConnections()  // really at once, not queued on one connection
            async let a = post(racing, room, member, "한 번만", nonce: "retry-1")
            async let b = post(racing, room, member, "한 번만", nonce: "retry-1")
            async let c = post(racing, room, member, "한 번만", nonce: "retry-1")
            let responses = [try await a, try await b, try await c]
            #expect(responses.allSatisfy { $0.status == .ok })
            #expect(Set(responses.map { id(jsonObject($0), "chat_id") }).count == 1)
            #expect(Set(responses.map { jsonObject($0)?["createdAt"] as? String ?? "" }).count == 1)
            #expect(try #require(jsonArray(try await s.get(room.chats, owner))).count == 1)
            // The same nonce from another sender is another message.
            #expect(try await post(s, room, owner, "different sender", nonce: "retry-1").status == .ok)
            #expect(try #require(jsonArray(try await s.get(room.chats, owner))).count == 2)
        }
    }

    @Test("membership comes from chat's read model: a workspace member it has not caught up with joins by writing; refused after leaving the workspace")
    func readModelLag() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let member = try await s.user()
            let room = try await room(s, owner, member)
            let cid = id(try await s.createChannel(owner, in: room.workspace, name: "side"), "channel_id")
            let side = Room(workspace: room.workspace, channel: cid)
            try await s.waitForChatMember(owner.id, channel: cid)
            // Lag: the workspace has the member (join just answered 200), chat may not yet. Hold the
            // read model back deterministically by removing the row the join event (re)creates:
            // the member of the workspace is let in by the send itself (explore-and-join), and the
            // workspace, which has them already, changes nothing.
            let db = try #require(s.chatDatabase)
            #expect(try await s.request(.post, "/v1/workspaces/\(room.workspace)/channels/\(cid)/join", token: member.token).status == .ok)
            try await s.waitForChatMember(member.id, channel: cid)
            _ = try await db.query("DELETE FROM channel_members WHERE channel_id = \(UUID(uuidString: cid)!) AND user_id = \(UUID(uuidString: member.id)!)")
            #expect(try await post(s, side, member, "before chat caught up").status == .ok)
            #expect(try await post(s, side, member, "now").status == .ok)
            // Leaving the workspace: once chat applied the leave event, the former member can
            // neither send nor read (nor join by doing so).
            #expect(try await s.get("/v1/workspaces/\(room.workspace)/exit", member).status == .ok)
            try await s.waitForChatMember(member.id, channel: cid, present: false)
            #expect(outcome(try await post(s, side, member, "after leaving")) == "400 E13")
            #expect(outcome(try await s.get(side.chats, member)) == "400 E13")
            // Deleting the channel removes it (and its messages) from chat.
            #expect(try await s.request(.delete, "/v1/workspaces/\(room.workspace)/channels/\(cid)", token: owner.token).status == .ok)
            try await s.waitForChatMember(owner.id, channel: cid, present: false)
            #expect(outcome(try await s.get(side.chats, owner)) == "400 E13")
        }
    }

    @Test("chat.message.v1: one created event per message, keyed by channel id, in send order")
    func events() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let member = try await s.user()
            let room = try await room(s, owner, member)
            var sent: [String] = []
            for i in 0..<5 { sent.append(id(jsonObject(try await post(s, room, i % 2 == 0 ? owner : member, "m\(i)", nonce: "n\(i)")), "chat_id")) }
            _ = try await post(s, room, owner, "m0", nonce: "n0")  // a retry: no second event
            let consumer = try TestKafka.groupConsumer(s.cluster, group: "analytics-chat", topics: [Topic.chatMessage.name])
            let events = try await withTimeout(.seconds(20), "chat.message.v1") {
                var seen: [(key: String, event: CloudEvent<ChatEvents.ChannelMessageCreated>)] = []
                for try await message in consumer.messages {
                    seen.append((message.keyString ?? "", try EventCoding.decode(ChatEvents.ChannelMessageCreated.self, from: message.value ?? [])))
                    if seen.count == 5 { break }
                }
                return seen
            }
            await consumer.close()
            #expect(events.map(\.event.data.messageId.description) == sent)
            #expect(events.allSatisfy { $0.key == room.channel && $0.event.subject == room.channel })
            #expect(events[1].event.data.sender.userId.description == member.id && events[1].event.data.content == "m1")
        }
    }
}
