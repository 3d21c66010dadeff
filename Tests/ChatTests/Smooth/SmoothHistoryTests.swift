import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import SuiteTesting
import Testing

/// Smooth's `/chat-server/community?ch_id=&page=&size=` (client contract §2.1) and the canonical
/// `/v1` page mode beside the cursor.
@Suite("Smooth chat history", .serialized)
struct SmoothHistoryTests {
    static let itemKeys: Set<String> = [
        "id", "name", "profileImage", "userId", "message", "thumbnail", "fileType", "type", "time", "parentId", "parentName", "parentContent",
    ]

    @Test("pages newest-first, oldest→newest within a page, every key present; replies name their parent; members, outsiders and anonymous reads")
    func pages() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let (owner, member, outsider) = (try await s.user("소유자"), try await s.user("멤버"), try await s.user("남"))
            let (workspace, channel) = try await s.sharedChannel(owner, member)
            let path = "/v1/workspaces/\(workspace)/channels/\(channel)/chats"
            var ids: [String] = []
            for n in 0..<24 {
                let r = try await s.send(.post, path, n.isMultiple(of: 2) ? owner : member, json: #"{"content":"m\#(n)"}"#)
                #expect(r.status == .ok)
                ids.append(id(jsonObject(r), "chat_id"))
            }
            let reply = try await s.send(.post, path, member, json: #"{"content":"answer","parent_id":"\#(ids[3])"}"#)
            #expect(reply.status == .ok)
            #expect(try await s.send(.delete, "\(path)/\(ids[5])", member, json: "{}").status == .ok)
            let alias = try await s.channelAlias(channel)

            // 24 live messages (25 stored, one deleted): page 0 the newest 20, page 1 the 4 before.
            let first = try await s.smooth(.get, "/chat-server/community?ch_id=\(alias)&page=0&size=20")
            #expect(first.outcome == "200 1000", "\(first.body)")
            let items = try #require(first.envelope?["result"] as? [[String: Any]])
            #expect(items.count == 20)
            for item in items { #expect(Set(item.keys) == Self.itemKeys, "\(item.keys.sorted())") }
            #expect(items.last?["message"] as? String == "answer", "the page ends with the newest")
            // The newest 20 of 24 live: the answer, m23…m6 (m5 is deleted) and m4.
            #expect(items.first?["message"] as? String == "m4", "m5 is deleted: the page reaches back to m4")
            let answer = try #require(items.last)
            #expect(answer["fileType"] as? String == "reply" && answer["parentId"] as? String == ids[3])
            #expect(answer["parentName"] as? String == "멤버" && answer["parentContent"] as? String == "m3")
            #expect(answer["name"] as? String == "멤버" && answer["type"] is NSNull && answer["thumbnail"] is NSNull)
            let plain = items[0]
            #expect(plain["fileType"] is NSNull && plain["parentId"] is NSNull && plain["parentName"] is NSNull)
            let time = try #require(plain["time"] as? String)
            #expect(time.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}/) != nil, "zone-less with milliseconds: \(time)")
            let second = try await s.smooth(.get, "/chat-server/community?ch_id=\(alias)&page=1&size=20")
            #expect((second.envelope?["result"] as? [[String: Any]])?.compactMap { $0["message"] as? String } == ["m0", "m1", "m2", "m3"])
            let beyond = try await s.smooth(.get, "/chat-server/community?ch_id=\(alias)&page=2&size=20")
            #expect((beyond.envelope?["result"] as? [Any])?.isEmpty == true)

            // A token is held to membership; without one the compatibility mode answers.
            let asMember = Stack.SmoothUser(id: 0, email: "", name: "", code: "", token: member.token)
            let asOutsider = Stack.SmoothUser(id: 0, email: "", name: "", code: "", token: outsider.token)
            #expect(try await s.smooth(.get, "/chat-server/community?ch_id=\(alias)&size=5", asMember).outcome == "200 1000")
            #expect(try await s.smooth(.get, "/chat-server/community?ch_id=\(alias)", asOutsider).outcome == "400 4004")

            // The sender's integer id, once chat's projection has it from auth.user.v1.
            try await eventually("senders carry their integer ids", timeout: .seconds(30)) {
                let page = try await s.smooth(.get, "/chat-server/community?ch_id=\(alias)&size=2")
                return (page.envelope?["result"] as? [[String: Any]])?.allSatisfy { $0["userId"] is Int } == true
            }

            // The canonical API pages the same way beside its cursor.
            let v1 = try #require(jsonArray(try await s.get("\(path)?page=0&size=3", owner)))
            #expect(v1.map { $0["content"] as? String } == ["m22", "m23", "answer"])
            #expect(outcome(try await s.get("\(path)?page=0&cursor_date=2024-01-01T00:00:00.000Z", owner)) == "400 E11")
            #expect(outcome(try await s.get("\(path)?size=0", owner)) == "400 E11")
        }
    }
}
