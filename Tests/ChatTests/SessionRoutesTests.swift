import AsyncHTTPClient
import ChatInternalAPI
import Events
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
import PostgresNIO
import SuiteTesting
import Testing

/// Chat's internal routes for the gateway's native protocol (docs/chat-api.md), called on chat
/// itself as the gateway does: the ready snapshot (unread counts of every workspace, rooms only
/// while still in their workspace) and the replay (strictly after each cursor, readable
/// conversations only, refused beyond the limit; the edits and deletions since the cursor of the
/// messages the client had); malformed requests are 400s.
@Suite("Chat's internal session and replay routes")
struct SessionRoutesTests {
    func call(_ url: String, body: String? = nil) async throws -> (status: UInt, more: Bool, text: String) {
        var request = HTTPClientRequest(url: url)
        if let body {
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
        return (response.status.code, response.headers.first(name: "Chatsuite-Replay-More") == "true", text)
    }

    /// A stack with chat (its own URL: the internal routes are not behind the gateway) and two
    /// users who share a channel.
    func withSharedChannel(
        _ body: @escaping @Sendable (_ s: Stack, _ chat: String, _ a: User, _ b: User, _ workspace: String, _ channel: String) async throws -> Void
    ) async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let chat = try #require(s.gatewayEnvironment["CHAT_URL"])
            let a = try await s.user("에이")
            let b = try await s.user("비")
            let (workspace, channel) = try await s.sharedChannel(a, b)
            try await body(s, chat, a, b, workspace, channel)
        }
    }

    /// `user`'s session snapshot (answered 200), as a JSON object.
    func snapshot(_ chat: String, _ user: User) async throws -> [String: Any] {
        let answer = try await call("\(chat)/internal/v1/users/\(user.id)/session")
        #expect(answer.status == 200)
        return try #require((try? JSONSerialization.jsonObject(with: Data(answer.text.utf8))) as? [String: Any])
    }

    /// The entry of `list` ("channels", "dms") for conversation `id` in a snapshot.
    static func conversation(_ id: String, in snapshot: [String: Any], _ list: String) -> [String: Any]? {
        let key = list == "channels" ? "channel_id" : "room_id"
        return (snapshot[list] as? [[String: Any]])?.first { $0[key] as? String == id }
    }

    @Test("session snapshot and replay: unread counts over all workspaces, replay after cursors of readable conversations only, the limit, 400s")
    func sessionAndReplay() async throws {
        try await withSharedChannel { s, chat, a, b, wid, cid in
            let outsider = try await s.user("남")
            let room = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/dms", a, json: #"{"opponent_id":"\#(b.id)"}"#)), "room_id")
            var sent: [String] = []
            for i in 0..<3 {
                let answer = try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(cid)/chats", a, json: #"{"content":"m\#(i)"}"#)
                sent.append(id(jsonObject(answer), "chat_id"))
            }
            let dm = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/dms/\(room)/chats", a, json: #"{"content":"d"}"#)), "dm_id")

            let object = try await snapshot(chat, b)
            #expect(Self.conversation(cid, in: object, "channels")?["unread_count"] as? Int == 3)
            #expect(Self.conversation(room, in: object, "dms")?["user_id"] as? String == a.id)
            #expect(Self.conversation(room, in: object, "dms")?["unread_count"] as? Int == 1)
            #expect((object["workspaces"] as? [[String: Any]])?.map { $0["workspace_id"] as? String } == [wid])

            // Everything of both conversations from the start, oldest first; the tab-separated lines.
            let all = try await call(
                "\(chat)/internal/v1/users/\(b.id)/replay",
                body: #"{"limit":10,"cursors":[{"conversation_id":"\#(cid)","after_ms":0},{"conversation_id":"\#(room)","after_ms":0}]}"#)
            let lines = all.text.split(separator: "\n").map { $0.split(separator: "\t", maxSplits: 4).map(String.init) }
            #expect(all.status == 200 && !all.more)
            #expect(lines.map { $0[2] } == sent + [dm])
            #expect(lines.map { $0[0] } == ["channel.message", "channel.message", "channel.message", "dm.message"])
            // Strictly after a cursor: the first message's time leaves the later ones.
            let firstMs = try #require(Int64(lines[0][3]))
            let after = try await call(
                "\(chat)/internal/v1/users/\(b.id)/replay", body: #"{"limit":10,"cursors":[{"conversation_id":"\#(cid)","after_ms":\#(firstMs)}]}"#)
            #expect(after.text.split(separator: "\n").map { String($0.split(separator: "\t")[2]) } == Array(sent.dropFirst()))
            // Beyond the limit: nothing, and the header.
            let limited = try await call(
                "\(chat)/internal/v1/users/\(b.id)/replay", body: #"{"limit":2,"cursors":[{"conversation_id":"\#(cid)","after_ms":0}]}"#)
            #expect(limited.status == 200 && limited.more && limited.text.isEmpty)
            // Someone who cannot read them gets no message, only both conversations marked removed.
            let stranger = try await call(
                "\(chat)/internal/v1/users/\(outsider.id)/replay",
                body: #"{"limit":10,"cursors":[{"conversation_id":"\#(cid)","after_ms":0},{"conversation_id":"\#(room)","after_ms":0}]}"#)
            #expect(stranger.status == 200)
            #expect(Set(stranger.text.split(separator: "\n").map(String.init)) == ["conversation.removed\t\(cid)", "conversation.removed\t\(room)"])

            // Malformed requests.
            #expect(try await call("\(chat)/internal/v1/users/not-a-uuid/session").status == 400)
            #expect(try await call("\(chat)/internal/v1/users/\(b.id)/replay", body: "not json").status == 400)
            #expect(try await call("\(chat)/internal/v1/users/\(b.id)/replay", body: #"{"limit":0,"cursors":[]}"#).status == 400)
            #expect(
                try await call("\(chat)/internal/v1/users/\(b.id)/replay", body: #"{"limit":5,"cursors":[{"conversation_id":"x","after_ms":0}]}"#).status == 400
            )
        }
    }

    /// Replays `cursors` for `user` (conversation id, after ms).
    func replay(_ chat: String, _ user: User, _ cursors: [(String, Int64)], limit: Int) async throws -> (status: UInt, more: Bool, text: String) {
        let list = cursors.map { #"{"conversation_id":"\#($0.0)","after_ms":\#($0.1)}"# }.joined(separator: ",")
        return try await call("\(chat)/internal/v1/users/\(user.id)/replay", body: #"{"limit":\#(limit),"cursors":[\#(list)]}"#)
    }

    @Test(
        "replay: a line per message created at or before the cursor and edited or deleted after it (deleted wins), after the messages, by change time; none for messages after the cursor; changes count against the limit"
    )
    func replayChanges() async throws {
        try await withSharedChannel { s, chat, a, b, wid, channelId in
            let (aId, bId) = (a.id.lowercased(), b.id.lowercased())
            let roomId = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/dms", a, json: #"{"opponent_id":"\#(b.id)"}"#)), "room_id")
            let (cid, room) = (channelId.lowercased(), roomId.lowercased())
            let channel = "/v1/workspaces/\(wid)/channels/\(cid)/chats"
            let dm = "/v1/workspaces/\(wid)/dms/\(room)/chats"
            // Sends (or edits) and answers the message's id and time; each call a millisecond apart
            // at least, so change times are distinct.
            func post(_ path: String, _ user: User, _ text: String) async throws -> (id: String, ms: Int64) {
                let answer = try #require(jsonObject(try await s.send(.post, path, user, json: #"{"content":"\#(text)"}"#)))
                let messageId = answer["chat_id"] as? String ?? id(answer, "dm_id")
                try await Task.sleep(for: .milliseconds(2))
                return (messageId.lowercased(), try #require(Timestamp.parseMilliseconds(answer["createdAt"] as? String ?? "")))
            }
            func edit(_ path: String, _ user: User, _ text: String) async throws -> String {
                let answer = try await s.send(.put, path, user, json: #"{"content":"\#(text)"}"#)
                #expect(answer.status == .ok, "edit: \(String(buffer: answer.body))")
                try await Task.sleep(for: .milliseconds(2))
                return id(jsonObject(answer), "editedAt")
            }
            func delete(_ path: String, _ user: User) async throws {
                #expect(try await s.request(.delete, path, token: user.token).status == .ok)
                try await Task.sleep(for: .milliseconds(2))
            }

            var m: [(id: String, ms: Int64)] = []
            for i in 0..<4 { m.append(try await post(channel, a, "m\(i)")) }
            let d0 = try await post(dm, b, "d0")
            // The client has everything up to here: its cursors are the newest messages' times.
            let cursors = [(cid, m[3].ms), (room, d0.ms)]
            let editedM1 = try await edit("\(channel)/\(m[1].id)", a, "고쳤어 <@\(b.id)>")
            try await delete("\(channel)/\(m[2].id)", a)
            _ = try await edit("\(channel)/\(m[0].id)", a, "곧 지움")
            try await delete("\(channel)/\(m[0].id)", a)
            let editedD0 = try await edit("\(dm)/\(d0.id)", b, "dm 고침")
            // Created after the cursor: replayed as it is now (edited), or not at all (deleted).
            m.append(try await post(channel, a, "m4"))
            _ = try await edit("\(channel)/\(m[4].id)", a, "m4 고침")
            m.append(try await post(channel, a, "m5"))
            try await delete("\(channel)/\(m[5].id)", a)

            let answer = try await replay(chat, b, cursors, limit: 10)
            #expect(answer.status == 200 && !answer.more)
            let lines = answer.text.split(separator: "\n")
            #expect(
                lines.map { $0.split(separator: "\t")[0] } == ["channel.message", "message.edited", "message.deleted", "message.deleted", "message.edited"])
            let parsed = try ChatInternal.ReplayAnswer(parsing: answer.text)
            #expect(parsed.removed.isEmpty)
            #expect(parsed.messages.map(\.messageId.lowercased) == [m[4].id])
            #expect(parsed.messages.first?.json.contains(#""content":"m4 고침""#) == true)
            #expect(
                parsed.changes.map { "\($0.type) \($0.messageId.lowercased)" } == [
                    "message.edited \(m[1].id)", "message.deleted \(m[2].id)", "message.deleted \(m[0].id)", "message.edited \(d0.id)",
                ])
            #expect(parsed.changes.map(\.conversationId.lowercased) == [cid, cid, cid, room])
            let times = parsed.changes.map(\.atMilliseconds)
            #expect(times == times.sorted() && Set(times).count == times.count && times.allSatisfy { $0 > m[3].ms })
            // The payloads, exactly: the edit's time is the one the edit answered.
            if parsed.changes.count == 4 {
                let (e1, del2, del0, eD) = (parsed.changes[0], parsed.changes[1], parsed.changes[2], parsed.changes[3])
                #expect(Timestamp.format(milliseconds: e1.atMilliseconds) == editedM1 && Timestamp.format(milliseconds: eD.atMilliseconds) == editedD0)
                #expect(
                    e1.json
                        == #"{"conversation_id":"\#(cid)","kind":"channel","chat_id":"\#(m[1].id)","user_id":"\#(aId)","content":"고쳤어 <@\#(b.id)>","mentions":["\#(bId)"],"editedAt":"\#(editedM1)"}"#
                )
                #expect(
                    del2.json
                        == #"{"conversation_id":"\#(cid)","kind":"channel","chat_id":"\#(m[2].id)","user_id":"\#(aId)","deletedAt":"\#(Timestamp.format(milliseconds: del2.atMilliseconds))"}"#
                )
                #expect(del0.json.hasSuffix(#""user_id":"\#(aId)","deletedAt":"\#(Timestamp.format(milliseconds: del0.atMilliseconds))"}"#))
                #expect(
                    eD.json
                        == #"{"conversation_id":"\#(room)","kind":"dm","chat_id":"\#(d0.id)","user_id":"\#(bId)","content":"dm 고침","editedAt":"\#(editedD0)"}"#)
            }

            // A cursor at m1: m1 itself is "at or before" (its edit is a change), m2 is after it
            // (created later, then deleted: nothing), m0's deletion is a change.
            let middle = try ChatInternal.ReplayAnswer(parsing: try await replay(chat, b, [(cid, m[1].ms)], limit: 10).text)
            #expect(middle.messages.map(\.messageId.lowercased) == [m[3].id, m[4].id])
            #expect(middle.changes.map { "\($0.type) \($0.messageId.lowercased)" } == ["message.edited \(m[1].id)", "message.deleted \(m[0].id)"])
            // From the start nothing is a change: the live messages as they are now.
            let all = try ChatInternal.ReplayAnswer(parsing: try await replay(chat, b, [(cid, 0), (room, 0)], limit: 10).text)
            #expect(all.changes.isEmpty && all.messages.map(\.messageId.lowercased) == [m[1].id, m[3].id, d0.id, m[4].id])

            // The limit counts messages and changes together: 1 + 4 here.
            let exact = try await replay(chat, b, cursors, limit: 5)
            #expect(exact.status == 200 && !exact.more && exact.text == answer.text)
            let over = try await replay(chat, b, cursors, limit: 4)
            #expect(over.status == 200 && over.more && over.text.isEmpty)
            // Changes alone count too: after m5 and d0 there is no message, only d0's edit and m5's
            // deletion (m5 was created at its own cursor).
            let onlyChanges = try await replay(chat, b, [(cid, m[5].ms), (room, d0.ms)], limit: 2)
            #expect(!onlyChanges.more)
            #expect(
                try ChatInternal.ReplayAnswer(parsing: onlyChanges.text).changes.map { "\($0.type) \($0.messageId.lowercased)" } == [
                    "message.edited \(d0.id)", "message.deleted \(m[5].id)",
                ])
            let overByChanges = try await replay(chat, b, [(cid, m[5].ms), (room, d0.ms)], limit: 1)
            #expect(overByChanges.more && overByChanges.text.isEmpty)
        }
    }
    @Test(
        "session snapshot: unread counts leave out the reader's own and deleted messages and start after the read cursor; a count reads the history index alone, and a user's memberships are found by index (migration 107)"
    )
    func unreadCountsFromTheIndex() async throws {
        try await withSharedChannel { s, chat, a, b, wid, cid in
            let chats = "/v1/workspaces/\(wid)/channels/\(cid)/chats"
            func unread() async throws -> Int? { try await Self.conversation(cid, in: snapshot(chat, b), "channels")?["unread_count"] as? Int }
            var sent: [String] = []
            for text in ["m0", "m1", "m2"] {
                sent.append(id(jsonObject(try await s.send(.post, chats, a, json: #"{"content":"\#(text)"}"#)), "chat_id"))
            }
            _ = try await s.send(.post, chats, b, json: #"{"content":"mine"}"#)
            #expect(try await s.request(.delete, "\(chats)/\(sent[1])", token: a.token).status == .ok)
            #expect(try await unread() == 2)
            #expect(try await s.send(.put, "/v1/workspaces/\(wid)/channels/\(cid)/read", b, json: "{}").status == .ok)
            _ = try await s.send(.post, chats, a, json: #"{"content":"m3"}"#)
            #expect(try await unread() == 1)

            // The plans, with scans of the table ruled out: what an index can answer alone.
            let db = try #require(s.chatDatabase)
            let (channel, reader) = (try #require(UUID(uuidString: cid)), try #require(UUID(uuidString: b.id)))
            try await db.withConnection { c in
                _ = try await c.query("SET enable_seqscan = off", logger: Logger(label: "test"))
                _ = try await c.query("SET enable_bitmapscan = off", logger: Logger(label: "test"))
                func plan(_ query: PostgresQuery) async throws -> String {
                    var lines: [String] = []
                    for try await line in try await c.query(query, logger: Logger(label: "test")).decode(String.self) { lines.append(line) }
                    return lines.joined(separator: "\n")
                }
                let count = try await plan(
                    """
                    EXPLAIN SELECT count(*) FROM messages m WHERE m.conversation_id = \(channel) AND m.created_at > '-infinity'
                      AND m.sender_id <> \(reader) AND m.deleted_at IS NULL
                    """)
                #expect(count.contains("Index Only Scan using messages_history"), "\(count)")
                let channels = try await plan("EXPLAIN SELECT channel_id FROM channel_members WHERE user_id = \(reader)")
                #expect(channels.contains("channel_members_user"), "\(channels)")
                let workspaces = try await plan("EXPLAIN SELECT workspace_id FROM workspace_members WHERE user_id = \(reader)")
                #expect(workspaces.contains("workspace_members_user"), "\(workspaces)")
            }
        }
    }
}
