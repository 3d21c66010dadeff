import Events
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SuiteTesting
import Testing

@Suite("Threads: channels under a channel")
struct ThreadTests {
    @Test("a thread has its channel's members, follows joins and leaves, is chatted in like a channel, and goes with its channel")
    func lifecycle() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user("주인")
            let member = try await s.user("멤버")
            let late = try await s.user("늦게")
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            try await s.invite(member, to: wid, by: owner)
            try await s.invite(late, to: wid, by: owner)
            let base = "/v1/workspaces/\(wid)/channels"
            let news = id(try await s.createChannel(owner, in: wid, name: "news"), "channel_id")
            #expect(try await s.request(.post, "\(base)/\(news)/join", token: member.token).status == .ok)

            // Created by a channel member, with the channel's members.
            let created = try await s.send(.post, "\(base)/\(news)/threads", member, json: #"{"name":"release 1.0"}"#)
            #expect(created.status == .ok, "\(String(buffer: created.body))")
            let thread = try #require(jsonObject(created))
            #expect(Set(thread.keys) == ["channel_id", "name", "owner_id", "createdAt"])
            #expect(thread["owner_id"] as? String == member.id)
            let tid = id(thread, "channel_id")
            let members = try #require(jsonArray(try await s.get("\(base)/\(tid)/members", owner)))
            #expect(Set(members.map { id($0, "user_id") }) == [owner.id, member.id])

            // Lists show threads under their channel only.
            #expect(try #require(jsonArray(try await s.get(base, owner))).map { $0["name"] as? String } == ["일반", "news"])
            #expect(try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/my-channels", member))).map { $0["name"] as? String } == ["일반", "news"])
            let detail = try #require(jsonObject(try await s.get("/v1/workspaces/\(wid)", owner)))
            #expect((detail["channels"] as? [[String: Any]])?.map { $0["name"] as? String } == ["일반", "news"])
            let threads = try #require(jsonArray(try await s.get("\(base)/\(news)/threads", late)))
            #expect(threads.map { id($0, "channel_id") } == [tid])
            #expect(try #require(jsonArray(try await s.get("\(base)/\(tid)/threads", owner))).isEmpty)

            // Refusals: a name the channel's threads have, nesting, a non-member of the channel,
            // an outsider, bad names and bodies.
            #expect(outcome(try await s.send(.post, "\(base)/\(news)/threads", owner, json: #"{"name":"RELEASE 1.0"}"#)) == "400 E12")
            #expect(outcome(try await s.send(.post, "\(base)/\(tid)/threads", owner, json: #"{"name":"deeper"}"#)) == "400 E11")
            #expect(outcome(try await s.send(.post, "\(base)/\(news)/threads", late, json: #"{"name":"mine"}"#)) == "400 E14")
            let outsider = try await s.user()
            #expect(outcome(try await s.send(.post, "\(base)/\(news)/threads", outsider, json: #"{"name":"x"}"#)) == "400 E13")
            #expect(outcome(try await s.get("\(base)/\(news)/threads", outsider)) == "400 E13")
            #expect(outcome(try await s.send(.post, "\(base)/\(news)/threads", owner, json: #"{"name":""}"#)) == "400 E11")
            #expect(
                outcome(try await s.send(.post, "\(base)/\(news)/threads", owner, json: "{\"name\":\"\(String(repeating: "가", count: 31))\"}")) == "400 E11")
            #expect(outcome(try await s.send(.post, "\(base)/\(news)/threads", owner, json: #"{"name":["a"]}"#)) == "400 E11")
            // The same name under another channel, and as a channel name, is fine.
            let general = id(try #require(jsonArray(try await s.get(base, owner))).first, "channel_id")
            #expect(try await s.send(.post, "\(base)/\(general)/threads", owner, json: #"{"name":"news"}"#).status == .ok)
            // A thread does not move on its own.
            #expect(outcome(try await s.send(.put, "\(base)/\(tid)/location", owner, json: #"{"next":"0"}"#)) == "400 E11")

            // Chat: members write and read in the thread; an outsider of the workspace cannot.
            try await s.waitForChatMember(member.id, channel: tid)
            let chats = "\(base)/\(tid)/chats"
            let sent = try await s.multipartRequest(.post, chats, member, fields: ["content": "스레드 첫 글"])
            #expect(sent.status == .ok, "\(String(buffer: sent.body))")
            #expect(try #require(jsonArray(try await s.get(chats, owner))).map { $0["content"] as? String } == ["스레드 첫 글"])
            #expect(outcome(try await s.get(chats, outsider)) == "400 E13")

            // Joining the channel joins its threads; leaving leaves them.
            #expect(try await s.request(.post, "\(base)/\(news)/join", token: late.token).status == .ok)
            try await s.waitForChatMember(late.id, channel: tid)
            #expect(try await s.get(chats, late).status == .ok)
            #expect(try await s.get("\(base)/\(news)/exit", late).status == .ok)
            try await s.waitForChatMember(late.id, channel: tid, present: false)
            // A member of the workspace who opens the thread again joins it by reading (as any
            // channel: WorkSpaceX explores without a join call), the thread alone.
            #expect(try await s.get(chats, late).status == .ok)
            try await eventually("the workspace has the late member in the thread", timeout: .seconds(30)) {
                (jsonObject(try await s.get("\(base)/\(tid)", owner))?["channelMembers"] as? [[String: Any]] ?? []).contains { id($0, "user_id") == late.id }
            }
            #expect(
                !(jsonObject(try await s.get("\(base)/\(news)", owner))?["channelMembers"] as? [[String: Any]] ?? []).contains { id($0, "user_id") == late.id })

            // Deleting the channel deletes its thread, in workspace and in chat.
            #expect(try await s.request(.delete, "\(base)/\(news)", token: owner.token).status == .ok)
            #expect(outcome(try await s.get("\(base)/\(tid)", owner)) == "400 E13")
            try await s.waitForChatMember(member.id, channel: tid, present: false)
            #expect(outcome(try await s.get(chats, member)) == "400 E13")
        }
    }

    @Test("workspace.channel-created of a thread names its channel; a new workspace member joins the default channel's threads")
    func eventsAndDefaultChannel() async throws {
        try await Stack.run(services: [.auth, .workspace]) { s in
            let owner = try await s.user()
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            let base = "/v1/workspaces/\(wid)/channels"
            let general = id(try #require(jsonArray(try await s.get(base, owner))).first, "channel_id")
            let thread: [String: Any] = try #require(jsonObject(try await s.send(.post, "\(base)/\(general)/threads", owner, json: #"{"name":"공지"}"#)))
            let tid = id(thread, "channel_id")
            let seen = try await WorkspaceEventsTests.read(s.cluster) { seen in
                seen.contains { $0.type == "workspace.channel-created" && $0.data["channelId"] == tid }
            }
            let created = try #require(seen.first { $0.type == "workspace.channel-created" && $0.data["channelId"] == tid })
            let parent = created.data["parentId"]
            #expect(seen.first { $0.type == "workspace.channel-created" && $0.data["channelId"] == general }?.data["parentId"] == nil)
            #expect(parent == general)

            let newcomer = try await s.user()
            try await s.invite(newcomer, to: wid, by: owner)
            let members = try #require(jsonArray(try await s.get("\(base)/\(tid)/members", owner)))
            #expect(Set(members.map { id($0, "user_id") }) == [owner.id, newcomer.id])
        }
    }
}
