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

/// The additive message features: replies, @mentions, edit, delete, reactions — channels and DMs.
@Suite("Message replies, mentions, edits, deletes and reactions")
struct MessageChangeTests {
    struct Place {
        let workspace: String
        let prefix: String
        var chats: String { prefix + "/chats" }
        func chat(_ id: String) -> String { "\(prefix)/chats/\(id)" }
        func reaction(_ id: String, _ emoji: String) -> String {
            "\(prefix)/chats/\(id)/reactions/\(emoji.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? emoji)"
        }
    }

    /// A workspace of `owner` with `others` invited; its default channel once chat has them all.
    static func channel(_ s: Stack, _ owner: User, _ others: [User]) async throws -> Place {
        let wid = id(try await s.createWorkspace(owner), "workspace_id")
        for user in others { try await s.invite(user, to: wid, by: owner) }
        let cid = id(try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/channels", owner))).first, "channel_id")
        for user in [owner] + others { try await s.waitForChatMember(user.id, channel: cid) }
        return Place(workspace: wid, prefix: "/v1/workspaces/\(wid)/channels/\(cid)")
    }

    static func dm(_ s: Stack, _ a: User, _ b: User, in place: Place) async throws -> Place {
        let room = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(place.workspace)/dms", a, json: #"{"opponent_id":"\#(b.id)"}"#)), "room_id")
        return Place(workspace: place.workspace, prefix: "/v1/workspaces/\(place.workspace)/dms/\(room)")
    }

    func send(_ s: Stack, _ place: Place, _ user: User, _ json: String) async throws -> [String: Any] {
        let response = try await s.send(.post, place.chats, user, json: json)
        #expect(response.status == .ok, "send: \(String(buffer: response.body))")
        return try #require(jsonObject(response))
    }

    @Test("replies carry parent_id; a parent from elsewhere or unknown is E13, a malformed one E11; plain messages keep the contract's keys")
    func replies() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user("주인")
            let member = try await s.user("멤버")
            let place = try await Self.channel(s, owner, [member])
            let parent = try await send(s, place, owner, #"{"content":"질문"}"#)
            #expect(Set(parent.keys) == ["channel_id", "channelName", "chat_id", "content", "createdAt", "files", "user"])
            let reply = try await send(s, place, member, #"{"content":"답변","parent_id":"\#(id(parent, "chat_id"))"}"#)
            #expect(reply["parent_id"] as? String == id(parent, "chat_id"))
            // Multipart, as the iOS clients send.
            let multipartReply = try await s.multipartRequest(.post, place.chats, owner, fields: ["content": "또", "parent_id": id(reply, "chat_id")])
            #expect(jsonObject(multipartReply)?["parent_id"] as? String == id(reply, "chat_id"))
            let history = try #require(jsonArray(try await s.get(place.chats, member)))
            #expect(history.map { $0["parent_id"] as? String } == [nil, id(parent, "chat_id"), id(reply, "chat_id")])

            let dm = try await Self.dm(s, owner, member, in: place)
            let elsewhere = try await s.send(.post, dm.chats, owner, json: #"{"content":"x","parent_id":"\#(id(parent, "chat_id"))"}"#)
            #expect(outcome(elsewhere) == "400 E13")
            #expect(outcome(try await s.send(.post, place.chats, owner, json: #"{"content":"x","parent_id":"\#(UUID().uuidString)"}"#)) == "400 E13")
            #expect(outcome(try await s.send(.post, place.chats, owner, json: #"{"content":"x","parent_id":"nope"}"#)) == "400 E11")
        }
    }

    @Test("mentions: @nickname and <@id> of members are stored and returned; outsiders and prefixes are not mentions")
    func mentions() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user("주인")
            let kim = try await s.user("김철수")
            let lee = try await s.user("이영희")
            let outsider = try await s.user("외부인")
            let place = try await Self.channel(s, owner, [kim, lee])
            let message = try await send(s, place, owner, #"{"content":"@김철수 님, <@\#(lee.id)> 님 그리고 @외부인 @김철수님아닌"}"#)
            #expect(Set(message["mentions"] as? [String] ?? []) == [kim.id.lowercased(), lee.id.lowercased()])
            let plain = try await send(s, place, owner, #"{"content":"@김철수님아닌 사람, <@\#(outsider.id)>"}"#)
            #expect(plain["mentions"] == nil, "only members, only whole nicknames: \(plain)")
            let db = try #require(s.chatDatabase)
            let stored = try await db.query("SELECT cardinality(mentions) FROM messages WHERE id = \(try #require(UUID(uuidString: id(message, "chat_id"))))")
            for try await count in stored.decode(Int.self) { #expect(count == 2) }
            // In a DM only the two participants can be mentioned.
            let dm = try await Self.dm(s, owner, kim, in: place)
            let direct = try await send(s, dm, owner, #"{"content":"@김철수 @이영희"}"#)
            #expect(direct["mentions"] as? [String] == [kim.id.lowercased()])
        }
    }

    @Test("edit and delete: the sender only (E14), E11 empty, E13 unknown or deleted; history and unreads follow")
    func editAndDelete() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user("주인")
            let member = try await s.user("멤버")
            let outsider = try await s.user()
            let place = try await Self.channel(s, owner, [member])
            let start = Timestamp.format(Date().addingTimeInterval(-1))
            let first = try await send(s, place, member, #"{"content":"오타있음"}"#)
            let second = try await send(s, place, member, #"{"content":"둘째"}"#)
            let chat = id(first, "chat_id")

            let edited = try await s.send(.put, place.chat(chat), member, json: #"{"content":"오타 없음 @주인"}"#)
            #expect(edited.status == .ok, "\(String(buffer: edited.body))")
            try expectContractDates(edited)
            let body = try #require(jsonObject(edited))
            #expect(body["content"] as? String == "오타 없음 @주인" && body["createdAt"] as? String == first["createdAt"] as? String)
            #expect(body["editedAt"] is String && body["mentions"] as? [String] == [owner.id.lowercased()])
            // The same text again: unchanged, no new edit time.
            let again = try #require(jsonObject(try await s.send(.put, place.chat(chat), member, json: #"{"content":"오타 없음 @주인"}"#)))
            #expect(again["editedAt"] as? String == body["editedAt"] as? String)
            #expect(outcome(try await s.send(.put, place.chat(chat), owner, json: #"{"content":"내가 고침"}"#)) == "400 E14")
            #expect(outcome(try await s.send(.put, place.chat(chat), member, json: #"{"content":"  "}"#)) == "400 E11")
            #expect(outcome(try await s.send(.put, place.chat(UUID().uuidString), member, json: #"{"content":"x"}"#)) == "400 E13")
            #expect(outcome(try await s.send(.put, place.chat(chat), outsider, json: #"{"content":"x"}"#)) == "400 E13")
            #expect(outcome(try await s.send(.put, place.chat("not-an-id"), member, json: #"{"content":"x"}"#)) == "400 E13")
            let history = try #require(jsonArray(try await s.get(place.chats, owner)))
            #expect(history.map { $0["content"] as? String } == ["오타 없음 @주인", "둘째"])

            #expect(outcome(try await s.request(.delete, place.chat(chat), token: owner.token)) == "400 E14")
            #expect(try await s.request(.delete, place.chat(chat), token: member.token).status == .ok)
            #expect(outcome(try await s.request(.delete, place.chat(chat), token: member.token)) == "400 E13")
            #expect(outcome(try await s.send(.put, place.chat(chat), member, json: #"{"content":"부활"}"#)) == "400 E13")
            let after = try #require(jsonArray(try await s.get(place.chats, owner)))
            #expect(after.map { id($0, "chat_id") } == [id(second, "chat_id")])
            #expect(jsonObject(try await s.get(place.prefix + "/unreads?after=\(start)", owner))?["count"] as? Int == 1)
            // A reply to a deleted message is refused.
            #expect(outcome(try await s.send(.post, place.chats, owner, json: #"{"content":"x","parent_id":"\#(chat)"}"#)) == "400 E13")
        }
    }

    @Test("deleting a message removes its files: the download is gone")
    func deleteRemovesFiles() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let member = try await s.user()
            let place = try await Self.channel(s, owner, [member])
            let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 100)
            let body = multipart(fields: ["content": "사진"], files: [("사진.png", "image/png", png)])
            let sent = try await s.client.execute(
                uri: place.chats, method: .post, headers: s.headers(token: member.token, contentType: body.contentType),
                body: body.body)
            let message = try #require(jsonObject(sent))
            let path = try #require((message["files"] as? [String])?.first)
            let url = "/v1" + (path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? path)
            #expect(try await s.get(url, owner).status == .ok)
            #expect(try await s.request(.delete, place.chat(id(message, "chat_id")), token: member.token).status == .ok)
            #expect(outcome(try await s.get(url, owner)) == "400 E13")
            let directory = try #require(s.chatFilesDirectory)
            // Every file under the volume, its folders (group icons') searched too.
            let left = (FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? []).filter { name in
                var isDirectory: ObjCBool = false
                return FileManager.default.fileExists(atPath: directory + "/" + name, isDirectory: &isDirectory) && !isDirectory.boolValue
            }
            #expect(left.isEmpty, "files left on the volume: \(left)")
        }
    }

    @Test("reactions: add is idempotent, remove, counts and users in order, E11 bad emoji, E13 outsider; history shows them (DM too)")
    func reactions() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let member = try await s.user()
            let outsider = try await s.user()
            let place = try await Self.channel(s, owner, [member])
            let chat = id(try await send(s, place, owner, #"{"content":"좋아요?"}"#), "chat_id")
            #expect(try #require(jsonArray(try await s.request(.put, place.reaction(chat, "👍"), token: owner.token))).count == 1)
            _ = try await s.request(.put, place.reaction(chat, "👍"), token: owner.token)
            _ = try await s.request(.put, place.reaction(chat, "👍"), token: member.token)
            let summary = try #require(jsonArray(try await s.request(.put, place.reaction(chat, "party"), token: member.token)))
            #expect(summary.map { $0["emoji"] as? String } == ["👍", "party"])
            #expect(summary.map { $0["count"] as? Int } == [2, 1])
            #expect(summary.first?["users"] as? [String] == [owner.id.lowercased(), member.id.lowercased()])
            let removed = try #require(jsonArray(try await s.request(.delete, place.reaction(chat, "👍"), token: owner.token)))
            #expect(removed.map { $0["count"] as? Int } == [1, 1])
            let history = try #require(jsonArray(try await s.get(place.chats, member)))
            let reactions = try #require(history.first?["reactions"] as? [[String: Any]])
            #expect(reactions.map { $0["emoji"] as? String } == ["👍", "party"])
            #expect(outcome(try await s.request(.put, place.reaction(chat, "a b"), token: owner.token)) == "400 E11")
            #expect(outcome(try await s.request(.put, place.reaction(chat, String(repeating: "x", count: 33)), token: owner.token)) == "400 E11")
            #expect(outcome(try await s.request(.put, place.reaction(chat, "👍"), token: outsider.token)) == "400 E13")
            #expect(outcome(try await s.request(.put, place.reaction(UUID().uuidString, "👍"), token: owner.token)) == "400 E13")
            // Removing every reaction leaves the contract's plain shape.
            _ = try await s.request(.delete, place.reaction(chat, "👍"), token: member.token)
            _ = try await s.request(.delete, place.reaction(chat, "party"), token: member.token)
            #expect(try #require(jsonArray(try await s.get(place.chats, member))).first?["reactions"] == nil)

            let dm = try await Self.dm(s, owner, member, in: place)
            let direct = id(try await send(s, dm, member, #"{"content":"DM"}"#), "dm_id")
            #expect(try #require(jsonArray(try await s.request(.put, dm.reaction(direct, "❤️"), token: owner.token))).first?["count"] as? Int == 1)
            #expect(outcome(try await s.request(.put, dm.reaction(direct, "❤️"), token: outsider.token)) == "400 E13")
            let edited = try await s.send(.put, dm.chat(direct), member, json: #"{"content":"DM 수정"}"#)
            #expect(Set(try #require(jsonObject(edited)).keys) == ["dm_id", "room_id", "content", "createdAt", "files", "user", "reactions", "editedAt"])
        }
    }

    @Test("chat.message.v1 carries created, edited, reactions-changed and deleted in order, keyed by the conversation")
    func changeEvents() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let member = try await s.user()
            let place = try await Self.channel(s, owner, [member])
            let chat = id(try await send(s, place, owner, #"{"content":"v1"}"#), "chat_id")
            _ = try await s.send(.put, place.chat(chat), owner, json: #"{"content":"v2"}"#)
            _ = try await s.request(.put, place.reaction(chat, "👀"), token: member.token)
            _ = try await s.request(.delete, place.chat(chat), token: owner.token)
            let consumer = try TestKafka.groupConsumer(s.cluster, group: "analytics-changes", topics: [Topic.chatMessage.name])
            let seen = try await withTimeout(.seconds(20), "chat.message.v1 changes") {
                var seen: [(key: String, bytes: [UInt8])] = []
                for try await message in consumer.messages {
                    seen.append((message.keyString ?? "", message.value ?? []))
                    if seen.count == 4 { break }
                }
                return seen
            }
            await consumer.close()
            let channel = String(place.prefix.split(separator: "/").last ?? "")
            #expect(
                try seen.map { try EventCoding.header(from: $0.bytes).type } == [
                    ChatEvents.ChannelMessageCreated.eventType, ChatEvents.MessageEdited.eventType,
                    ChatEvents.ReactionsChanged.eventType, ChatEvents.MessageDeleted.eventType,
                ])
            #expect(seen.allSatisfy { $0.key == channel })
            let edit = try EventCoding.decode(ChatEvents.MessageEdited.self, from: seen[1].bytes).data
            let channelId = try #require(ChannelID(channel))
            #expect(edit.content == "v2" && edit.messageId.description == chat)
            #expect(edit.conversation.kind == .channel && edit.conversation.id == channelId.uuid && edit.conversation.alias != nil)
            let reaction = try EventCoding.decode(ChatEvents.ReactionsChanged.self, from: seen[2].bytes).data
            #expect(reaction.added && reaction.emoji == "👀" && reaction.reactions.first?.users.map(\.description) == [member.id.lowercased()])
        }
    }
}
