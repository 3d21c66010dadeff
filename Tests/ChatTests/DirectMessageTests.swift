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

@Suite("Direct messages through the gateway")
struct DirectMessageTests {
    /// A workspace with `owner` and `others` as members, once chat's read model has them all.
    func workspace(_ s: Stack, _ owner: User, _ others: [User]) async throws -> String {
        let wid = id(try await s.createWorkspace(owner), "workspace_id")
        for user in others { try await s.invite(user, to: wid, by: owner) }
        let general = id(try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/channels", owner))).first, "channel_id")
        for user in [owner] + others { try await s.waitForChatMember(user.id, channel: general) }
        return wid
    }

    @Test("get-or-create is idempotent from both sides; list shows the other participant; chats, cursor and unreads as channels")
    func roomsAndChats() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let a = try await s.user("에이")
            let b = try await s.user("비")
            let wid = try await workspace(s, a, [b])
            let dms = "/v1/workspaces/\(wid)/dms"
            // Both clients open the DM at once: one room.
            async let fromA = s.send(.post, dms, a, json: #"{"opponent_id":"\#(b.id)"}"#)
            async let fromB = s.send(.post, dms, b, json: #"{"opponent_id":"\#(a.id)"}"#)
            let (ra, rb) = (try await fromA, try await fromB)
            #expect(ra.status == .ok && rb.status == .ok, "\(String(buffer: ra.body)) \(String(buffer: rb.body))")
            try expectContractDates(ra)
            let roomA = try #require(jsonObject(ra))
            #expect(Set(roomA.keys) == ["room_id", "createdAt", "user"])
            let room = id(roomA, "room_id")
            #expect(id(jsonObject(rb), "room_id") == room)
            #expect((roomA["user"] as? [String: Any])?["user_id"] as? String == b.id)
            #expect((jsonObject(rb)?["user"] as? [String: Any])?["nickname"] as? String == "에이")
            #expect(id(jsonObject(try await s.send(.post, dms, a, json: #"{"opponent_id":"\#(b.id)"}"#)), "room_id") == room)
            let listed = try #require(jsonArray(try await s.get(dms, b)))
            #expect(listed.map { id($0, "room_id") } == [room])
            #expect((listed.first?["user"] as? [String: Any])?["user_id"] as? String == a.id)

            let chats = "\(dms)/\(room)/chats"
            let before = Timestamp.format(Date().addingTimeInterval(-1))
            async let m1 = s.multipartRequest(.post, chats, a, fields: ["content": "안녕"])
            async let m2 = s.send(.post, chats, b, json: #"{"content":"반가워"}"#)
            let sent = [try await m1, try await m2]
            #expect(sent.allSatisfy { $0.status == .ok })
            let first = try #require(jsonObject(sent[0]))
            #expect(Set(first.keys) == ["dm_id", "room_id", "content", "createdAt", "files", "user"])
            #expect(first["files"] as? [String] == [] && first["room_id"] as? String == room)
            let history = try #require(jsonArray(try await s.get(chats, a)))
            #expect(history.count == 2)
            let last = try #require(history.last?["createdAt"] as? String)
            #expect(try #require(jsonArray(try await s.get(chats + "?cursor_date=\(last)", b))).isEmpty)
            #expect(try #require(jsonArray(try await s.get(chats + "?cursor_date=", b))).count == 2)
            let unread = try #require(jsonObject(try await s.get("\(dms)/\(room)/unreads?after=\(before)", a)))
            #expect(Set(unread.keys) == ["room_id", "count"] && unread["count"] as? Int == 1)
            #expect(jsonObject(try await s.get("\(dms)/\(room)/unreads?after=", a))?["count"] as? Int == 0)
        }
    }

    @Test("refusals: E11 missing opponent, E13 opponent or caller not a member, third parties, unknown rooms, after leaving")
    func refusals() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let a = try await s.user()
            let b = try await s.user()
            let c = try await s.user()
            let outsider = try await s.user()
            let wid = try await workspace(s, a, [b, c])
            let dms = "/v1/workspaces/\(wid)/dms"
            #expect(outcome(try await s.send(.post, dms, a, json: "{}")) == "400 E11")
            #expect(outcome(try await s.send(.post, dms, a, json: #"{"opponent_id":"nope"}"#)) == "400 E11")
            #expect(outcome(try await s.send(.post, dms, a, json: #"{"opponent_id":"\#(outsider.id)"}"#)) == "400 E13")
            #expect(outcome(try await s.send(.post, dms, outsider, json: #"{"opponent_id":"\#(a.id)"}"#)) == "400 E13")
            #expect(outcome(try await s.get(dms, outsider)) == "400 E13")
            let room = id(jsonObject(try await s.send(.post, dms, a, json: #"{"opponent_id":"\#(b.id)"}"#)), "room_id")
            #expect(try await s.send(.post, "\(dms)/\(room)/chats", a, json: #"{"content":"secret"}"#).status == .ok)
            // A third member of the same workspace cannot read or write the pair's room.
            for response in [
                try await s.get("\(dms)/\(room)/chats", c),
                try await s.send(.post, "\(dms)/\(room)/chats", c, json: #"{"content":"hi"}"#),
                try await s.get("\(dms)/\(room)/unreads?after=2024-01-01T00:00:00.000Z", c),
                try await s.get("\(dms)/\(UUID().uuidString)/chats", a),
            ] {
                #expect(outcome(response) == "400 E13", "\(String(buffer: response.body))")
            }
            #expect(try #require(jsonArray(try await s.get(dms, c))).isEmpty)
            // After leaving the workspace, b no longer reaches the room.
            let general = id(try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/channels", a))).first, "channel_id")
            #expect(try await s.get("/v1/workspaces/\(wid)/exit", b).status == .ok)
            try await s.waitForChatMember(b.id, channel: general, present: false)
            #expect(outcome(try await s.get("\(dms)/\(room)/chats", b)) == "400 E13")
            #expect(outcome(try await s.send(.post, "\(dms)/\(room)/chats", b, json: #"{"content":"still here?"}"#)) == "400 E13")
        }
    }

    @Test("chat.dm-message.created: keyed by room id, with both participants; a nonce retry is one event")
    func events() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let a = try await s.user()
            let b = try await s.user()
            let wid = try await workspace(s, a, [b])
            let room = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/dms", a, json: #"{"opponent_id":"\#(b.id)"}"#)), "room_id")
            let chats = "/v1/workspaces/\(wid)/dms/\(room)/chats"
            let first = try await s.send(.post, chats, a, json: #"{"content":"one","nonce":"x1"}"#)
            let retry = try await s.send(.post, chats, a, json: #"{"content":"one","nonce":"x1"}"#)
            #expect(id(jsonObject(first), "dm_id") == id(jsonObject(retry), "dm_id"))
            _ = try await s.send(.post, chats, b, json: #"{"content":"two"}"#)
            let consumer = try TestKafka.groupConsumer(s.cluster, group: "analytics-dm", topics: [Topic.chatMessage.name])
            let seen = try await withTimeout(.seconds(20), "dm events") {
                var seen: [(key: String, event: CloudEvent<ChatEvents.DirectMessageCreated>)] = []
                for try await message in consumer.messages {
                    seen.append((message.keyString ?? "", try EventCoding.decode(ChatEvents.DirectMessageCreated.self, from: message.value ?? [])))
                    if seen.count == 2 { break }
                }
                return seen
            }
            await consumer.close()
            #expect(seen.map(\.event.data.content) == ["one", "two"])
            #expect(seen.allSatisfy { $0.key == room && Set($0.event.data.participants.map(\.description)) == [a.id, b.id] })
        }
    }
}
