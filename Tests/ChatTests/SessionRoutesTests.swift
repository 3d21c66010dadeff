import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import SuiteTesting
import Testing

/// Chat's internal routes for the gateway's native protocol (docs/chat-api.md), called on chat
/// itself as the gateway does: the ready snapshot (unread counts of every workspace, rooms only
/// while still in their workspace) and the replay (strictly after each cursor, readable
/// conversations only, refused beyond the limit); malformed requests are 400s.
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

    @Test("session snapshot and replay: unread counts over all workspaces, replay after cursors of readable conversations only, the limit, 400s")
    func sessionAndReplay() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let chat = try #require(s.gatewayEnvironment["CHAT_URL"])
            let a = try await s.user("에이")
            let b = try await s.user("비")
            let outsider = try await s.user("남")
            let (wid, cid) = try await s.sharedChannel(a, b)
            let room = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/dms", a, json: #"{"opponent_id":"\#(b.id)"}"#)), "room_id")
            var sent: [String] = []
            for i in 0..<3 {
                let answer = try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(cid)/chats", a, json: #"{"content":"m\#(i)"}"#)
                sent.append(id(jsonObject(answer), "chat_id"))
            }
            let dm = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/dms/\(room)/chats", a, json: #"{"content":"d"}"#)), "dm_id")

            let snapshot = try await call("\(chat)/internal/v1/users/\(b.id)/session")
            #expect(snapshot.status == 200)
            let object = try #require((try? JSONSerialization.jsonObject(with: Data(snapshot.text.utf8))) as? [String: Any])
            #expect((object["channels"] as? [[String: Any]])?.first { $0["channel_id"] as? String == cid }?["unread_count"] as? Int == 3)
            #expect((object["dms"] as? [[String: Any]])?.first { $0["room_id"] as? String == room }?["user_id"] as? String == a.id)
            #expect((object["dms"] as? [[String: Any]])?.first { $0["room_id"] as? String == room }?["unread_count"] as? Int == 1)
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
}
